package breaker

import (
	"fmt"
	"sync"
	"time"
)

// State is a breaker's state.
type State int32

const (
	// Closed lets every call through.
	Closed State = iota
	// Open lets no call through until the cool-down has passed.
	Open
	// HalfOpen lets one probe through; its outcome closes or reopens.
	HalfOpen
)

// String is the state's name in logs, metrics help and status documents.
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half_open"
	}
	return fmt.Sprintf("state(%d)", int32(s))
}

// Config is when a breaker opens and how long it stays open.
type Config struct {
	// Window is the span over which the failure ratio is measured.
	Window time.Duration
	// MinRequests is the fewest calls in the window that can open it.
	MinRequests int
	// FailureRatio opens it when failures / calls reaches it; 0 turns the
	// ratio rule off.
	FailureRatio float64
	// ConsecutiveFailures opens it after that many failures in a row; 0
	// turns the rule off.
	ConsecutiveFailures int
	// Cooldown is how long it stays open before a half-open probe.
	Cooldown time.Duration
}

// Clock is the breaker's time source; tests pass one they move.
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// buckets is how many slices the window is counted in.
const buckets = 10

// Breaker is a circuit breaker; see the package documentation.
type Breaker struct {
	cfg      Config
	clock    Clock
	onChange func(State)

	mu          sync.Mutex
	state       State
	openedAt    time.Time
	probing     bool
	consecutive int
	window      [buckets]bucket
	changed     chan struct{}
}

type bucket struct {
	start         time.Time
	total, failed int
}

// New returns a closed breaker. clock nil is the system clock. onChange,
// when not nil, is called with each new state, in order, outside the
// breaker's lock.
func New(cfg Config, clock Clock, onChange func(State)) *Breaker {
	if clock == nil {
		clock = systemClock{}
	}
	return &Breaker{cfg: cfg, clock: clock, onChange: onChange, changed: make(chan struct{})}
}

// State returns the current state. An open breaker whose cool-down has
// passed reports Open until a caller takes the probe.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// Acquire asks to call. ok is true when the call may go ahead (in
// HalfOpen, the caller holds the one probe and must Record its outcome or
// Abandon it). Otherwise the caller waits for changed to be closed or for
// wait to pass, whichever comes first, and asks again.
func (b *Breaker) Acquire() (ok bool, wait time.Duration, changed <-chan struct{}) {
	b.mu.Lock()
	var notify []State
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

// Abandon returns a permit whose call ended without an outcome: a
// half-open probe is handed to the next caller, and nothing is counted.
func (b *Breaker) Abandon() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == HalfOpen && b.probing {
		b.probing = false
		b.wakeLocked()
	}
}

// Judged reports whether the breaker is closed with at least MinRequests
// calls in the window: enough for the ratio rule to have opened it had the
// dependency been failing.
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
	for _, bk := range b.window {
		if now.Sub(bk.start) < b.cfg.Window {
			total += bk.total
			failed += bk.failed
		}
	}
	return total, failed
}

// Record reports a call's outcome: failed is true when the dependency
// failed it.
func (b *Breaker) Record(failed bool) {
	b.mu.Lock()
	var notify []State
	defer func() {
		b.mu.Unlock()
		b.notify(notify)
	}()
	now := b.clock.Now()
	switch b.state {
	case Open:
		// A call that started before the breaker opened.
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
		b.window = [buckets]bucket{}
		b.consecutive = 0
		notify = b.setLocked(Closed)
		return
	}
	if failed {
		b.consecutive++
	} else {
		b.consecutive = 0
	}
	if b.cfg.ConsecutiveFailures > 0 && b.consecutive >= b.cfg.ConsecutiveFailures {
		b.openedAt = now
		notify = b.setLocked(Open)
		return
	}
	if b.cfg.FailureRatio <= 0 {
		return
	}
	width := b.cfg.Window / buckets
	if width <= 0 {
		width = 1
	}
	start := now.Truncate(width)
	i := int(start.UnixNano()/int64(width)) % buckets
	if i < 0 {
		i += buckets
	}
	if !b.window[i].start.Equal(start) {
		b.window[i] = bucket{start: start}
	}
	b.window[i].total++
	if failed {
		b.window[i].failed++
	}
	total, bad := b.countLocked(now)
	if total >= b.cfg.MinRequests && float64(bad) >= b.cfg.FailureRatio*float64(total) {
		b.openedAt = now
		notify = b.setLocked(Open)
	}
}

// setLocked moves to s and wakes the waiters; it returns the states to
// announce.
func (b *Breaker) setLocked(s State) []State {
	if b.state == s {
		return nil
	}
	b.state = s
	if s == Open {
		b.consecutive = 0
	}
	b.wakeLocked()
	return []State{s}
}

func (b *Breaker) wakeLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

func (b *Breaker) notify(states []State) {
	if b.onChange == nil {
		return
	}
	for _, s := range states {
		b.onChange(s)
	}
}
