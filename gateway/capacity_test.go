package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// TestCapacityShedsAtOnce: with no room to check a request's events
// within max_queue_wait, the request is refused UNAVAILABLE with its
// retry_after, counted as shed; with room again, it is accepted.
func TestCapacityShedsAtOnce(t *testing.T) {
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewDefaultConfig()
	cfg.Limits.MaxEventsPerRequest = 10
	cfg.Limits.CheckingEvents = 10
	cfg.Limits.MaxQueueWait = 50 * time.Millisecond
	cfg.UnavailableRetryAfter = 3 * time.Second
	cfg.Dedup.Window = 0
	cfg.Sources = []SourceConfig{{Name: "src", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}}}
	reg := prometheus.NewRegistry()
	s, err := New(cfg, served(registry), acceptAll{}, WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	events := func(from int) []*ingestv1.Event {
		out := make([]*ingestv1.Event, 10)
		for i := range out {
			out[i] = &ingestv1.Event{
				Id: fmt.Sprintf("cap-%d", from+i), Type: "examples.logs.v1.LogLine", OccurredAt: timestamppb.Now(),
				Payload: &ingestv1.Event_Json{Json: string(examples.LogLineJSON)},
			}
		}
		return out
	}
	ctx := context.Background()

	// Another request holds all the room.
	if err := s.checking.Acquire(ctx, 10); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i, r := range s.Ingest(ctx, "src", events(0)) {
		rej := r.GetRejection()
		if r.GetOutcome() != ingestv1.Outcome_REJECTED || rej.GetReason() != ingestv1.Reason_UNAVAILABLE ||
			!rej.GetRetryable() || rej.GetRetryAfter().AsDuration() != 3*time.Second {
			t.Fatalf("event %d with no room: %v", i, r)
		}
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("refused only after %v", waited) // a hang, not a duration bound
	}
	if n := testutil.ToFloat64(s.metrics.shed); n != 10 {
		t.Fatalf("shed %v events, want 10", n)
	}
	// A pushBack of a gRPC request refused whole: UNAVAILABLE with RetryInfo.
	if f := pushBack(s.Ingest(ctx, "src", events(10))); f == nil || f.Reason != ingestv1.Reason_UNAVAILABLE || f.RetryAfter != 3*time.Second {
		t.Fatalf("whole-request answer %+v", f)
	}

	s.checking.Release(10)
	for i, r := range s.Ingest(ctx, "src", events(20)) {
		if r.GetOutcome() != ingestv1.Outcome_ACCEPTED {
			t.Fatalf("event %d with room: %v", i, r)
		}
	}
	// Everything checked gave its room back.
	if !s.checking.TryAcquire(10) {
		t.Fatal("room was not released after the checks")
	}
}

// TestCheckingWeighsBytes: a request weighs its events or its bytes in
// checkingUnitBytes units, whichever is more, and never more than the
// whole gate.
func TestCheckingWeighsBytes(t *testing.T) {
	s := defaultService(t, func(*Config) {})
	cfg := s.cfg
	for _, c := range []struct{ events, bytes, want int }{
		{100, 30 << 10, 100},
		{1, 4 << 20, 512},
		{1, 1, 1},
		{500, 64 << 20, cfg.Limits.CheckingEvents},
	} {
		if got := s.checkingWeight(c.events, c.bytes); got != c.want {
			t.Errorf("checkingWeight(%d events, %d bytes) = %d, want %d", c.events, c.bytes, got, c.want)
		}
	}
}

// TestMemoryHoldShrinks: a hold hands back what it has beyond its new
// size, once, and a budget with no room refuses UNAVAILABLE in time.
func TestMemoryHoldShrinks(t *testing.T) {
	s := defaultService(t, func(c *Config) {
		c.Limits.RequestMemoryBytes = 2 * requestCost(c.Limits.MaxRequestBytes)
		c.Limits.MaxQueueWait = 20 * time.Millisecond
	})
	cfg := s.cfg
	ctx := context.Background()
	full := requestCost(cfg.Limits.MaxRequestBytes)
	src := s.sources.byName["src"]
	h, f := s.holdMemory(ctx, src, full)
	if f != nil {
		t.Fatal(f)
	}
	if _, f := s.holdMemory(ctx, src, 1); f == nil || f.Reason != ingestv1.Reason_UNAVAILABLE || f.RetryAfter <= 0 {
		t.Fatalf("a full budget: %v, want UNAVAILABLE with a retry_after", f)
	}
	h.shrink(requestCost(100))
	if s.memory.inUse() != float64(requestCost(100)) {
		t.Fatalf("held %v after shrinking, want %d", s.memory.inUse(), requestCost(100))
	}
	other, f := s.holdMemory(ctx, src, full-requestCost(100))
	if f != nil {
		t.Fatalf("the room handed back: %v", f)
	}
	other.release()
	h.release()
	h.release()
	if s.memory.inUse() != 0 {
		t.Fatalf("held %v after release, want 0", s.memory.inUse())
	}
}

// defaultService is a Service on the default config, changed by mutate,
// with one source and the example contracts.
func defaultService(t *testing.T, mutate func(*Config)) *Service {
	t.Helper()
	cfg := NewDefaultConfig()
	cfg.Sources = []SourceConfig{{Name: "src", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}}}
	mutate(&cfg)
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, served(registry), acceptAll{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCountRuns: events are counted by runs of neighbours with the same
// labels, and every event of every run is counted under its own.
func TestCountRuns(t *testing.T) {
	s := defaultService(t, func(*Config) {})
	src := &source{name: "src"}
	const logs, shop = "examples.logs.v1.LogLine", "examples.shop.v1.OrderPlaced"
	var events []*ingestv1.Event
	var results []*ingestv1.EventResult
	add := func(typ string, r *ingestv1.EventResult) {
		events = append(events, &ingestv1.Event{Type: typ})
		results = append(results, r)
	}
	ok := &ingestv1.EventResult{Outcome: ingestv1.Outcome_ACCEPTED}
	bad := rejected(0, "", reject(ingestv1.Reason_MALFORMED, "x"))
	for _, step := range []struct {
		typ string
		r   *ingestv1.EventResult
	}{{logs, ok}, {logs, ok}, {logs, bad}, {logs, ok}, {shop, ok}, {"nope", ok}, {"nope", ok}} {
		add(step.typ, step.r)
	}
	s.count(src, events, results)
	for _, want := range []struct {
		labels []string
		n      float64
	}{
		{[]string{"src", logs, "ACCEPTED", ""}, 3},
		{[]string{"src", logs, "REJECTED", "MALFORMED"}, 1},
		{[]string{"src", shop, "ACCEPTED", ""}, 1},
		{[]string{"src", "unknown", "ACCEPTED", ""}, 2},
	} {
		if got := testutil.ToFloat64(s.metrics.events.WithLabelValues(want.labels...)); got != want.n {
			t.Errorf("%v: %v, want %v", want.labels, got, want.n)
		}
	}
}
