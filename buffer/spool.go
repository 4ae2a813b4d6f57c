package buffer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Position locates a record: the segment's index and the offset of the
// record's frame in it. Positions are comparable and order records in
// append order.
type Position struct {
	Segment uint64
	Offset  int64
}

// Compare returns -1, 0 or +1 as p is before, at or after q.
func (p Position) Compare(q Position) int {
	if c := cmp.Compare(p.Segment, q.Segment); c != 0 {
		return c
	}
	return cmp.Compare(p.Offset, q.Offset)
}

func (p Position) String() string { return fmt.Sprintf("%d@%d", p.Segment, p.Offset) }

// Entry is a record read by Next.
type Entry struct {
	Pos Position
	// Data is the record as appended. It belongs to the caller.
	Data       []byte
	AppendedAt time.Time
}

// Stats is a snapshot of the spool.
type Stats struct {
	// Bytes and Segments are those of all segment files.
	Bytes    int64
	Segments int
	// Records are the records not yet acknowledged.
	Records int64
	// OldestAppendedAt is the append time of the first record not yet
	// acknowledged; zero when there is none.
	OldestAppendedAt time.Time
	// QuarantinedRecords and QuarantinedBytes are what recovery moved to
	// quarantine/ when this Spool was opened.
	QuarantinedRecords int64
	QuarantinedBytes   int64
}

const (
	// queueLen bounds the appends waiting for the writer.
	queueLen = 1024
	// readBudget bounds the bytes one Next call reads, unless its first
	// record alone is larger.
	readBudget = 1 << 20
)

// Spool is a segmented, append-only disk spool. See the package
// documentation for its contract.
type Spool struct {
	cfg     Config
	log     *slog.Logger
	clock   func() time.Time
	reg     prometheus.Registerer
	metrics *metrics
	lock    *os.File
	before  func()                // options.beforeSync
	steps   func(op, path string) // options.durable; nil when not traced

	// Appends go through queue to the writer goroutine. sendMu orders
	// sending against Close closing the queue.
	sendMu sync.RWMutex
	// reqs recycles append requests and their frame buffers: an Append
	// that heard its answer puts its request back. Under load this keeps
	// the spool from doubling the garbage per event.
	reqs       sync.Pool
	sendClosed bool
	queue      chan *appendReq
	writerDone chan struct{}
	done       chan struct{} // closed by Close once the writer has stopped

	w writerState // owned by the writer goroutine

	ackMu sync.Mutex // serializes Ack

	readMu sync.Mutex // serializes Next
	// rf is the segment file Next reads, kept open from one call to the
	// next while it reads that segment; removeSegments closes it first
	// when it deletes that segment, so that its space is freed at once,
	// and Next closes it before waiting for records.
	rfMu  sync.Mutex
	rf    *os.File
	rfIdx uint64

	mu        sync.Mutex
	closed    bool
	broken    error      // set after a failed fdatasync or truncate; appends fail with it
	segs      []*segment // in index order; the last one may be the writer's
	bytes     int64
	unacked   int64
	oldest    time.Time
	acked     Position // durable cursor, when hasAcked
	hasAcked  bool
	ackNext   Position // the first record after acked, or where it will be
	readPos   Position
	readGen   uint64      // bumped by Rewind
	delivered []delivered // returned by Next and not acknowledged, in order
	maxDeliv  Position    // the last record Next ever returned (or the cursor)
	notify    chan struct{}
	quarRecs  int64
	quarBytes int64
}

// segment is a segment file's committed state: what Next may read.
type segment struct {
	index      uint64
	size       int64 // bytes durable (per policy) and readable
	records    int
	lastRecord int64 // offset of the last record, when records > 0
	firstTS    int64
	sealed     bool // no more appends; false only for the writer's segment
}

type delivered struct {
	pos Position
	end int64 // end of the record's frame
	ts  int64
}

type appendReq struct {
	ctx     context.Context
	buf     []byte // the records' frames
	records int
	lastOff int64 // offset in buf of the last frame
	ts      int64
	pos     Position // where the writer put the first frame; read after done
	done    chan error
}

// Open opens the spool in cfg.Dir, creating the directory if needed, and
// recovers it: see the package documentation. Damage never stops it; it
// fails on an invalid Config, an I/O error, a directory locked by another
// process, or segments written by a newer format version.
func Open(cfg Config, opts ...Option) (*Spool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{logger: slog.Default(), clock: time.Now}
	for _, opt := range opts {
		opt.apply(&o)
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("buffer: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cfg.Dir, lockName), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("buffer: %w", err)
	}
	if err := lockFile(lock); err != nil {
		_ = lock.Close()
		return nil, err
	}
	s := &Spool{
		cfg:        cfg,
		log:        o.logger,
		clock:      o.clock,
		lock:       lock,
		before:     o.beforeSync,
		steps:      o.durable,
		queue:      make(chan *appendReq, queueLen),
		writerDone: make(chan struct{}),
		done:       make(chan struct{}),
		notify:     make(chan struct{}),
	}
	s.metrics = newMetrics(s)
	if err := s.recover(); err != nil {
		_ = lock.Close()
		return nil, err
	}
	if o.registerer != nil {
		if err := s.metrics.register(o.registerer); err != nil {
			_ = lock.Close()
			return nil, fmt.Errorf("buffer: registering metrics: %w", err)
		}
		s.reg = o.registerer
	}
	go s.runWriter()
	return s, nil
}

// Append writes records as one unit and returns once they are durable per
// Config.Fsync: with FsyncBatch, fdatasync'd. It blocks while the writer's
// queue is full, until ctx ends. Appends that wait together are written
// together and synced once.
//
// It returns the position of the first record (the zero Position for no
// records). The others follow it in the same segment, in order, each
// FrameBytes of the one before it further on. A record keeps its position
// until it is acknowledged: Next returns it at the same Pos.
//
// It fails with ErrTooLarge, a *FullError (nothing of the records is then
// on disk), ErrClosed, ctx's error, or an I/O error. When ctx ends after the
// records were queued, Append returns ctx's error and the records may still
// be written: like any unanswered append, they may be replayed.
func (s *Spool) Append(ctx context.Context, records ...[]byte) (pos Position, err error) {
	defer func() { s.countAppend(err) }()
	if len(records) == 0 {
		return Position{}, nil
	}
	size := int64(0)
	for _, r := range records {
		if len(r) > s.cfg.MaxRecordBytes {
			return Position{}, fmt.Errorf("%w: record of %d bytes, MaxRecordBytes is %d", ErrTooLarge, len(r), s.cfg.MaxRecordBytes)
		}
		size += frameSize(len(r))
	}
	if size > s.cfg.MaxAppendBytes() {
		return Position{}, fmt.Errorf("%w: append of %d bytes framed, at most %d fit one append (MaxBatchBytes %d, MaxBytes %d)",
			ErrTooLarge, size, s.cfg.MaxAppendBytes(), s.cfg.MaxBatchBytes, s.cfg.MaxBytes)
	}
	if err := ctx.Err(); err != nil {
		return Position{}, err
	}
	req := s.newAppendReq(ctx, size, len(records))
	for _, r := range records {
		req.lastOff = int64(len(req.buf))
		req.buf = appendFrame(req.buf, r, req.ts)
	}

	s.sendMu.RLock()
	if s.sendClosed {
		s.sendMu.RUnlock()
		return Position{}, ErrClosed
	}
	select {
	case s.queue <- req:
		s.sendMu.RUnlock()
	case <-ctx.Done():
		s.sendMu.RUnlock()
		return Position{}, ctx.Err()
	}
	select {
	case err := <-req.done:
		if err == nil {
			pos = req.pos
		}
		s.recycle(req)
		return pos, err
	case <-ctx.Done():
		return Position{}, ctx.Err()
	}
}

// maxRecycledBuf is the largest frame buffer kept for reuse; larger appends
// allocate their own.
const maxRecycledBuf = 1 << 20

// newAppendReq returns a request with room for size bytes of frames,
// reusing a recycled one when it is big enough.
func (s *Spool) newAppendReq(ctx context.Context, size int64, records int) *appendReq {
	req, _ := s.reqs.Get().(*appendReq)
	if req == nil {
		req = &appendReq{done: make(chan error, 1)}
	}
	if int64(cap(req.buf)) < size {
		req.buf = make([]byte, 0, size)
	}
	req.ctx, req.buf, req.records, req.lastOff = ctx, req.buf[:0], records, 0
	req.ts = s.clock().UnixNano()
	return req
}

// recycle keeps req for a later Append. Only a request whose answer was
// received may be recycled: the writer no longer touches it and its done
// channel is empty.
func (s *Spool) recycle(req *appendReq) {
	if cap(req.buf) > maxRecycledBuf {
		return
	}
	req.ctx = nil
	s.reqs.Put(req)
}

func (s *Spool) countAppend(err error) {
	result := resultOK
	switch {
	case err == nil:
	case errors.Is(err, ErrFull):
		result = resultFull
	case errors.Is(err, ErrTooLarge):
		result = resultTooLarge
	case errors.Is(err, ErrClosed):
		result = resultClosed
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		result = resultCanceled
	default:
		result = resultError
	}
	s.metrics.appends.WithLabelValues(result).Inc()
}

// Next returns up to max records in append order, starting at the read
// position, and moves the read position past them. It blocks until there is
// at least one record to return, ctx ends, or the spool is closed. Next,
// Ack and Rewind are for one drainer.
//
// Records are read back from disk and verified; a record that no longer
// verifies fails Next with a *CorruptionError (Open repairs it).
func (s *Spool) Next(ctx context.Context, max int) ([]Entry, error) {
	if max <= 0 {
		return nil, errBadMax
	}
	s.readMu.Lock()
	defer s.readMu.Unlock()
	var out []Entry
	budget := readBudget
	for len(out) < max && budget > 0 {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		if s.readPos.Compare(s.ackNext) < 0 {
			s.readPos = s.ackNext
		}
		seg, pos, ok := s.locate(s.readPos)
		s.readPos = pos
		if !ok {
			ch := s.notify
			s.mu.Unlock()
			if len(out) > 0 {
				break
			}
			// Nothing is held open while nothing is read.
			s.closeReader()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-s.done:
				return nil, ErrClosed
			}
		}
		gen, limit := s.readGen, seg.size
		s.mu.Unlock()

		entries, end, err := s.read(pos, limit, max-len(out), budget)
		if err != nil {
			s.closeReader()
			if len(out) > 0 {
				break
			}
			return nil, err
		}
		s.mu.Lock()
		if s.readGen == gen {
			s.readPos = Position{pos.Segment, end}
		}
		for _, e := range entries {
			if e.Pos.Compare(s.maxDeliv) > 0 {
				s.delivered = append(s.delivered, delivered{
					pos: e.Pos,
					end: e.Pos.Offset + frameSize(len(e.Data)),
					ts:  e.AppendedAt.UnixNano(),
				})
				s.maxDeliv = e.Pos
			}
			budget -= len(e.Data)
		}
		s.mu.Unlock()
		out = append(out, entries...)
	}
	return out, nil
}

