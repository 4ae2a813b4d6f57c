package consumer

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves. After fires at once when d has
// already passed, otherwise when the test advances past it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{c.now.Add(d), ch})
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

func TestBreaker(t *testing.T) {
	cfg := BreakerConfig{Window: 10 * time.Second, MinRequests: 4, FailureRatio: 0.5, Cooldown: time.Second}
	clock := newFakeClock()
	var states []BreakerState
	var mu sync.Mutex
	b := NewBreaker(cfg, clock, func(s BreakerState) {
		mu.Lock()
		states = append(states, s)
		mu.Unlock()
	})

	// Below MinRequests nothing opens it, whatever the ratio.
	for range 3 {
		b.Record(true)
	}
	if b.State() != Closed {
		t.Fatalf("opened below min_requests: %v", b.State())
	}
	// The fourth write reaches MinRequests with 3/4 failed.
	b.Record(false)
	if b.State() != Open {
		t.Fatalf("state %v after 3 of 4 failed, want open", b.State())
	}
	ok, wait, changed := b.Acquire()
	if ok || wait != time.Second {
		t.Fatalf("Acquire while open = %v, %v", ok, wait)
	}
	// Late outcomes of writes started before opening are ignored.
	b.Record(false)
	if b.State() != Open {
		t.Fatal("a late success closed an open breaker")
	}

	clock.Advance(time.Second)
	if ok, _, _ := b.Acquire(); !ok {
		t.Fatal("no probe after the cool-down")
	}
	select {
	case <-changed:
	default:
		t.Fatal("waiters not woken on half-open")
	}
	if ok, _, _ := b.Acquire(); ok {
		t.Fatal("a second probe while one is out")
	}
	// The probe fails: open again, for another cool-down.
	b.Record(true)
	if b.State() != Open {
		t.Fatalf("state %v after a failed probe", b.State())
	}
	if ok, _, _ := b.Acquire(); ok {
		t.Fatal("write let through right after a failed probe")
	}
	clock.Advance(time.Second)
	if ok, _, _ := b.Acquire(); !ok {
		t.Fatal("no second probe")
	}
	b.Record(false)
	if b.State() != Closed {
		t.Fatalf("state %v after a good probe", b.State())
	}
	// The window was cleared: three failures do not reopen it.
	for range 3 {
		b.Record(true)
	}
	if b.State() != Closed {
		t.Fatal("window not cleared on close")
	}

	mu.Lock()
	defer mu.Unlock()
	want := []BreakerState{Open, HalfOpen, Open, HalfOpen, Closed}
	if len(states) != len(want) {
		t.Fatalf("transitions %v, want %v", states, want)
	}
	for i := range want {
		if states[i] != want[i] {
			t.Fatalf("transitions %v, want %v", states, want)
		}
	}
}

func TestBreakerWindowExpires(t *testing.T) {
	cfg := BreakerConfig{Window: 10 * time.Second, MinRequests: 4, FailureRatio: 0.5, Cooldown: time.Second}
	clock := newFakeClock()
	b := NewBreaker(cfg, clock, nil)
	for range 3 {
		b.Record(true)
	}
	clock.Advance(11 * time.Second)
	// The old failures left the window: one more is 1 of 1, below
	// min_requests.
	b.Record(true)
	if b.State() != Closed {
		t.Fatal("failures older than the window counted")
	}
}

func TestBreakerAbandonedProbe(t *testing.T) {
	cfg := BreakerConfig{Window: 10 * time.Second, MinRequests: 1, FailureRatio: 1, Cooldown: time.Second}
	clock := newFakeClock()
	b := NewBreaker(cfg, clock, nil)
	b.Record(true)
	clock.Advance(time.Second)
	if ok, _, _ := b.Acquire(); !ok {
		t.Fatal("no probe")
	}
	_, _, changed := b.Acquire()
	b.Abandon()
	select {
	case <-changed:
	default:
		t.Fatal("waiters not woken when the probe was abandoned")
	}
	if b.State() != HalfOpen {
		t.Fatalf("an abandoned probe decided the state: %v", b.State())
	}
	if ok, _, _ := b.Acquire(); !ok {
		t.Fatal("the probe was not handed on")
	}
}
