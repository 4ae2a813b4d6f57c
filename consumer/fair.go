package consumer

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/time/rate"

	"github.com/sluicehq/sluice/record"
)

// fairPacer hands out the drain rate's admissions round-robin between
// the sources (record.HeaderSource) of the drained records waiting for
// one: while two sources wait, neither gets a second admission before
// the other gets one, whatever their order in the DLQ. The rate is the
// limiter's: one admission per token, so the total stays within
// DLQ.DrainRate. A waiter whose context ends leaves its queue; the token
// it was waiting for, if already taken, is lost, which only slows the
// drain.
//
// There is no goroutine of its own: the waiter that holds turn waits for
// the next token and gives it to the next source in turn, then passes
// turn on.
type fairPacer struct {
	limiter *rate.Limiter
	// turn holds the right to wait on the limiter: one waiter at a time.
	turn chan struct{}

	mu sync.Mutex
	// queues are the waiters by source, in arrival order.
	queues map[string][]*paceWaiter
	// ring lists the sources with waiters; next is the index of the
	// source whose turn comes next.
	ring []string
	next int
}

type paceWaiter struct {
	source  string
	granted chan struct{}
}

func newFairPacer(limiter *rate.Limiter) *fairPacer {
	p := &fairPacer{limiter: limiter, turn: make(chan struct{}, 1), queues: make(map[string][]*paceWaiter)}
	p.turn <- struct{}{}
	return p
}

// wait returns once the drain rate admits a record of source, in its
// source's turn, or ctx's error.
func (p *fairPacer) wait(ctx context.Context, source string) error {
	w := &paceWaiter{source: source, granted: make(chan struct{})}
	p.mu.Lock()
	if len(p.queues[source]) == 0 {
		p.ring = append(p.ring, source)
	}
	p.queues[source] = append(p.queues[source], w)
	p.mu.Unlock()
	for {
		select {
		case <-w.granted:
			return nil
		case <-p.turn:
			// Only the holder of turn admits: once it holds turn, w
			// was admitted or is still queued, and the token goes to a
			// waiter.
			select {
			case <-w.granted:
				p.turn <- struct{}{}
				return nil
			default:
			}
			err := p.limiter.Wait(ctx)
			if err == nil {
				p.grantNext()
			}
			p.turn <- struct{}{}
			if err != nil {
				return p.leave(w, err)
			}
		case <-ctx.Done():
			return p.leave(w, ctx.Err())
		}
	}
}

// grantNext admits the first waiter of the source whose turn it is.
func (p *fairPacer) grantNext() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ring) == 0 {
		return
	}
	i := p.next % len(p.ring)
	src := p.ring[i]
	q := p.queues[src]
	w := q[0]
	q[0] = nil
	if q = q[1:]; len(q) == 0 {
		delete(p.queues, src)
		p.ring = append(p.ring[:i], p.ring[i+1:]...)
		// next now names the source after src.
		p.next = i
	} else {
		p.queues[src] = q
		p.next = i + 1
	}
	close(w.granted)
}

// leave takes w out of its queue and returns err, or nil when w was
// admitted meanwhile.
func (p *fairPacer) leave(w *paceWaiter, err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-w.granted:
		return nil
	default:
	}
	q := p.queues[w.source]
	for i, x := range q {
		if x != w {
			continue
		}
		q = append(q[:i], q[i+1:]...)
		break
	}
	if len(q) > 0 {
		p.queues[w.source] = q
		return err
	}
	delete(p.queues, w.source)
	for i, s := range p.ring {
		if s == w.source {
			p.ring = append(p.ring[:i], p.ring[i+1:]...)
			if p.next > i {
				p.next--
			}
			break
		}
	}
	return err
}

// waiting returns how many waiters source has.
func (p *fairPacer) waiting(source string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queues[source])
}

// sourceOf returns the source of a record: its record.HeaderSource, ""
// without one.
func sourceOf(r *kgo.Record) string {
	for _, h := range r.Headers {
		if h.Key == record.HeaderSource {
			return string(h.Value)
		}
	}
	return ""
}
