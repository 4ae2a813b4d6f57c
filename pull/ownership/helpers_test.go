package ownership

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/waitfor"
	"github.com/sluicehq/sluice/pull"
)

// The helpers below are the few of pull's test helpers that the runner's
// tests need: a scripted partner, an ingester that records, a poller
// config and a wait on a condition.

// recorder is an Ingester that accepts every event once and answers
// DUPLICATE for an id it has seen.
type recorder struct {
	mu   sync.Mutex
	seen map[string]int // id -> times admitted (ACCEPTED)
}

func newRecorder() *recorder { return &recorder{seen: map[string]int{}} }

func (r *recorder) Ingest(_ context.Context, _ string, events []*ingestv1.Event) []*ingestv1.EventResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*ingestv1.EventResult, len(events))
	for i, ev := range events {
		res := &ingestv1.EventResult{Index: uint32(i), Id: ev.GetId(), Outcome: ingestv1.Outcome_ACCEPTED}
		if r.seen[ev.GetId()] > 0 {
			res.Outcome = ingestv1.Outcome_DUPLICATE
		} else {
			r.seen[ev.GetId()]++
		}
		out[i] = res
	}
	return out
}

func (r *recorder) IDs() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.seen))
	for k, v := range r.seen {
		out[k] = v
	}
	return out
}

// partner is an httptest server whose answers a test scripts; it records
// every request.
type partner struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
}

func newPartner(t testing.TB, handle func(n int, w http.ResponseWriter, r *http.Request)) *partner {
	p := &partner{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests = append(p.requests, r.Clone(context.Background()))
		n := len(p.requests)
		p.mu.Unlock()
		handle(n, w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *partner) Requests() []*http.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*http.Request(nil), p.requests...)
}

// items are test items: {"id": ..., "at": ..., "key": ..., "body": {...}}.
func items(prefix string, from, to int) []map[string]any {
	var out []map[string]any
	for i := from; i < to; i++ {
		id := fmt.Sprintf("%s%d", prefix, i)
		out = append(out, map[string]any{"id": id, "at": "2026-11-29T11:59:00Z", "key": "k-" + id, "body": map[string]any{"n": id}})
	}
	return out
}

// cursorPage answers a page of items with the next cursor.
func cursorPage(w http.ResponseWriter, its []map[string]any, next string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": its, "next": next})
}

// testConfig is a cursor poller of base with items at /data.
func testConfig(name, base string) pull.Config {
	c := pull.NewDefaultConfig()
	c.Name = name
	c.URL = base + "/items?cursor={cursor}"
	c.Interval = time.Hour
	c.RequestTimeout = 5 * time.Second
	c.Pagination = pull.PaginationConfig{Type: pull.PaginateCursor, Cursor: "/next", StartPage: 1}
	c.Items = "/data"
	c.Mapping = pull.MappingConfig{ID: "/id", Type: "test.Item", OccurredAt: "/at", PartitionKey: "/key", Payload: "/body"}
	c.MaxRetryAfter = 10 * time.Minute
	c.Backoff = backoff.Config{Initial: time.Second, Max: 30 * time.Second}
	c.Breaker = pull.BreakerConfig{Failures: 3, Cooldown: time.Minute}
	return c
}

// eventually checks cond until it holds, or fails the test at the deadline.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitfor.Condition(t, 20*time.Second, what, cond)
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }
