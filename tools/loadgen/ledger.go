package loadgen

import (
	"bufio"
	"io"
	"sync"
)

// ledger appends the id of every acknowledged event (ACCEPTED or
// DUPLICATE), one per line. Lines are buffered and flushed when the buffer
// fills and when the run ends, interrupted or not; a process killed
// outright may leave its last line cut short, which a reader drops.
type ledger struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

func newLedger(w io.Writer) *ledger { return &ledger{w: bufio.NewWriterSize(w, 64<<10)} }

func (l *ledger) add(rs []EventResult) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range rs {
		if !r.Acknowledged() || l.err != nil {
			continue
		}
		if _, err := l.w.WriteString(r.ID); err != nil {
			l.err = err
			continue
		}
		if err := l.w.WriteByte('\n'); err != nil {
			l.err = err
		}
	}
}

func (l *ledger) flush() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	return l.w.Flush()
}
