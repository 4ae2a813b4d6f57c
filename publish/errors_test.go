package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},

		{"timeout", ErrTimeout, true},
		{"closed", ErrClosed, true},
		{"wrapped timeout", &ProduceError{Topic: "t", Err: fmt.Errorf("%w: %w", ErrTimeout, context.DeadlineExceeded)}, true},
		{"context canceled", context.Canceled, true},
		{"deadline exceeded", context.DeadlineExceeded, true},
		{"record timeout", kgo.ErrRecordTimeout, true},
		{"record retries", kgo.ErrRecordRetries, true},
		{"buffer full", kgo.ErrMaxBuffered, true},
		{"aborting", kgo.ErrAborting, true},
		{"client closed", kgo.ErrClientClosed, true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"eof", io.ErrUnexpectedEOF, true},
		{"unknown client error", errors.New("something odd"), true},

		{"not enough replicas", kerr.NotEnoughReplicas, true},
		{"not enough replicas after append", kerr.NotEnoughReplicasAfterAppend, true},
		{"not leader", kerr.NotLeaderForPartition, true},
		{"leader not available", kerr.LeaderNotAvailable, true},
		{"broker not available", kerr.BrokerNotAvailable, true},
		{"request timed out", kerr.RequestTimedOut, true},
		{"unknown topic", kerr.UnknownTopicOrPartition, true},
		{"out of order sequence", kerr.OutOfOrderSequenceNumber, true},
		{"invalid producer epoch", kerr.InvalidProducerEpoch, true},
		{"unknown server error", kerr.UnknownServerError, true},
		{"throttled", kerr.ThrottlingQuotaExceeded, true},

		{"message too large", kerr.MessageTooLarge, false},
		{"message too large from the client", fmt.Errorf("%w (uncompressed_bytes=9000)", kerr.MessageTooLarge), false},
		{"record list too large", kerr.RecordListTooLarge, false},
		{"invalid record", kerr.InvalidRecord, false},
		{"invalid timestamp", kerr.InvalidTimestamp, false},
		{"invalid topic", kerr.InvalidTopicException, false},
		{"topic authorization", kerr.TopicAuthorizationFailed, false},
		{"cluster authorization", kerr.ClusterAuthorizationFailed, false},
		{"sasl authentication", kerr.SaslAuthenticationFailed, false},
		{"unsupported version", kerr.UnsupportedVersion, false},
		{"unsupported compression", kerr.UnsupportedCompressionType, false},
		{"policy violation", kerr.PolicyViolation, false},
		{"wrapped permanent", &ProduceError{Topic: "t", Err: kerr.TopicAuthorizationFailed}, false},
		{"invalid record for Publish", fmt.Errorf("%w: no topic", errInvalidRecord), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Retryable(tc.err); got != tc.want {
				t.Errorf("Retryable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestRefusal: each permanent error says why, from a fixed set, wrapped
// or not; a retryable one says nothing.
func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"timeout", ErrTimeout, ""},
		{"unknown topic", kerr.UnknownTopicOrPartition, ""},
		{"not enough replicas", &ProduceError{Topic: "t", Err: kerr.NotEnoughReplicas}, ""},
		{"missing topics", &MissingTopicsError{Topics: []string{"t"}}, ""},
		{"message too large", &ProduceError{Topic: "t", Err: kerr.MessageTooLarge}, RefusalTooLarge},
		{"record list too large", kerr.RecordListTooLarge, RefusalTooLarge},
		{"too large from the client", fmt.Errorf("%w (uncompressed_bytes=9000)", kerr.MessageTooLarge), RefusalTooLarge},
		{"topic authorization", &ProduceError{Topic: "t", Err: kerr.TopicAuthorizationFailed}, RefusalUnauthorized},
		{"cluster authorization", kerr.ClusterAuthorizationFailed, RefusalUnauthorized},
		{"sasl", kerr.SaslAuthenticationFailed, RefusalUnauthorized},
		{"invalid record", kerr.InvalidRecord, RefusalInvalid},
		{"policy violation", kerr.PolicyViolation, RefusalInvalid},
		{"no topic", fmt.Errorf("%w: no topic", errInvalidRecord), RefusalInvalid},
		{"unsupported version", kerr.UnsupportedVersion, RefusalUnsupported},
		{"joined with a spool error", errors.Join(&ProduceError{Topic: "t", Err: kerr.MessageTooLarge}, errors.New("cursor write failed")), RefusalTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Refusal(tc.err)
			if got != tc.want {
				t.Errorf("Refusal(%v) = %q, want %q", tc.err, got, tc.want)
			}
			if tc.err != nil && Retryable(tc.err) != (got == "") {
				t.Errorf("Retryable(%v) = %v, but Refusal says %q", tc.err, Retryable(tc.err), got)
			}
		})
	}
	for _, p := range permanent {
		if !slices.Contains(Refusals(), p.reason) {
			t.Errorf("%v is permanent for %q, which Refusals does not list", p.err, p.reason)
		}
	}
}

func TestTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"message too large", kerr.MessageTooLarge, true},
		{"message too large from the client", &ProduceError{Topic: "t", Err: fmt.Errorf("%w (uncompressed_bytes=9000)", kerr.MessageTooLarge)}, true},
		{"record list too large", kerr.RecordListTooLarge, true},
		{"another permanent error", kerr.TopicAuthorizationFailed, false},
		{"buffer full", &ProduceError{Topic: "t", Err: ErrBufferFull}, false},
		{"timeout", ErrTimeout, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TooLarge(tc.err); got != tc.want {
				t.Errorf("TooLarge(%v) = %v, want %v", tc.err, got, tc.want)
			}
			if tc.want && Retryable(tc.err) {
				t.Errorf("Retryable(%v): a record too large is refused every time", tc.err)
			}
		})
	}
}

func TestRecordError(t *testing.T) {
	p := &Producer{cfg: NewDefaultConfig()}
	for _, tc := range []struct {
		name       string
		err        error
		is         error
		retryAfter time.Duration
		msg        string
	}{
		{"deadline", context.DeadlineExceeded, ErrTimeout, time.Second, "publish: topic t: not acknowledged before the deadline: context deadline exceeded"},
		{"delivery timeout", kgo.ErrRecordTimeout, ErrTimeout, time.Second, "publish: topic t: not acknowledged before the deadline: records have timed out before they were able to be produced"},
		{"client closed", kgo.ErrClientClosed, ErrClosed, time.Second, "publish: topic t: producer closed: client closed"},
		{"closed", ErrClosed, ErrClosed, time.Second, "publish: topic t: producer closed"},
		{"broker", kerr.NotEnoughReplicas, kerr.NotEnoughReplicas, time.Second, "publish: topic t: " + kerr.NotEnoughReplicas.Error()},
		{"permanent", kerr.MessageTooLarge, kerr.MessageTooLarge, 0, "publish: topic t: " + kerr.MessageTooLarge.Error()},
		{"no topic", fmt.Errorf("%w: no topic", errInvalidRecord), errInvalidRecord, 0, "publish: invalid record: no topic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "t"
			if errors.Is(tc.err, errInvalidRecord) {
				topic = ""
			}
			pe := p.recordError(topic, tc.err)
			if !errors.Is(pe, tc.is) || pe.RetryAfter != tc.retryAfter || pe.Error() != tc.msg {
				t.Errorf("got %q RetryAfter %v, want %q wrapping %v, RetryAfter %v", pe, pe.RetryAfter, tc.msg, tc.is, tc.retryAfter)
			}
		})
	}
}
