// Package dlq is sluice's dead-letter tooling: the producer through which
// the consumer tier writes dead letters and parked records, and an
// operator's reading and replay of a DLQ or parked topic. The record
// format (the sluice-dlq-* envelope, the topic names, the parked copy) is
// package record's; this package produces and reads it.
//
// # Usage
//
//	p := dlq.NewProducer(cl, dlq.ProducerConfig{...}, dlq.WithLogger(log)) // cl: acks=all, ProducerBatchMaxBytes
//	topic, env, err := p.Send(ctx, record.DLQTopic(src.Topic), src, env)   // the topic and envelope Kafka took
//
//	err = dlq.List(ctx, kopts, "ingest.x.dlq", sel, func(d dlq.DeadLetter) error { ... })
//	rep, err := dlq.Replay(ctx, kopts, "ingest.x.dlq", sel, dlq.ReplayOptions{
//		Actor: "ops", Rate: 100, Topics: ingestTopics, Registry: contracts,
//		Auditor: tableSink}) // nil: replayed rows go to sluice.audit
//
//	a := dlq.NewTopicAuditor(cl, nil) // a audit.Writer producing Decisions to sluice.audit
//
// # Producing dead letters
//
// Producer.Send produces a dead letter (record.NewDeadLetter: the original
// key, value and headers with the envelope) to a DLQ or parked topic and
// returns once Kafka acknowledged it. publish.Retryable decides what a
// failed produce means. A transient failure is retried with
// ProducerConfig.Backoff for as long as ctx lives; the caller's ctx is
// the record's partition, so a record whose partition is revoked is left
// unproduced rather than retried by a member that no longer owns it. The
// warnings of retried produces are spaced, one per 5 s with the count of
// those held back. A permanent failure (MESSAGE_TOO_LARGE, an
// authorization failure) is never retried: a copy goes to the parked topic
// instead (record.NewParkedCopy), marked dlq_refused with the refusal, its
// value cut to fit ProducerConfig.MaxRecordBytes when it must be (the
// whole value is still in the source topic, at the envelope's
// coordinates). When Kafka refuses that copy too, or the key and headers
// alone do not fit, Send returns a *DeadLetterError naming the record and
// nothing was produced: the consumer then stops without committing past
// it. Its metrics (Collectors) count the failed produces by verdict, the
// copies cut to fit and the records that could go nowhere.
//
// # Reading
//
// List reads a DLQ or parked topic with a plain client, not as a group
// member, from its start offsets to the end offsets found when it starts;
// a partition whose last offsets are gaps (compacted records, transaction
// markers) ends after 5 s without records. Selection filters on
// last_failure_at, source, type, error class, partition and offset range.
// A record whose envelope or event headers do not parse is still listed,
// with the parse error, unless the selection filters on what it lacks.
//
// # Replay
//
// Replay produces the selected records, envelope removed, at most
// ReplayOptions.Rate a second, to the source topic of the topic it reads,
// which must be one of ReplayOptions.Topics; it never routes by a
// record's envelope. Each record is checked first, dry runs included
// (CheckContract, the check the consumer applies to what it drains): one
// whose envelope does not parse (Unreadable), names another source topic
// (Mismatched), or whose value is not a valid event of its contract
// (Invalid: unknown type, bad sluice headers, undecodable, breaking the
// rules, or cut to fit) is refused, counted and never produced.
// ReplayOptions.Registry is the one version of each type replay keeps: a
// record of another schema version that it cannot read is refused as
// Invalid with an *UnknownVersionError; replay it with the descriptor set
// that has its version.
//
// # Schema versions
//
// A record carries the fingerprint of the schema version it was published
// under, and Version picks the contract it is read with from Contracts (a
// *contract.Versions): that version when it is kept; otherwise the newest
// version of its type, but only for a value the newest reads without loss
// (Contract.DecodeBinary: no unknown field, wrong wire type, invalid UTF-8
// or nesting past the limit), since Contract.Render drops unknown fields
// unseen. A value the newest cannot read is an *UnknownVersionError: the
// consumer dead-letters its record as record.ClassSchema, retryable, until
// a reload brings the version back. CheckContract checks a value against
// the contract Version picks, rules included, so a record of a version
// not kept is held to the newest's rules when the newest can read it, and
// to none when it cannot: it is refused unjudged.
//
// Every record Replay produces carries the replay's id and actor in its
// sluice-replay-id and sluice-replay-actor headers (record.WithReplay),
// in place of an earlier replay's; the consumer copies them into the
// event's written audit row. Once Kafka acknowledged a record, Replay
// records its replayed row (audit.Replayed: the DLQ or parked record
// read, its envelope's class, attempts and dlq_retries, and in Detail
// where it was produced, topic/partition@offset) through
// ReplayOptions.Auditor, or to record.AuditTopic as a Decision when there
// is none. A row that cannot be recorded stops the replay with an error
// naming the record, which is in Kafka and counted as replayed. The
// consumer may write the record before its replayed row is recorded, so
// in an event's trail the written row of a replay may come first; both
// carry the replay id.
//
// # Audit records
//
// record.AuditTopic holds JSON records of two kinds, told apart by their
// "kind" field:
//
//   - "replay": a ReplayReport. Before it produces anything Replay writes
//     a replay.started report, keyed by the replayed topic, and there is
//     no replay without it: a missing audit topic refuses the replay. A
//     replay.finished report with the same replay_id, the counts and the
//     outcome follows however the replay ends, canceled included (it is
//     written under a deadline of its own).
//   - "decision": a Decision, one audit.Row, keyed by the event's
//     identity (sink.IdempotencyKey: source/id, each path-escaped), so
//     an event's decisions are in one partition, in the order they were
//     recorded. A TopicAuditor writes them: the consumer's, for a sink
//     with no audit table (HTTP), and Replay's, given no Auditor.
//
// A decision is
//
//	{"kind": "decision", "action": "dead_lettered", "source": "shop", "event_id": "o-1",
//	 "at": "2026-11-29T10:00:00.123456789Z", "topic": "ingest.x", "partition": 0, "offset": 41,
//	 "event_type": "x", "group": "sluice-consumer", "sink": "http", "class": "permanent",
//	 "error": "...", "attempt": 1, "dlq_retries": 0, "retryable": false, "detail": "",
//	 "replay_id": "", "actor": ""}
//
// with the fields of audit.Row, empty strings left out; there is no
// sequence (offset order is the order). Decisions are at least once: one
// recorded again after a crash is produced again, and a reader dedupes
// by (source, event_id, action, topic, partition, offset, attempt,
// dlq_retries, replay_id), the key a table sink keeps one row per.
// ParseDecision reads one back.
//
// # What survives a crash
//
// Nothing is kept but what Kafka holds. A replay that dies part way
// leaves a replay.started record without its replay.finished one; running
// it again produces the records again, which the sinks' upsert by
// identity makes harmless. A dead letter Send had not yet seen
// acknowledged is produced again by the consumer that takes the record
// over.
//
// # What it does not do
//
// It does not consume as a group member or commit offsets, does not
// delete or rewrite the records of a DLQ or parked topic, does not create
// topics, and does not deduplicate: the sinks do.
package dlq
