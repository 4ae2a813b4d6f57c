// Package buffer is sluice's disk spool: a segmented, append-only log of
// opaque records that the gateway appends to when Kafka pushes back, and
// that one drainer replays to Kafka in order, acknowledging as it goes.
//
//	s, err := buffer.Open(buffer.NewDefaultConfig(dir), buffer.WithRegisterer(reg))
//	pos, err := s.Append(ctx, rec1, rec2) // ErrFull: refuse, retryable
//	entries, err := s.Next(ctx, 500)      // the drainer, one goroutine
//	err = s.Ack(entries[len(entries)-1].Pos) // or s.Rewind() to retry
//
// # Guarantees
//
//   - Append returns nil only once its records are written and, with
//     FsyncBatch (the default), fdatasync'd: they survive a process crash,
//     a kernel crash and a power loss, and Next returns them until they are
//     acknowledged. With FsyncNever they survive a process crash only.
//   - A record keeps the Position Append returned (its first record's;
//     the others follow, FrameBytes apart) until it is acknowledged, also
//     across a restart; recovery never moves a record it keeps.
//   - Appends are group-committed: one writer writes and syncs all queued
//     appends (up to MaxBatchBytes) at once. At most 1024 appends wait;
//     Append blocks for room until its context ends.
//   - An Append that fails with *FullError (reason "cap", "disk_floor" or
//     "enospc") leaves nothing of its records on disk: limits are checked
//     before writing, and a write that fails part way is truncated back.
//   - Next returns only durable records, in append order, each verified
//     against its checksum. After Rewind or a restart, records not
//     acknowledged are returned again: duplicates, never gaps.
//   - Ack returns once the cursor covering its position is durable;
//     segments wholly acknowledged are deleted before the cursor is
//     written, so a crash leaves an older cursor, never a newer one.
//   - Close stops new appends (ErrClosed), answers the queued ones, syncs
//     and closes the files; every goroutine of the spool has stopped.
//   - Health says whether a small append could succeed now, writing
//     nothing. Pending reads the records not yet acknowledged (for an
//     account of them at start) without moving the drainer's position.
//
// # On-disk format
//
// A spool directory holds segments (NNNNNNNNNNNNNNNNNNNN.seg, a 20-digit
// index, so names sort in order), the cursor (the last acknowledged
// position), LOCK (flock'd by the process that has it open), quarantine/
// (damaged segments, for an operator) and *.tmp (atomic writes in
// progress, removed at Open). format.go gives the byte layouts.
//
// A segment is a 24-byte header with a CRC, then frames: length, its
// complement, append time, CRC-32C of the header and record, the record,
// padding to 8 bytes. The length and its complement are one aligned word,
// so a torn sector cannot tear them apart; a length is trusted only when
// it matches its complement, is at most 64 MiB and fits in the file.
// Segment files and the cursor are created atomically (temp, sync,
// rename, sync the directory). A segment is never written again once the
// next is started.
//
// # Recovery
//
// Open never refuses to start because of damaged data. It verifies every
// frame, then: removes stray temp files; treats a missing or corrupt
// cursor as "nothing acknowledged" (replayed, never lost); truncates a torn
// tail of the last segment to its last valid frame (never acknowledged to
// a caller; sluice_spool_truncated_bytes_total); and quarantines a segment
// damaged anywhere else: copied whole to quarantine/ (synced first), the
// original truncated to the records before the damage, which stay at
// their positions. Records after the damage are lost to the spool,
// counted (sluice_spool_quarantined_bytes_total, exact;
// sluice_spool_quarantined_records_total, a lower bound) and logged. A
// header naming another format version is not damage: Open fails rather
// than quarantine what a newer sluice wrote. Inspect reports what Open
// would do, changing nothing.
//
// # What it does not do
//
//   - It does not interpret, deduplicate or expire records (the sink
//     deduplicates by event id); a record leaves only when acknowledged or
//     quarantined.
//   - One drainer, one process per directory (LOCK refuses a second Open).
//   - A failed fdatasync stops the spool until it is reopened: the kernel
//     may have dropped the written pages.
//   - A record found damaged by Next after Open verified it fails Next with
//     a *CorruptionError; reopening repairs it.
//   - Outside Linux, MinFreeBytes is not enforced and LOCK is not taken.
package buffer
