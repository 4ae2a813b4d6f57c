package consumer

import "time"

// Clock is the time source of backoffs, the breaker and DLQ deadlines;
// tests pass one they control.
type Clock interface {
	Now() time.Time
	// After delivers once d has passed.
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
