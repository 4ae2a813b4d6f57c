package audit

import (
	"context"
	"time"
)

// Action is a decision the consumer tier made about an event.
type Action string

const (
	// Written: the event was written to the sink. A SQL sink writes
	// this row in the transaction of the event's own row.
	Written Action = "written"
	// DeadLettered: the event went to its DLQ topic, with the error's
	// class, the error and the attempts made.
	DeadLettered Action = "dead_lettered"
	// Retried: a drain took the event from the DLQ to write it again.
	Retried Action = "retried"
	// Parked: the event went to its parked topic, where it waits for
	// an operator; Detail is the parked reason.
	Parked Action = "parked"
	// Replayed: an operator's replay (ReplayID, Actor) produced the
	// event to its source topic again.
	Replayed Action = "replayed"
)

// Valid reports whether a is one of the five actions.
func (a Action) Valid() bool {
	switch a {
	case Written, DeadLettered, Retried, Parked, Replayed:
		return true
	}
	return false
}

// Details of a written row that did not store the event: the sink held
// its identity already, with the same payload (a duplicate: a client's
// retry, a spool replay, a DLQ replay of an event written since) or with
// another one (a conflict: the copy is in the conflicts table). A written
// row whose Detail is empty is the one whose write stored the event row.
const (
	DetailDuplicate = "duplicate"
	DetailConflict  = "conflict"
)

// Row is one decision about one event, keyed by (Source, EventID,
// Sequence). Sequence orders an event's rows; the store assigns it.
//
// A store keeps one row per decision about one Kafka record: a row whose
// (Source, EventID, Action, Topic, Partition, Offset, Attempt,
// DLQRetries, ReplayID) it holds already is a repeat (the record was
// decided on again after a crash, before its offset was committed) and is
// not stored again.
type Row struct {
	Source   string
	EventID  string
	Sequence int64
	Action   Action
	// At is when the decision was made. For written rows it is the event
	// row's written_at, from the sink's clock.
	At time.Time
	// Topic, Partition and Offset locate the record the decision was
	// about: for written and dead_lettered rows the event's record in its
	// source topic (for an event a drain took from the DLQ, the original
	// record its envelope names); for retried rows the DLQ record drained;
	// for parked rows the record parked (the DLQ record a drain parked, or
	// the source record whose dead letter Kafka refused); for replayed
	// rows the DLQ or parked record the replay read.
	Topic     string
	Partition int32
	Offset    int64
	EventType string
	// Group is the consumer group that decided, Sink the sink's Name.
	// Both are empty on replayed rows: an operator decided.
	Group string
	Sink  string
	// Class, Error, Attempt and Retryable are the failure's, for
	// dead_lettered and parked rows; retried and replayed rows carry the
	// class, attempts and DLQ retries of the dead letter they took.
	Class     string
	Error     string
	Attempt   int
	Retryable bool
	// DLQRetries is the dead letter's dlq_retries: the drains it had
	// failed when the decision was made (0 for a record of a source
	// topic).
	DLQRetries int
	// Detail is the parked reason, or what else the action needs said: on
	// a written row DetailDuplicate or DetailConflict when the
	// write stored nothing new; on a replayed row where the replay
	// produced the record (topic/partition@offset).
	Detail string
	// ReplayID and Actor name the replay job and its operator, for
	// replayed rows and for the written row of a replayed event.
	ReplayID string
	Actor    string
	// TraceID is the W3C trace id (32 lowercase hex digits) of the trace
	// the decision belongs to, "" when there is none: that of the
	// traceparent on the record decided about (the caller's trace, or
	// the gateway's when tracing is on), and on a replayed row that of
	// the record the replay produced (the replay's trace when tracing
	// records it, else the dead letter's). It is no part of Key: the same
	// decision about the same record is one row whatever trace it names.
	TraceID string
}

// ValidTraceID reports whether id is a trace id as Row keeps one: 32
// lowercase hex digits, not all zero (W3C Trace Context), or empty.
func ValidTraceID(id string) bool {
	if id == "" {
		return true
	}
	if len(id) != 32 {
		return false
	}
	zero := true
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
		zero = zero && c == '0'
	}
	return !zero
}

// Writer records decisions that come with no sink write: a SQL sink in
// its own database, another kind elsewhere (the sluice.audit topic).
//
// A Sink that implements Writer records the written rows of its Write
// itself, in the write's transaction; the consumer records them through
// a Writer of its own for any other sink. A wrapper of such a Sink must
// therefore implement Writer too.
type Writer interface {
	Audit(ctx context.Context, rows []Row) error
}

// Reader reads an event's decisions back, in Sequence order.
type Reader interface {
	AuditRows(ctx context.Context, source, eventID string) ([]Row, error)
}

// Key is what makes two rows one decision (see Row): a store
// keeps one row per key, and a reader of rows recorded at least once (the
// sluice.audit topic) keeps the first of each.
type Key struct {
	Source, EventID, Action, Topic string
	Partition                      int32
	Offset                         int64
	Attempt, DLQRetries            int
	ReplayID                       string
}

// Key is r's Key.
func (r *Row) Key() Key {
	return Key{r.Source, r.EventID, string(r.Action), r.Topic, r.Partition, r.Offset, r.Attempt, r.DLQRetries, r.ReplayID}
}
