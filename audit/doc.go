// Package audit is sluice's audit trail: one Row per decision the
// consumer tier (or an operator's replay) makes about one event, the
// Writer that records rows and the Reader that reads an event's rows back.
// sink's SQL sinks implement both in an audit table beside their events;
// consumer/dlq's TopicAuditor writes rows to record.AuditTopic; the
// consumer records through a Writer; consumer/trace reads through a
// Reader and from record.AuditTopic (ParseRecord).
//
//	rec, err := audit.NewRecord(row)         // a record.Decision for sluice.audit
//	row, ok, err := audit.ParseRecord(rec)   // ok false: not a decision (a replay's report)
//
// # Format
//
// A row's fields, the SQL audit table's columns and the JSON of a
// record.Decision map one to one; record owns the record's layout (topic,
// key, JSON). A table assigns Sequence; a record has none, and its
// decisions are ordered by offset within the partition of their event's
// key.
//
// A row's TraceID is the trace id of the traceparent on the record it
// decided about (on a replayed row, the record the replay produced, which
// carries the replay's trace when tracing records it), kept with tracing
// off too, since the caller's traceparent is on the record; it is no part
// of the Key.
//
// # Guarantees
//
//   - Two rows with the same Key are one decision. Rows are recorded at
//     least once (a record decided on again after a crash records its
//     decision again): a table stores the first of each Key, and a reader
//     of record.AuditTopic keeps the first of each.
//   - ParseRecord never panics (fuzzed: FuzzParseDecision) and returns a
//     row only with a valid Action and an event id, and a TraceID that is
//     one (ValidTraceID) or empty.
//
// # What it does not do
//
// It holds no state and does no I/O: storing, retrying and the fallback
// to record.AuditTopic are the writers' and the consumer's. A decision
// stands whether or not its row is recorded.
package audit
