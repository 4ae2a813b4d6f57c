// Package consumer is sluice's consumer tier: a Kafka consumer group that
// writes the events of the ingest topics to a sink, commits only offsets
// whose side effects finished, isolates failures in a dead-letter queue
// (DLQ) and drains the DLQ back into the sink once the sink is healthy.
// Producing dead letters, and an operator's listing and replay of a DLQ,
// are package consumer/dlq's.
//
// # Usage
//
//	cfg := consumer.NewDefaultConfig() // the consumer block; Validate names a bad field as consumer.<path>
//	conn, err := kafka.Options(log)    // kafkaconn.Config, the kafka block: brokers, TLS, SASL
//	versions, err := contract.NewVersions(registry, 0) // the registry served and the versions kept before it
//	c, err := consumer.New(cfg, versions, sink, conn,
//		consumer.WithRegisterer(reg), consumer.WithLogger(log))
//	err = c.Run(ctx)   // until ctx ends; then drains, commits and leaves the group
//	err = c.Ready(ctx) // for a readiness probe: Kafka reached and the breaker not open
//
// New validates cfg (a *ConfigError names the field by its path in the
// config file, consumer.retry.max_attempts) and builds the client; nothing
// is fetched before Run. Run may be called once. Ready is nil when the
// client answers a ping within ctx and the sink's circuit breaker is not
// open; while the breaker is open (PAUSED, before its probe) the consumer
// is not ready, though it keeps running and recovers by itself.
//
// # Delivery
//
// Records of one key (per partition) are written in offset order; records
// of different keys are written concurrently, up to Config.MaxInFlight
// records polled and unfinished and Config.SinkConcurrency concurrent
// writes. Polling asks for at most the free in-flight slots, so memory is
// bounded by MaxInFlight records. Up to Config.WriteBatch ready records
// of one partition go in one Sink.Write, bounded by Config.WriteTimeout.
//
// A record is finished when the sink acknowledged its write, or when its
// DLQ (or parked) record was acknowledged by Kafka (acks=all, idempotent
// producer). Each partition has a Watermark; the offset committed, every
// Config.CommitInterval, is the one after the highest offset below which
// every polled offset is finished. Sinks are idempotent by identity,
// (source, event id), so a repeat has no effect. Decode fingerprints each
// payload (sink.Fingerprint of the message's deterministic encoding); an
// identity the sink held with another fingerprint is a conflict: the sink
// keeps the first payload and records the copy, and the consumer counts
// it in sluice_sink_conflicts_total{sink,source}, logs a warning with the
// identity, both fingerprints and the record's topic, partition and
// offset, and finishes the job as written.
//
// # Rebalances
//
// The client blocks rebalances from PollRecords until AllowRebalance
// (kgo.BlockRebalanceOnPoll), so every polled record is registered in its
// partition's watermark before the partition can be revoked; revocation
// itself is handled in OnPartitionsRevoked, which waits up to
// Config.RevokeTimeout for the partitions' in-flight work, abandons what
// is left (never committed by this member) and commits what finished
// before returning. OnPartitionsLost abandons at once and commits nothing.
//
// # Failures
//
// sink.Classify decides once what a failed write means. A record that
// does not decode (bad sluice headers, unknown type, a value that breaks
// its contract: record.ClassDecode) and an event the sink refuses
// permanently go to the DLQ at once; a failed batch is split in halves
// until the failing event is alone. A record of a schema version not kept
// that the newest cannot read goes to the DLQ at once too, retryable (see
// Schema versions in flight). Transient failures are retried with exponential backoff and full
// jitter (internal/backoff over Retry.InitialBackoff and
// Retry.MaxBackoff, never sooner than the sink's RetryAfter), bounded by
// Retry.MaxAttempts and Retry.MaxElapsed, then dead-lettered as
// retryable. The attempt budget is only spent once the breaker has seen
// Breaker.MinRequests writes in its window, so an outage starting is not
// mistaken for a bad event.
//
// # Schema versions in flight
//
// Contracts are reloaded at run time, so records published under several
// versions of a type are in flight at once. The consumer decodes with the
// *contract.Versions given to New (the registry served and the last
// versions of each type), read anew for each record: a swap takes effect
// from the next record decoded. Each record names its version in its
// schema fingerprint header, and Decode reads it with dlq.Version:
//
//   - a version kept: decoded with that version, as published.
//   - a version not kept that the newest version of the type reads without
//     loss (Contract.DecodeBinary refuses nothing: no unknown field, wrong
//     wire type, invalid UTF-8 or nesting past the limit): decoded with
//     the newest, and delivered.
//   - a version not kept that the newest cannot read: rendered with the
//     newest it would lose what the newest does not know, so it is
//     dead-lettered at once as record.ClassSchema, retryable. It is no
//     failure of the sink: no write is made, and the breaker, the retry
//     budget, the isolation of permanent failures and
//     sluice_sink_errors_total never see it. Drain passes retry it as any
//     retryable dead letter: it is delivered once a reload keeps its
//     version (or brings a newest that reads it), goes back to the DLQ
//     with dlq_retries+1 until then, and is parked (max_retries, deadline)
//     past DLQ.MaxRetries or DLQ.Deadline.
//
// A record of a kept version that does not decode, and one of a type
// never served, are record.ClassDecode: permanent.
//
// # Modes
//
// The sink's circuit breaker (internal/breaker: its states are closed,
// open and half_open, in logs and in sluice_sink_circuit_state as 0, 1
// and 2) opens on the transient failure ratio of its window. The consumer
// is in one mode at a time (Mode, and sluice_consumer_mode):
//
//   - NORMAL: the source topics are fetched, the DLQ topics paused.
//   - PAUSED, while the breaker is not closed: fetching is paused (resumed
//     only when nothing is in flight, so that a record can become the
//     probe), and in-flight events wait for the breaker without spending
//     retries and without going to the DLQ. After Breaker.Cooldown one
//     event probes; success closes the breaker and resumes fetching.
//   - DRAIN_DLQ, while a drain pass runs: the source topics and the DLQ
//     topics are fetched.
//
// # DLQ and drain passes
//
// The DLQ of topic T is T.dlq and its parked topic T.parked (record). A
// dead letter keeps the original key, value and headers and adds the
// envelope (record.Envelope, headers prefixed sluice-dlq-). The group also
// consumes the DLQ topics; they stay paused except in DRAIN_DLQ. A drain
// pass starts when the breaker has been closed, and the last pass over,
// for DLQ.DrainInterval and an assigned DLQ partition has records past
// this member's position (checked every Config.LagInterval). The pass
// covers the records up to the end offsets found then: a record polled
// past them is handed back (its partition paused, its offset set back),
// so a record that fails again is retried by the next pass, not at once.
// Drained records are retried at DLQ.DrainRate, one write each.
// Non-retryable ones are skipped (their offset is committed; they stay in
// the topic for a replay). One that fails again is re-produced to the DLQ
// with dlq_retries+1 and first_failure_at kept; when dlq_retries would
// pass DLQ.MaxRetries, or it fails after first_failure_at + DLQ.Deadline,
// it goes to the parked topic with sluice-dlq-parked-reason instead.
//
// A drained record's source topic is its DLQ topic's, never what its
// envelope says: anyone who may write a DLQ topic may write an envelope.
// A record whose envelope names another source topic is parked
// (source_mismatch), and so is one whose value fails its contract,
// protovalidate rules included (contract, dlq.CheckContract): such a
// record may never have passed the gateway. Neither is written to the
// sink. The contract is that of the record's schema version when it is
// kept, else the newest's when the newest reads the value without loss;
// a record the newest cannot read is not judged by rules it was not
// published under, nor parked: it fails again as record.ClassSchema and
// goes back to the DLQ, until a reload keeps its version or the drain's
// retries or deadline park it.
//
// # Dead letters Kafka refuses
//
// The consumer produces its dead letters through a dlq.Producer on its
// own client (acks=all, kgo.ProducerBatchMaxBytes of DLQ.MaxRecordBytes),
// with the sink's backoff capped at Retry.MaxBackoff, for as long as the
// record's partition is ours: the record's key waits and its partition
// does not commit past it, which is push-back while Kafka is away. A dead
// letter Kafka refuses for good is parked as a copy cut to fit (see
// consumer/dlq). When Kafka refuses that copy too, or the key and headers
// alone do not fit, Run stops with a *dlq.DeadLetterError naming the
// record; the record stays unfinished, so no commit passes it, and its
// partition's other work is abandoned. Config.Validate refuses a
// DLQ.MaxRecordBytes that could not hold the dead letter of an event of
// MaxEventBytes (the gateway's gateway.limits.max_event_bytes) with the
// largest envelope and event headers the record format allows.
//
// # Audit trail
//
// The consumer records every decision it makes about an event as a
// audit.Row, once the decision is durable, so that an event's trail
// (audit.Reader, sluice trace) says what became of it. Where:
//
//   - written: when Sink.Write returned nil. A sink that is a
//     audit.Writer (SQLite, PostgreSQL) writes the row itself, in the
//     transaction of the event row (sink.Event carries the group, and the
//     replay id and actor of a record a replay produced, from its
//     sluice-replay-* headers); for any other sink (HTTP) the consumer
//     records it after Write, detail conflict for a conflict the receiver
//     reported. Located at the event's source record (for a drained
//     event, the one its envelope names).
//   - dead_lettered: in deadLetter, once Kafka acknowledged the dead
//     letter in the DLQ topic, with its envelope's class, error,
//     attempts, retryable and dlq_retries; located at the source record.
//     A drained record that fails again is another dead_lettered row,
//     its dlq_retries one more.
//   - parked: the same, when the record went to the parked topic (past
//     DLQ.MaxRetries or DLQ.Deadline, refused by a drain's checks, or
//     its dead letter refused by Kafka): detail the parked reason;
//     located at the record parked (the DLQ record, or the source record
//     whose dead letter was refused).
//   - retried: in admitDrained, when a drain pass admitted a DLQ record
//     (its envelope read, its checks passed, the drain rate's wait over)
//     and before it is written; located at the DLQ record, with its
//     envelope's class, attempts and dlq_retries. A skipped record
//     (not retryable) and one parked by the checks get none.
//   - replayed: not the consumer's; dlq.Replay records it.
//
// The rows go to the sink when it is a audit.Writer, else to
// record.AuditTopic as record.Decisions (dlq.TopicAuditor on the consumer's
// client, acks=all). A record that names no source or no event id (it
// did not decode) has no trail to be filed under: its dead letter is
// produced as ever, without a row.
//
// An audit write that fails must neither hold events nor repeat their
// decisions, so it is retried like a sink write, not forever: transient
// failures with the retry backoff, each attempt bounded by WriteTimeout,
// for at most Retry.MaxAttempts attempts and Retry.MaxElapsed, while the
// record's partition is ours. Then, or at once for a permanent failure,
// a sink's audit table is replaced by record.AuditTopic for those rows
// (one produce bounded by WriteTimeout; counted in
// sluice_consumer_audit_fallbacks_total{action}): the database that is
// down is the sink's, which is why its events are being dead-lettered,
// while Kafka just took their dead letters. Rows neither takes are given
// up: counted in sluice_consumer_audit_errors_total{action} and logged
// with the record's coordinates. The record finishes as decided either
// way. A written row in a table sink cannot be lost so: it commits with
// its event.
//
// A crash repeats decisions whose offsets were not committed; the table
// sinks keep one row per decision about one record (audit.Row), so
// the repeat adds none. Decisions on record.AuditTopic are at least once
// and carry the same key for readers to dedupe by.
//
// # Metrics
//
// Registered on the registerer of WithRegisterer, as one unit, and
// unregistered when Run returns: sluice_consumer_lag{topic,partition}
// (the records between the committed offset, or the log start, and the
// end of each assigned partition, every Config.LagInterval),
// sluice_consumer_in_flight, sluice_consumer_mode{mode},
// sluice_consumer_committed_offset, sluice_consumer_events_total{outcome},
// sluice_consumer_retries_total, sluice_consumer_dead_letters_total,
// sluice_consumer_drain_refused_total,
// sluice_consumer_dlq_drained_total{outcome} (the records drain passes
// took out of the DLQ, against dead_letters_total{kind="dlq"} put in),
// sluice_consumer_end_to_end_seconds{route} (an event's ingested_at
// header to the sink write that made it durable, on the consumer's Clock;
// route dlq for drained events),
// sluice_consumer_events_by_schema_total{type,fingerprint,decoded_with}
// (the records decoded, drained ones each time they are, by the version
// read with: decoded_with own and the record's fingerprint for a version
// kept; fingerprint unknown and newest for a version not kept that the
// newest read, none for one dead-lettered as record.ClassSchema),
// sluice_consumer_audit_errors_total{action} (audit rows given up: see
// Audit trail),
// sluice_sink_write_seconds, sluice_sink_errors_total, sluice_sink_conflicts_total,
// sluice_sink_circuit_state, and the dlq.Producer's. Series whose labels
// the config bounds (outcomes, routes, modes, the sink's error classes,
// the source topics' DLQ and parked topics, the consumer's four audit
// actions) exist at zero from New, and
// so do those of the schema versions kept; those of a version a reload
// dropped from the history are deleted when the next record is counted,
// so the schema series stay within types × (versions kept + 2). A record
// that does not decode for another reason (record.ClassDecode) is not
// counted there.
//
// # Guarantees and what survives a crash
//
// Nothing is dropped: every record ends in the sink, the DLQ or the parked
// topic, or the consumer stops before committing past it. The consumer
// keeps no state of its own: what survives a crash is the group's
// committed offsets, which never pass an unfinished record, so a crash at
// any point repeats work (writes the sink deduplicates, dead letters
// produced again, audit rows the table sinks keep once) but never skips
// it. In a table sink no event row exists without its written row, nor a
// written row without its event row.
//
// # What it does not do
//
// It does not order events across keys or across a DLQ round trip: an
// event that went through the DLQ lands after later events of its key.
// It does not create topics. It does not deduplicate: the sink does. It
// does not replay a DLQ on its own: an operator does, with dlq.Replay.
package consumer
