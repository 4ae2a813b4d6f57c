// Package consumer is sluice's consumer tier: a Kafka consumer group that
// writes the events of the ingest topics to a sink, commits only offsets
// whose side effects finished, isolates failures in a dead-letter queue
// (DLQ) and replays it on an operator's request.
//
// # Usage
//
//	conn, err := kafka.Options(log) // kafkaconn.Config, the kafka block: brokers, TLS, SASL
//	c, err := consumer.New(cfg, registry, sink, conn,
//		consumer.WithRegisterer(reg), consumer.WithLogger(log))
//	err = c.Run(ctx) // until ctx ends; then drains, commits and leaves the group
//	err = c.Ready(ctx) // for a readiness probe: Kafka reached and the breaker not open
//
//	dlq.List(ctx, kopts, "ingest.x.dlq", sel, fn)    // consumer/dlq: read a DLQ or parked topic
//	dlq.Replay(ctx, kopts, "ingest.x.dlq", sel, opts) // consumer/dlq: re-produce to ingest.x: checked, rate limited, audited
//
// Ready is the consumer's readiness: nil when its client answers a ping
// within ctx and the sink's circuit breaker is not open. While the breaker
// is open (PAUSED, before its probe) the consumer is not ready, though it
// keeps running and recovers by itself.
//
// # Delivery
//
// Records of one key (per partition) are written in offset order; records
// of different keys are written concurrently, up to Config.MaxInFlight
// records polled and unfinished and Config.SinkConcurrency concurrent
// writes. Polling asks for at most the free in-flight slots, so memory is
// bounded by MaxInFlight records. Up to Config.WriteBatch ready records
// of one partition go in one Sink.Write.
//
// A record is finished when the sink acknowledged its write, or when its
// DLQ (or parked) record was acknowledged by Kafka (acks=all, idempotent
// producer). Each partition has a Watermark; the offset committed is the
// one after the highest offset below which every polled offset is
// finished, so a crash at any point repeats work but never skips it.
// Sinks are idempotent by identity, (source, event id), so a repeat has no
// effect. Decode fingerprints each payload (sink.Fingerprint of the
// message's deterministic encoding); an identity the sink held with
// another fingerprint is a conflict: the sink keeps the first payload and
// records the copy, and the consumer counts it in
// sluice_sink_conflicts_total{sink,source}, logs a warning with the
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
// its contract) and an event the sink refuses permanently go to the DLQ at
// once; a failed batch is split in halves until the failing event is
// alone. Transient failures are retried with exponential backoff and full
// jitter (never sooner than the sink's RetryAfter), bounded by
// Retry.MaxAttempts and Retry.MaxElapsed, then dead-lettered as
// retryable. The attempt budget is only spent once the breaker has seen
// Breaker.MinRequests writes in its window, so an outage starting is not
// mistaken for a bad event.
//
// The sink's Breaker opens on the transient failure ratio of its window.
// While it is not closed the consumer is PAUSED: fetching is paused
// (resumed only when nothing is in flight, so that a record can become
// the probe), and in-flight events wait for the breaker without spending
// retries and without going to the DLQ. After Breaker.Cooldown one event
// probes; success closes the breaker and resumes fetching.
//
// # DLQ
//
// The DLQ of topic T is T.dlq and its parked topic T.parked. A dead letter
// keeps the original key, value and headers and adds the envelope
// (record.Envelope, headers prefixed sluice-dlq-). The group also consumes the
// DLQ topics; they stay paused except in DRAIN_DLQ. A drain pass starts
// when the breaker has been closed, and the last pass over, for
// DLQ.DrainInterval and an assigned DLQ partition has records past this
// member's position (checked every Config.LagInterval). The pass covers
// the records up to the end offsets found then: a record polled past them
// is handed back (its partition paused, its offset set back), so a record
// that fails again is retried by the next pass, not at once. Drained
// records are retried at DLQ.DrainRate, one write each. Non-retryable
// ones are skipped (their offset is committed; they stay in the topic for
// a replay). One that fails again is re-produced to the DLQ with
// dlq_retries+1 and first_failure_at kept; when dlq_retries would pass
// DLQ.MaxRetries, or it fails after first_failure_at + DLQ.Deadline, it
// goes to the parked topic with sluice-dlq-parked-reason instead.
//
// A drained record's source topic is its DLQ topic's, never what its
// envelope says: anyone who may write a DLQ topic may write an envelope.
// A record whose envelope names another source topic is parked
// (source_mismatch), and so is one whose value fails its contract,
// protovalidate rules included (contract): such a record may never have
// passed the gateway. Neither is written to the sink.
//
// # Dead letters Kafka refuses
//
// publish.Retryable decides what a failed DLQ or parked produce means.
// A transient failure is retried with the sink's backoff, capped at
// Retry.MaxBackoff, for as long as the record's partition is ours: the
// record's key waits and its partition does not commit past it, which is
// push-back while Kafka is away; the warnings are spaced (one per 5 s, with
// the count of those held back). A permanent one (MESSAGE_TOO_LARGE, an
// authorization failure) is never retried: a copy goes to the parked
// topic instead, with the envelope (sluice-dlq-parked-reason dlq_refused,
// sluice-dlq-refusal naming the topic and Kafka's error), the source
// coordinates, the original sluice headers, and as much of the value as
// fits in DLQ.MaxRecordBytes, the producer's maximum record size; a value
// cut to fit carries sluice-dlq-truncated with its original length (the
// whole value is still in the source topic, at the envelope's
// coordinates). When Kafka refuses that copy too, or the key and headers
// alone do not fit, Run stops with a *DeadLetterError naming the record;
// the record stays unfinished, so no commit passes it, and its partition's
// other work is abandoned. Config.Validate refuses a DLQ.MaxRecordBytes
// that could not hold the dead letter of an event of MaxEventBytes (the
// gateway's gateway.limits.max_event_bytes) with the largest envelope and
// event headers the record format allows.
//
// Nothing is dropped: every record ends in the sink, the DLQ or the parked
// topic, or the consumer stops before committing past it.
//
// # Replay
//
// List and Replay read a DLQ or parked topic with a plain client from its
// start offsets to the end offsets found when they start (a partition
// whose last offsets are gaps ends after 5 s without records). Selection
// filters on last_failure_at, source, type, error class, DLQ partition and
// DLQ offset range. Replay produces the selected records, envelope
// removed, at a limited rate, to the source topic of the topic it reads,
// which must be one of ReplayOptions.Topics; it never routes by a
// record's envelope. Each record is checked first, dry runs included:
// one whose envelope names another source topic (Mismatched), or whose
// value is not a valid event of its contract (Invalid: unknown type, bad
// sluice headers, undecodable, breaking the rules, or cut to fit) is
// refused and counted. Before it produces anything Replay writes a
// replay.started ReplayReport as JSON to sluice.audit, and there is no
// replay without it; a replay.finished one, with the counts and the
// outcome, follows however the replay ends, canceled included.
//
// # What it does not do
//
// It does not order events across keys or across a DLQ round trip: an
// event that went through the DLQ lands after later events of its key.
// It does not create topics. It does not deduplicate: the sink does.
package consumer
