package sink

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/internal/clip"
)

// WrittenRow is the written row of e, written by the sink named sinkName at
// at, with detail "" (the write stored e), audit.DetailDuplicate or
// audit.DetailConflict. A TraceID that is not one (audit.ValidTraceID) is
// left out.
func WrittenRow(e *Event, sinkName string, at time.Time, detail string) audit.Row {
	r := audit.Row{
		Source: e.Source, EventID: e.ID, Action: audit.Written, At: at,
		Topic: e.Topic, Partition: e.Partition, Offset: e.Offset, EventType: e.Type,
		Group: e.Group, Sink: sinkName, Detail: detail, ReplayID: e.ReplayID, Actor: e.ReplayActor,
		TraceID: e.TraceID,
	}
	if !audit.ValidTraceID(r.TraceID) {
		r.TraceID = ""
	}
	return r
}

// auditColumns are the columns of an audit table, in the order audit.Row
// is scanned; auditDecisionKey its unique key, the columns that make two
// rows one decision (see audit.Row).
const (
	auditColumns = `source, event_id, sequence, action, decided_at, topic, kafka_partition, kafka_offset,
	event_type, consumer_group, sink, error_class, error, attempt, dlq_retries, retryable, detail,
	replay_id, replay_actor, trace_id`
	auditDecisionKey = `source, event_id, action, topic, kafka_partition, kafka_offset, attempt, dlq_retries, replay_id`
)

// maxAuditTextBytes bounds Error and Detail as a table sink stores them.
const maxAuditTextBytes = 4096

// prepareAudit checks rows and returns them as a table sink stores them:
// repeats within rows dropped, the first kept; free text (Error, Detail)
// made valid UTF-8 without NUL and cut to maxAuditTextBytes; At, when
// zero, set to now, and in UTC; a TraceID that is not one
// (audit.ValidTraceID) dropped, since it says nothing about the decision. A row no table can store (an identity
// Write would refuse, an unknown action, other text that is not UTF-8 or
// holds NUL) fails the whole call with a Permanent error wrapping
// ErrInvalidAuditRow.
func prepareAudit(rows []audit.Row, now time.Time) ([]audit.Row, error) {
	out := make([]audit.Row, 0, len(rows))
	seen := make(map[audit.Key]bool, len(rows))
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
		if !audit.ValidTraceID(r.TraceID) {
			r.TraceID = ""
		}
		if r.At.IsZero() {
			r.At = now
		}
		r.At = r.At.UTC()
		out = append(out, r)
	}
	return out, nil
}

func checkAuditRow(r *audit.Row) error {
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
