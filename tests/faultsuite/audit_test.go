package faultsuite

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/record"
)

// TestCheckDeadLettered: the rows the checker holds DLQ and parked records
// to are located where the consumer locates them (audit.Row) and
// carry their envelope.
func TestCheckDeadLettered(t *testing.T) {
	const topic = "t"
	env := record.Envelope{Class: "permanent", Sink: "postgres", Attempts: 4, SourceTopic: topic, SourcePartition: 1,
		SourceOffset: 40, Group: "g"}
	letter := func(partition int32, offset int64, change func(*record.Envelope)) deadLetter {
		e := env
		if change != nil {
			change(&e)
		}
		return deadLetter{partition: partition, offset: offset, source: "s", eventID: "e", typ: "T", env: e}
	}
	row := func(action audit.Action, topic string, partition int32, offset int64, change func(*audit.Row)) audit.Row {
		r := audit.Row{Source: "s", EventID: "e", Action: action, Topic: topic, Partition: partition, Offset: offset,
			EventType: "T", Group: "g", Sink: "postgres", Class: "permanent", Attempt: 4}
		if change != nil {
			change(&r)
		}
		return r
	}
	refused := func(e *record.Envelope) { e.ParkedReason = record.ParkedDLQRefused }
	drainedOnce := func(e *record.Envelope) { e.DLQRetries, e.Retryable, e.Class = 1, true, "transient" }
	maxRetries := func(e *record.Envelope) {
		e.DLQRetries, e.Class, e.ParkedReason = 2, "transient", record.ParkedMaxRetries
	}
	unreadable := func(e *record.Envelope) {
		e.Class, e.ParkedReason, e.SourcePartition, e.SourceOffset = record.ClassDecode, record.ParkedUnreadable, 3, 7
	}
	for _, tc := range []struct {
		name        string
		dlq, parked []deadLetter
		trail       []audit.Row
		mismatches  int
	}{
		{name: "dead letter", dlq: []deadLetter{letter(0, 5, nil)},
			trail: []audit.Row{row(audit.DeadLettered, topic, 1, 40, nil)}},
		{name: "dead letter without its row", dlq: []deadLetter{letter(0, 5, nil)}, mismatches: 1},
		{name: "dead letter located at itself", dlq: []deadLetter{letter(0, 5, nil)},
			trail: []audit.Row{row(audit.DeadLettered, topic+".dlq", 0, 5, nil)}, mismatches: 1},
		{name: "dead letter of another class", dlq: []deadLetter{letter(0, 5, nil)},
			trail: []audit.Row{row(audit.DeadLettered, topic, 1, 40, func(r *audit.Row) { r.Class = "transient" })}, mismatches: 1},
		{name: "dead letter of other attempts", dlq: []deadLetter{letter(0, 5, nil)},
			trail: []audit.Row{row(audit.DeadLettered, topic, 1, 40, func(r *audit.Row) { r.Attempt = 3 })}, mismatches: 1},
		{name: "two dead letters of one record after a crash, one row", dlq: []deadLetter{letter(0, 5, nil), letter(2, 9, nil)},
			trail: []audit.Row{row(audit.DeadLettered, topic, 1, 40, nil)}},
		{name: "parked straight from the source record", parked: []deadLetter{letter(0, 3, refused)},
			trail: []audit.Row{row(audit.Parked, topic, 1, 40, func(r *audit.Row) { r.Detail = record.ParkedDLQRefused })}},
		{name: "parked without its reason", parked: []deadLetter{letter(0, 3, refused)},
			trail: []audit.Row{row(audit.Parked, topic, 1, 40, nil)}, mismatches: 1},
		{name: "parked row of a dead letter", parked: []deadLetter{letter(0, 3, refused)},
			trail: []audit.Row{row(audit.DeadLettered, topic, 1, 40, func(r *audit.Row) { r.Detail = record.ParkedDLQRefused })}, mismatches: 1},
		{
			name: "parked by a drain, at the DLQ record drained",
			dlq:  []deadLetter{letter(0, 5, nil), letter(0, 8, drainedOnce)}, parked: []deadLetter{letter(2, 1, maxRetries)},
			trail: []audit.Row{
				row(audit.DeadLettered, topic, 1, 40, nil),
				row(audit.DeadLettered, topic, 1, 40, func(r *audit.Row) { r.DLQRetries, r.Retryable, r.Class = 1, true, "transient" }),
				row(audit.Parked, topic+".dlq", 0, 8, func(r *audit.Row) {
					r.DLQRetries, r.Class, r.Detail = 2, "transient", record.ParkedMaxRetries
				}),
			},
		},
		{
			name: "parked by a drain, at the source record",
			dlq:  []deadLetter{letter(0, 5, nil), letter(0, 8, drainedOnce)}, parked: []deadLetter{letter(2, 1, maxRetries)},
			trail: []audit.Row{
				row(audit.DeadLettered, topic, 1, 40, nil),
				row(audit.DeadLettered, topic, 1, 40, func(r *audit.Row) { r.DLQRetries, r.Retryable, r.Class = 1, true, "transient" }),
				row(audit.Parked, topic, 1, 40, func(r *audit.Row) {
					r.DLQRetries, r.Class, r.Detail = 2, "transient", record.ParkedMaxRetries
				}),
			},
			mismatches: 1,
		},
		{
			// The DLQ record without an envelope is a mismatch of its own.
			name:   "parked unreadable, at the DLQ record drained",
			dlq:    []deadLetter{{partition: 3, offset: 7, source: "s", eventID: "e", err: errors.New("no envelope")}},
			parked: []deadLetter{letter(0, 2, unreadable)},
			trail: []audit.Row{row(audit.Parked, topic+".dlq", 3, 7, func(r *audit.Row) {
				r.Class, r.Detail = record.ClassDecode, record.ParkedUnreadable
			})},
			mismatches: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkDeadLettered(topic, tc.dlq, tc.parked, tc.trail)
			if len(got) != tc.mismatches {
				t.Errorf("%d mismatches, want %d: %q", len(got), tc.mismatches, got)
			}
		})
	}
}

func TestCheckWritten(t *testing.T) {
	stored := audit.Row{Action: audit.Written}
	duplicate := audit.Row{Action: audit.Written, Detail: audit.DetailDuplicate}
	retried := audit.Row{Action: audit.Retried}
	for _, tc := range []struct {
		trail []audit.Row
		ok    bool
	}{
		{[]audit.Row{stored}, true},
		{[]audit.Row{retried, stored, duplicate}, true},
		{nil, false},
		{[]audit.Row{duplicate}, false},
		{[]audit.Row{stored, stored}, false},
	} {
		if got := checkWritten(tc.trail); (len(got) == 0) != tc.ok {
			t.Errorf("trail %+v: %q, want ok %v", tc.trail, got, tc.ok)
		}
	}
}
