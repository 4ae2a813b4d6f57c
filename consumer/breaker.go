package consumer

import (
	"fmt"
	"sync"
	"time"
)

// BreakerState is a circuit breaker's state.
type BreakerState int32

const (
	// Closed lets every write through.
	Closed BreakerState = iota
	// Open lets no write through until the cool-down has passed.
	Open
	// HalfOpen lets one probe through; its outcome closes or reopens.
	HalfOpen
)

func (s BreakerState) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("state(%d)", int32(s))
}

// breakerBuckets is how many slices the window is counted in.
const breakerBuckets = 10

// Breaker is a sink's circuit breaker. It counts writes and transient
// failures in a sliding window of breakerBuckets buckets; with at least
// MinRequests writes and a failure ratio at or above FailureRatio it opens.
// After Cooldown one caller gets a probe permit; the probe's outcome closes
// it (and clears the window) or opens it again. It is safe for concurrent
// use.
type Breaker struct {
	cfg      BreakerConfig
	clock    Clock
	onChange func(BreakerState)

	mu       sync.Mutex
	state    BreakerState
	openedAt time.Time
	probing  bool
	buckets  [breakerBuckets]bucket
	changed  chan struct{}
}

type bucket struct {
	start         time.Time
	total, failed int
}

// NewBreaker returns a closed breaker. onChange, when not nil, is called
// with each new state, in order, outside the breaker's lock.
func NewBreaker(cfg BreakerConfig, clock Clock, onChange func(BreakerState)) *Breaker {
	if clock == nil {
		clock = systemClock{}
	}
	return &Breaker{cfg: cfg, clock: clock, onChange: onChange, changed: make(chan struct{})}
}

// State returns the current state. An open breaker whose cool-down has
// passed reports Open until a caller takes the probe.
func (b *Breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// Acquire asks to write. ok is true when the write may go ahead (in
// HalfOpen, the caller holds the one probe and must Record its outcome).
// Otherwise the caller waits for changed to be closed or for wait to pass,
// whichever comes first, and asks again.
func (b *Breaker) Acquire() (ok bool, wait time.Duration, changed <-chan struct{}) {
	b.mu.Lock()
	var notify []BreakerState
	defer func() {
		b.mu.Unlock()
		b.notify(notify)
	}()
	switch b.state {
	case Closed:
		return true, 0, nil
	case Open:
		left := b.openedAt.Add(b.cfg.Cooldown).Sub(b.clock.Now())
		if left > 0 {
			return false, left, b.changed
		}
		notify = b.setLocked(HalfOpen)
		b.probing = true
		return true, 0, nil
	default: // HalfOpen
		if !b.probing {
			b.probing = true
			return true, 0, nil
		}
		return false, b.cfg.Cooldown, b.changed
	}
}

// Abandon returns a permit whose write ended without an outcome (its
// work was abandoned): a half-open probe is handed to the next caller, and
// nothing is counted.
func (b *Breaker) Abandon() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == HalfOpen && b.probing {
		b.probing = false
		close(b.changed)
		b.changed = make(chan struct{})
	}
}

// Judged reports whether the window holds at least MinRequests writes:
// enough for the breaker to have opened had the sink been failing.
func (b *Breaker) Judged() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != Closed {
		return false
	}
	total, _ := b.countLocked(b.clock.Now())
	return total >= b.cfg.MinRequests
}

func (b *Breaker) countLocked(now time.Time) (total, failed int) {
	for _, bk := range b.buckets {
		if now.Sub(bk.start) < b.cfg.Window {
			total += bk.total
			failed += bk.failed
		}
	}
	return total, failed
}

// Record reports a write's outcome: failed is true for a transient
// failure. A permanent failure is the input's fault, not the sink's, and
// is recorded as a success.
func (b *Breaker) Record(failed bool) {
	b.mu.Lock()
	var notify []BreakerState
	defer func() {
		b.mu.Unlock()
		b.notify(notify)
	}()
	now := b.clock.Now()
	switch b.state {
	case Open:
		// A write that started before the breaker opened.
		return
	case HalfOpen:
		if !b.probing {
			return
		}
		b.probing = false
		if failed {
			b.openedAt = now
			notify = b.setLocked(Open)
			return
		}
		b.buckets = [breakerBuckets]bucket{}
		notify = b.setLocked(Closed)
		return
	}
	width := b.cfg.Window / breakerBuckets
	if width <= 0 {
		width = 1
	}
	start := now.Truncate(width)
	i := int(start.UnixNano()/int64(width)) % breakerBuckets
	if i < 0 {
		i += breakerBuckets
	}
	if !b.buckets[i].start.Equal(start) {
		b.buckets[i] = bucket{start: start}
	}
	b.buckets[i].total++
	if failed {
		b.buckets[i].failed++
	}
	total, bad := b.countLocked(now)
	if total >= b.cfg.MinRequests && float64(bad) >= b.cfg.FailureRatio*float64(total) {
		b.openedAt = now
		notify = b.setLocked(Open)
	}
}

// setLocked moves to s and wakes the waiters; it returns the states to
// announce.
func (b *Breaker) setLocked(s BreakerState) []BreakerState {
	if b.state == s {
		return nil
	}
	b.state = s
	close(b.changed)
	b.changed = make(chan struct{})
	return []BreakerState{s}
}

func (b *Breaker) notify(states []BreakerState) {
	if b.onChange == nil {
		return
	}
	for _, s := range states {
		b.onChange(s)
	}
}
