package main

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"
)

// stopBound bounds how long a command run by a test takes to stop: the
// gateway's own shutdown is bounded by shutdownGrace twice.
const stopBound = 3 * shutdownGrace

// inProcess is a sluice command a test runs in this process until it
// stops it, or the test ends.
type inProcess struct {
	name   string
	cancel context.CancelFunc
	// done is closed once the command returned; err is set then.
	done chan struct{}
	err  error
	logs *syncBuffer // its stderr
	stop sync.Once
}

// startInProcess runs the sluice command args. At the test's end it is
// stopped and waited for; an error it ended with, other than its context's
// end, fails the test.
func startInProcess(t *testing.T, args ...string) *inProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &inProcess{name: args[0], cancel: cancel, done: make(chan struct{}), logs: newSyncBuffer()}
	go func() {
		defer close(p.done)
		p.err = run(ctx, args, io.Discard, p.logs)
	}()
	t.Cleanup(func() { p.Stop(t) })
	return p
}

// exited reports whether the command has returned, and its error.
func (p *inProcess) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// WaitUntil checks cond every few milliseconds until it holds. The test
// fails at once when the command returns first (it could not bind a
// listener, say), with its error and log, and at limit otherwise.
func (p *inProcess) WaitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-p.done:
			t.Fatalf("%s ended while the test waited for %s: %v\n%s", p.name, what, p.err, p.logs.String())
		case <-deadline.C:
			t.Fatalf("waited %v in vain for %s\n%s log:\n%s", limit, what, p.name, p.logs.String())
		case <-tick.C:
		}
	}
}

// Stop ends the command and waits for it; an error it ended with, other
// than its context's end, fails the test. Calling it again does nothing.
func (p *inProcess) Stop(t *testing.T) {
	t.Helper()
	p.stop.Do(func() {
		p.cancel()
		select {
		case <-p.done:
			if p.err != nil && !errors.Is(p.err, context.Canceled) {
				t.Errorf("%s: %v", p.name, p.err)
			}
		case <-time.After(stopBound):
			t.Errorf("%s did not stop within %v", p.name, stopBound)
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", p.name, p.logs.String())
		}
	})
}
