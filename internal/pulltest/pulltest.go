package pulltest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// Clock advances by every Sleep at once and records the waits. A sleep of
// Park or longer is the poller being caught up: it blocks until the
// poller is stopped, so a test can wait for that condition (Parked).
type Clock struct {
	// Park is the shortest sleep that parks; NewClock sets an hour.
	Park time.Duration

	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
	parked int
}

// NewClock returns a Clock at 2026-11-29T12:00:00Z that parks at an hour.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Park: time.Hour}
}

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	if d >= c.Park {
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

// Sleeps returns every sleep asked for, in order.
func (c *Clock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// Parked counts the sleeps that parked.
func (c *Clock) Parked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.parked
}

// Store is a cursor store in memory (T is pull.CursorRecord); saves are
// kept in order, and Load returns the last.
type Store[T any] struct {
	mu    sync.Mutex
	saves []T
}

func (s *Store[T]) Load(context.Context) (T, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.saves) == 0 {
		var zero T
		return zero, false, nil
	}
	return s.saves[len(s.saves)-1], true, nil
}

func (s *Store[T]) Save(_ context.Context, rec T) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saves = append(s.saves, rec)
	return nil
}

// Saves returns every save, in order.
func (s *Store[T]) Saves() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]T(nil), s.saves...)
}

// Seed makes recs the saves so far, as if saved by an earlier run.
func (s *Store[T]) Seed(recs ...T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saves = append([]T(nil), recs...)
}

// Recorder is an ingester that accepts every event once and answers
// DUPLICATE for an id it has seen.
type Recorder struct {
	// Refuse, when set, decides a rejection for an event of call number
	// call (1 for the first); nil lets the event through.
	Refuse func(call int, ev *ingestv1.Event) *ingestv1.Rejection

	mu    sync.Mutex
	seen  map[string]int // id -> times admitted (ACCEPTED)
	calls int
}

func NewRecorder() *Recorder { return &Recorder{seen: map[string]int{}} }

func (r *Recorder) Ingest(_ context.Context, _ string, events []*ingestv1.Event) []*ingestv1.EventResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	out := make([]*ingestv1.EventResult, len(events))
	for i, ev := range events {
		res := &ingestv1.EventResult{Index: uint32(i), Id: ev.GetId()}
		var rej *ingestv1.Rejection
		if r.Refuse != nil {
			rej = r.Refuse(r.calls, ev)
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

// IDs returns how many times each id was accepted.
func (r *Recorder) IDs() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.seen))
	for k, v := range r.seen {
		out[k] = v
	}
	return out
}

// Partner is an httptest server whose answers a test scripts; it records
// every request.
type Partner struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
}

// NewPartner serves handle over plain HTTP; n counts the requests, from 1.
func NewPartner(t testing.TB, handle func(n int, w http.ResponseWriter, r *http.Request)) *Partner {
	return StartPartner(t, httptest.NewServer, handle)
}

// StartPartner serves handle with start (httptest.NewServer or
// NewTLSServer), recording every request; the test's cleanup closes it.
func StartPartner(t testing.TB, start func(http.Handler) *httptest.Server, handle func(n int, w http.ResponseWriter, r *http.Request)) *Partner {
	p := &Partner{}
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

// Requests returns every request, in order.
func (p *Partner) Requests() []*http.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*http.Request(nil), p.requests...)
}

// Cursors returns the cursor query parameter of every request.
func (p *Partner) Cursors() []string {
	var out []string
	for _, r := range p.Requests() {
		out = append(out, r.URL.Query().Get("cursor"))
	}
	return out
}

// Item is a test item: {"id": ..., "at": ..., "key": ..., "body": {...}}.
func Item(id string) map[string]any {
	return map[string]any{"id": id, "at": "2026-11-29T11:59:00Z", "key": "k-" + id, "body": map[string]any{"n": id}}
}

// Items are Item(prefix+i) for i in [from, to).
func Items(prefix string, from, to int) []map[string]any {
	var out []map[string]any
	for i := from; i < to; i++ {
		out = append(out, Item(fmt.Sprintf("%s%d", prefix, i)))
	}
	return out
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// CursorPage answers a page of items at /data with the next cursor at
// /next (null for none).
func CursorPage(w http.ResponseWriter, its []map[string]any, next string) {
	body := map[string]any{"data": its, "next": nil}
	if next != "" {
		body["next"] = next
	}
	WriteJSON(w, http.StatusOK, body)
}

// Runner is what Run starts: a poller.
type Runner interface{ Run(context.Context) error }

// stopWait bounds how long stop waits for Run to return.
const stopWait = 20 * time.Second

// Run starts p and returns a stop that cancels it and returns Run's error;
// the test's cleanup stops it too.
func Run(t testing.TB, p Runner) (stop func() error) {
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
			case <-time.After(stopWait):
				t.Fatal("poller did not stop")
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}
