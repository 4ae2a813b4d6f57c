package sink

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/clip"
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

// Valid reports whether a is one of the five actions.
func (a AuditAction) Valid() bool {
	switch a {
	case AuditWritten, AuditDeadLettered, AuditRetried, AuditParked, AuditReplayed:
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
	AuditDetailDuplicate = "duplicate"
	AuditDetailConflict  = "conflict"
)

// AuditRow is one decision about one event, keyed by (Source, EventID,
// Sequence). Sequence orders an event's rows; the store assigns it.
//
// A store keeps one row per decision about one Kafka record: a row whose
// (Source, EventID, Action, Topic, Partition, Offset, Attempt,
// DLQRetries, ReplayID) it holds already is a repeat (the record was
// decided on again after a crash, before its offset was committed) and is
// not stored again.
type AuditRow struct {
	Source   string
	EventID  string
	Sequence int64
	Action   AuditAction
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
	// a written row AuditDetailDuplicate or AuditDetailConflict when the
	// write stored nothing new; on a replayed row where the replay
	// produced the record (topic/partition@offset).
	Detail string
	// ReplayID and Actor name the replay job and its operator, for
	// replayed rows and for the written row of a replayed event.
	ReplayID string
	Actor    string
}

// Auditor records decisions that come with no sink write: a SQL sink in
// its own database, another kind elsewhere (the sluice.audit topic).
//
// A Sink that implements Auditor records the written rows of its Write
// itself, in the write's transaction; the consumer records them through
// an Auditor of its own for any other sink. A wrapper of such a Sink must
// therefore implement Auditor too.
type Auditor interface {
	Audit(ctx context.Context, rows []AuditRow) error
}

// AuditReader reads an event's decisions back, in Sequence order.
type AuditReader interface {
	AuditRows(ctx context.Context, source, eventID string) ([]AuditRow, error)
}

// WrittenRow is the written row of e, written by the sink named sinkName at
// at, with detail "" (the write stored e), AuditDetailDuplicate or
// AuditDetailConflict.
func WrittenRow(e *Event, sinkName string, at time.Time, detail string) AuditRow {
	return AuditRow{
		Source: e.Source, EventID: e.ID, Action: AuditWritten, At: at,
		Topic: e.Topic, Partition: e.Partition, Offset: e.Offset, EventType: e.Type,
		Group: e.Group, Sink: sinkName, Detail: detail, ReplayID: e.ReplayID, Actor: e.ReplayActor,
	}
}

// auditColumns are the columns of an audit table, in the order AuditRow
// is scanned; auditDecisionKey its unique key, the columns that make two
// rows one decision (see AuditRow).
const (
	auditColumns = `source, event_id, sequence, action, decided_at, topic, kafka_partition, kafka_offset,
	event_type, consumer_group, sink, error_class, error, attempt, dlq_retries, retryable, detail,
	replay_id, replay_actor`
	auditDecisionKey = `source, event_id, action, topic, kafka_partition, kafka_offset, attempt, dlq_retries, replay_id`
)

// AuditKey is what makes two rows one decision (see AuditRow): a store
// keeps one row per key, and a reader of rows recorded at least once (the
// sluice.audit topic) keeps the first of each.
type AuditKey struct {
	Source, EventID, Action, Topic string
	Partition                      int32
	Offset                         int64
	Attempt, DLQRetries            int
	ReplayID                       string
}

// Key is r's AuditKey.
func (r *AuditRow) Key() AuditKey {
	return AuditKey{r.Source, r.EventID, string(r.Action), r.Topic, r.Partition, r.Offset, r.Attempt, r.DLQRetries, r.ReplayID}
}

// maxAuditTextBytes bounds Error and Detail as a table sink stores them.
const maxAuditTextBytes = 4096

// prepareAudit checks rows and returns them as a table sink stores them:
// repeats within rows dropped, the first kept; free text (Error, Detail)
// made valid UTF-8 without NUL and cut to maxAuditTextBytes; At, when
// zero, set to now, and in UTC. A row no table can store (an identity
// Write would refuse, an unknown action, other text that is not UTF-8 or
// holds NUL) fails the whole call with a Permanent error wrapping
// ErrInvalidAuditRow.
func prepareAudit(rows []AuditRow, now time.Time) ([]AuditRow, error) {
	out := make([]AuditRow, 0, len(rows))
	seen := make(map[AuditKey]bool, len(rows))
	for i := range rows {
		r := rows[i]
		if err := checkAuditRow(&r); err != nil {
			return nil, PermanentError(fmt.Errorf("audit row %d (source %q, id %q): %w", i,
				clip.String(r.Source, 64), clip.String(r.EventID, 64), err))
		}
		k := r.Key()
		if seen[k] {
			continue
		}
		seen[k] = true
		r.Error, r.Detail = auditText(r.Error), auditText(r.Detail)
		if r.At.IsZero() {
			r.At = now
		}
		r.At = r.At.UTC()
		out = append(out, r)
	}
	return out, nil
}

func checkAuditRow(r *AuditRow) error {
	if err := checkIdentity(r.Source, r.EventID, ErrInvalidAuditRow); err != nil {
		return err
	}
	if !r.Action.Valid() {
		return fmt.Errorf("%w: unknown action %q", ErrInvalidAuditRow, clip.String(string(r.Action), 32))
	}
	for _, f := range [...]struct{ name, v string }{
		{"topic", r.Topic}, {"event type", r.EventType}, {"group", r.Group}, {"sink", r.Sink},
		{"class", r.Class}, {"replay id", r.ReplayID}, {"actor", r.Actor},
	} {
		if !utf8.ValidString(f.v) || strings.IndexByte(f.v, 0) >= 0 {
			return fmt.Errorf("%w: %s must be valid UTF-8 without NUL", ErrInvalidAuditRow, f.name)
		}
	}
	return nil
}

// auditText is s as valid UTF-8 without NUL, at most maxAuditTextBytes:
// an error message may quote anything.
func auditText(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	return clip.String(s, maxAuditTextBytes)
}
