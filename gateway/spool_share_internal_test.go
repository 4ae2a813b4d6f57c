package gateway

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// TestSpoolShareRefusalNamesTheSource: a record refused because its source
// is over its share of the spool is BUFFER_FULL with the spool's wait, and
// says whose share it is; a spool full for everyone says so.
func TestSpoolShareRefusalNamesTheSource(t *testing.T) {
	s := &Service{cfg: NewDefaultConfig()}
	share := &admission.SourceFullError{Source: "noisy", Guaranteed: true, Held: 900, Limit: 1000, Need: 200}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("spool: %w", share), "source noisy is over its share of the gateway's spool"},
		{fmt.Errorf("buffer: full"), "the gateway's spool is full"},
	} {
		r := s.admitRejection(admission.Admitted{Refusal: admission.RefusedFull, Err: tc.err, RetryAfter: 3 * time.Second})
		if r.GetReason() != ingestv1.Reason_BUFFER_FULL || r.GetRetryAfter().AsDuration() != 3*time.Second || !strings.Contains(r.GetMessage(), tc.want) {
			t.Errorf("%v: %v %v %q, want BUFFER_FULL after 3s saying %q", tc.err, r.GetReason(), r.GetRetryAfter().AsDuration(), r.GetMessage(), tc.want)
		}
	}
}
