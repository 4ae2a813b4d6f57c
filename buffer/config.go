package buffer

import "fmt"

// FsyncPolicy says when appended records are made durable.
type FsyncPolicy string

const (
	// FsyncBatch, the default, issues one fdatasync per group-commit batch:
	// an Append returns only after the batch holding its records is synced.
	FsyncBatch FsyncPolicy = "batch"
	// FsyncNever never syncs appended records: an Append returns once its
	// records are written to the page cache. It is for tests and benchmarks.
	// A power loss or kernel crash then loses acknowledged records. Cursor
	// and directory updates are still synced.
	FsyncNever FsyncPolicy = "never"
)

// Config is the spool's configuration block. Start from NewDefaultConfig.
type Config struct {
	// Dir is the spool's directory, created if missing. Required. One
	// process at a time may open it.
	Dir string `yaml:"dir"`
	// SegmentBytes is the size at which a new segment file is started: an
	// append that would take the current segment past it starts a new one,
	// unless the current segment holds no record. Default 64 MiB.
	SegmentBytes int64 `yaml:"segment_bytes"`
	// MaxBytes caps the bytes of all segment files. An append that would
	// pass it fails with a FullError of reason "cap". It must be at least
	// SegmentBytes. Default 1 GiB.
	MaxBytes int64 `yaml:"max_bytes"`
	// MinFreeBytes is the filesystem's free-space floor: an append that
	// would leave less free fails with a FullError of reason "disk_floor".
	// 0 disables the check. Default 256 MiB.
	MinFreeBytes int64 `yaml:"min_free_bytes"`
	// MaxRecordBytes bounds one record; a larger one fails with ErrTooLarge.
	// At most 64 MiB, the format's bound. Default 4 MiB.
	MaxRecordBytes int `yaml:"max_record_bytes"`
	// Fsync is FsyncBatch (default) or FsyncNever.
	Fsync FsyncPolicy `yaml:"fsync"`
	// MaxBatchBytes bounds the bytes one group-commit batch writes, records
	// with their framing (20 to 27 bytes each), and so one Append: a larger
	// one fails with ErrTooLarge. One record of MaxRecordBytes always fits.
	// It must be at least MaxRecordBytes. Default 4 MiB.
	MaxBatchBytes int `yaml:"max_batch_bytes"`
}

// batchLimit is the framed bytes a batch may hold: MaxBatchBytes, or one
// record of MaxRecordBytes if that is more.
func (c Config) batchLimit() int64 {
	return max(int64(c.MaxBatchBytes), frameSize(c.MaxRecordBytes))
}

// FrameBytes is what a record of n bytes takes in a segment: its frame
// header, the record and the padding to the next 8-byte boundary.
func FrameBytes(n int) int64 { return frameSize(n) }

// MaxAppendBytes is the most framed bytes (FrameBytes of each record) one
// Append may carry: MaxBatchBytes, or one record of MaxRecordBytes if that
// is more, and never more than an empty spool has room for under MaxBytes.
// A larger Append fails with ErrTooLarge.
func (c Config) MaxAppendBytes() int64 {
	return min(c.batchLimit(), c.MaxBytes-segmentHeaderSize)
}

// CheckRecord says which limit keeps a record of n bytes from ever being
// appended, as a *ConfigError naming the field; nil when one fits.
func (c Config) CheckRecord(n int) error {
	switch {
	case n > c.MaxRecordBytes:
		return &ConfigError{Field: "max_record_bytes", Err: fmt.Errorf("%d is below a record of %d bytes", c.MaxRecordBytes, n)}
	case frameSize(n) > c.MaxAppendBytes():
		return &ConfigError{Field: "max_bytes", Err: fmt.Errorf("%d leaves no room for a record of %d bytes (%d framed, after the %d-byte segment header)",
			c.MaxBytes, n, frameSize(n), segmentHeaderSize)}
	}
	return nil
}

// Limits enforced by Validate.
const minSegmentBytes = 512

// NewDefaultConfig returns the defaults documented on Config for a spool in
// dir.
func NewDefaultConfig(dir string) Config {
	return Config{
		Dir:            dir,
		SegmentBytes:   64 << 20,
		MaxBytes:       1 << 30,
		MinFreeBytes:   256 << 20,
		MaxRecordBytes: 4 << 20,
		Fsync:          FsyncBatch,
		MaxBatchBytes:  4 << 20,
	}
}

// Validate reports the first invalid field as a *ConfigError naming its
// YAML key ("buffer: max_bytes: ...").
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case c.Dir == "":
		return bad("dir", "required")
	case c.SegmentBytes < minSegmentBytes:
		return bad("segment_bytes", "%d is below the minimum of %d", c.SegmentBytes, minSegmentBytes)
	case c.MaxBytes < c.SegmentBytes:
		return bad("max_bytes", "%d is below segment_bytes (%d)", c.MaxBytes, c.SegmentBytes)
	case c.MinFreeBytes < 0:
		return bad("min_free_bytes", "must not be negative")
	case c.MaxRecordBytes < 1:
		return bad("max_record_bytes", "must be positive")
	case c.MaxRecordBytes > maxFrameRecordBytes:
		return bad("max_record_bytes", "%d is above the format's bound of %d", c.MaxRecordBytes, maxFrameRecordBytes)
	case c.Fsync != FsyncBatch && c.Fsync != FsyncNever:
		return bad("fsync", "%q is not %q or %q", c.Fsync, FsyncBatch, FsyncNever)
	case c.MaxBatchBytes < c.MaxRecordBytes:
		return bad("max_batch_bytes", "%d is below max_record_bytes (%d)", c.MaxBatchBytes, c.MaxRecordBytes)
	}
	return nil
}

// ConfigError is a Config field out of range, or a record size no field
// lets through (CheckRecord). Field is the field's YAML key.
type ConfigError struct {
	Field string
	Err   error
}

func (e *ConfigError) Error() string { return "buffer: " + e.Field + ": " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }
