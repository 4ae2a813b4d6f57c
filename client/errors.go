package client

import (
	"errors"
	"fmt"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

var (
	// ErrClosed: the client is closed (or closing) and takes no events.
	ErrClosed = errors.New("client: closed")
	// ErrBufferFull: with FailWhenFull, the buffer had no room for the event.
	ErrBufferFull = errors.New("client: buffer full")
)

// errNilEvent refuses a nil event at Send.
var errNilEvent = errors.New("client: nil event")

// RejectionError: the gateway refused the event for good (a per-event
// rejection that is not retryable, or a whole-request failure that is
// not: UNAUTHENTICATED, FORBIDDEN_EVENT_TYPE, MALFORMED...). Sending the
// same event again gets the same answer; the client never retries it.
type RejectionError struct {
	ID         string
	Reason     ingestv1.Reason
	Message    string
	Violations []*ingestv1.FieldViolation
	Conflict   *ingestv1.PayloadConflict
}

func (e *RejectionError) Error() string {
	msg := fmt.Sprintf("client: event %q rejected: %s", e.ID, e.Reason)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	for _, v := range e.Violations {
		msg += fmt.Sprintf("; %s: %s", v.GetField(), v.GetMessage())
	}
	return msg
}

// UndeliveredError: events that got neither a success nor a permanent
// rejection: retries ran out (MaxAttempts, EventTimeout) or Close's ctx
// ended. Last is the last retryable answer or error each met. They may
// still have reached Kafka (an answer lost on the way back); sending them
// again under the same ids is safe.
type UndeliveredError struct {
	IDs  []string
	Last error
}

func (e *UndeliveredError) Error() string {
	if len(e.IDs) == 1 {
		return fmt.Sprintf("client: event %q undelivered: %v", e.IDs[0], e.Last)
	}
	return fmt.Sprintf("client: %d events undelivered: %v", len(e.IDs), e.Last)
}

func (e *UndeliveredError) Unwrap() error { return e.Last }
