package trace

import (
	"time"

	"github.com/sluicehq/sluice/audit"
)

// Status is where an event is.
type Status string

const (
	// InSink: written to the sink (an audit row says when, from where).
	InSink Status = "IN_SINK"
	// InDLQ: its latest decision put it in its DLQ topic.
	InDLQ Status = "IN_DLQ"
	// Parked: in its parked topic, waiting for an operator.
	Parked Status = "PARKED"
	// Pending: in a source topic past the group's committed offset: not
	// yet consumed.
	Pending Status = "PENDING"
	// Unknown: not found within what was searched and the limits.
	Unknown Status = "UNKNOWN"
)

// Where a step or a finding comes from (Step.From).
const (
	FromAuditTable = "audit_table" // the sink's audit.Reader
	FromAuditTopic = "audit_topic" // rows read from record.AuditTopic
	FromScan       = "scan"        // a record read in a DLQ, parked or source topic
	FromHint       = "hint"        // the record at the query's Hint
)

// What a Search searched (Search.What).
const (
	SearchAuditTable = "audit_table"
	SearchAuditTopic = "audit_topic"
	SearchDLQ        = "dlq"
	SearchParked     = "parked"
	SearchSource     = "source" // from the group's committed offsets to the end
	SearchHint       = "hint"   // the one record at the Hint
)

// Answer is where an event is, how it got there, and what was searched
// to say so. It is the JSON of sluice trace --json and of GET
// /v1/trace/{source}/{id}.
type Answer struct {
	Source string `json:"source"`
	ID     string `json:"id"`
	Status Status `json:"status"`
	// Summary is the status line: one sentence saying where and since
	// when, and what comes next.
	Summary string `json:"summary"`
	// TraceID is the W3C trace id (32 lowercase hex digits) of the
	// record the status is about: the written row's, the latest dead
	// letter's, the pending copy's; when that one has none, the newest
	// known of the event's rows, then of its records. Empty when none had
	// a traceparent. Each audit row has its own: a replay's record carries
	// the replay's trace.
	TraceID string `json:"trace_id,omitempty"`
	// Written is set for IN_SINK, DeadLetter for IN_DLQ and PARKED,
	// Pending for PENDING.
	Written    *Written    `json:"written,omitempty"`
	DeadLetter *DeadLetter `json:"dead_letter,omitempty"`
	Pending    *PendingAt  `json:"pending,omitempty"`
	// Path is every step known of the event, in time order.
	Path []Step `json:"path"`
	// Audit is every audit row of the event: the table's in sequence
	// order, or those read from record.AuditTopic numbered from 1 in time
	// order. Beside a table, rows the consumer recorded in
	// record.AuditTopic while the table did not take them are among them,
	// in time order, with sequence 0.
	Audit []Row `json:"audit"`
	// Searched says what was searched, in order, and how far.
	Searched []Search   `json:"searched"`
	Limits   LimitsUsed `json:"limits"`
	// RecordsRead counts the Kafka records read; BoundHit is set when
	// max_records or the timeout cut a search, so that a record may have
	// been missed.
	RecordsRead int64 `json:"records_read"`
	BoundHit    bool  `json:"bound_hit"`
}

// LimitsUsed are the limits of the lookup, as JSON.
type LimitsUsed struct {
	MaxRecords int64  `json:"max_records"`
	Timeout    string `json:"timeout"`
}

// Written is how an event reached the sink.
type Written struct {
	// At is when the sink wrote it; zero when inferred.
	At    time.Time `json:"at,omitzero"`
	Sink  string    `json:"sink,omitempty"`
	Group string    `json:"group,omitempty"`
	// From is the record written: the source topic's, or the DLQ
	// record a drain wrote.
	From Position `json:"from"`
	// ReplayID and Actor name the replay that produced the record
	// written, when a replay did.
	ReplayID string `json:"replay_id,omitempty"`
	Actor    string `json:"actor,omitempty"`
	// Inferred is set when no audit row says so: the group committed past
	// the event's newest DLQ record, which is retryable, and no newer DLQ
	// or parked record holds it, so a drain pass wrote it.
	Inferred bool   `json:"inferred,omitempty"`
	Note     string `json:"note,omitempty"`
}

// DeadLetter is an event's latest dead letter: in its DLQ topic, or
// parked.
type DeadLetter struct {
	// Topic is the DLQ or parked topic.
	Topic string `json:"topic"`
	// Record is the DLQ or parked record, when a scan found it.
	Record *Position `json:"record,omitempty"`
	// Source is the original record, in its source topic.
	Source *Position `json:"source,omitempty"`
	// At is the last failure, FirstFailureAt the first.
	At             time.Time `json:"at"`
	FirstFailureAt time.Time `json:"first_failure_at,omitzero"`
	Class          string    `json:"class,omitempty"`
	Error          string    `json:"error,omitempty"`
	Retryable      bool      `json:"retryable"`
	Attempts       int       `json:"attempts"`
	// DLQRetries counts the drain passes it failed.
	DLQRetries int    `json:"dlq_retries"`
	Sink       string `json:"sink,omitempty"`
	Group      string `json:"group,omitempty"`
	// ParkedReason is set on PARKED.
	ParkedReason string `json:"parked_reason,omitempty"`
	// Next is set on IN_DLQ: when a drain tries it again.
	Next *NextDrain `json:"next_drain,omitempty"`
	Note string     `json:"note,omitempty"`
}

