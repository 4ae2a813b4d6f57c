// Package admission decides, record by record, whether Kafka or the disk
// spool makes an accepted record durable, and owns the drainer that
// replays the spool to Kafka in order.
//
//	a, err := admission.New(admission.NewDefaultConfig(), producer, spool, // spool may be nil
//		admission.WithRegisterer(reg), admission.WithLogger(log))
//	defer a.Close() // before producer.Close and spool.Close
//	for i, r := range a.Admit(ctx, records) {
//		// r.Err == nil: records[i] is durable where r.Durability says.
//		// Otherwise r.Refusal says why not (RefusedFull: retry after r.RetryAfter).
//	}
//
// # Modes
//
// DIRECT produces a request's records to Kafka (acks=all) and answers each
// after Kafka's acknowledgement: durability KAFKA. A record that fails
// retryably while the caller still waits (an error, no acknowledgement
// within Config.LatencyThreshold, the client's buffer full) is appended to
// the spool instead, and admission switches to SPOOLING; so does a request
// that would take the records waiting for Kafka past
// Config.InFlightBudget.
//
// SPOOLING appends every new record to the spool and answers it once the
// append returned: durability LOCAL_DISK. The drainer replays the spool to
// Kafka in order and, once caught up, takes the mode lock exclusively (new
// requests wait at most 250ms or LatencyThreshold), publishes what is left
// and switches back to DIRECT. Config.SpoolFirst keeps admission in
// SPOOLING. Without a spool there is only DIRECT.
//
// # Guarantees
//
//   - Err == nil means the record is durable where Durability says, and
//     says exactly where: KAFKA at Partition and Offset, or LOCAL_DISK at
//     the spool Position. Nothing answered lives only in memory.
//   - Per-key order: for a sender that waits for its answers, records of
//     one key reach Kafka (their first copies) in the order admitted,
//     across every switch: while the spool holds records every new record
//     is spooled behind them, under the mode lock.
//   - Admit returns by ctx's deadline: a direct publish gets the sooner of
//     LatencyThreshold and three quarters of the time left, so a slow Kafka
//     leaves time for the spool append.
//   - A refused record carries its Refusal, judged in one place
//     (RefusedFull, RefusedTooLargeForKafka, RefusedTooLargeForSpool,
//     RefusedRetryable, RefusedPermanent), so a caller needs neither the
//     spool's nor Kafka's errors. A full spool's RetryAfter is estimated
//     from the measured drain rate, 1s to 60s.
//   - The drainer never skips a record: a failed publish or
//     acknowledgement rewinds the spool and retries after backoff; records
//     that did reach Kafka are published again.
//   - Close stops the drainer, writes the cursor for what was published
//     and waits: every goroutine admission starts has stopped.
//
// # Per-source shares of the spool
//
// With WithSourceShares the spool's bytes are a share.Pool among the
// sources (the record's sluice-source header): each configured source is
// guaranteed its weight's part of the reserved fraction, and the rest is
// a remainder any source may borrow from once its guarantee is used. A
// record is charged its framed bytes when it is appended and given back
// when the drainer has published it (once, across rewinds); an append
// that fails gives its charge back. A record over its source's share is
// refused RefusedFull with a *SourceFullError and RetryAfter, and so is
// every later record of that source in the same Admit, so none is
// spooled behind it; other sources' records are still spooled.
//
//   - The pool's capacity is MaxBytes less one segment (a segment's file
//     stays until all of it is acknowledged), so a source within its
//     guarantee is not refused by the spool's cap either, while the
//     filesystem has room (MinFreeBytes, ENOSPC stay whole-spool
//     refusals). With one source it is MaxBytes: today's behaviour.
//   - What is in the spool at start is read once in New
//     (buffer.Spool.Pending) and charged to each record's source,
//     whatever the shares say, before anything is appended or drained:
//     a source that filled its share before a restart is still at it, so
//     the others keep their guarantees. It costs a read of the spool,
//     as Open's verification does.
//   - A source that is not configured has no guarantee: it borrows from
//     the remainder. sluice_source_spool_bytes{source} has one series per
//     configured source.
//   - A record that does not decode, or that Pending cannot read (damage
//     since Open; logged), is charged at start to nobody; one
//     spooled by this process and later found undecodable stays charged
//     until the restart.
//
// # What survives a crash
//
// Records answered KAFKA are in Kafka; records answered LOCAL_DISK are in
// the spool (as durable as its fsync policy makes them) until the drainer
// acknowledges them. A new Admission over a spool that holds records
// starts in SPOOLING and drains them first. The drainer's cursor writes
// are coalesced, so after a crash some records already in Kafka are
// published again: duplicates, never a loss. A record whose Admit had not
// returned may be anywhere or nowhere; its sender was not told it was
// accepted.
//
// # What it does not do
//
//   - It does not deduplicate: event identity absorbs duplicates
//     downstream. It does not retry a refused record.
//   - It does not drop a spooled record Kafka refuses, even permanently:
//     the drainer retries it, holding the records behind it, until Kafka
//     takes it. Until then Ready fails naming the reason, topic and spool
//     position, sluice_spool_drain_blocked{reason} is 1, and the first
//     refusal is logged. A spooled record that does not decode is skipped,
//     counted and logged.
//   - It does not close the producer or the spool, and it is the spool's
//     one drainer: one Admission per spool.
package admission
