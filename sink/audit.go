package sink

import (
	"context"
	"time"
)

// AuditAction is a decision the consumer tier made about an event.
type AuditAction string

const (
	// AuditWritten: the event was written to the sink. A SQL sink writes
	// this row in the transaction of the event's own row.
	AuditWritten AuditAction = "written"
	// AuditDeadLettered: the event went to its DLQ topic, with the error's
	// class, the error and the attempts made.
	AuditDeadLettered AuditAction = "dead_lettered"
	// AuditRetried: a drain took the event from the DLQ to write it again.
	AuditRetried AuditAction = "retried"
	// AuditParked: the event went to its parked topic, where it waits for
	// an operator; Detail is the parked reason.
	AuditParked AuditAction = "parked"
	// AuditReplayed: an operator's replay (ReplayID, Actor) produced the
	// event to its source topic again.
	AuditReplayed AuditAction = "replayed"
)

// AuditRow is one decision about one event, keyed by (Source, EventID,
// Sequence). Sequence orders an event's rows; the store assigns it.
type AuditRow struct {
	Source   string
	EventID  string
	Sequence int64
	Action   AuditAction
	// At is when the decision was made.
	At time.Time
	// Topic, Partition and Offset locate the record the decision was
	// about (the source topic's record for written and dead_lettered, the
	// DLQ or parked record for the others).
	Topic     string
	Partition int32
	Offset    int64
	EventType string
	// Group is the consumer group that decided, Sink the sink's Name.
	Group string
	Sink  string
	// Class, Error, Attempt and Retryable are the failure's, for
	// dead_lettered and parked rows.
	Class     string
	Error     string
	Attempt   int
	Retryable bool
	// Detail is the parked reason, or what else the action needs said.
	Detail string
	// ReplayID and Actor name the replay job and its operator, for
	// replayed rows and for the written row of a replayed event.
	ReplayID string
	Actor    string
}

// Auditor records decisions that come with no sink write: a SQL sink in
// its own database, another kind elsewhere (the sluice.audit topic).
type Auditor interface {
	Audit(ctx context.Context, rows []AuditRow) error
}

// AuditReader reads an event's decisions back, in Sequence order.
type AuditReader interface {
	AuditRows(ctx context.Context, source, eventID string) ([]AuditRow, error)
}