// locate finds where the record at or after p is: its segment and its
// position, and whether it is committed. Past the end of the last segment it
// returns the position where the next record will be. Called with s.mu held.
func (s *Spool) locate(p Position) (*segment, Position, bool) {
	for _, seg := range s.segs {
		if seg.index < p.Segment {
			continue
		}
		if seg.index > p.Segment {
			p = Position{seg.index, segmentHeaderSize}
		}
		p.Offset = max(p.Offset, segmentHeaderSize)
		if p.Offset < seg.size {
			return seg, p, true
		}
		if !seg.sealed {
			return seg, p, false
		}
		p = Position{seg.index + 1, segmentHeaderSize}
	}
	return nil, p, false
}

// read reads up to want records from segment pos.Segment, starting at
// pos.Offset and ending at limit, in about budget bytes (at least one
// record). It returns them and the offset after the last one.
func (s *Spool) read(pos Position, limit int64, want, budget int) ([]Entry, int64, error) {
	s.rfMu.Lock()
	defer s.rfMu.Unlock()
	if s.rf == nil || s.rfIdx != pos.Segment {
		s.closeReaderLocked()
		f, err := os.Open(filepath.Join(s.cfg.Dir, segmentName(pos.Segment)))
		if err != nil {
			return nil, pos.Offset, fmt.Errorf("buffer: %w", err)
		}
		s.rf, s.rfIdx = f, pos.Segment
	}
	corrupt := func(off int64, err error) error {
		return &CorruptionError{Segment: segmentName(pos.Segment), Offset: off, Err: err}
	}
	n := min(limit-pos.Offset, int64(max(budget, frameHeaderSize)))
	buf := make([]byte, n)
	if _, err := s.rf.ReadAt(buf, pos.Offset); err != nil {
		return nil, pos.Offset, fmt.Errorf("buffer: reading %s: %w", segmentName(pos.Segment), err)
	}
	var out []Entry
	off, p := pos.Offset, 0
	for len(out) < want && p < len(buf) {
		if len(buf)-p < frameHeaderSize {
			if len(out) > 0 {
				break
			}
			return nil, pos.Offset, corrupt(off, errShortFrame)
		}
		ln, ok := frameLength(buf[p:])
		if !ok {
			if len(out) > 0 {
				break
			}
			return nil, pos.Offset, corrupt(off, errBadLength)
		}
		fs := frameSize(ln)
		if off+fs > limit {
			if len(out) > 0 {
				break
			}
			return nil, pos.Offset, corrupt(off, errShortFrame)
		}
		if int64(p)+fs > int64(len(buf)) {
			if len(out) > 0 {
				break
			}
			// The first record alone is over the budget: read all of it.
			buf = make([]byte, fs)
			if _, err := s.rf.ReadAt(buf, off); err != nil {
				return nil, pos.Offset, fmt.Errorf("buffer: reading %s: %w", segmentName(pos.Segment), err)
			}
			p = 0
		}
		hdr := buf[p : p+frameHeaderSize]
		end := p + frameHeaderSize + ln
		payload := buf[p+frameHeaderSize : end : end]
		if !frameValid(hdr, payload) {
			if len(out) > 0 {
				break
			}
			return nil, pos.Offset, corrupt(off, errChecksum)
		}
		out = append(out, Entry{
			Pos:        Position{pos.Segment, off},
			Data:       payload,
			AppendedAt: time.Unix(0, frameTime(hdr)),
		})
		p += int(fs)
		off += fs
	}
	return out, off, nil
}

