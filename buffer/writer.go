package buffer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// writerState is the writer goroutine's own: the segment it appends to.
type writerState struct {
	f         *os.File
	seg       *segment // the segment f belongs to; nil when f is nil
	end       int64    // bytes written to f; seg.size is the committed part
	unsynced  int      // records written to f since its last fdatasync
	dirty     bool     // f has writes not yet synced
	nextIndex uint64   // index of the next segment to create
	noSpace   bool     // the last write failed with ENOSPC (for logging)
	scratch   []byte   // reused for each batch's frames; at most batchLimit bytes
	closeErr  error    // from closing f when the writer stops
	syncer    *dataSyncer
}

// runWriter is the writer goroutine: it takes every append queued (up to
// MaxBatchBytes of frames), writes them, syncs once and answers each. It
// stops when Close closes the queue, after answering what was queued.
func (s *Spool) runWriter() {
	defer close(s.writerDone)
	s.w.syncer = newDataSyncer()
	defer s.w.syncer.close()
	defer s.closeWriterFile()
	var carry *appendReq
	for {
		req := carry
		carry = nil
		if req == nil {
			r, ok := <-s.queue
			if !ok {
				return
			}
			req = r
		}
		batch, total := []*appendReq{req}, int64(len(req.buf))
	collect:
		for {
			select {
			case r, ok := <-s.queue:
				if !ok {
					break collect
				}
				if total+int64(len(r.buf)) > s.cfg.batchLimit() {
					carry = r
					break collect
				}
				batch, total = append(batch, r), total+int64(len(r.buf))
			default:
				break collect
			}
		}
		s.commit(batch)
	}
}

func (s *Spool) closeWriterFile() {
	w := &s.w
	if w.f == nil {
		return
	}
	var err error
	if w.dirty {
		err = w.syncer.sync(w.f)
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.mu.Lock()
		w.closeErr = fmt.Errorf("buffer: closing %s: %w", segmentName(w.seg.index), err)
		s.mu.Unlock()
	}
	w.f, w.seg = nil, nil
}

// batchState is one commit's bookkeeping.
type batchState struct {
	batch []*appendReq
	errs  []error
	off   []int64 // file offset of each append's first frame, once accepted
	// pend are the appends written (or in buf) to the writer's segment and
	// not yet committed; the first flushed of them are written.
	pend    []int
	flushed int
	buf     []byte // frames of pend[flushed:], to be written at w.end
}

// commit writes a batch of appends, syncs them and answers each.
func (s *Spool) commit(batch []*appendReq) {
	w := &s.w
	b := &batchState{batch: batch, errs: make([]error, len(batch)), off: make([]int64, len(batch)), buf: w.scratch[:0]}
	defer func() {
		s.logNoSpace(b.errs)
		w.scratch = b.buf[:0]
		// After its answer is sent a request belongs to its Append again.
		for i, r := range batch {
			r.done <- b.errs[i]
		}
	}()

	s.mu.Lock()
	broken := s.broken
	s.mu.Unlock()
	if broken != nil {
		for i := range b.errs {
			b.errs[i] = broken
		}
		return
	}

	free := int64(-1) // unknown: the floor is not enforced
	if s.cfg.MinFreeBytes > 0 {
		if f, err := diskFree(s.cfg.Dir); err == nil {
			free = f
		}
	}
	var consumed int64 // bytes this batch takes from the filesystem
	var failed error   // a write failed: every later append fails with it

	for i, req := range batch {
		need := int64(len(req.buf))
		if failed != nil {
			b.errs[i] = s.writeError(failed, need)
			continue
		}
		if err := req.ctx.Err(); err != nil {
			b.errs[i] = err
			continue
		}

		var pending int64 // written or buffered, not yet in s.bytes
		if w.seg != nil {
			pending = w.end - w.seg.size + int64(len(b.buf))
		}
		s.mu.Lock()
		used := s.bytes + pending
		reclaim := w.seg != nil && len(b.pend) == 0 && s.whollyAckedLocked(w.seg)
		s.mu.Unlock()
		roll := w.f == nil || reclaim ||
			(w.seg.records > 0 || len(b.pend) > 0) && w.end+int64(len(b.buf))+need > s.cfg.SegmentBytes
		var extra, freed int64
		if roll {
			extra = segmentHeaderSize
			if reclaim {
				freed = w.seg.size
			}
		}
		if used-freed+extra+need > s.cfg.MaxBytes {
			b.errs[i] = &FullError{Reason: ReasonCap, Need: need + extra, Free: max(0, s.cfg.MaxBytes-(used-freed))}
			continue
		}
		if free >= 0 && free-consumed-extra-need < s.cfg.MinFreeBytes {
			b.errs[i] = &FullError{Reason: ReasonDiskFloor, Need: need + extra, Free: max(0, free-consumed-s.cfg.MinFreeBytes)}
			continue
		}
		if roll {
			if err := s.roll(b); err != nil {
				failed = err
				b.errs[i] = s.writeError(err, need)
				continue
			}
			consumed += extra
		}
		b.off[i] = w.end + int64(len(b.buf))
		req.pos = Position{w.seg.index, b.off[i]}
		b.pend = append(b.pend, i)
		b.buf = append(b.buf, req.buf...)
		w.unsynced += req.records
		consumed += need
	}

	_ = s.flush(b) // on failure, the appends it fails are answered
	if err := s.sync(); err != nil {
		s.failSync(b, err)
		return
	}
	if w.seg != nil {
		s.commitPending(b, false)
	}
}

