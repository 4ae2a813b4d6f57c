package client

import (
	"context"
	"errors"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// errorDomain is the google.rpc.ErrorInfo domain of the gateway's refusals.
const errorDomain = "ingest.sluice"

// action is what the client does with an event after an answer.
type action int

const (
	// succeed: ACCEPTED or DUPLICATE; the event is final.
	succeed action = iota
	// retry: send the event again after verdict.after (0: the backoff).
	retry
	// reject: a permanent refusal; the event is final with a *RejectionError.
	reject
	// split: the request was too large; send its halves as requests of
	// their own, which is not an attempt.
	split
)

// verdict is what one answer means for an event.
type verdict struct {
	action action
	reason ingestv1.Reason
	// after is the answer's retry_after; 0 when it gave none. A retry the
	// gateway timed so (a rate limit, a full spool) is its capacity
	// speaking, not a failure of the event or the connection: it does not
	// use up one of MaxAttempts; EventTimeout still bounds it.
	after time.Duration
	// err is the answer as an error: a *RejectionError's fields for
	// reject, the retryable answer for retry (UndeliveredError.Last).
	err error
	// rejection is set for reject.
	rejection *RejectionError
}

// judge decides what an answer means: this is the one place where the
// client tells success, retry and permanent refusal apart. res is the
// event's per-event result, or nil when the request failed as a whole with
// err; n is the number of events the request carried.
func judge(res *ingestv1.EventResult, err error, n int) verdict {
	if res != nil {
		return judgeResult(res, n)
	}
	return judgeFailure(err, n)
}

func judgeResult(res *ingestv1.EventResult, n int) verdict {
	switch res.GetOutcome() {
	case ingestv1.Outcome_ACCEPTED, ingestv1.Outcome_DUPLICATE:
		return verdict{action: succeed}
	case ingestv1.Outcome_REJECTED:
	default:
		// An answer the client does not know: the gateway is newer or
		// wrong; sending again under the same id is safe.
		return verdict{action: retry, reason: ingestv1.Reason_UNAVAILABLE,
			err: status.Errorf(codes.Unknown, "client: outcome %s for event %q", res.GetOutcome(), res.GetId())}
	}
	rej := res.GetRejection()
	reason := rej.GetReason()
	// A stream batch refused as a whole is answered event by event.
	if tooLarge(reason) && n > 1 {
		return verdict{action: split, reason: reason}
	}
	if rej.GetRetryable() {
		return verdict{action: retry, reason: reason, after: rej.GetRetryAfter().AsDuration(),
			err: &rejectedForNow{reason: reason, msg: rej.GetMessage()}}
	}
	r := &RejectionError{ID: res.GetId(), Reason: reason, Message: rej.GetMessage(),
		Violations: rej.GetViolations(), Conflict: rej.GetConflict()}
	return verdict{action: reject, reason: reason, err: r, rejection: r}
}

func judgeFailure(err error, n int) verdict {
	st, _ := status.FromError(err)
	if errors.Is(err, context.DeadlineExceeded) {
		st = status.New(codes.DeadlineExceeded, err.Error())
	} else if errors.Is(err, context.Canceled) {
		st = status.New(codes.Canceled, err.Error())
	}
	var info *errdetails.ErrorInfo
	var after time.Duration
	var violations []*ingestv1.FieldViolation
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			if d.GetDomain() == errorDomain {
				info = d
			}
		case *errdetails.RetryInfo:
			after = d.GetRetryDelay().AsDuration()
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				violations = append(violations, &ingestv1.FieldViolation{Field: v.GetField(), Rule: v.GetReason(), Message: v.GetDescription()})
			}
		}
	}
	if info == nil {
		switch st.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted,
			codes.Canceled, codes.Internal, codes.Unknown:
			// Canceled here is not the client's own: a request the client
			// cancels (Close's ctx ended) never reaches judge.
			return verdict{action: retry, reason: ingestv1.Reason_UNAVAILABLE, err: err}
		}
		r := &RejectionError{Reason: ingestv1.Reason_MALFORMED, Message: st.Message()}
		return verdict{action: reject, reason: r.Reason, err: r, rejection: r}
	}
	reason := ingestv1.Reason(ingestv1.Reason_value[info.GetReason()])
	if tooLarge(reason) && n > 1 {
		return verdict{action: split, reason: reason}
	}
	if retryable, _ := strconv.ParseBool(info.GetMetadata()["retryable"]); retryable {
		return verdict{action: retry, reason: reason, after: after, err: err}
	}
	r := &RejectionError{Reason: reason, Message: st.Message(), Violations: violations}
	return verdict{action: reject, reason: reason, err: r, rejection: r}
}

func tooLarge(r ingestv1.Reason) bool {
	return r == ingestv1.Reason_BATCH_TOO_LARGE || r == ingestv1.Reason_DECOMPRESSED_TOO_LARGE
}

// rejectedForNow is a retryable per-event rejection, kept as
// UndeliveredError.Last when retries run out.
type rejectedForNow struct {
	reason ingestv1.Reason
	msg    string
}

func (e *rejectedForNow) Error() string { return "client: " + e.reason.String() + ": " + e.msg }
