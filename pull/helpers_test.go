package pull

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/waitfor"
)

// fakeClock advances by every Sleep at once and records the waits. A
// sleep of park or longer is the poller being caught up: it blocks until
// the poller is stopped, so a test can wait for that condition.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
	park   time.Duration
	parked int
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), park: time.Hour}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	if d >= c.park {
		c.parked++
		c.mu.Unlock()
		<-ctx.Done()
		return ctx.Err()
	}
	if d > 0 {
		c.now = c.now.Add(d)
	}
	c.mu.Unlock()
	return ctx.Err()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

func (c *fakeClock) Parked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.parked
}

// memStore is a CursorStore in memory; saves are kept in order.
type memStore struct {
	mu    sync.Mutex
	saves []CursorRecord
}

func (s *memStore) Load(context.Context) (CursorRecord, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.saves) == 0 {
		return CursorRecord{}, false, nil
	}
	return s.saves[len(s.saves)-1], true, nil
}

func (s *memStore) Save(_ context.Context, rec CursorRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saves = append(s.saves, rec)
	return nil
}

func (s *memStore) Saves() []CursorRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CursorRecord(nil), s.saves...)
}

// recorder is an Ingester that accepts every event once and answers
// DUPLICATE for an id it has seen; refuse, when set, decides a rejection.
type recorder struct {
	mu     sync.Mutex
	seen   map[string]int // id -> times admitted (ACCEPTED)
	calls  int
	refuse func(call int, ev *ingestv1.Event) *ingestv1.Rejection
}

func newRecorder() *recorder { return &recorder{seen: map[string]int{}} }

func (r *recorder) Ingest(_ context.Context, _ string, events []*ingestv1.Event) []*ingestv1.EventResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	out := make([]*ingestv1.EventResult, len(events))
	for i, ev := range events {
		res := &ingestv1.EventResult{Index: uint32(i), Id: ev.GetId()}
		var rej *ingestv1.Rejection
		if r.refuse != nil {
			rej = r.refuse(r.calls, ev)
		}
		switch {
		case rej != nil:
			res.Outcome, res.Rejection = ingestv1.Outcome_REJECTED, rej
		case r.seen[ev.GetId()] > 0:
			res.Outcome = ingestv1.Outcome_DUPLICATE
		default:
			r.seen[ev.GetId()]++
			res.Outcome = ingestv1.Outcome_ACCEPTED
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
	return startPartner(t, httptest.NewServer, handle)
}

// startPartner serves handle with start (httptest.NewServer or
// NewTLSServer), recording every request.
func startPartner(t testing.TB, start func(http.Handler) *httptest.Server, handle func(n int, w http.ResponseWriter, r *http.Request)) *partner {
	p := &partner{}
	p.Server = start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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

// cursors returns the cursor query parameter of every request.
func (p *partner) cursors() []string {
	var out []string
	for _, r := range p.Requests() {
		out = append(out, r.URL.Query().Get("cursor"))
	}
	return out
}

// item is a test item: {"id": ..., "at": ..., "body": {...}}.
func item(id string) map[string]any {
	return map[string]any{"id": id, "at": "2026-11-29T11:59:00Z", "key": "k-" + id, "body": map[string]any{"n": id}}
}

func items(prefix string, from, to int) []map[string]any {
	var out []map[string]any
	for i := from; i < to; i++ {
		out = append(out, item(fmt.Sprintf("%s%d", prefix, i)))
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// cursorPage answers a page of items with the next cursor ("" for none).
func cursorPage(w http.ResponseWriter, its []map[string]any, next string) {
	body := map[string]any{"data": its}
	if next != "" {
		body["next"] = next
	} else {
		body["next"] = nil
	}
	writeJSON(w, http.StatusOK, body)
}

// testConfig is a cursor poller of url with items at /data and test items.
func testConfig(name, base string) Config {
	c := NewDefaultConfig()
	c.Name = name
	c.URL = base + "/items?cursor={cursor}"
	c.Interval = time.Hour // the fake clock parks here: caught up
	c.RequestTimeout = 5 * time.Second
	c.Pagination = PaginationConfig{Type: PaginateCursor, Cursor: "/next", StartPage: 1}
	c.Items = "/data"
	c.Mapping = MappingConfig{ID: "/id", Type: "test.Item", OccurredAt: "/at", PartitionKey: "/key", Payload: "/body"}
	c.MaxRetryAfter = 10 * time.Minute
	c.Backoff = backoff.Config{Initial: time.Second, Max: 30 * time.Second}
	c.Breaker = BreakerConfig{Failures: 3, Cooldown: time.Minute}
	return c
}

func identityJitter(d time.Duration) time.Duration { return d }

// run starts p and returns a stop that cancels it and returns Run's error.
func run(t testing.TB, p *Poller) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("poller did not stop")
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// eventually checks cond until it holds, or fails the test at the deadline.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitfor.Condition(t, 20*time.Second, what, cond)
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newTestPoller(t testing.TB, cfg Config, ing Ingester, store CursorStore, clk Clock, opts ...Option) (*Poller, *Metrics) {
	t.Helper()
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	all := append([]Option{WithClock(clk), WithLogger(quietLog()), WithMetrics(m), WithJitter(identityJitter)}, opts...)
	p, err := NewPoller(cfg, ing, store, all...)
	if err != nil {
		t.Fatal(err)
	}
	return p, m
}

func counter(t testing.TB, m *Metrics, vec string, labels ...string) float64 {
	t.Helper()
	switch vec {
	case "requests":
		return testutil.ToFloat64(m.requests.WithLabelValues(labels...))
	case "items":
		return testutil.ToFloat64(m.items.WithLabelValues(labels...))
	case "pages":
		return testutil.ToFloat64(m.pages.WithLabelValues(labels...))
	case "pageFailures":
		return testutil.ToFloat64(m.pageFailures.WithLabelValues(labels...))
	case "waited":
		return testutil.ToFloat64(m.waited.WithLabelValues(labels...))
	case "circuit":
		return testutil.ToFloat64(m.circuit.WithLabelValues(labels...))
	case "tokenRefresh":
		return testutil.ToFloat64(m.tokenRefresh.WithLabelValues(labels...))
	case "authFailures":
		return testutil.ToFloat64(m.authFailures.WithLabelValues(labels...))
	case "up":
		return testutil.ToFloat64(m.up.WithLabelValues(labels...))
	}
	t.Fatalf("no metric %s", vec)
	return 0
}

func joinDur(ds []time.Duration) string {
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(d.String())
	}
	return b.String()
}
