package consumer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sink"
)

// TestReady: ready while Kafka answers and the sink writes; not ready
// while the sink's breaker is open; ready again once the sink recovers.
func TestReady(t *testing.T) {
	addrs := newCluster(t, 1)
	s := newMemSink()
	down := true
	s.setFail(func([]sink.Event) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if down {
			return sink.TransientError(errors.New("503"), 0)
		}
		return nil
	})
	cfg := testConfig("ready")
	cfg.Breaker.MinRequests = 1
	cfg.Retry.MaxAttempts = 1000 // keep the events on the sink, not the DLQ
	r := start(t, cfg, addrs, s)
	ready := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return r.c.Ready(ctx)
	}
	if err := ready(); err != nil {
		t.Fatalf("before any write: %v", err)
	}
	ids := produceEvents(t, addrs, 5, 5)
	waitFor(t, 20*time.Second, "not ready with the breaker open", func() bool { return errors.Is(ready(), errBreakerOpen) })
	s.mu.Lock()
	down = false
	s.mu.Unlock()
	waitFor(t, 20*time.Second, "the events written", func() bool { return s.hasAll(ids) })
	waitFor(t, 20*time.Second, "ready again", func() bool { return ready() == nil })
}
