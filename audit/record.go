package audit

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/clip"
	"github.com/sluicehq/sluice/record"
)

// DecisionOf is r as a record.Decision, At in UTC. A Decision has no
// sequence: r.Sequence is dropped.
func DecisionOf(r Row) record.Decision {
	return record.Decision{Kind: record.KindDecision, Action: string(r.Action), Source: r.Source, EventID: r.EventID, At: r.At.UTC(),
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, EventType: r.EventType, Group: r.Group, Sink: r.Sink,
		Class: r.Class, Error: r.Error, Attempt: r.Attempt, DLQRetries: r.DLQRetries, Retryable: r.Retryable,
		Detail: r.Detail, ReplayID: r.ReplayID, Actor: r.Actor, TraceID: r.TraceID}
}

// RowOf is d as a Row, its Sequence 0.
func RowOf(d *record.Decision) Row {
	return Row{Source: d.Source, EventID: d.EventID, Action: Action(d.Action), At: d.At,
		Topic: d.Topic, Partition: d.Partition, Offset: d.Offset, EventType: d.EventType, Group: d.Group, Sink: d.Sink,
		Class: d.Class, Error: d.Error, Attempt: d.Attempt, DLQRetries: d.DLQRetries, Retryable: d.Retryable,
		Detail: d.Detail, ReplayID: d.ReplayID, Actor: d.Actor, TraceID: d.TraceID}
}

// NewRecord is r as a record of record.AuditTopic (record.NewDecision).
func NewRecord(r Row) (*kgo.Record, error) { return record.NewDecision(DecisionOf(r)) }

// ParseRecord reads the row a record of record.AuditTopic holds. A record
// that is no decision (a replay's replay.started and replay.finished
// reports, or a record sluice did not write) holds none: ok is false and
// err nil. A decision that does not decode, or whose action is not one of
// Action's or whose event id is empty, is an error. A trace id that is not
// one (ValidTraceID) is dropped: it says nothing about the decision, and
// anyone who may write the topic may have put it there.
func ParseRecord(rec *kgo.Record) (row Row, ok bool, err error) {
	d, err := record.ParseDecision(rec)
	if errors.Is(err, record.ErrNotDecision) {
		return Row{}, false, nil
	}
	if err != nil {
		return Row{}, false, err
	}
	row = RowOf(&d)
	if !ValidTraceID(row.TraceID) {
		row.TraceID = ""
	}
	if !row.Action.Valid() || row.EventID == "" {
		return Row{}, false, fmt.Errorf("audit: a decision with action %q, event id %q", clip.String(d.Action, 32), clip.String(d.EventID, 64))
	}
	return row, true, nil
}
