// Package trace answers "where is my event?" for one identity, (source,
// id): in the sink, in its DLQ, parked, pending in its source topic, or
// unknown, with the path it took, every audit row the consumer tier wrote
// about it, and what was searched to say so. It is the consumer tier's
// view, read-only: sluice trace and the consumer's admin endpoint GET
// /v1/trace/{source}/{id} print its Answer.
//
// # Usage
//
//	tr, err := trace.New(consumerCfg, kopts,        // the consumer block: group, topics, dlq
//		trace.WithAuditReader(reader))             // the sink's, when it has an audit table
//	defer tr.Close()
//	a, err := tr.Trace(ctx, trace.Query{Source: "shop", ID: "o-1",
//		Hint: &trace.Position{Topic: "ingest.x", Partition: 0, Offset: 7}}) // optional: the gateway's answer
//	a.WriteText(os.Stdout) // or a.WriteJSON
//	tr.Routes(mux)         // GET /v1/trace/{source}/{id}
//
// # What it searches
//
// First the audit table, when New is given a audit.Reader (the SQL
// sinks). Its rows settle the status, and only record.AuditTopic is read
// besides, when one of them is written (IN_SINK: the sink keeps the first
// write of an identity, whatever follows) or when the latest is
// dead_lettered or retried (IN_DLQ) or parked (PARKED). A latest replayed
// row sends the lookup to the replay's destination topic, for the copy
// the replay produced (PENDING).
//
// Then it makes one scan, with a plain client (never a group member), of
// the partitions that may hold the event:
//
//   - record.AuditTopic, always: without an audit table the consumer (of
//     the HTTP sink) writes every row there, and beside one it writes
//     there the rows the table did not take (the sink's database down
//     past the retries). Each record is read by audit.ParseRecord,
//     the first of each decision kept (the
//     topic is written at least once). Without a table they are decided
//     on as the table's would be, in time order, numbered from 1; beside
//     one, those it does not hold join its rows in time order, with
//     sequence 0;
//   - the DLQ and parked topic of every source topic, from the log start;
//     with an audit table that has no row of the event too, for events
//     dead-lettered before their rows were kept;
//   - every source topic from the group's committed offsets (the log
//     start where it committed none, as the consumer starts there) to the
//     end offsets: a record there is exactly one not yet consumed; or,
//     given a Hint, the one record at the hint.
//
// An event is matched by its sluice-event-id and sluice-source headers
// (record.ParseEvent). A copy past the committed offsets is PENDING, with
// its partition's lag (end offset - committed) and the records ahead of
// it. Else the newest dead letter found decides: parked is PARKED; in a
// DLQ topic IN_DLQ, unless the group committed past it, it is retryable,
// and no search of the DLQ and parked topics was cut: a drain pass then
// finished it without sending it back, so it was written (IN_SINK,
// Written.Inferred). Else UNKNOWN, saying what was searched.
//
// For IN_DLQ the answer says when it is tried again, by the consumer
// block: drains skip a dead letter that is not retryable; a retryable one
// is retried at the next drain pass (a pass starts every
// dlq.drain_interval once the sink has been healthy that long and the
// last pass is over; not before drain_interval after its last failure when
// that was a drain's), goes back to the DLQ on up to dlq.max_retries
// failed drains and is parked by a failure past them or after
// first_failure_at + dlq.deadline.
//
// # Bounds
//
// Limits.MaxRecords (default 100000) bounds the records one lookup reads
// across all its partitions: it is shared evenly between them, a
// partition with less leaving the rest to the others, and each keeps its
// newest records. Limits.Timeout (default 30 s) bounds the whole lookup.
// A search cut by either is no error: its Search says BoundHit or
// TimedOut, with the ranges read per partition, the Answer says BoundHit,
// and an event not found is UNKNOWN "within the limits". A partition whose
// last offsets are gaps (compaction, transaction markers) ends the scan
// after 5 s without records. An audit table that cannot be read, and
// offsets Kafka does not list, are errors.
//
// # The endpoint
//
// Routes serves GET /v1/trace/{source}/{id} (the source and id as one
// escaped path segment each) with the Answer's JSON, the same as sluice
// trace --json: 200 when found, 404 for UNKNOWN. Query parameters topic,
// partition and offset give the Hint together; max_records and timeout
// lower the Tracer's limits, never raise them. Bad input is 400 with an
// ErrorBody (INVALID_ARGUMENT and the field; ParseRequest is fuzzed); a
// request past WithMaxConcurrent lookups in flight is 503 BUSY with
// Retry-After; a sink or Kafka that does not answer is 503 UNAVAILABLE.
//
// # What it does not do
//
// It writes nothing: no offsets, no records, no audit rows. It does not
// read the sink's event table (an event written before its audit rows
// were kept is found only through its DLQ traces), decode values, or
// check contracts. It does not know the consumer's drain schedule beyond
// its config (a running consumer's last pass is not read), so the next
// drain is stated as a rule, not a time. Rows read from record.AuditTopic
// and records across partitions are ordered by time, not by any sequence
// Kafka guarantees. It reads DLQ and parked topics whole only within
// MaxRecords: on topics larger than that, an event's older traces may be
// missed, and the answer says so.
package trace
