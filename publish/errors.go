package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	// ErrTimeout is wrapped by the error of a record that was not
	// acknowledged before Publish's context ended, or that the client gave
	// up on after Config.DeliveryTimeout. The record may still be written.
	ErrTimeout = errors.New("publish: not acknowledged before the deadline")
	// ErrClosed is wrapped by the error of a record given to a closed
	// producer, or failed because the producer was closed before the record
	// was flushed.
	ErrClosed = errors.New("publish: producer closed")
	// ErrBufferFull is wrapped by the error of a record that did not fit in
	// the client's buffer (Config.MaxBufferedRecords or MaxBufferedBytes).
	// It was never produced; sending it again later may succeed.
	ErrBufferFull = errors.New("publish: client buffer full")

	// errInvalidRecord is a record Publish refuses to produce: nil, or
	// without a topic.
	errInvalidRecord = errors.New("publish: invalid record")
)

// ProduceError is the error Publish answers for a record that was not
// acknowledged.
type ProduceError struct {
	// Topic is the record's topic.
	Topic string
	// RetryAfter is the wait to suggest to the event's sender before it
	// tries again (Config.RetryAfter); zero when the error is permanent.
	RetryAfter time.Duration
	// Err is the cause: it wraps ErrTimeout, ErrClosed, a kerr.Error from
	// the broker, or a client or network error.
	Err error
}

func (e *ProduceError) Error() string {
	msg := strings.TrimPrefix(e.Err.Error(), "publish: ")
	if e.Topic == "" {
		return "publish: " + msg
	}
	return "publish: topic " + e.Topic + ": " + msg
}

func (e *ProduceError) Unwrap() error { return e.Err }

// permanent are the Kafka errors that will be returned again for the same
// record: the record itself is unacceptable (too large, invalid, bad
// timestamp), or the gateway is not allowed to write the topic, or the
// cluster cannot take what this client sends.
var permanent = [...]*kerr.Error{
	kerr.MessageTooLarge,
	kerr.RecordListTooLarge,
	kerr.InvalidRecord,
	kerr.InvalidTimestamp,
	kerr.InvalidTopicException,
	kerr.TopicAuthorizationFailed,
	kerr.ClusterAuthorizationFailed,
	kerr.TransactionalIDAuthorizationFailed,
	kerr.SaslAuthenticationFailed,
	kerr.UnsupportedSaslMechanism,
	kerr.IllegalSaslState,
	kerr.InvalidRequiredAcks,
	kerr.UnsupportedForMessageFormat,
	kerr.UnsupportedCompressionType,
	kerr.UnsupportedVersion,
	kerr.InvalidRequest,
	kerr.PolicyViolation,
}

// Retryable reports whether a record that failed with err may be acknowledged
// if the caller sends the event again. It is the one place where sluice
// judges Kafka errors.
//
// Retryable: ErrTimeout (deadline or delivery timeout), ErrClosed (this
// gateway is shutting down; another one can take the event), a full client
// buffer, context errors, network and dial errors, and every Kafka error not
// listed as permanent (broker or leader unavailable, not enough replicas,
// leader moves, request timeouts, unknown topic, idempotent sequence errors,
// which the client recovers from by resetting its producer id).
//
// Permanent: MESSAGE_TOO_LARGE and RECORD_LIST_TOO_LARGE, INVALID_RECORD,
// INVALID_TIMESTAMP, INVALID_TOPIC_EXCEPTION, authorization and
// authentication failures, broker refusals of the protocol this client
// speaks (unsupported version, compression or message format, invalid acks,
// invalid request), POLICY_VIOLATION, and records Publish refuses (nil or
// without a topic).
//
// Doubtful errors are retryable: calling a transient error permanent loses
// the event (its sender is told not to retry), calling a permanent error
// retryable costs retries that show in sluice_produce_errors_total.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case errors.Is(err, ErrTimeout), errors.Is(err, ErrClosed):
		return true
	case errors.Is(err, errInvalidRecord):
		return false
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, kgo.ErrRecordTimeout), errors.Is(err, kgo.ErrRecordRetries),
		errors.Is(err, kgo.ErrMaxBuffered), errors.Is(err, kgo.ErrAborting),
		errors.Is(err, kgo.ErrClientClosed):
		return true
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		for _, p := range permanent {
			if ke == p {
				return false
			}
		}
	}
	return true
}

// TooLarge reports whether err says that a record is too large for Kafka:
// MESSAGE_TOO_LARGE or RECORD_LIST_TOO_LARGE, from a broker, or from
// Publish for a record over Config.BatchMaxBytes. Such an error is
// permanent (Retryable is false): the same record is refused every time.
func TooLarge(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge)
}

// recordError builds the error Publish answers for a record whose callback
// reported err. Timeouts and closing are folded into ErrTimeout and
// ErrClosed so that callers and metrics see one of each.
func (p *Producer) recordError(topic string, err error) *ProduceError {
	switch {
	case errors.Is(err, ErrTimeout), errors.Is(err, ErrClosed), errors.Is(err, ErrBufferFull), errors.Is(err, errInvalidRecord):
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, kgo.ErrRecordTimeout):
		// Records carry no caller context, so this is the client's own
		// delivery timeout (or, defensively, a context it was given).
		err = fmt.Errorf("%w: %w", ErrTimeout, err)
	case errors.Is(err, kgo.ErrMaxBuffered):
		err = fmt.Errorf("%w: %w", ErrBufferFull, err)
	case errors.Is(err, kgo.ErrClientClosed):
		err = fmt.Errorf("%w: %w", ErrClosed, err)
	}
	pe := &ProduceError{Topic: topic, Err: err}
	if Retryable(err) {
		pe.RetryAfter = p.cfg.RetryAfter
	}
	return pe
}
