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
//		Actor: "ops", Rate: 100, Topics: ingestTopics, Registry: contracts})
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
// # Audit records
//
// Before it produces anything Replay writes a replay.started ReplayReport
// as JSON to record.AuditTopic, keyed by the replayed topic, and there is
// no replay without it: a missing audit topic refuses the replay. A
// replay.finished report with the same replay_id, the counts and the
// outcome follows however the replay ends, canceled included (it is
// written under a deadline of its own).
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
