package buffer

import (
	"errors"
	"io"
)

// windowSize is how much of a segment a scan reads at a time.
const windowSize = 1 << 20

// window gives cheap random access to a segment file of known size through
// one buffer. The bytes it returns are valid until its next call.
type window struct {
	r    io.ReaderAt
	size int64
	buf  []byte
	off  int64 // file offset of buf[0]
}

// bytes returns the file's bytes [off, off+n). The caller has checked that
// they lie within the file's size.
func (w *window) bytes(off int64, n int) ([]byte, error) {
	if off >= w.off && off+int64(n) <= w.off+int64(len(w.buf)) {
		return w.buf[off-w.off:][:n], nil
	}
	m := int(min(int64(max(n, windowSize)), w.size-off))
	if cap(w.buf) < m {
		w.buf = make([]byte, m)
	}
	w.buf = w.buf[:m]
	got, err := w.r.ReadAt(w.buf, off)
	if got < m {
		w.buf = w.buf[:0]
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	w.off = off
	return w.buf[:n], nil
}

// frameCheck is what checkFrame found at an offset.
type frameCheck struct {
	n        int   // payload length, when lengthOK
	ts       int64 // append time, when err == nil
	lengthOK bool  // the length field matches its complement and its bound
	fits     bool  // the whole frame lies within the file
	err      error // nil when the frame verifies
}

// checkFrame verifies the frame at off. The length field is bounds-checked
// (its complement, maxFrameRecordBytes, the file size) before the payload
// is read.
func (w *window) checkFrame(off int64) (frameCheck, error) {
	if w.size-off < frameHeaderSize {
		return frameCheck{err: errShortFrame}, nil
	}
	b, err := w.bytes(off, frameHeaderSize)
	if err != nil {
		return frameCheck{}, err
	}
	var hdr [frameHeaderSize]byte
	copy(hdr[:], b)
	n, ok := frameLength(hdr[:])
	if !ok {
		return frameCheck{err: errBadLength}, nil
	}
	fc := frameCheck{n: n, lengthOK: true}
	if off+frameSize(n) > w.size {
		fc.err = errShortFrame
		return fc, nil
	}
	fc.fits = true
	payload, err := w.bytes(off+frameHeaderSize, n)
	if err != nil {
		return frameCheck{}, err
	}
	if !frameValid(hdr[:], payload) {
		fc.err = errChecksum
		return fc, nil
	}
	fc.ts = frameTime(hdr[:])
	return fc, nil
}

// segmentScan is what a scan found in one segment file.
type segmentScan struct {
	index uint64
	name  string
	size  int64

	// validEnd is where the valid prefix ends: the end of the last record
	// that verifies before any damage (segmentHeaderSize when none does),
	// or 0 when the header is damaged.
	validEnd   int64
	records    int   // records in the valid prefix
	lastRecord int64 // offset of the last of them
	firstTS    int64
	lastTS     int64

	// damage is nil when the whole file verifies.
	damage *CorruptionError
	// lostRecords counts what lies past the damage: each damaged region
	// counts as one record, each frame that verifies as one more.
	lostRecords int
	// validAfter reports whether any frame past the damage verifies: the
	// damage is then not a torn tail.
	validAfter bool

	// The valid prefix's records after the cursor.
	pendingRecords int
	pendingBytes   int64
	firstPending   int64 // offset of the first, when pendingRecords > 0
	firstPendingTS int64
}

// lostBytes is the bytes from the damage to the end of the file.
func (sc *segmentScan) lostBytes() int64 {
	if sc.damage == nil {
		return 0
	}
	return sc.size - sc.validEnd
}

// tornTail reports whether the damage is a torn tail: nothing that
// verifies follows it. Only the last segment can have one.
func (sc *segmentScan) tornTail() bool {
	return sc.damage != nil && sc.validEnd >= segmentHeaderSize && !sc.validAfter
}

// scanSegment reads a whole segment file, verifying every frame. It returns
// an error only for a read error or a segment header of another format
// version; damage is reported in the result. Records at or before cursor
// (when not nil) are acknowledged; the others are counted as pending.
func scanSegment(r io.ReaderAt, size int64, index uint64, cursor *Position) (segmentScan, error) {
	sc := segmentScan{index: index, name: segmentName(index), size: size}
	w := &window{r: r, size: size}

	damage := func(off int64, err error) {
		sc.validEnd = off
		sc.damage = &CorruptionError{Segment: sc.name, Offset: off, Err: err}
	}
	if size < segmentHeaderSize {
		damage(0, errShortHeader)
		return sc, nil
	}
	hdr, err := w.bytes(0, segmentHeaderSize)
	if err != nil {
		return sc, err
	}
	if err := checkSegmentHeader(hdr, index); err != nil {
		if errors.Is(err, errVersion) {
			return sc, &CorruptionError{Segment: sc.name, Err: err}
		}
		damage(0, err)
		sc.lostRecords, sc.validAfter, err = w.countFrom(segmentHeaderSize, false)
		return sc, err
	}

	off := int64(segmentHeaderSize)
	for off < size {
		fc, err := w.checkFrame(off)
		if err != nil {
			return sc, err
		}
		if fc.err != nil {
			damage(off, fc.err)
			sc.lostRecords, sc.validAfter, err = w.countFrom(off, false)
			return sc, err
		}
		fs := frameSize(fc.n)
		if sc.records == 0 {
			sc.firstTS = fc.ts
		}
		sc.records++
		sc.lastRecord, sc.lastTS = off, fc.ts
		if cursor == nil || index > cursor.Segment || (index == cursor.Segment && off > cursor.Offset) {
			if sc.pendingRecords == 0 {
				sc.firstPending, sc.firstPendingTS = off, fc.ts
			}
			sc.pendingRecords++
			sc.pendingBytes += fs
		}
		off += fs
	}
	sc.validEnd = off
	return sc, nil
}

// countFrom resynchronizes on the frames from off to the end of the file
// and counts the records there: every frame that verifies is one, and so is
// every damaged region (bytes where no frame verifies), since at least one
// record was there; how many is unknowable, so the count is a lower bound.
// A damaged frame whose length field is intact (and whose frame fits in the
// file) is one record, skipped whole; otherwise the scan moves on by the
// frame alignment. inRegion says whether off is already inside a counted
// region.
func (w *window) countFrom(off int64, inRegion bool) (records int, validAfter bool, err error) {
	for off < w.size {
		fc, err := w.checkFrame(off)
		if err != nil {
			return records, validAfter, err
		}
		switch {
		case fc.err == nil:
			records++
			validAfter = true
			inRegion = false
			off += frameSize(fc.n)
		case fc.lengthOK && fc.fits:
			// A record whose payload is damaged.
			records++
			inRegion = false
			off += frameSize(fc.n)
		default:
			if !inRegion {
				records++
				inRegion = true
			}
			off += frameAlign
		}
	}
	return records, validAfter, nil
}
