package consumer

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/record"
)

type topicPartition struct {
	topic     string
	partition int32
}

// partState is one assigned partition.
type partState struct {
	tp  topicPartition
	dlq bool
	wm  *Watermark
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

	mu        sync.Mutex
	count     int
	idle      chan struct{} // closed while count is 0
	committed int64         // last committed offset, -1 before any
}

func newPartState(parent context.Context, tp topicPartition, dlq bool) *partState {
	ctx, cancel := context.WithCancel(parent)
	p := &partState{tp: tp, dlq: dlq, wm: NewWatermark(), ctx: ctx, abandon: cancel, idle: make(chan struct{}), committed: -1}
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

func (c *Consumer) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, ps := range assigned {
		for _, p := range ps {
			tp := topicPartition{t, p}
			c.parts[tp] = newPartState(c.workCtx, tp, record.IsDerived(t))
		}
	}
	c.log.Info("partitions assigned", "partitions", assigned)
}

// detach removes the partitions from the assignment and returns their
// states.
func (c *Consumer) detach(m map[string][]int32) []*partState {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*partState
	for t, ps := range m {
		for _, p := range ps {
			tp := topicPartition{t, p}
			if st := c.parts[tp]; st != nil {
				out = append(out, st)
				delete(c.parts, tp)
				c.m.lag.DeleteLabelValues(t, strconv.Itoa(int(p)))
			}
		}
	}
	return out
}

// onRevoked lets in-flight work of the revoked partitions finish, up to
// RevokeTimeout, abandons the rest and commits what finished, before the
// partitions move to another member.
func (c *Consumer) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	parts := c.detach(revoked)
	deadline := time.NewTimer(c.cfg.RevokeTimeout)
	defer deadline.Stop()
wait:
	for _, p := range parts {
		select {
		case <-p.idleChan():
		case <-deadline.C:
			break wait
		case <-c.workCtx.Done():
			// Run is stopping and has already waited for the work.
			break wait
		}
	}
	c.commitMu.Lock()
	for _, p := range parts {
		p.gone.Store(true)
		p.abandon()
	}
	c.commitMu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, c.cfg.RevokeTimeout)
	c.commitPartsAlways(cctx, parts)
	cancel()
	c.log.Info("partitions revoked", "partitions", revoked)
}

// onLost abandons the partitions' work at once: the group has moved on
// and a commit would be refused.
func (c *Consumer) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	for _, p := range c.detach(lost) {
		p.gone.Store(true)
		p.abandon()
	}
	c.log.Warn("partitions lost", "partitions", lost)
}

func (c *Consumer) assigned() []*partState {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*partState, 0, len(c.parts))
	for _, p := range c.parts {
		out = append(out, p)
	}
	return out
}
