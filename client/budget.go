package client

import (
	"context"
	"sync"
)

// budget bounds what the client holds: every event from Send until its
// final result, whether buffered, in flight or waiting to be retried. It
// also counts the events of each flush generation, so Flush can wait for
// the events enqueued before it.
type budget struct {
	maxEvents, maxBytes int
	failFull            bool
	metrics             Metrics

	mu     sync.Mutex
	events int
	bytes  int
	closed bool
	// changed is closed and replaced whenever an event leaves or the
	// budget closes: every waiter checks its condition again.
	changed chan struct{}
	gen     uint64
	byGen   map[uint64]int
}

func newBudget(c *cfg) *budget {
	return &budget{maxEvents: c.bufEvents, maxBytes: c.bufBytes, failFull: c.failFull, metrics: c.metrics,
		changed: make(chan struct{}), byGen: map[uint64]int{}}
}

// take makes room for one event of size bytes and returns its generation.
// An event larger than the whole byte bound is let in when the client
// holds nothing else, so it is never refused for good.
func (b *budget) take(ctx context.Context, size int) (uint64, error) {
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return 0, ErrClosed
		}
		if b.events < b.maxEvents && (b.bytes+size <= b.maxBytes || b.events == 0) {
			b.events++
			b.bytes += size
			gen := b.gen
			b.byGen[gen]++
			b.metrics.Buffered(b.events, b.bytes)
			b.mu.Unlock()
			return gen, nil
		}
		if b.failFull {
			b.mu.Unlock()
			return 0, ErrBufferFull
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// give hands back an event's room once it has its final result (or was
// never enqueued).
func (b *budget) give(gen uint64, size int) {
	b.mu.Lock()
	b.events--
	b.bytes -= size
	if b.byGen[gen]--; b.byGen[gen] == 0 {
		delete(b.byGen, gen)
	}
	b.metrics.Buffered(b.events, b.bytes)
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// close refuses every later take and wakes the waiting ones.
func (b *budget) close() {
	b.mu.Lock()
	b.closed = true
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// mark starts a new generation and returns the last one before it.
func (b *budget) mark() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gen++
	return b.gen - 1
}

// wait returns once done holds, or ctx ends.
func (b *budget) wait(ctx context.Context, done func() bool) error {
	for {
		b.mu.Lock()
		ok := done()
		changed := b.changed
		b.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// waitGen waits until no event of generation gen or before is held.
func (b *budget) waitGen(ctx context.Context, gen uint64) error {
	return b.wait(ctx, func() bool {
		for g := range b.byGen {
			if g <= gen {
				return false
			}
		}
		return true
	})
}

// waitEmpty waits until the client holds no event.
func (b *budget) waitEmpty(ctx context.Context) error {
	return b.wait(ctx, func() bool { return b.events == 0 })
}