// logNoSpace logs when the filesystem turns full, and when appends succeed
// again, rather than once per failed append.
func (s *Spool) logNoSpace(errs []error) {
	w := &s.w
	for _, err := range errs {
		var fe *FullError
		switch {
		case errors.As(err, &fe) && fe.Reason == ReasonENOSPC:
			if !w.noSpace {
				w.noSpace = true
				s.log.Warn("buffer: filesystem full; appends fail until space is freed", "dir", s.cfg.Dir)
			}
		case err == nil && w.noSpace:
			w.noSpace = false
			s.log.Info("buffer: appends succeed again after the filesystem was full", "dir", s.cfg.Dir)
		}
	}
}

// writeError is the error of an append of need bytes that a failed write
// (or segment creation) took down.
func (s *Spool) writeError(err error, need int64) error {
	if isNoSpace(err) {
		free, _ := diskFree(s.cfg.Dir)
		return &FullError{Reason: ReasonENOSPC, Need: need, Free: free}
	}
	return fmt.Errorf("buffer: writing: %w", err)
}

// flush writes b.buf at the end of the writer's segment. When the write
// fails part way, the appends wholly written stay (they are synced and
// answered as usual) and the file is truncated back to the end of the last
// of them; the others fail.
func (s *Spool) flush(b *batchState) error {
	w := &s.w
	if len(b.buf) == 0 {
		return nil
	}
	n, err := w.f.WriteAt(b.buf, w.end)
	w.dirty = true
	if err == nil {
		w.end += int64(len(b.buf))
		b.buf = b.buf[:0]
		b.flushed = len(b.pend)
		return nil
	}
	kept, keptBytes := b.flushed, int64(0)
	for kept < len(b.pend) {
		size := int64(len(b.batch[b.pend[kept]].buf))
		if keptBytes+size > int64(n) {
			break
		}
		keptBytes += size
		kept++
	}
	for _, i := range b.pend[kept:] {
		b.errs[i] = s.writeError(err, int64(len(b.batch[i].buf)))
		w.unsynced -= b.batch[i].records
	}
	b.pend = b.pend[:kept]
	b.flushed = kept
	b.buf = b.buf[:0]
	w.end += keptBytes
	if terr := w.f.Truncate(w.end); terr != nil {
		s.setBroken(fmt.Errorf("truncating %s after a failed write: %w", segmentName(w.seg.index), terr))
	}
	if !isNoSpace(err) {
		s.log.Error("buffer: write failed", "segment", segmentName(w.seg.index), "error", err)
	}
	return err
}

// sync makes the writer's segment durable per the policy.
func (s *Spool) sync() error {
	w := &s.w
	if w.f == nil || w.unsynced == 0 || s.cfg.Fsync == FsyncNever {
		w.unsynced = 0
		return nil
	}
	if s.before != nil {
		s.before()
	}
	err := w.syncer.sync(w.f)
	s.metrics.fsyncs.Inc()
	s.metrics.recordsPerFsync.Observe(float64(w.unsynced))
	w.unsynced = 0
	if err == nil {
		w.dirty = false
	}
	return err
}

// failSync fails the appends not yet committed after fdatasync failed. What
// the kernel did with the written pages is unknown (the error may not be
// reported again), so the spool stops taking appends; reopening it
// recovers what is on disk.
func (s *Spool) failSync(b *batchState, err error) {
	w := &s.w
	err = fmt.Errorf("buffer: fdatasync %s: %w", segmentName(w.seg.index), err)
	for _, i := range b.pend {
		b.errs[i] = err
	}
	b.pend = nil
	_ = w.f.Truncate(w.seg.size)
	w.end = w.seg.size
	s.setBroken(err)
}

func (s *Spool) setBroken(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken == nil {
		s.broken = fmt.Errorf("buffer: spool failed, reopen it to recover: %w", err)
		s.log.Error("buffer: spool failed; appends fail until it is reopened", "error", err)
	}
}

// commitPending makes the pending appends of the writer's segment readable
// and counted. With seal, the segment is also closed to appends, and
// deleted when all its records are already acknowledged.
func (s *Spool) commitPending(b *batchState, seal bool) {
	w := &s.w
	s.mu.Lock()
	seg := w.seg
	if len(b.pend) > 0 {
		if s.unacked == 0 {
			s.oldest = timeFromNanos(b.batch[b.pend[0]].ts)
		}
		for _, i := range b.pend {
			r := b.batch[i]
			if seg.records == 0 {
				seg.firstTS = r.ts
			}
			seg.records += r.records
			seg.lastRecord = b.off[i] + r.lastOff
			s.unacked += int64(r.records)
		}
		s.bytes += w.end - seg.size
		seg.size = w.end
		s.wakeLocked()
	}
	b.pend, b.flushed = b.pend[:0], 0
	var victims []*segment
	if seal {
		seg.sealed = true
		if s.hasAcked && s.whollyAckedLocked(seg) {
			victims = s.takeAckedLocked(s.acked)
		}
	}
	s.mu.Unlock()
	if err := s.removeSegments(victims); err != nil {
		s.log.Warn("buffer: removing acknowledged segments", "error", err)
	}
}

// whollyAckedLocked reports whether seg holds records and all of them are
// acknowledged. Called with s.mu held.
func (s *Spool) whollyAckedLocked(seg *segment) bool {
	return s.hasAcked && seg.records > 0 &&
		(seg.index < s.acked.Segment || seg.index == s.acked.Segment && seg.lastRecord <= s.acked.Offset)
}

// roll seals the writer's segment (syncing and committing what the batch
// wrote to it) and starts the next one.
func (s *Spool) roll(b *batchState) error {
	w := &s.w
	if w.f != nil {
		if err := s.flush(b); err != nil {
			return err
		}
		if err := s.sync(); err != nil {
			s.failSync(b, err)
			return err
		}
		s.commitPending(b, true)
		if err := w.f.Close(); err != nil {
			s.log.Warn("buffer: closing segment", "segment", segmentName(w.seg.index), "error", err)
		}
		w.f, w.seg, w.dirty = nil, nil, false
	}

	index := w.nextIndex
	f, err := createSegment(s.cfg.Dir, index)
	if err != nil {
		return err
	}
	w.nextIndex++
	seg := &segment{index: index, size: segmentHeaderSize}
	w.f, w.seg, w.end = f, seg, segmentHeaderSize
	s.mu.Lock()
	s.segs = append(s.segs, seg)
	s.bytes += segmentHeaderSize
	s.mu.Unlock()
	return nil
}

// createSegment creates segment index atomically: its header is written to
// a temp file and synced, which is renamed into place, and the directory is
// synced. It returns the file open for writing.
func createSegment(dir string, index uint64) (*os.File, error) {
	path := filepath.Join(dir, segmentName(index))
	tmp := path + tempExt
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*os.File, error) {
		_ = f.Close()
		_ = os.Remove(tmp)
		return nil, err
	}
	if _, err := f.Write(encodeSegmentHeader(index)); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	_ = f.Close()
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	// Reopened so that errors name the segment, not its temp file.
	return os.OpenFile(path, os.O_WRONLY, 0)
}
