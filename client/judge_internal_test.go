package client

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// TestJudgePerEvent: every Reason as a per-event rejection, with the
// retryable flag and retry_after the gateway gives it (gateway.Failure's
// table), in a batch of one and of several.
func TestJudgePerEvent(t *testing.T) {
	for _, tc := range []struct {
		reason ingestv1.Reason
		one    action // in a batch of one
		many   action // in a batch of several
	}{
		{ingestv1.Reason_MALFORMED, reject, reject},
		{ingestv1.Reason_SCHEMA_VIOLATION, reject, reject},
		{ingestv1.Reason_UNKNOWN_EVENT_TYPE, reject, reject},
		{ingestv1.Reason_EVENT_TOO_LARGE, reject, reject},
		{ingestv1.Reason_BATCH_TOO_LARGE, reject, split},
		{ingestv1.Reason_EVENT_TIME_OUT_OF_RANGE, reject, reject},
		{ingestv1.Reason_UNAUTHENTICATED, reject, reject},
		{ingestv1.Reason_FORBIDDEN_EVENT_TYPE, reject, reject},
		{ingestv1.Reason_RATE_LIMITED, retry, retry},
		{ingestv1.Reason_BUFFER_FULL, retry, retry},
		{ingestv1.Reason_UNAVAILABLE, retry, retry},
		{ingestv1.Reason_DECOMPRESSED_TOO_LARGE, reject, split},
		{ingestv1.Reason_IDEMPOTENCY_CONFLICT, reject, reject},
		{ingestv1.Reason_REASON_UNSPECIFIED, retry, retry}, // the gateway answers an unspecified reason retryable
	} {
		t.Run(tc.reason.String(), func(t *testing.T) {
			// The gateway's own rejection for the reason: its Body has the
			// table's retryable flag.
			body := (&gateway.Failure{Reason: tc.reason, RetryAfter: time.Second, Message: "m",
				Violations: []*ingestv1.FieldViolation{{Field: "payload.x", Rule: "r", Message: "bad"}}}).Body()
			res := &ingestv1.EventResult{Id: "e1", Outcome: ingestv1.Outcome_REJECTED, Rejection: &ingestv1.Rejection{
				Reason: body.Reason, Retryable: body.Retryable, RetryAfter: body.RetryAfter, Violations: body.Violations, Message: body.Message,
				Conflict: &ingestv1.PayloadConflict{Fingerprint: "sha256:aa"},
			}}
			for n, want := range map[int]action{1: tc.one, 3: tc.many} {
				v := judge(res, nil, n)
				if v.action != want || v.reason != tc.reason {
					t.Fatalf("n=%d: %+v, want %v", n, v, want)
				}
				switch want {
				case retry:
					if v.after != time.Second || v.err == nil {
						t.Errorf("n=%d: after %v err %v, want 1s and the answer", n, v.after, v.err)
					}
				case reject:
					r := v.rejection
					if r == nil || r.ID != "e1" || r.Message != "m" || len(r.Violations) != 1 || r.Conflict.GetFingerprint() != "sha256:aa" {
						t.Errorf("n=%d: rejection %+v", n, r)
					}
				}
			}
		})
	}
	for _, o := range []ingestv1.Outcome{ingestv1.Outcome_ACCEPTED, ingestv1.Outcome_DUPLICATE} {
		if v := judge(&ingestv1.EventResult{Outcome: o}, nil, 2); v.action != succeed {
			t.Errorf("%v: %+v, want success", o, v)
		}
	}
	if v := judge(&ingestv1.EventResult{Outcome: ingestv1.Outcome(99)}, nil, 2); v.action != retry || v.reason != ingestv1.Reason_UNAVAILABLE {
		t.Errorf("an unknown outcome: %+v, want a retry", v)
	}
}

