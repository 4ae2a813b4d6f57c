package consumer

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// watermark tracks the in-flight offsets of one partition and what may be
// committed: the offset after the highest finished offset below which
// every offset seen is finished. Offsets never seen (compacted away,
// transaction markers) are gaps it steps over. It is safe for concurrent
// use.
type watermark struct {
	mu sync.Mutex
	// pending holds the offsets seen and not yet passed by the commit
	// point, ascending; pending[head:] is live.
	pending []mark
	head    int
	// commit is the offset to commit next; -1 before any offset finished.
	commit int64
	// last is the highest offset seen; -1 before any.
	last int64
}

type mark struct {
	offset int64
	done   bool
	// deferred marks a DLQ record seen by a drain pass and left for a
	// later read of its partition (see dispatcher.dispatchDrained): not
	// in flight, not done.
	deferred bool
}

// errOffsetOrder is returned by add for an offset not above the last one
// added.
var errOffsetOrder = errors.New("consumer: offset not above the last one seen")

// newWatermark returns an empty watermark.
func newWatermark() *watermark { return &watermark{commit: -1, last: -1} }

// add records that offset is in flight. Offsets must be added in ascending
// order, as a partition delivers them.
func (w *watermark) add(offset int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if offset <= w.last {
		return fmt.Errorf("%w: %d after %d", errOffsetOrder, offset, w.last)
	}
	w.last = offset
	w.pending = append(w.pending, mark{offset: offset})
	return nil
}

// done records that offset's side effect finished. It reports false for
// an offset not in flight (never added, or already done).
func (w *watermark) done(offset int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	live := w.pending[w.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].offset >= offset })
	if i == len(live) || live[i].offset != offset || live[i].done {
		return false
	}
	live[i].done = true
	for w.head < len(w.pending) && w.pending[w.head].done {
		w.commit = w.pending[w.head].offset + 1
		w.head++
	}
	// Reclaim the passed prefix once it is the larger part, so that the
	// slice stays within twice the in-flight count.
	if w.head > 64 && w.head*2 >= len(w.pending) {
		n := copy(w.pending, w.pending[w.head:])
		w.pending = w.pending[:n]
		w.head = 0
	}
	return true
}

// committable returns the offset to commit: one past the highest offset
// below which everything seen is done. ok is false while nothing is done.
func (w *watermark) committable() (offset int64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.commit, w.commit >= 0
}

// inFlight returns how many offsets are added and not done.
func (w *watermark) inFlight() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, m := range w.pending[w.head:] {
		if !m.done {
			n++
		}
	}
	return n
}

// lastSeen returns the highest offset added; -1 before any.
func (w *watermark) lastSeen() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// live returns how many marks are held: the offsets from the commit
// point on, finished or not.
func (w *watermark) live() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending) - w.head
}

// deferLast marks the offset added last as deferred.
func (w *watermark) deferLast() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending[len(w.pending)-1].deferred = true
}

// deferred reports whether offset is a deferred mark.
func (w *watermark) deferred(offset int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	i, ok := w.find(offset)
	return ok && w.pending[i].deferred
}

// undefer clears the deferred mark of offset, which is in flight again.
// It reports false when offset is not deferred.
func (w *watermark) undefer(offset int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	i, ok := w.find(offset)
	if !ok || !w.pending[i].deferred {
		return false
	}
	w.pending[i].deferred = false
	return true
}

// firstDeferred returns the lowest deferred offset.
func (w *watermark) firstDeferred() (int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.pending[w.head:] {
		if m.deferred {
			return m.offset, true
		}
	}
	return 0, false
}

// find returns the index in pending of offset's live mark.
func (w *watermark) find(offset int64) (int, bool) {
	live := w.pending[w.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].offset >= offset })
	if i == len(live) || live[i].offset != offset {
		return 0, false
	}
	return w.head + i, true
}
