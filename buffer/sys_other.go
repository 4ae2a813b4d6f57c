//go:build !linux

package buffer

import (
	"errors"
	"os"
)

// fdatasync falls back to fsync where fdatasync is not available.
func fdatasync(f *os.File) error { return f.Sync() }

// dataSyncer is fdatasync outside Linux (see aio_linux.go).
type dataSyncer struct{}

func newDataSyncer() *dataSyncer          { return &dataSyncer{} }
func (*dataSyncer) sync(f *os.File) error { return fdatasync(f) }
func (*dataSyncer) close()                {}

var errNoStatfs = errors.New("buffer: free disk space is not known on this platform")

// diskFree is not implemented outside Linux: Config.MinFreeBytes is not
// enforced there and a full disk shows as ENOSPC.
func diskFree(string) (int64, error) { return 0, errNoStatfs }

// lockFile does nothing outside Linux: the caller must make sure that one
// process at a time opens a spool directory.
func lockFile(*os.File) error { return nil }
