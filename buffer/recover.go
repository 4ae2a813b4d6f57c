package buffer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// recover brings the directory to a state the spool can run on, and loads
// it: stray temp files are removed, a torn tail of the last segment is
// truncated, damaged segments are quarantined, and segments that are empty
// or wholly acknowledged are deleted. See the package documentation.
func (s *Spool) recover() error {
	dir := s.cfg.Dir
	st, err := examine(dir)
	if err != nil {
		return err
	}
	changed := false
	for _, name := range st.strays {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("buffer: %w", err)
		}
		s.log.Info("buffer: removed stray temp file", "file", name)
		changed = true
	}
	cursor := st.cursor
	if st.cursorErr != nil {
		s.log.Warn("buffer: cursor file corrupt; treating every record as unacknowledged (duplicates, no loss)",
			"error", st.cursorErr)
	}

	nextIndex := uint64(1)
	if cursor != nil {
		nextIndex = cursor.Segment + 1
	}
	var first Position
	hasFirst := false
	for i := range st.segments {
		sc := &st.segments[i]
		path := filepath.Join(dir, sc.name)
		nextIndex = max(nextIndex, sc.index+1)
		if cursor != nil && sc.index < cursor.Segment {
			// Wholly acknowledged, whatever state it is in.
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("buffer: %w", err)
			}
			changed = true
			continue
		}
		moved := false
		if sc.damage != nil {
			changed = true
			lost := sc.lostBytes()
			if i == len(st.segments)-1 && sc.tornTail() {
				if err := truncateFile(path, sc.validEnd); err != nil {
					return err
				}
				s.metrics.truncatedBytes.Add(float64(lost))
				s.log.Warn("buffer: truncated a torn tail (records never acknowledged to a caller)",
					"segment", sc.name, "offset", sc.validEnd, "bytes", lost, "damage", sc.damage.Err)
			} else {
				dst, err := s.quarantine(sc)
				if err != nil {
					return err
				}
				moved = sc.records == 0
				s.quarRecs += int64(sc.lostRecords)
				s.quarBytes += lost
				s.metrics.quarantinedRecords.Add(float64(sc.lostRecords))
				s.metrics.quarantinedBytes.Add(float64(lost))
				s.log.Error("buffer: quarantined a damaged segment; the records after the damage are lost to the spool",
					"segment", sc.name, "offset", sc.validEnd, "damage", sc.damage.Err,
					"lost_records", sc.lostRecords, "lost_bytes", lost,
					"kept_records", sc.records, "quarantine", dst)
			}
		}
		if sc.records == 0 || cursor != nil && (sc.index < cursor.Segment ||
			sc.index == cursor.Segment && sc.lastRecord <= cursor.Offset) {
			if !moved {
				if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("buffer: %w", err)
				}
				changed = true
			}
			continue
		}
		s.segs = append(s.segs, &segment{
			index:      sc.index,
			size:       sc.validEnd,
			records:    sc.records,
			lastRecord: sc.lastRecord,
			firstTS:    sc.firstTS,
			sealed:     true,
		})
		s.bytes += sc.validEnd
		s.unacked += int64(sc.pendingRecords)
		if !hasFirst && sc.pendingRecords > 0 {
			first, hasFirst = Position{sc.index, sc.firstPending}, true
			s.oldest = timeFromNanos(sc.firstPendingTS)
		}
	}
	if changed {
		if err := s.syncDir(dir); err != nil {
			return fmt.Errorf("buffer: %w", err)
		}
	}

	s.w.nextIndex = nextIndex
	if cursor != nil {
		s.acked, s.hasAcked, s.maxDeliv = *cursor, true, *cursor
	}
	if !hasFirst {
		first = Position{nextIndex, segmentHeaderSize}
	}
	s.readPos, s.ackNext = first, first
	return nil
}

// quarantine moves the damaged segment sc to quarantine/ and returns its
// path there. When records before the damage verify, the segment is copied
// and the original truncated to them, so that they keep their positions;
// otherwise the file is moved.
//
// Order matters for a crash part way: the copy is synced, renamed into
// place and quarantine/ synced before the original is truncated, so the
// damaged records are always whole in at least one durable file. A crash
// after the copy and before the truncation leaves both; the next Open
// quarantines the segment again, as NAME.1.
func (s *Spool) quarantine(sc *segmentScan) (string, error) {
	dir := s.cfg.Dir
	qdir := filepath.Join(dir, quarantineDir)
	if err := os.MkdirAll(qdir, 0o750); err != nil {
		return "", fmt.Errorf("buffer: %w", err)
	}
	if err := s.syncDir(dir); err != nil { // quarantine/ itself
		return "", fmt.Errorf("buffer: %w", err)
	}
	src := filepath.Join(dir, sc.name)
	dst := filepath.Join(qdir, sc.name)
	for n := 1; ; n++ {
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			break
		}
		dst = filepath.Join(qdir, sc.name+"."+strconv.Itoa(n))
	}
	if sc.records == 0 {
		if err := os.Rename(src, dst); err != nil {
			return "", fmt.Errorf("buffer: %w", err)
		}
		s.durable("rename", dst)
		// The new name first: a crash between the two syncs leaves the
		// file under both names, never under neither.
		if err := s.syncDir(qdir); err != nil {
			return "", fmt.Errorf("buffer: %w", err)
		}
		if err := s.syncDir(dir); err != nil {
			return "", fmt.Errorf("buffer: %w", err)
		}
		return dst, nil
	}
	if err := s.copyFile(src, dst); err != nil {
		return "", fmt.Errorf("buffer: copying %s to quarantine: %w", sc.name, err)
	}
	if err := s.syncDir(qdir); err != nil {
		return "", fmt.Errorf("buffer: %w", err)
	}
	if err := truncateFile(src, sc.validEnd); err != nil {
		return "", err
	}
	s.durable("truncate", src)
	return dst, nil
}

// durable tells the trace installed by withDurableSteps, if any, that a
// durable step is done: "sync" (a file's data), "syncdir" (a directory's
// entries), "rename" or "truncate" (the file's new size is synced).
func (s *Spool) durable(op, path string) {
	if s.steps != nil {
		s.steps(op, path)
	}
}

// syncDir is the package's syncDir, traced.
func (s *Spool) syncDir(dir string) error {
	if err := syncDir(dir); err != nil {
		return err
	}
	s.durable("syncdir", dir)
	return nil
}

// copyFile copies src to dst through a synced temp file renamed into place.
// The rename is durable only once dst's directory is synced.
func (s *Spool) copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + tempExt
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = out.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = io.Copy(out, in); err != nil {
		return err
	}
	if err = out.Sync(); err != nil {
		return err
	}
	s.durable("sync", tmp)
	if err = out.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, dst); err != nil {
		return err
	}
	s.durable("rename", dst)
	return nil
}

// truncateFile cuts path to size and syncs it.
func truncateFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("buffer: %w", err)
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("buffer: truncating %s: %w", path, err)
	}
	return nil
}