// NextDrain is when the consumer tries a dead letter again, from the
// consumer block's dlq settings: a drain pass starts once the sink has
// been healthy, and the last pass over, for dlq.drain_interval.
type NextDrain struct {
	// Retried is false for a dead letter drains skip (not retryable).
	Retried bool `json:"retried"`
	// Every is dlq.drain_interval.
	Every string `json:"every,omitempty"`
	// NotBefore is set when the last failure was a drain pass's: the next
	// pass starts drain_interval after that one ended, at the earliest.
	NotBefore time.Time `json:"not_before,omitzero"`
	// RetriesLeft is how many more failed drains send it back to the
	// DLQ; a failure past them parks it (dlq.max_retries).
	RetriesLeft int `json:"retries_left"`
	// ParksAfter is first_failure_at + dlq.deadline: a failure after it
	// parks it.
	ParksAfter time.Time `json:"parks_after,omitzero"`
	Text       string    `json:"text"`
}

// PendingAt is an event not yet consumed: a copy in a source topic past
// the group's committed offset.
type PendingAt struct {
	// Record is the copy found; nil when none was (a replay's copy not
	// found within the limits).
	Record     *Position `json:"record,omitempty"`
	IngestedAt time.Time `json:"ingested_at,omitzero"`
	// Committed is where the group resumes in the record's partition (its
	// committed offset, or the log start when it committed none), End the
	// partition's end offset, Lag End-Committed, Ahead the records before
	// the copy still to be consumed.
	Committed int64  `json:"committed"`
	End       int64  `json:"end"`
	Lag       int64  `json:"lag"`
	Ahead     int64  `json:"ahead"`
	Group     string `json:"group"`
	Note      string `json:"note,omitempty"`
}

// Step is one thing known to have happened to the event.
type Step struct {
	At time.Time `json:"at,omitzero"`
	// Step is accepted (published to a source topic), an audit action
	// (written, dead_lettered, retried, parked, replayed), or found in a
	// scan: dead_lettered, parked.
	Step  string    `json:"step"`
	Where *Position `json:"where,omitempty"`
	From  string    `json:"from"`
	Note  string    `json:"note,omitempty"`
}

// Row is a audit.Row as JSON.
type Row struct {
	Sequence  int64     `json:"sequence"`
	Action    string    `json:"action"`
	At        time.Time `json:"at"`
	Topic     string    `json:"topic,omitempty"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	EventType string    `json:"event_type,omitempty"`
	Group     string    `json:"group,omitempty"`
	Sink      string    `json:"sink,omitempty"`
	Class     string    `json:"class,omitempty"`
	Error     string    `json:"error,omitempty"`
	Attempt   int       `json:"attempt,omitempty"`
	// DLQRetries counts the drains the dead letter had failed.
	DLQRetries int    `json:"dlq_retries,omitempty"`
	Retryable  bool   `json:"retryable"`
	Detail     string `json:"detail,omitempty"`
	ReplayID   string `json:"replay_id,omitempty"`
	Actor      string `json:"actor,omitempty"`
	// TraceID is the trace id of the record decided about.
	TraceID string `json:"trace_id,omitempty"`
}

func rowOf(r audit.Row) Row {
	return Row{Sequence: r.Sequence, Action: string(r.Action), At: r.At.UTC(), Topic: r.Topic, Partition: r.Partition,
		Offset: r.Offset, EventType: r.EventType, Group: r.Group, Sink: r.Sink, Class: r.Class, Error: r.Error,
		Attempt: r.Attempt, DLQRetries: r.DLQRetries, Retryable: r.Retryable, Detail: r.Detail, ReplayID: r.ReplayID, Actor: r.Actor,
		TraceID: r.TraceID}
}

// Search is one thing searched: the audit table, or a topic's partitions.
type Search struct {
	What  string `json:"what"`
	Topic string `json:"topic,omitempty"`
	// Partitions are the ranges read, per partition.
	Partitions []Range `json:"partitions,omitempty"`
	// Read counts the records read (the rows, for the audit table),
	// InRange those the search would have read without the limits.
	Read    int64 `json:"read"`
	InRange int64 `json:"in_range"`
	// Found counts the records (rows) of the event.
	Found int `json:"found"`
	// BoundHit: max_records kept the search from its range's oldest
	// records; TimedOut: the timeout ended it before its range's end.
	BoundHit bool   `json:"bound_hit,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Note     string `json:"note,omitempty"`
}

// Range is one partition's search: Start is where it would begin
// without max_records (the log start, or the group's committed offset for
// a source topic), From where it began, End the end offset when it
// started, Next the offset after the last one read (End when it read to
// the end).
type Range struct {
	Partition int32 `json:"partition"`
	Start     int64 `json:"start"`
	From      int64 `json:"from"`
	End       int64 `json:"end"`
	Next      int64 `json:"next"`
}
