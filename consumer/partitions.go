package consumer

import (
	"context"
	"sync"
	"sync/atomic"
)

type topicPartition struct {
	topic     string
	partition int32
}

// partState is one assigned partition. The dispatcher creates it on
// assignment and owns its watermark; the committer owns committed; the
// drainer sets and ends its pass through beginPass and endPass.
type partState struct {
	tp  topicPartition
	dlq bool
	wm  *watermark
	ctx context.Context
	// abandon cancels the partition's work; its offsets are then never
	// committed by this member.
	abandon context.CancelFunc
	gone    atomic.Bool
	// next is one past the highest offset polled; -1 before any.
	next atomic.Int64
	// passEnd is, on a DLQ partition, the end offset of the drain pass:
	// records from it on are left for a later pass. 0 outside a pass.
	passEnd atomic.Int64
	// polledPass says every record of the pass has been polled.
	polledPass atomic.Bool

	// committed is the last committed offset, -1 before any; read and
	// written under committer.mu only.
	committed int64

	mu    sync.Mutex
	count int
	idle  chan struct{} // closed while count is 0
}

func newPartState(parent context.Context, tp topicPartition, dlq bool) *partState {
	ctx, cancel := context.WithCancel(parent)
	p := &partState{tp: tp, dlq: dlq, wm: newWatermark(), ctx: ctx, abandon: cancel, idle: make(chan struct{}), committed: -1}
	close(p.idle)
	p.next.Store(-1)
	return p
}

func (p *partState) add() {
	p.mu.Lock()
	if p.count == 0 {
		p.idle = make(chan struct{})
	}
	p.count++
	p.mu.Unlock()
}

func (p *partState) release() {
	p.mu.Lock()
	p.count--
	if p.count == 0 {
		close(p.idle)
	}
	p.mu.Unlock()
}

func (p *partState) idleChan() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idle
}

// retire marks the partition no longer ours and abandons its work: no
// offset of it is dispatched or committed by the periodic commit after.
func (p *partState) retire() {
	p.gone.Store(true)
	p.abandon()
}

// beginPass makes a drain pass of the partition cover the records below
// end.
func (p *partState) beginPass(end int64) {
	p.polledPass.Store(false)
	p.passEnd.Store(end)
}

// passPending reports whether records of the partition's pass are still
// to be polled or finished.
func (p *partState) passPending() bool {
	return !p.polledPass.Load() || p.wm.inFlight() > 0
}

// endPass ends the partition's pass: no polled record is held back.
func (p *partState) endPass() { p.passEnd.Store(0) }
