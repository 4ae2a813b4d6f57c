// Package buffer is sluice's disk spool: a segmented, append-only log of
// opaque records that the gateway appends to when Kafka pushes back, and
// that one drainer replays to Kafka in order, acknowledging as it goes.
//
// # Usage
//
//	s, err := buffer.Open(buffer.NewDefaultConfig("/var/lib/sluice/spool"),
//		buffer.WithRegisterer(reg), buffer.WithLogger(log))
//	...
//	// Gateway: answer the caller ACCEPTED (LOCAL_DISK) only when err == nil.
//	pos, err := s.Append(ctx, event1, event2)
//	// errors.Is(err, buffer.ErrFull): refuse with BUFFER_FULL, retryable.
//	// Otherwise event1 is at pos, event2 FrameBytes(len(event1)) further on.
//
//	// Drainer (one goroutine):
//	for {
//		entries, err := s.Next(ctx, 500)
//		...
//		if publishToKafka(entries) != nil {
//			s.Rewind() // and retry later
//			continue
//		}
//		err = s.Ack(entries[len(entries)-1].Pos)
//	}
//
// # Guarantees
//
//   - Append returns nil only once its records are written and, with
//     FsyncBatch (the default), fdatasync'd. Such records survive a process
//     crash, a kernel crash and a power loss, and are returned by Next until
//     acknowledged. With FsyncNever they survive a process crash only.
//   - Append returns where its first record is, a Position (segment index,
//     frame offset); its other records follow in the same segment, each
//     FrameBytes of the one before it further on. A record keeps that
//     position until it is acknowledged: Next returns it there, also after
//     a restart, and recovery never moves a record it keeps (see
//     Recovery). Once acknowledged, its segment may be deleted and the
//     position names nothing.
//   - Appends are group-committed: one writer goroutine takes every append
//     queued (up to MaxBatchBytes), writes them with one write,
//     syncs once and answers each. At most 1024 appends wait in the queue;
//     Append blocks for room until its context ends.
//   - On Linux the batch's fdatasync goes through AIO (IOCB_CMD_FDSYNC): the
//     same sync, done by a kernel worker, while the writer waits parked in
//     the runtime's poller instead of holding a scheduler P in a blocking
//     call. Where AIO is refused the writer calls fdatasync itself.
//   - An Append that fails with *FullError (reason "cap", "disk_floor" or
//     "enospc") leaves nothing of its records on disk: the limits are checked
//     before writing, and a write that fails part way (ENOSPC) is truncated
//     back to the end of the previous append. Other appends of the same
//     batch that were wholly written succeed.
//   - Next returns only records that are durable (per policy), in append
//     order, each verified against its checksum. After Rewind, or after a
//     restart, records not acknowledged are returned again: the drainer sees
//     duplicates, never gaps. The sink deduplicates by event id.
//   - Ack returns once the cursor covering its position is durable.
//     Segments whose records are all acknowledged are deleted.
//   - Open never refuses to start because of damaged data; it repairs as
//     described under Recovery and counts what it had to give up.
//   - Close stops new appends (ErrClosed), finishes the appends already
//     queued (they are written, synced and answered), syncs and closes the
//     files, and wakes a waiting Next with ErrClosed. Every goroutine the
//     spool starts has stopped when Close returns.
//   - Health says whether an append of a small record could succeed now,
//     for readiness checks: nil, ErrClosed, the error of a failed fdatasync
//     (until the spool is reopened), or a *FullError at MaxBytes or
//     MinFreeBytes. It reads the filesystem's free space, and writes
//     nothing.
//
// # On-disk format
//
// A spool directory holds:
//
//	00000000000000000001.seg   segments: 20-digit zero-padded index, so names sort in order
//	cursor                     the acknowledged position
//	LOCK                       flock'd by the process that has the spool open
//	quarantine/                damaged segments, kept for an operator
//	*.tmp                      temp files of atomic writes; removed at Open
//
// Every integer is little-endian; CRC is CRC-32C (Castagnoli).
//
// A segment starts with a 24-byte header:
//
//	offset size
//	0      4    magic "SLSG"
//	4      2    format version, 1
//	6      2    reserved, 0
//	8      8    segment index, equal to the file name's
//	16     4    CRC of bytes 0-15
//	20     4    reserved, 0
//
// followed by records, each in one frame:
//
//	offset size
//	0      4    n, the record's length
//	4      4    ^n, the bitwise complement of n
//	8      8    append time, Unix nanoseconds
//	16     4    CRC of bytes 0-15 and the record
//	20     n    the record
//	20+n   p    zero padding, so that every frame starts 8-byte aligned
//
// A Position is a segment index and the offset of a frame in it.
//
// Segment files are created atomically: the header is written to
// NAME.seg.tmp, synced, renamed to NAME.seg, and the directory synced; a
// segment file never exists without a whole header. Segment indexes only
// grow. A new segment is started for the first append after Open, and
// before an append that would take the current one past SegmentBytes (or
// when all its records are acknowledged); the segment it ends is synced and
// never written again.
//
// The cursor file is 32 bytes: magic "SLCU", version (2 bytes), 2 reserved,
// segment index (8), offset (8) of the last acknowledged record, CRC of bytes
// 0-23 (4), 4 reserved. It is replaced atomically (cursor.tmp, sync, rename,
// sync the directory).
//
// # Invariants
//
//   - A length field is never trusted before it is checked: it must equal
//     the complement of the next 4 bytes, be at most 64 MiB (the format's
//     bound, whatever Config.MaxRecordBytes is now, so that lowering the
//     limit never turns old records into corruption), and the frame must
//     fit in the file. Only then is the record read and its CRC checked.
//   - The length and its complement are one aligned 8-byte word, so a torn
//     sector write cannot tear them apart.
//   - A frame is complete only with its padding: a file that ends inside
//     one has a torn tail.
//   - Records at or before the cursor are acknowledged; all others are not.
//     Deleting acknowledged segments happens before the cursor is written,
//     so a crash leaves an older cursor (duplicates), never a newer one.
//
// # Recovery
//
// Open scans every segment and verifies every frame, then:
//
//   - Removes stray temp files (an interrupted cursor write or segment
//     creation).
//   - Treats a missing cursor as "nothing acknowledged", and a corrupt one
//     (bad CRC or magic) the same way: records are replayed, never lost.
//   - Torn tail: when the last segment ends in bytes where no frame
//     verifies (a short frame, a bad length or a CRC mismatch with nothing
//     valid after it), it is truncated to its last valid record. Those
//     records were never acknowledged to a caller (their append had not
//     returned). Counted in sluice_spool_truncated_bytes_total.
//   - Damage in the middle: when a frame does not verify and a valid frame
//     follows it, or when any segment but the last is damaged, or when a
//     segment header is damaged, the segment is quarantined. It is copied
//     whole to quarantine/NAME (NAME.1, ... if taken) and the original
//     truncated to the records before the damage, which stay readable at
//     their positions (a segment with none left is moved instead). The
//     copy is synced, renamed into place and quarantine/ synced before
//     the original is truncated, so a crash part way leaves the damaged
//     records whole in at least one file (in both: the next Open
//     quarantines the segment again, as NAME.1). The
//     records after the damage are lost to the spool (the copy in
//     quarantine/ is for an operator). They are counted in
//     sluice_spool_quarantined_bytes_total (exactly: from the damage to the
//     end of the file) and sluice_spool_quarantined_records_total and
//     logged. The record count comes from resynchronizing on the frames
//     after the damage: every frame that verifies counts one, every damaged
//     frame whose length field is intact counts one, and every run of bytes
//     in which no frame can be found counts one, since at least one record
//     was there and how many is unknowable; the count is exact unless a
//     damaged run swallowed more than one record. (When the damage lies
//     before the cursor in the cursor's segment, acknowledged records past
//     it are counted too.)
//   - Deletes segments left with no records, and segments wholly at or
//     before the cursor (a segment before the cursor's is deleted whatever
//     its state: all its records are acknowledged).
//
// A segment whose header verifies but names another format version is not
// damage: Open fails rather than quarantine data a newer sluice wrote.
//
// Inspect reads a spool directory the same way and reports what Open would
// do, without changing anything.
//
// # Capacity
//
// Before an append is written, the writer checks that the segment files
// stay within MaxBytes and that the filesystem keeps MinFreeBytes free
// (statfs, once per batch). When the disk fills anyway, the write fails
// with ENOSPC, the partial append is truncated away and the append fails
// with reason "enospc"; the spool keeps working. Ack deletes acknowledged
// segments before it writes the cursor, and Next keeps no segment file open
// between calls, so a drainer can free space on a full disk. When nothing
// can be deleted (every record is in the segment being written) the cursor
// write itself can fail with ENOSPC; the MinFreeBytes floor is there to
// keep the disk from filling in the first place.
//
// # What it does not do
//
//   - It does not interpret records, deduplicate or expire them: a record
//     leaves the spool only when acknowledged (or quarantined).
//   - It does not support more than one drainer, or more than one process
//     on a directory (the LOCK file's flock refuses a second Open).
//   - A failed fdatasync stops the spool: appends fail until it is
//     reopened, since the kernel may have dropped the written pages.
//   - A record found damaged by Next after Open verified it (the disk
//     changed under a running spool) fails Next with a *CorruptionError;
//     reopening the spool repairs it.
//   - MinFreeBytes needs statfs and the LOCK needs flock: outside Linux the
//     floor is not enforced and the lock is not taken.
package buffer
