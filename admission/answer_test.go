package admission

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/publish"
)

// TestRefusalOf: the one judgement of a refused record, for each kind of
// error admission answers with.
func TestRefusalOf(t *testing.T) {
	spoolTooLarge := &publish.ProduceError{Topic: "t", Err: fmt.Errorf("%w: 9000 bytes spooled", buffer.ErrTooLarge)}
	for _, tc := range []struct {
		name string
		err  error
		want Refusal
	}{
		{"durable", nil, NotRefused},
		{"spool over its cap", &buffer.FullError{Reason: buffer.ReasonCap}, RefusedFull},
		{"spool disk full", fmt.Errorf("append: %w", &buffer.FullError{Reason: buffer.ReasonENOSPC}), RefusedFull},
		{"too large for a batch", &publish.ProduceError{Topic: "t", Err: fmt.Errorf("%w (uncompressed_bytes=9000)", kerr.MessageTooLarge)}, RefusedTooLargeForKafka},
		{"record list too large", &publish.ProduceError{Topic: "t", Err: kerr.RecordListTooLarge}, RefusedTooLargeForKafka},
		{"too large for the spool", spoolTooLarge, RefusedTooLargeForSpool},
		{"kafka timeout", &publish.ProduceError{Topic: "t", Err: fmt.Errorf("%w: %w", publish.ErrTimeout, context.DeadlineExceeded)}, RefusedRetryable},
		{"not enough replicas", &publish.ProduceError{Topic: "t", Err: kerr.NotEnoughReplicas}, RefusedRetryable},
		{"spool closed", buffer.ErrClosed, RefusedRetryable},
		{"caller's deadline on an append", context.DeadlineExceeded, RefusedRetryable},
		{"not authorized", &publish.ProduceError{Topic: "t", Err: kerr.TopicAuthorizationFailed}, RefusedPermanent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := refused(tc.err, 0)
			if tc.err == nil {
				got = Admitted{Refusal: refusalOf(nil)}
			}
			if got.Refusal != tc.want || !errors.Is(got.Err, tc.err) {
				t.Errorf("refused(%v): %v, want %v", tc.err, got.Refusal, tc.want)
			}
		})
	}
}
