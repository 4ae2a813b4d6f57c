package admin

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrNotChecked is a Checker's answer before its first check has finished.
var ErrNotChecked = errors.New("admin: readiness not checked yet")

// Defaults of a Checker.
const (
	DefaultCheckInterval = time.Second
	DefaultCheckTimeout  = 2 * time.Second
)

// Checker runs a readiness check every interval, each bounded by its
// timeout, and keeps the last answer. It is a Readiness for Server.
type Checker struct {
	check    func(context.Context) error
	interval time.Duration
	timeout  time.Duration
	onChange func(error)

	mu      sync.Mutex
	last    error
	started bool
	stop    context.CancelFunc // ends ctx: the goroutine's and its check's
	ctx     context.Context
	done    chan struct{}
}

// CheckerOption configures NewChecker.
type CheckerOption interface{ applyChecker(*Checker) }

type checkerOptionFunc func(*Checker)

func (f checkerOptionFunc) applyChecker(c *Checker) { f(c) }

// CheckEvery replaces DefaultCheckInterval and DefaultCheckTimeout.
func CheckEvery(interval, timeout time.Duration) CheckerOption {
	return checkerOptionFunc(func(c *Checker) { c.interval, c.timeout = interval, timeout })
}

// OnChange is called from the Checker's goroutine with each answer that
// differs from the one before (nil: ready); the first answer always
// counts as a change. By default nothing is called.
func OnChange(f func(error)) CheckerOption {
	return checkerOptionFunc(func(c *Checker) { c.onChange = f })
}

// NewChecker returns a Checker of check; Start runs it.
func NewChecker(check func(context.Context) error, opts ...CheckerOption) *Checker {
	c := &Checker{
		check:    check,
		interval: DefaultCheckInterval,
		timeout:  DefaultCheckTimeout,
		last:     ErrNotChecked,
		done:     make(chan struct{}),
	}
	c.ctx, c.stop = context.WithCancel(context.Background())
	for _, o := range opts {
		o.applyChecker(c)
	}
	return c
}

// Ready returns the last answer: nil when ready, ErrNotChecked before the
// first check, else why not.
func (c *Checker) Ready() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Start starts the checking goroutine; the first check runs at once.
// Calling it again does nothing.
func (c *Checker) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return
	}
	c.started = true
	go c.run()
}

// Stop stops the goroutine and waits for it, a check in progress
// included (it is cut off by its context). Calling it again, or without
// Start, does nothing.
func (c *Checker) Stop() {
	c.mu.Lock()
	started := c.started
	c.started = true // a Start after Stop does nothing
	c.mu.Unlock()
	c.stop()
	if started {
		<-c.done
	}
}

func (c *Checker) run() {
	defer close(c.done)
	ctx := c.ctx
	tick := time.NewTicker(c.interval)
	defer tick.Stop()
	first := true
	for {
		cctx, ccancel := context.WithTimeout(ctx, c.timeout)
		err := c.check(cctx)
		ccancel()
		if ctx.Err() != nil {
			return // an answer cut off by Stop says nothing
		}
		c.mu.Lock()
		changed := first || !sameAnswer(err, c.last)
		c.last = err
		c.mu.Unlock()
		first = false
		if changed && c.onChange != nil {
			c.onChange(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func sameAnswer(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Error() == b.Error()
}
