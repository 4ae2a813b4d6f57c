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

// Why a Kafka error is permanent (Refusal): a small fixed set, so that
// callers can label metrics with it.
const (
	// RefusalTooLarge: MESSAGE_TOO_LARGE or RECORD_LIST_TOO_LARGE. The
	// record, or the batch it was sent in, is larger than the topic's
	// max.message.bytes or Config.BatchMaxBytes.
	RefusalTooLarge = "too_large"
	// RefusalUnauthorized: the cluster does not let this client write the
	// topic, or in at all: TOPIC_AUTHORIZATION_FAILED,
	// CLUSTER_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
	// SASL authentication failures.
	RefusalUnauthorized = "unauthorized"
	// RefusalInvalid: the cluster finds the record or its topic invalid
	// (INVALID_RECORD, INVALID_TIMESTAMP, INVALID_TOPIC_EXCEPTION,
	// POLICY_VIOLATION), or Publish refused the record (nil, no topic).
	RefusalInvalid = "invalid"
	// RefusalUnsupported: the cluster does not take what this client
	// sends: an unsupported version, compression or message format,
	// invalid acks, an invalid request.
	RefusalUnsupported = "unsupported"
)

// Refusals are every reason Refusal returns, in a fixed order.
func Refusals() []string {
	return []string{RefusalTooLarge, RefusalUnauthorized, RefusalInvalid, RefusalUnsupported}
}

// permanent are the Kafka errors that will be returned again for the same
// record, each with why: the record itself is unacceptable (too large,
// invalid, bad timestamp), or the gateway is not allowed to write the
// topic, or the cluster cannot take what this client sends.
var permanent = [...]struct {
	err    *kerr.Error
	reason string
}{
	{kerr.MessageTooLarge, RefusalTooLarge},
	{kerr.RecordListTooLarge, RefusalTooLarge},
	{kerr.InvalidRecord, RefusalInvalid},
	{kerr.InvalidTimestamp, RefusalInvalid},
	{kerr.InvalidTopicException, RefusalInvalid},
	{kerr.PolicyViolation, RefusalInvalid},
	{kerr.TopicAuthorizationFailed, RefusalUnauthorized},
	{kerr.ClusterAuthorizationFailed, RefusalUnauthorized},
	{kerr.TransactionalIDAuthorizationFailed, RefusalUnauthorized},
	{kerr.SaslAuthenticationFailed, RefusalUnauthorized},
	{kerr.UnsupportedSaslMechanism, RefusalUnauthorized},
	{kerr.IllegalSaslState, RefusalUnauthorized},
	{kerr.InvalidRequiredAcks, RefusalUnsupported},
	{kerr.UnsupportedForMessageFormat, RefusalUnsupported},
	{kerr.UnsupportedCompressionType, RefusalUnsupported},
	{kerr.UnsupportedVersion, RefusalUnsupported},
	{kerr.InvalidRequest, RefusalUnsupported},
}

// Retryable reports whether a record that failed with err may be acknowledged
// if the caller sends the event again. It is the one place where sluice
// judges Kafka errors; Refusal says why one is not retryable.
//
// Retryable: ErrTimeout (deadline or delivery timeout), ErrClosed (this
// gateway is shutting down; another one can take the event), a full client
// buffer, context errors, network and dial errors, and every Kafka error not
// listed as permanent (broker or leader unavailable, not enough replicas,
// leader moves, request timeouts, unknown topic, idempotent sequence errors,
// which the client recovers from by resetting its producer id).
//
// UNKNOWN_TOPIC_OR_PARTITION is retryable because the record is taken once
// the topic exists: a topic an operator has yet to create is a
// configuration error, which CheckTopics reports, not a property of the
// record.
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
	return err != nil && Refusal(err) == ""
}

// Refusal says why err is permanent: RefusalTooLarge, RefusalUnauthorized,
// RefusalInvalid or RefusalUnsupported. It returns "" when err is nil or
// retryable (see Retryable, which is Refusal(err) == "" for an error).
func Refusal(err error) string {
	if err == nil {
		return ""
	}
	switch {
	case errors.Is(err, ErrTimeout), errors.Is(err, ErrClosed):
		return ""
	case errors.Is(err, errInvalidRecord):
		return RefusalInvalid
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, kgo.ErrRecordTimeout), errors.Is(err, kgo.ErrRecordRetries),
		errors.Is(err, kgo.ErrMaxBuffered), errors.Is(err, kgo.ErrAborting),
		errors.Is(err, kgo.ErrClientClosed):
		return ""
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		for _, p := range permanent {
			if ke == p.err {
				return p.reason
			}
		}
	}
	return ""
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
