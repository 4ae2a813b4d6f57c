package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
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
	// bindFailed: it ended because a port was taken; Stop does not count
	// that against the test, which started it again (startListening).
	bindFailed bool
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
	if err := p.waitReady(limit, cond); err != nil {
		t.Fatalf("%s: %v, while the test waited for %s\n%s log:\n%s", p.name, err, what, p.name, p.logs.String())
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
			if p.err != nil && !errors.Is(p.err, context.Canceled) && !p.bindFailed {
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

// bindAttempts bounds how often startListening starts a command again.
const bindAttempts = 3

// startListening starts the sluice command that build describes and waits
// until ready holds, as WaitUntil does. build picks the command's ports
// (freePort) and writes its config. A port freePort picked can be taken
// before the command binds it, by another test's connection or listener;
// the command then ends with EADDRINUSE and is built and started again
// with other ports, at most bindAttempts times. Any other end fails the
// test.
func startListening(t *testing.T, limit time.Duration, what string, build func() (args []string, ready func() bool)) *inProcess {
	t.Helper()
	for attempt := 1; ; attempt++ {
		args, ready := build()
		p := startInProcess(t, args...)
		if err := p.waitReady(limit, ready); err == nil {
			return p
		} else if !errors.Is(err, syscall.EADDRINUSE) || attempt == bindAttempts {
			t.Fatalf("%s: %v, while the test waited for %s (attempt %d)\n%s log:\n%s", p.name, err, what, attempt, p.name, p.logs.String())
		}
		p.bindFailed = true
		t.Logf("%s could not bind a port picked for it, starting it again: %v", p.name, p.err)
	}
}

// waitReady checks ready every few milliseconds until it holds (nil), the
// command ends (its error), or limit passes (an error saying so).
func (p *inProcess) waitReady(limit time.Duration, ready func() bool) error {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !ready() {
		select {
		case <-p.done:
			if p.err == nil {
				return errors.New("ended without an error")
			}
			return fmt.Errorf("ended: %w", p.err)
		case <-deadline.C:
			return fmt.Errorf("waited %v in vain", limit)
		case <-tick.C:
		}
	}
	return nil
}
