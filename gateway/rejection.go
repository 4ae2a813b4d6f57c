package gateway

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// ErrorDomain is the google.rpc.ErrorInfo domain of sluice's refusals.
const ErrorDomain = "ingest.sluice"

// reasonTraits is what docs/api.md's table of reasons says of one reason.
type reasonTraits struct {
	retryable bool
	code      codes.Code
	http      int
}

// traits is the rejection table; every Reason has a row.
func traits(r ingestv1.Reason) reasonTraits {
	switch r {
	case ingestv1.Reason_MALFORMED:
		return reasonTraits{false, codes.InvalidArgument, http.StatusBadRequest}
	case ingestv1.Reason_SCHEMA_VIOLATION, ingestv1.Reason_UNKNOWN_EVENT_TYPE, ingestv1.Reason_EVENT_TIME_OUT_OF_RANGE:
		return reasonTraits{false, codes.InvalidArgument, http.StatusUnprocessableEntity}
	case ingestv1.Reason_EVENT_TOO_LARGE, ingestv1.Reason_BATCH_TOO_LARGE, ingestv1.Reason_DECOMPRESSED_TOO_LARGE:
		return reasonTraits{false, codes.InvalidArgument, http.StatusRequestEntityTooLarge}
	case ingestv1.Reason_UNAUTHENTICATED:
		return reasonTraits{false, codes.Unauthenticated, http.StatusUnauthorized}
	case ingestv1.Reason_FORBIDDEN_EVENT_TYPE:
		return reasonTraits{false, codes.PermissionDenied, http.StatusForbidden}
	case ingestv1.Reason_IDEMPOTENCY_CONFLICT:
		return reasonTraits{false, codes.AlreadyExists, http.StatusConflict}
	case ingestv1.Reason_RATE_LIMITED:
		return reasonTraits{true, codes.ResourceExhausted, http.StatusTooManyRequests}
	case ingestv1.Reason_BUFFER_FULL, ingestv1.Reason_UNAVAILABLE:
		return reasonTraits{true, codes.Unavailable, http.StatusServiceUnavailable}
	}
	// An unspecified reason is a bug in sluice; answer so the caller retries.
	return reasonTraits{true, codes.Unavailable, http.StatusServiceUnavailable}
}

// Failure refuses a whole request: authentication, rate limit, a request
// over its limits, or a request that cannot be decoded. Per-event refusals
// are Rejections inside the results instead.
type Failure struct {
	Reason     ingestv1.Reason
	RetryAfter time.Duration
	Violations []*ingestv1.FieldViolation
	Message    string
}

func (f *Failure) Error() string {
	return fmt.Sprintf("gateway: %s: %s", f.Reason, f.Message)
}

// GRPCStatus gives the status a gRPC caller sees: the table's code with
// ErrorInfo, and BadRequest and RetryInfo where they apply.
func (f *Failure) GRPCStatus() *status.Status {
	t := traits(f.Reason)
	st := status.New(t.code, f.Message)
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{
		Reason:   f.Reason.String(),
		Domain:   ErrorDomain,
		Metadata: map[string]string{"retryable": strconv.FormatBool(t.retryable)},
	}}
	if len(f.Violations) > 0 {
		br := &errdetails.BadRequest{}
		for _, v := range f.Violations {
			br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{
				Field: v.GetField(), Description: v.GetMessage(), Reason: v.GetRule(),
			})
		}
		details = append(details, br)
	}
	if t.retryable && f.RetryAfter > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(f.RetryAfter)})
	}
	withDetails, err := st.WithDetails(details...)
	if err != nil {
		return st
	}
	return withDetails
}

// Body is the REST form of the failure.
func (f *Failure) Body() *ingestv1.ErrorBody {
	t := traits(f.Reason)
	b := &ingestv1.ErrorBody{
		Reason:     f.Reason,
		Retryable:  t.retryable,
		Violations: f.Violations,
		Message:    f.Message,
	}
	if t.retryable && f.RetryAfter > 0 {
		b.RetryAfter = durationpb.New(f.RetryAfter)
	}
	return b
}

func (f *Failure) rejection() *ingestv1.Rejection {
	r := reject(f.Reason, f.Message)
	r.Violations = f.Violations
	if r.Retryable && f.RetryAfter > 0 {
		r.RetryAfter = durationpb.New(f.RetryAfter)
	}
	return r
}

// reject builds a per-event rejection with the table's retryable flag.
func reject(reason ingestv1.Reason, msg string) *ingestv1.Rejection {
	return &ingestv1.Rejection{Reason: reason, Retryable: traits(reason).retryable, Message: msg}
}

func rejectRetry(reason ingestv1.Reason, after time.Duration, msg string) *ingestv1.Rejection {
	r := reject(reason, msg)
	r.RetryAfter = durationpb.New(after)
	return r
}

// retryAfterHeader renders a wait as the Retry-After header's delta-seconds,
// rounded up so a client that obeys it is never early.
func retryAfterHeader(d time.Duration) string {
	return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10)
}

// batchHTTPStatus is the REST status of a batch: 200 when every event
// succeeded, 207 when some were rejected, and when none succeeded the
// reasons' shared status (400, 403, 413, 503, ...) or 422 when they differ.
// The second value is the Retry-After to send: set only when every event was
// refused retryably, as the longest wait among them.
func batchHTTPStatus(results []*ingestv1.EventResult) (int, time.Duration) {
	var rejected int
	var first ingestv1.Reason
	same, allRetryable := true, true
	var wait time.Duration
	for _, r := range results {
		if r.GetOutcome() != ingestv1.Outcome_REJECTED {
			continue
		}
		rej := r.GetRejection()
		if rejected == 0 {
			first = rej.GetReason()
		} else if rej.GetReason() != first {
			same = false
		}
		rejected++
		if !rej.GetRetryable() {
			allRetryable = false
		}
		if d := rej.GetRetryAfter().AsDuration(); d > wait {
			wait = d
		}
	}
	switch {
	case rejected == 0:
		return http.StatusOK, 0
	case rejected < len(results):
		return http.StatusMultiStatus, 0
	}
	if !allRetryable {
		wait = 0
	}
	if same {
		return traits(first).http, wait
	}
	return http.StatusUnprocessableEntity, wait
}
