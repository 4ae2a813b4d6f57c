// Package consumer is sluice's consumer tier: a Kafka consumer group that
// writes the events of the source topics to a sink, commits only offsets
// whose side effects finished, isolates failures in a dead-letter queue
// (DLQ) and drains the DLQ back into the sink once the sink is healthy.
// Producing dead letters, and an operator's listing and replay of a DLQ,
// are package consumer/dlq's.
//
// # Usage
//
//	cfg := consumer.NewDefaultConfig() // Validate names a bad field as consumer.<path>
//	versions, err := contract.NewVersions(registry, 0)
//	c, err := consumer.New(cfg, versions, sink, kafkaOpts,
//		consumer.WithRegisterer(reg), consumer.WithLogger(log))
//	err = c.Run(ctx)   // until ctx ends; then finishes, commits and leaves the group
//	err = c.Ready(ctx) // nil when Kafka answers and the sink's breaker is not open
//
// Nothing is fetched before Run, and Run may be called once. Contracts are
// read anew for each record, so a reload takes effect from the next
// record decoded.
//
// # Guarantees
//
//   - Nothing is lost: every polled record ends in the sink, in its DLQ
//     topic (T.dlq) or its parked topic (T.parked), or Run stops before a
//     commit passes it. A record is finished when the sink acknowledged
//     its write, or Kafka its dead letter (acks=all); the offset committed
//     never passes an unfinished record.
//   - Records of one key of one partition are written in offset order;
//     different keys are written concurrently.
//   - Memory is bounded: at most Config.MaxInFlight records are polled and
//     unfinished, at most Config.SinkConcurrency writes run at once, each
//     of at most Config.WriteBatch events of one partition.
//   - A revoked partition's in-flight work gets Config.RevokeTimeout to
//     finish; what finished is committed before the partition moves, and
//     what did not is abandoned and never committed by this member. A lost
//     partition is abandoned at once, with no commit.
//   - sink.Classify decides once what a failed write means. An event that
//     does not decode, or that the sink refuses permanently, goes to the
//     DLQ at once (a refused batch is split until the event is alone). A
//     transient failure is retried with backoff within Config.Retry, then
//     dead-lettered as retryable. While the sink's circuit breaker is not
//     closed the consumer is PAUSED: events wait for the sink without
//     spending retries and without going to the DLQ. Mode and
//     sluice_consumer_mode report the mode: NORMAL, PAUSED or DRAIN_DLQ.
//   - A drain pass (mode DRAIN_DLQ) retries the retryable dead letters up
//     to the DLQ's end offsets when it started, at DLQ.DrainRate, once the
//     breaker has been closed for DLQ.DrainInterval. A drained record is
//     written as an event of its DLQ topic's source topic, whatever its
//     envelope says, and only when it passes its contract. One that fails
//     again returns to the DLQ, and is parked past DLQ.MaxRetries or
//     DLQ.Deadline. A dead letter that is not retryable is skipped: its
//     offset is committed and it stays in the DLQ for a replay.
//   - A drain pass is fair between sources (record.HeaderSource): the
//     drain rate admits records round-robin between the sources with
//     records waiting, and a source has at most a second of DLQ.DrainRate
//     (and a quarter of MaxInFlight) of drained records in flight. Its
//     later records are passed over, their offsets held uncommitted, and
//     read again from Kafka once it has room, in DLQ order; so another
//     source's records behind a flood wait for one admission of the flood
//     per record, not for the flood. At most 16 × MaxInFlight offsets of a
//     DLQ partition are held. sluice_consumer_dlq_backlog counts, by
//     configured source (WithSources; "other" for the rest), the records
//     the pass has read and not finished.
//   - A record of a schema version no longer kept is decoded with the
//     newest version when that reads it without loss; otherwise it is
//     dead-lettered as record.ClassSchema, retryable, until a reload
//     brings its version back or the drain parks it.
//   - Every decision about an event (written, dead_lettered, parked,
//     retried) is recorded as an audit row once it is durable: in the
//     sink when it is an audit.Writer, else in record.AuditTopic. An audit
//     store that fails slows the records it audits by a bounded time; it
//     loses and repeats no event.
//   - When a dead letter, and then its parked copy, are both refused by
//     Kafka, Run stops with a *dlq.DeadLetterError naming the record; its
//     offset is not committed.
//   - Metrics are registered as one unit on the registerer of
//     WithRegisterer and unregistered when Run returns. Series whose
//     labels the config bounds exist at zero from New.
//
// # What survives a crash
//
// The consumer keeps no state of its own: what survives is the group's
// committed offsets, which never pass an unfinished record. A crash at
// any point repeats work (writes the sink deduplicates by identity, dead
// letters produced again, audit rows the table sinks keep once;
// decisions on record.AuditTopic are at least once, keyed for readers to
// dedupe) but never skips it.
//
// # What it does not do
//
// It does not order events across keys or across a DLQ round trip: an
// event that went through the DLQ lands after later events of its key.
// It does not deduplicate: the sink does, by (source, event id), keeping
// the first payload of an identity and reporting another as a conflict.
// It does not create topics. It does not replay a DLQ on its own: an
// operator does, with dlq.Replay.
package consumer
