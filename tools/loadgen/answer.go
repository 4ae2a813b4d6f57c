package loadgen

import (
	"time"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// Answer is what a target said about one request: a result for every
// event, or a whole-request failure.
type Answer struct {
	// Results are by event index; empty when Failure is set.
	Results []EventResult
	// Failure is a refusal of the whole request (authentication, rate limit,
	// body too large, push-back), typed by the gateway.
	Failure *Failure
}

// EventResult is one event's outcome.
type EventResult struct {
	ID      string
	Outcome ingestv1.Outcome
	// Durability is where an ACCEPTED event was made durable; unset
	// otherwise.
	Durability ingestv1.Durability
	// Kafka or Spool is the position the target answered: where an
	// ACCEPTED event is, or a DUPLICATE's original; both nil when it
	// answered none.
	Kafka *ingestv1.KafkaPosition
	Spool *ingestv1.SpoolPosition
	// Reason and RetryAfter are set for REJECTED.
	Reason     string
	Retryable  bool
	RetryAfter time.Duration
	// Message is the target's explanation of a rejection.
	Message string
	// Conflict names the two payloads of an IDEMPOTENCY_CONFLICT.
	Conflict *ingestv1.PayloadConflict
	// Failure is set, with Outcome unset, when the target gave up on this
	// event without an answer that settles it: the client target's
	// *client.UndeliveredError (Code "client:UNDELIVERED"; Message says
	// why). It is counted as a failure of one event.
	Failure *Failure
}

// Failure is a whole-request refusal: Code is the transport's code
// ("grpc:RESOURCE_EXHAUSTED", "http:429"), Reason the gateway's reason.
// As an EventResult's Failure it is one event's: Code "client:UNDELIVERED".
type Failure struct {
	Code       string
	Reason     string
	Retryable  bool
	RetryAfter time.Duration
}

// key is how the report counts the failure: "code/REASON", or the code
// alone when there is no reason.
func (f *Failure) key() string {
	if f.Reason == "" {
		return f.Code
	}
	return f.Code + "/" + f.Reason
}

// Acknowledged reports whether the event is durable for its source:
// ACCEPTED, or DUPLICATE of an accepted one.
func (r EventResult) Acknowledged() bool {
	return r.Outcome == ingestv1.Outcome_ACCEPTED || r.Outcome == ingestv1.Outcome_DUPLICATE
}

func resultsOf(rs []*ingestv1.EventResult, n int) ([]EventResult, error) {
	if len(rs) != n {
		return nil, errAnswerLength(len(rs), n)
	}
	out := make([]EventResult, n)
	seen := make([]bool, n)
	for _, r := range rs {
		i := int(r.GetIndex())
		if i >= n || seen[i] {
			return nil, errAnswerIndex(i, n)
		}
		seen[i] = true
		out[i] = EventResult{ID: r.GetId(), Outcome: r.GetOutcome(), Durability: r.GetDurability(), Kafka: r.GetKafka(), Spool: r.GetSpool()}
		if rej := r.GetRejection(); r.GetOutcome() == ingestv1.Outcome_REJECTED {
			out[i].Reason = rej.GetReason().String()
			out[i].Retryable = rej.GetRetryable()
			out[i].RetryAfter = rej.GetRetryAfter().AsDuration()
			out[i].Message = rej.GetMessage()
			out[i].Conflict = rej.GetConflict()
		}
	}
	return out, nil
}
