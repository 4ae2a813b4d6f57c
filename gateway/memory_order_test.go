package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/waitfor"
)

// TestMemoryWaitersInOrder: a source's requests get memory in the order
// they asked: while a large one waits, a small one that would fit does
// not pass it; once room comes back the large one has it, then the small.
func TestMemoryWaitersInOrder(t *testing.T) {
	s := defaultService(t, func(c *Config) {
		c.Limits.RequestMemoryBytes = 4 * requestCost(c.Limits.MaxRequestBytes) // each half: two
		c.Limits.MaxQueueWait = 20 * time.Second
	})
	src := s.sources.byName["src"]
	full := requestCost(s.cfg.Limits.MaxRequestBytes)
	ctx := context.Background()
	first, f := s.holdMemory(ctx, src, 2*full-1000) // 1000 bytes left
	if f != nil {
		t.Fatal(f)
	}
	large := make(chan *memoryHold, 1)
	go func() {
		h, f := s.holdMemory(ctx, src, full)
		if f != nil {
			t.Error(f)
		}
		large <- h
	}()
	waitfor.Condition(t, 10*time.Second, "the large request to wait", func() bool {
		if src.memory.turn.TryAcquire(1) {
			src.memory.turn.Release(1)
			return false
		}
		return true
	})
	if h, ok := s.memory.tryTake(src.memory, 100); ok {
		h.release()
		t.Fatal("a small request passed the large one waiting before it")
	}
	first.release()
	h := <-large
	if h == nil {
		t.FailNow()
	}
	defer h.release()
	small, ok := s.memory.tryTake(src.memory, 100)
	if !ok {
		t.Fatal("the small request found no room after the large one")
	}
	small.release()
}
