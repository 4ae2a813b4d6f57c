//go:build unix

package tlsfiles

import (
	"io/fs"
	"syscall"
)

// fileID is the file's device and inode, so a rename over it is seen.
func fileID(fi fs.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}