// closeReader closes the segment file Next reads.
func (s *Spool) closeReader() {
	s.rfMu.Lock()
	defer s.rfMu.Unlock()
	s.closeReaderLocked()
}

// closeReaderLocked is closeReader with s.rfMu held.
func (s *Spool) closeReaderLocked() {
	if s.rf != nil {
		_ = s.rf.Close()
		s.rf = nil
	}
}

// Ack acknowledges every record up to and including pos, which must not be
// past the last record Next returned. It returns once a cursor covering pos
// is durable (written to a temp file, synced, renamed over the cursor file,
// and the directory synced). Segments whose records are all acknowledged
// are deleted first, so that an Ack can free space on a full disk; a crash
// in between leaves an older cursor, which replays records (duplicates,
// never losses). Acknowledging a position already covered does nothing.
func (s *Spool) Ack(pos Position) error {
	s.ackMu.Lock()
	defer s.ackMu.Unlock()

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.hasAcked && pos.Compare(s.acked) <= 0 {
		s.mu.Unlock()
		return nil
	}
	if pos.Compare(s.maxDeliv) > 0 {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", errAckAhead, pos)
	}
	n := 0
	for n < len(s.delivered) && s.delivered[n].pos.Compare(pos) <= 0 {
		n++
	}
	if n == 0 {
		s.mu.Unlock()
		return nil
	}
	last := s.delivered[n-1]
	victims := s.takeAckedLocked(last.pos)
	s.mu.Unlock()

	removeErr := s.removeSegments(victims)
	if err := writeFileAtomic(filepath.Join(s.cfg.Dir, cursorName), encodeCursor(last.pos)); err != nil {
		return fmt.Errorf("buffer: writing cursor: %w", err)
	}
	if removeErr != nil {
		s.log.Warn("buffer: removing acknowledged segments", "error", removeErr)
	}

	s.mu.Lock()
	s.delivered = s.delivered[n:]
	if len(s.delivered) == 0 {
		s.delivered = nil
	}
	s.unacked -= int64(n)
	s.acked, s.hasAcked = last.pos, true
	s.ackNext = Position{last.pos.Segment, last.end}
	var readAt *Position
	switch {
	case s.unacked == 0:
		s.oldest = time.Time{}
	case len(s.delivered) > 0:
		s.oldest = time.Unix(0, s.delivered[0].ts)
	default:
		if seg, p, ok := s.locate(s.ackNext); ok {
			if p.Offset == segmentHeaderSize {
				s.oldest = time.Unix(0, seg.firstTS)
			} else {
				readAt = &p
			}
		}
	}
	s.mu.Unlock()

	if readAt != nil {
		ts, err := s.readTime(*readAt)
		if err != nil {
			s.log.Warn("buffer: reading the oldest record's time", "error", err)
			return nil
		}
		s.mu.Lock()
		if len(s.delivered) == 0 && s.unacked > 0 && s.ackNext.Compare(*readAt) <= 0 {
			s.oldest = time.Unix(0, ts)
		}
		s.mu.Unlock()
	}
	return nil
}

// takeAckedLocked removes from s.segs the sealed segments whose records are
// all at or before pos and returns them. Called with s.mu held.
func (s *Spool) takeAckedLocked(pos Position) []*segment {
	var victims []*segment
	keep := s.segs[:0]
	for _, seg := range s.segs {
		if seg.sealed && (seg.index < pos.Segment ||
			seg.index == pos.Segment && (seg.records == 0 || seg.lastRecord <= pos.Offset)) {
			victims = append(victims, seg)
			s.bytes -= seg.size
			continue
		}
		keep = append(keep, seg)
	}
	clear(s.segs[len(keep):])
	s.segs = keep
	return victims
}