// TestJudgeWholeRequest: every Reason as the gateway's whole-request
// failure, and gRPC codes without sluice's ErrorInfo.
func TestJudgeWholeRequest(t *testing.T) {
	for r := range ingestv1.Reason_name {
		reason := ingestv1.Reason(r)
		t.Run(reason.String(), func(t *testing.T) {
			f := &gateway.Failure{Reason: reason, RetryAfter: 2 * time.Second, Message: "m",
				Violations: []*ingestv1.FieldViolation{{Field: "events", Rule: "r", Message: "bad"}}}
			err := f.GRPCStatus().Err()
			body := f.Body()
			for _, n := range []int{1, 4} {
				v := judge(nil, err, n)
				want := reject
				switch {
				case tooLarge(reason) && n > 1:
					want = split
				case body.Retryable:
					want = retry
				}
				if v.action != want || v.reason != reason {
					t.Fatalf("n=%d: %+v, want %v for %v", n, v, want, reason)
				}
				switch want {
				case retry:
					if v.after != 2*time.Second || !errors.Is(v.err, err) {
						t.Errorf("n=%d: after %v err %v, want RetryInfo's 2s and the status", n, v.after, v.err)
					}
				case reject:
					r := v.rejection
					if r.Message != "m" || len(r.Violations) != 1 || r.Violations[0].GetField() != "events" || r.Violations[0].GetRule() != "r" {
						t.Errorf("n=%d: rejection %+v", n, r)
					}
				}
			}
		})
	}

	retries := map[codes.Code]bool{codes.Unavailable: true, codes.DeadlineExceeded: true, codes.ResourceExhausted: true,
		codes.Aborted: true, codes.Canceled: true, codes.Internal: true, codes.Unknown: true}
	for code := codes.OK + 1; code <= codes.Unauthenticated; code++ {
		t.Run("no ErrorInfo/"+code.String(), func(t *testing.T) {
			err := status.Error(code, "plain")
			v := judge(nil, err, 3)
			if retries[code] {
				if v.action != retry || v.reason != ingestv1.Reason_UNAVAILABLE || v.after != 0 {
					t.Errorf("%+v, want a retry after the backoff", v)
				}
				return
			}
			if v.action != reject || v.reason != ingestv1.Reason_MALFORMED || v.rejection.Message != "plain" {
				t.Errorf("%+v, want a permanent MALFORMED", v)
			}
		})
	}

	for name, tc := range map[string]struct {
		err  error
		want action
	}{
		"deadline of the request": {context.DeadlineExceeded, retry},
		"wrapped deadline":        {fmt.Errorf("call: %w", context.DeadlineExceeded), retry},
		"a plain error":           {errors.New("connection reset"), retry}, // status Unknown
		"another domain's ErrorInfo": {withDetails(t, codes.PermissionDenied,
			&errdetails.ErrorInfo{Domain: "elsewhere", Reason: "RATE_LIMITED", Metadata: map[string]string{"retryable": "true"}}), reject},
		"retryable with no RetryInfo": {withDetails(t, codes.Unavailable,
			&errdetails.ErrorInfo{Domain: errorDomain, Reason: "BUFFER_FULL", Metadata: map[string]string{"retryable": "true"}}), retry},
		"an unknown reason, retryable": {withDetails(t, codes.Unavailable,
			&errdetails.ErrorInfo{Domain: errorDomain, Reason: "NEWER_REASON", Metadata: map[string]string{"retryable": "true"}},
			&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Second)}), retry},
		"an unknown reason, not retryable": {withDetails(t, codes.InvalidArgument,
			&errdetails.ErrorInfo{Domain: errorDomain, Reason: "NEWER_REASON"}), reject},
	} {
		t.Run(name, func(t *testing.T) {
			if v := judge(nil, tc.err, 2); v.action != tc.want {
				t.Errorf("%+v, want %v", v, tc.want)
			}
		})
	}
}

func withDetails(t *testing.T, code codes.Code, details ...protoadapt.MessageV1) error {
	t.Helper()
	st, err := status.New(code, "m").WithDetails(details...)
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}
