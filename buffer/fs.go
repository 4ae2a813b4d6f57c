package buffer

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// writeFileAtomic replaces path with data: it writes path+".tmp", syncs it,
// renames it over path and syncs the directory. After a crash path holds
// either its old or its new content; a leftover temp file is removed at the
// next Open.
func writeFileAtomic(path string, data []byte) (err error) {
	tmp := path + tempExt
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes the directory's entries (created, renamed, removed files)
// durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// isNoSpace reports whether err is the filesystem refusing a write for lack
// of space or quota.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
