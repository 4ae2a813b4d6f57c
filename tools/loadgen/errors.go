package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ConfigError names a config field (by its flag name) and what is wrong.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return "loadgen: --" + e.Field + ": " + e.Reason }

func fieldErr(field, reason string) error { return &ConfigError{Field: field, Reason: reason} }

// SendError is a request that got no answer: the transport failed or its
// deadline passed. Kind says which (see classify).
type SendError struct {
	Kind string
	Err  error
}

func (e *SendError) Error() string { return "loadgen: " + e.Kind + ": " + e.Err.Error() }
func (e *SendError) Unwrap() error { return e.Err }

// Kinds of unanswered requests.
const (
	kindTimeout     = "timeout"     // the per-request deadline passed
	kindInterrupted = "interrupted" // the run was stopped while it waited
	kindTransport   = "transport"   // anything else: refused, reset, ...
)

// classify decides, in one place, what an error without an answer was: a
// timeout (the request's own deadline passed while the run went on), an
// interruption (the run's context ended), or a transport failure.
func classify(runCtx context.Context, err error) string {
	if runCtx.Err() != nil {
		return kindInterrupted
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return kindTimeout
	case status.Code(err) == codes.DeadlineExceeded:
		return kindTimeout
	case errors.As(err, &ne) && ne.Timeout():
		return kindTimeout
	}
	return kindTransport
}

// AnswerError is an answer the load generator cannot read: its results do
// not match the request, or its body does not parse.
type AnswerError struct {
	Msg string
	Err error
}

func (e *AnswerError) Error() string {
	if e.Err != nil {
		return "loadgen: bad answer: " + e.Msg + ": " + e.Err.Error()
	}
	return "loadgen: bad answer: " + e.Msg
}
func (e *AnswerError) Unwrap() error { return e.Err }

func errAnswerLength(got, want int) error {
	return &AnswerError{Msg: fmt.Sprintf("%d results for %d events", got, want)}
}

func errAnswerIndex(i, n int) error {
	return &AnswerError{Msg: fmt.Sprintf("result index %d of %d events", i, n)}
}
