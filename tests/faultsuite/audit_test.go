package faultsuite

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// TestCheckDeadLettered: the rows the checker holds DLQ and parked records
// to are located where the consumer locates them (sink.AuditRow) and
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
	row := func(action sink.AuditAction, topic string, partition int32, offset int64, change func(*sink.AuditRow)) sink.AuditRow {
		r := sink.AuditRow{Source: "s", EventID: "e", Action: action, Topic: topic, Partition: partition, Offset: offset,
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
		trail       []sink.AuditRow
		mismatches  int
	}{
		{name: "dead letter", dlq: []deadLetter{letter(0, 5, nil)},
			trail: []sink.AuditRow{row(sink.AuditDeadLettered, topic, 1, 40, nil)}},
		{name: "dead letter without its row", dlq: []deadLetter{letter(0, 5, nil)}, mismatches: 1},
		{name: "dead letter located at itself", dlq: []deadLetter{letter(0, 5, nil)},
			trail: []sink.AuditRow{row(sink.AuditDeadLettered, topic+".dlq", 0, 5, nil)}, mismatches: 1},
		{name: "dead letter of another class", dlq: []deadLetter{letter(0, 5, nil)},
			trail: []sink.AuditRow{row(sink.AuditDeadLettered, topic, 1, 40, func(r *sink.AuditRow) { r.Class = "transient" })}, mismatches: 1},
		{name: "dead letter of other attempts", dlq: []deadLetter{letter(0, 5, nil)},
			trail: []sink.AuditRow{row(sink.AuditDeadLettered, topic, 1, 40, func(r *sink.AuditRow) { r.Attempt = 3 })}, mismatches: 1},
		{name: "two dead letters of one record after a crash, one row", dlq: []deadLetter{letter(0, 5, nil), letter(2, 9, nil)},
			trail: []sink.AuditRow{row(sink.AuditDeadLettered, topic, 1, 40, nil)}},
		{name: "parked straight from the source record", parked: []deadLetter{letter(0, 3, refused)},
			trail: []sink.AuditRow{row(sink.AuditParked, topic, 1, 40, func(r *sink.AuditRow) { r.Detail = record.ParkedDLQRefused })}},
		{name: "parked without its reason", parked: []deadLetter{letter(0, 3, refused)},
			trail: []sink.AuditRow{row(sink.AuditParked, topic, 1, 40, nil)}, mismatches: 1},
		{name: "parked row of a dead letter", parked: []deadLetter{letter(0, 3, refused)},
			trail: []sink.AuditRow{row(sink.AuditDeadLettered, topic, 1, 40, func(r *sink.AuditRow) { r.Detail = record.ParkedDLQRefused })}, mismatches: 1},
		{
			name: "parked by a drain, at the DLQ record drained",
			dlq:  []deadLetter{letter(0, 5, nil), letter(0, 8, drainedOnce)}, parked: []deadLetter{letter(2, 1, maxRetries)},
			trail: []sink.AuditRow{
				row(sink.AuditDeadLettered, topic, 1, 40, nil),
				row(sink.AuditDeadLettered, topic, 1, 40, func(r *sink.AuditRow) { r.DLQRetries, r.Retryable, r.Class = 1, true, "transient" }),
				row(sink.AuditParked, topic+".dlq", 0, 8, func(r *sink.AuditRow) {
					r.DLQRetries, r.Class, r.Detail = 2, "transient", record.ParkedMaxRetries
				}),
			},
		},
		{
			name: "parked by a drain, at the source record",
			dlq:  []deadLetter{letter(0, 5, nil), letter(0, 8, drainedOnce)}, parked: []deadLetter{letter(2, 1, maxRetries)},
			trail: []sink.AuditRow{
				row(sink.AuditDeadLettered, topic, 1, 40, nil),
				row(sink.AuditDeadLettered, topic, 1, 40, func(r *sink.AuditRow) { r.DLQRetries, r.Retryable, r.Class = 1, true, "transient" }),
				row(sink.AuditParked, topic, 1, 40, func(r *sink.AuditRow) {
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
			trail: []sink.AuditRow{row(sink.AuditParked, topic+".dlq", 3, 7, func(r *sink.AuditRow) {
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
	stored := sink.AuditRow{Action: sink.AuditWritten}
	duplicate := sink.AuditRow{Action: sink.AuditWritten, Detail: sink.AuditDetailDuplicate}
	retried := sink.AuditRow{Action: sink.AuditRetried}
	for _, tc := range []struct {
		trail []sink.AuditRow
		ok    bool
	}{
		{[]sink.AuditRow{stored}, true},
		{[]sink.AuditRow{retried, stored, duplicate}, true},
		{nil, false},
		{[]sink.AuditRow{duplicate}, false},
		{[]sink.AuditRow{stored, stored}, false},
	} {
		if got := checkWritten(tc.trail); (len(got) == 0) != tc.ok {
			t.Errorf("trail %+v: %q, want ok %v", tc.trail, got, tc.ok)
		}
	}
}
