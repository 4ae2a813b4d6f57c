// Package dlq is sluice's dead-letter tooling: the Producer through which
// the consumer tier writes dead letters and parked records, the
// TopicAuditor that records audit rows in record.AuditTopic, and an
// operator's List and Replay of a DLQ or parked topic. The record layouts
// (envelope, topic names, parked copy, audit records) are package
// record's; this package produces and reads them.
//
// # Usage
//
//	p := dlq.NewProducer(cl, dlq.ProducerConfig{...}, dlq.WithLogger(log)) // cl: the consumer's client
//	topic, env, err := p.Send(ctx, record.DLQTopic(src.Topic), src, env)   // the topic and envelope Kafka took
//
//	err = dlq.List(ctx, conn, "ingest.x.dlq", sel, func(d dlq.DeadLetter) error { ... })
//	rep, err := dlq.Replay(ctx, conn, "ingest.x.dlq", sel, dlq.ReplayOptions{
//		Actor: "ops", Rate: 100, Topics: ingestTopics, Registry: contracts,
//		Auditor: tableSink}) // nil: replayed rows go to sluice.audit
//
// Components that open their own clients (List, Replay) take the
// connection options (kafkaconn.Config.Options); the Producer and the
// TopicAuditor produce through the consumer's client, which they share
// with it and never close.
//
// # Guarantees
//
//   - Send returns once Kafka acknowledged the dead letter. A transient
//     failure (publish.Retryable) is retried while ctx, the record's
//     partition, lives. A permanent one is never retried: a copy cut to
//     ProducerConfig.MaxRecordBytes goes to the parked topic, marked
//     dlq_refused; when Kafka refuses that too, Send returns a
//     *DeadLetterError and nothing was produced, and the consumer stops
//     without committing past the record.
//   - List reads from the start offsets to the end offsets found when it
//     starts, with a plain client (kafkaconn.Read); a partition whose last
//     offsets are gaps ends after 5 s without records. A record whose
//     envelope or headers do not parse is listed with the parse error.
//   - Replay produces the selected records, envelope removed, at most
//     Rate a second, to the source topic of the topic read, which must be
//     one of Topics; it never routes by the envelope. Each record is
//     checked first, dry runs included (CheckContract): an unreadable
//     envelope, another source topic, or a value that is not a valid
//     event of its contract is refused and counted, never produced.
//   - Every replayed record carries the replay's id and actor
//     (record.WithReplay). Replay writes a replay.started report to
//     record.AuditTopic before producing anything (no audit topic, no
//     replay) and a replay.finished one however it ends; once Kafka took
//     a record, its replayed row (audit.Replayed) goes to the Auditor, or
//     to record.AuditTopic, and a row not recorded stops the replay.
//   - Version reads a record with the schema version it names when it is
//     kept, else with the newest of its type only when that reads the
//     value without loss; otherwise an *UnknownVersionError, retryable.
//   - TopicAuditor produces at least once; readers dedupe by audit.Key.
//
// # What survives a crash
//
// Nothing is kept but what Kafka holds. A replay that dies part way
// leaves a replay.started report without its replay.finished one; running
// it again produces the records again, which the sinks' upsert by identity
// makes harmless. A dead letter not yet acknowledged is produced again by
// the consumer that takes the record over.
//
// # What it does not do
//
// It does not consume as a group member or commit offsets, does not
// delete or rewrite the records of a DLQ or parked topic, does not create
// topics, and does not deduplicate: the sinks do.
package dlq
