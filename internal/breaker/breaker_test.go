package breaker

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestRatio(t *testing.T) {
	cfg := Config{Window: 10 * time.Second, MinRequests: 4, FailureRatio: 0.5, Cooldown: time.Second}
	clock := newFakeClock()
	var states []State
	var mu sync.Mutex
	b := New(cfg, clock, func(s State) {
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
	want := []State{Open, HalfOpen, Open, HalfOpen, Closed}
	if len(states) != len(want) {
		t.Fatalf("transitions %v, want %v", states, want)
	}
	for i := range want {
		if states[i] != want[i] {
			t.Fatalf("transitions %v, want %v", states, want)
		}
	}
}

func TestRatioWindowExpires(t *testing.T) {
	cfg := Config{Window: 10 * time.Second, MinRequests: 4, FailureRatio: 0.5, Cooldown: time.Second}
	clock := newFakeClock()
	b := New(cfg, clock, nil)
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

func TestAbandonedProbe(t *testing.T) {
	cfg := Config{Window: 10 * time.Second, MinRequests: 1, FailureRatio: 1, Cooldown: time.Second}
	clock := newFakeClock()
	b := New(cfg, clock, nil)
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

func TestConsecutive(t *testing.T) {
	cfg := Config{ConsecutiveFailures: 3, Cooldown: time.Minute}
	clock := newFakeClock()
	var states []State
	b := New(cfg, clock, func(s State) { states = append(states, s) })

	// A success between failures starts the count again.
	b.Record(true)
	b.Record(true)
	b.Record(false)
	b.Record(true)
	b.Record(true)
	if b.State() != Closed {
		t.Fatalf("opened on %v with a success between the failures", b.State())
	}
	b.Record(true)
	if b.State() != Open {
		t.Fatalf("state %v after three failures in a row, want open", b.State())
	}
	if ok, wait, _ := b.Acquire(); ok || wait != time.Minute {
		t.Fatalf("Acquire while open = %v, %v", ok, wait)
	}
	clock.Advance(time.Minute)
	if ok, _, _ := b.Acquire(); !ok {
		t.Fatal("no probe after the cool-down")
	}
	// One failed probe reopens it: the count does not start again from 0.
	b.Record(true)
	if b.State() != Open {
		t.Fatalf("state %v after a failed probe", b.State())
	}
	clock.Advance(time.Minute)
	if ok, _, _ := b.Acquire(); !ok {
		t.Fatal("no second probe")
	}
	b.Record(false)
	// Closed again with the count cleared: two failures keep it closed.
	b.Record(true)
	b.Record(true)
	if b.State() != Closed {
		t.Fatalf("state %v: the count survived the close", b.State())
	}
	want := []State{Open, HalfOpen, Open, HalfOpen, Closed}
	if len(states) != len(want) {
		t.Fatalf("transitions %v, want %v", states, want)
	}
	for i := range want {
		if states[i] != want[i] {
			t.Fatalf("transitions %v, want %v", states, want)
		}
	}
}

// TestRatioOffIgnoresTheWindow holds the ratio rule off at FailureRatio 0,
// whatever MinRequests says.
func TestRatioOffIgnoresTheWindow(t *testing.T) {
	b := New(Config{ConsecutiveFailures: 100, Window: time.Minute, MinRequests: 1, Cooldown: time.Second}, newFakeClock(), nil)
	for range 10 {
		b.Record(true)
	}
	if b.State() != Closed {
		t.Fatalf("state %v with the ratio rule off", b.State())
	}
}

func TestStateNames(t *testing.T) {
	for s, want := range map[State]string{Closed: "closed", Open: "open", HalfOpen: "half_open", State(7): "state(7)"} {
		if got := s.String(); got != want {
			t.Errorf("%d: %q, want %q", s, got, want)
		}
	}
}
