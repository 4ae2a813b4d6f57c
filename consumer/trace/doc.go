// Package trace answers "where is my event?" for one identity, (source,
// id): in the sink, in its DLQ, parked, pending in its source topic, or
// unknown, with the path it took, every audit row the consumer tier wrote
// about it, and what was searched to say so. The answer and each row
// carry the W3C trace id of their record's traceparent (Answer.TraceID),
// which finds the event's trace in a tracing backend. It is the consumer tier's
// view, read-only: sluice trace and the consumer's admin endpoint GET
// /v1/trace/{source}/{id} print its Answer.
//
// # Usage
//
//	tr, err := trace.New(consumerCfg, conn,         // the consumer block: group, topics, dlq
//		trace.WithAuditReader(reader))             // the sink's, when it has an audit table
//	defer tr.Close()
//	a, err := tr.Trace(ctx, trace.Query{Source: "shop", ID: "o-1",
//		Hint: &trace.Position{Topic: "ingest.x", Partition: 0, Offset: 7}}) // optional: the gateway's answer
//	a.WriteText(os.Stdout) // or a.WriteJSON
//	tr.Routes(mux)         // GET /v1/trace/{source}/{id}
//
// # What it reads
//
// The audit table first, when New is given an audit.Reader (the SQL
// sinks); its rows settle the status when one is written (IN_SINK) or the
// latest is dead_lettered or retried (IN_DLQ) or parked (PARKED); a
// latest replayed row sends the lookup to the replay's destination topic.
// Then one scan, with a plain client (kafkaconn.Read), of record.AuditTopic
// (rows the table did not take, or every row without a table: the first
// of each audit.Key kept), of the DLQ and parked topics unless the rows
// settled, and of the source topics from the group's committed offsets to
// their end (or, given a Hint, the one record there). A copy past the
// committed offsets is PENDING, with its lag; else the newest dead letter
// found decides, and a retryable one in a DLQ the group committed past,
// with no search cut, was written by a drain (IN_SINK, inferred). Else
// UNKNOWN, saying what was searched. For IN_DLQ the answer states, from
// the consumer block, when the event is tried again.
//
// # Guarantees
//
//   - Limits.MaxRecords (default 100000) bounds the records one lookup
//     reads, shared evenly between its partitions, each keeping its
//     newest; Limits.Timeout (default 30 s) bounds the lookup. A search
//     cut by either is no error: it says BoundHit or TimedOut, with the
//     ranges read, and an event not found is UNKNOWN "within the limits".
//     A partition whose last offsets are gaps ends after 5 s without
//     records. An audit table that cannot be read, and offsets Kafka does
//     not list, are errors.
//   - The endpoint answers the Answer's JSON (as sluice trace --json): 200
//     when found, 404 for UNKNOWN; bad input is 400 with an ErrorBody
//     (ParseRequest is fuzzed); past WithMaxConcurrent lookups in flight,
//     503 BUSY with Retry-After; a sink or Kafka that does not answer, 503
//     UNAVAILABLE. Query limits lower the Tracer's, never raise them.
//
// # What survives a crash
//
// It keeps no state: each lookup reads afresh.
//
// # What it does not do
//
// It writes nothing: no offsets, no records, no audit rows. It does not
// read the sink's event table, decode values or check contracts, nor a
// running consumer's drain schedule (the next drain is stated as a rule).
// Rows read from record.AuditTopic and records across partitions are
// ordered by time, not by any order Kafka guarantees. DLQ and parked
// topics larger than MaxRecords are read only in part: an event's older
// traces may be missed, and the answer says so.
package trace