// removeSegments deletes the files of segments taken out of s.segs.
func (s *Spool) removeSegments(victims []*segment) error {
	if len(victims) == 0 {
		return nil
	}
	var errs []error
	s.rfMu.Lock()
	for _, seg := range victims {
		if s.rf != nil && s.rfIdx == seg.index {
			s.closeReaderLocked()
		}
	}
	s.rfMu.Unlock()
	for _, seg := range victims {
		if err := os.Remove(filepath.Join(s.cfg.Dir, segmentName(seg.index))); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, syncDir(s.cfg.Dir))
	return errors.Join(errs...)
}

// readTime reads the append time of the record at p.
func (s *Spool) readTime(p Position) (int64, error) {
	f, err := os.Open(filepath.Join(s.cfg.Dir, segmentName(p.Segment)))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var hdr [frameHeaderSize]byte
	if _, err := f.ReadAt(hdr[:], p.Offset); err != nil {
		return 0, err
	}
	return frameTime(hdr[:]), nil
}

// Rewind makes the next Next start again from the first record not yet
// acknowledged. The drainer calls it after a failed publish.
func (s *Spool) Rewind() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readGen++
	if len(s.delivered) > 0 {
		s.readPos = s.delivered[0].pos
	} else {
		s.readPos = s.ackNext
	}
	s.wakeLocked()
}

// wakeLocked wakes every Next waiting for records. Called with s.mu held.
func (s *Spool) wakeLocked() {
	close(s.notify)
	s.notify = make(chan struct{})
}

// Config returns the configuration the spool was opened with.
func (s *Spool) Config() Config { return s.cfg }

// Stats returns a snapshot of the spool.
func (s *Spool) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{
		Bytes:              s.bytes,
		Segments:           len(s.segs),
		Records:            s.unacked,
		OldestAppendedAt:   s.oldest,
		QuarantinedRecords: s.quarRecs,
		QuarantinedBytes:   s.quarBytes,
	}
}

// Empty reports whether every record appended has been acknowledged.
func (s *Spool) Empty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unacked == 0
}

// Close stops accepting appends (they fail with ErrClosed), lets the writer
// finish the appends already queued (they are written and synced and their
// callers answered as usual), syncs and closes the segment files, wakes a
// waiting Next with ErrClosed, waits for an Ack in progress, unregisters the
// metrics and releases the directory. Calling it again does nothing.
func (s *Spool) Close() error {
	s.sendMu.Lock()
	if s.sendClosed {
		s.sendMu.Unlock()
		return nil
	}
	s.sendClosed = true
	close(s.queue)
	s.sendMu.Unlock()
	<-s.writerDone

	s.mu.Lock()
	s.closed = true
	err := s.w.closeErr
	s.mu.Unlock()
	close(s.done)

	s.ackMu.Lock() // an Ack in progress has finished; later ones see closed
	s.ackMu.Unlock()
	s.readMu.Lock() // a Next in progress has finished; later ones see closed
	s.closeReader()
	s.readMu.Unlock()

	if s.reg != nil {
		s.metrics.unregister(s.reg)
	}
	if cerr := s.lock.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("buffer: %w", cerr)
	}
	return err
}

// Health reports whether an append of a small record could succeed now:
// nil, ErrClosed, the error that broke the spool after a failed fdatasync
// (it lasts until the spool is reopened), or a *FullError when the spool
// is at Config.MaxBytes or its filesystem at Config.MinFreeBytes. It is
// meant for readiness checks; it reads the filesystem's free space.
func (s *Spool) Health() error {
	s.sendMu.RLock()
	closed := s.sendClosed
	s.sendMu.RUnlock()
	if closed {
		return ErrClosed
	}
	s.mu.Lock()
	broken, used := s.broken, s.bytes
	s.mu.Unlock()
	if broken != nil {
		return broken
	}
	// A record of one byte that starts a segment.
	const need = segmentHeaderSize + frameHeaderSize + 1
	if used+need > s.cfg.MaxBytes {
		return &FullError{Reason: ReasonCap, Need: need, Free: max(0, s.cfg.MaxBytes-used)}
	}
	if free, err := diskFree(s.cfg.Dir); err == nil && free-need < s.cfg.MinFreeBytes {
		return &FullError{Reason: ReasonDiskFloor, Need: need, Free: max(0, free-s.cfg.MinFreeBytes)}
	}
	return nil
}
