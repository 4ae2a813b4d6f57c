package loadgen

import (
	"context"
	"time"
)

// Clock is the run's time: when requests are due and how long they took.
// Tests pass one they control.
type Clock interface {
	Now() time.Time
	// SleepUntil returns at t, or earlier with ctx's error when ctx ends.
	SleepUntil(ctx context.Context, t time.Time) error
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
