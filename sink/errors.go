package sink

import (
	"errors"
	"fmt"
	"time"
)

// Class is what a failed write means for the events in it.
type Class uint8

const (
	// Transient failures may succeed later: retry with backoff, and open the
	// sink's circuit breaker when they pile up.
	Transient Class = iota + 1
	// Permanent failures will always be returned for the same input: the
	// event goes to the DLQ at once and spends no retry budget.
	Permanent
)

func (c Class) String() string {
	switch c {
	case Transient:
		return "transient"
	case Permanent:
		return "permanent"
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// Error is a classified sink failure. Sinks return it from Write; the
// consumer tier reads it with Classify.
type Error struct {
	Class Class
	// RetryAfter is how long the sink asked to be left alone (HTTP
	// Retry-After); zero when it did not say.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	return fmt.Sprintf("sink: %s: %v", e.Class, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// PermanentError marks err as one the sink will always return for this input.
func PermanentError(err error) error {
	return &Error{Class: Permanent, Err: err}
}

// TransientError marks err as one that may pass later, optionally after
// retryAfter.
func TransientError(err error, retryAfter time.Duration) error {
	return &Error{Class: Transient, RetryAfter: retryAfter, Err: err}
}

// Classify decides, in this one place, what an error from Write means. An
// *Error anywhere in the chain says so itself; anything else (a dropped
// connection, a deadline, an error a sink did not classify) is Transient,
// because retrying an unknown failure is safe for an idempotent sink and
// dead-lettering a healthy event is not.
func Classify(err error) (Class, time.Duration) {
	var e *Error
	if errors.As(err, &e) {
		return e.Class, e.RetryAfter
	}
	return Transient, 0
}
