package buffer

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrClosed is returned by every method of a closed Spool, and by
	// Append when the spool was closed before its records were queued.
	ErrClosed = errors.New("buffer: spool closed")
	// ErrFull is wrapped by *FullError: the records did not fit and nothing
	// of them is on disk. Appending again after the drainer acknowledged
	// records, or after disk space was freed, may succeed.
	ErrFull = errors.New("buffer: spool full")
	// ErrTooLarge is returned by Append for a record over
	// Config.MaxRecordBytes or an append whose records add up to more than
	// Config.MaxAppendBytes. It will always be returned for the same input.
	ErrTooLarge = errors.New("buffer: too large")
)

// Reasons of a FullError.
const (
	// ReasonCap: the spool would exceed Config.MaxBytes.
	ReasonCap = "cap"
	// ReasonDiskFloor: the filesystem would have less than
	// Config.MinFreeBytes free.
	ReasonDiskFloor = "disk_floor"
	// ReasonENOSPC: the filesystem refused the write (ENOSPC or EDQUOT).
	ReasonENOSPC = "enospc"
)

// FullError is the error of an append that did not fit. Nothing of its
// records is left on disk.
type FullError struct {
	// Reason is ReasonCap, ReasonDiskFloor or ReasonENOSPC.
	Reason string
	// Need is the bytes the append needed on disk: its frames, plus a
	// segment header when it would have started a segment.
	Need int64
	// Free is the bytes there were room for under the limit that was hit:
	// MaxBytes minus the spool's bytes for "cap", the filesystem's free bytes
	// minus MinFreeBytes for "disk_floor" (never negative), and the
	// filesystem's free bytes for "enospc" (0 when unknown).
	Free int64
}

func (e *FullError) Error() string {
	return fmt.Sprintf("buffer: spool full (%s): need %d bytes, %d free", e.Reason, e.Need, e.Free)
}

// Unwrap returns ErrFull.
func (e *FullError) Unwrap() error { return ErrFull }

// CorruptionError locates damage in a segment: recovery keeps the records
// before Offset and repairs from there.
type CorruptionError struct {
	// Segment is the segment's file name.
	Segment string
	// Offset is where the first record that does not verify starts (0 when
	// the segment header is damaged).
	Offset int64
	// Err says what is wrong.
	Err error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("buffer: segment %s: offset %d: %s",
		e.Segment, e.Offset, strings.TrimPrefix(e.Err.Error(), "buffer: "))
}

func (e *CorruptionError) Unwrap() error { return e.Err }

// Kinds of damage (CorruptionError.Err) and other internal errors. Callers
// branch on *CorruptionError, not on these.
var (
	errShortHeader = errors.New("buffer: segment header truncated")
	errBadHeader   = errors.New("buffer: segment header corrupt")
	errVersion     = errors.New("buffer: unsupported segment format version")
	errShortFrame  = errors.New("buffer: record truncated")
	errBadLength   = errors.New("buffer: record length corrupt")
	errChecksum    = errors.New("buffer: record checksum mismatch")
	errBadCursor   = errors.New("buffer: cursor file corrupt")
	errAckAhead    = errors.New("buffer: ack past the records returned by Next")
	errLocked      = errors.New("buffer: spool directory in use by another process")
	errBadMax      = errors.New("buffer: Next: max must be positive")
)
