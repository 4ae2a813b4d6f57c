// Package admission decides, record by record, whether Kafka or the disk
// spool makes an accepted record durable, and owns the drainer that
// replays the spool to Kafka in order.
//
// # Usage
//
//	a, err := admission.New(admission.NewDefaultConfig(), producer, spool, // spool may be nil
//		admission.WithRegisterer(reg), admission.WithLogger(log))
//	...
//	defer a.Close() // before producer.Close and spool.Close
//	for i, r := range a.Admit(ctx, records) {
//		// r.Err == nil: records[i] is durable; r.Durability says where:
//		// KAFKA at r.Partition and r.Offset of records[i].Topic, or
//		// LOCAL_DISK at r.Spool. Otherwise r.Refusal says why not
//		// (RefusedFull: retry after r.RetryAfter).
//	}
//
// # Modes
//
// DIRECT produces a request's records to Kafka (publish.Producer,
// acks=all) and answers each after Kafka's acknowledgement: durability
// KAFKA. A record that fails retryably (publish.Retryable: an error, no
// acknowledgement within Config.LatencyThreshold, the client's buffer
// full) while the caller still waits is appended to the spool instead, and
// admission switches to SPOOLING. So does a request that would take the records waiting for
// Kafka past Config.InFlightBudget, before it is produced.
//
// SPOOLING appends every new record to the spool and answers it once the
// append returned, that is once it is fsync'd under the spool's default
// policy: durability LOCAL_DISK. The drainer replays the spool to Kafka in
// order, Config.DrainBatch records at a time with a few batches in flight,
// and acknowledges what Kafka acknowledged. When it has caught up, it takes
// the mode lock exclusively (new requests wait, for at most 250ms or
// Config.LatencyThreshold if shorter), publishes what is left and switches
// back to DIRECT.
//
// Config.SpoolFirst keeps admission in SPOOLING: every record goes through
// the spool, whatever Kafka does. Without a spool there is only DIRECT,
// and a record Kafka did not acknowledge is refused.
//
// # Guarantees
//
//   - An answer with Err == nil means the record is durable where
//     Durability says: in Kafka with acks=all, or in the spool. Nothing
//     answered lives only in memory.
//   - It also says exactly where. KAFKA: Partition and Offset, which the
//     client set on the record when Kafka acknowledged it; a consumer of
//     the record's topic finds it there. LOCAL_DISK: Spool, the position
//     the spool's Append gave it (the first record of an append at the
//     position returned, each next one buffer.FrameBytes of the one
//     before further on), where the spool holds it until the drainer has
//     published it; the answer does not learn where the drainer puts it
//     in Kafka. Carrying them costs no allocation: they are read from
//     the record and the append, into the answer slice Admit returns.
//   - Per-key order: for a sender that waits for its answers, records of
//     one key reach Kafka (their first copies) in the order they were
//     admitted, across every switch. While the spool holds records every
//     new record is spooled behind them; every append happens under the
//     mode lock held shared with the mode SPOOLING, so none lands after the
//     drainer found the spool empty; within a request the producer takes a
//     prefix of the records and the rest are spooled behind it.
//   - Admit returns by ctx's deadline. A direct publish gets the sooner of
//     LatencyThreshold and three quarters of the time ctx has left, so that
//     a slow Kafka leaves time for the spool append.
//   - A refused record carries its Refusal, the kind a caller branches on:
//     RefusedFull, RefusedTooLargeForKafka, RefusedTooLargeForSpool,
//     RefusedRetryable or RefusedPermanent. It is judged in one place from
//     the record's error: the spool's errors by admission, Kafka's by
//     publish.TooLarge and publish.Retryable, so a caller needs neither
//     buffer's nor Kafka's errors. A full spool is answered with a
//     RetryAfter estimated from the measured drain rate: the bytes of the
//     records refused over the smoothed rate, in whole seconds from 1s to
//     60s, or 5s while no rate has been measured. A record too large for
//     the spool on its own is refused permanently, and the records around
//     it are still spooled.
//   - The drainer never skips a record: a failed publish or a failed
//     acknowledgement rewinds the spool to the first record not
//     acknowledged and retries after a backoff (internal/backoff: full
//     jitter, from 100ms doubling up to Config.DrainBackoffMax). Records
//     after the failure that did reach Kafka are published again.
//   - Close stops the drainer and waits for it; it writes the cursor for
//     what was published. Every goroutine admission starts has stopped
//     when Close returns.
//
// # Crash
//
// Records answered KAFKA are in Kafka; records answered LOCAL_DISK are in
// the spool (as durable as its fsync policy makes them) until the drainer
// acknowledges them. A new Admission over a spool that still holds records
// starts in SPOOLING and drains them first. The drainer's cursor writes
// are coalesced (every 4096 records or 200ms, and whenever it catches up),
// so after a crash some records already in Kafka are published again:
// duplicates, never a loss. A record whose Admit had not returned may be
// in Kafka, in the spool, in both or in neither; its sender was not told
// it was accepted.
//
// # What it does not do
//
//   - It does not deduplicate: duplicates in Kafka are absorbed by event
//     identity downstream.
//   - It does not retry a refused record: the caller sends it again.
//   - It does not drop a spooled record Kafka refuses, even permanently:
//     the drainer retries it, holding the records behind it, until Kafka
//     takes it (an operator may raise the topic's max.message.bytes or
//     grant the ACL). A permanent refusal (publish.Refusal) is not silent:
//     from the first one until the record is published, Ready fails
//     naming the reason, the Kafka error, the topic and the record's spool
//     position, sluice_spool_drain_blocked{reason} is 1,
//     sluice_spool_drain_refusals_total{reason} counts each attempt, and
//     the first refusal of a record is logged as an error.
//     UNKNOWN_TOPIC_OR_PARTITION is retryable (publish.Retryable): a
//     missing topic blocks the drain too, and is reported by the topic
//     check that Ready runs (publish.Producer.CheckTopics). A spooled
//     record that does not decode (written by another version) is skipped,
//     counted in sluice_spool_undecodable_records_total and logged with
//     its position.
//   - It does not close the producer or the spool, and it is the spool's
//     one drainer: one Admission per spool.
package admission
