package client

import (
	"container/heap"
	"time"
)

// returned is what a sender gives back to the batcher: events to send
// again at due, through the batch being filled, or a too-large request's
// halves, each sent as a request of its own.
type returned struct {
	due    time.Time
	events []*pending
	halves [][]*pending
}

// delayed holds events waiting to be retried, the earliest due first.
type delayed []returned

func (d delayed) Len() int           { return len(d) }
func (d delayed) Less(i, j int) bool { return d[i].due.Before(d[j].due) }
func (d delayed) Swap(i, j int)      { d[i], d[j] = d[j], d[i] }
func (d *delayed) Push(x any)        { *d = append(*d, x.(returned)) }
func (d *delayed) Pop() any {
	old := *d
	x := old[len(old)-1]
	*d = old[:len(old)-1]
	return x
}

// batch is the batcher goroutine. It owns the events between Send and a
// sender: the batch being filled, the full batches waiting for a sender,
// and the events waiting for a retry. A batch is full at MaxBatchEvents
// or when the next event would pass MaxBatchBytes; it is shipped full, at
// Linger after its first event, on Flush, and at once while closing. At
// quit it ends every event it holds as undelivered.
func (c *Client) batch() {
	defer c.wg.Done()
	var (
		cur      []*pending
		curBytes int
		ready    [][]*pending
		waiting  delayed
		closing  = c.closing
		draining bool
	)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	var lingerC <-chan time.Time
	retryT := time.NewTimer(time.Hour)
	retryT.Stop()
	var retryC <-chan time.Time
	var retryAt time.Time

	ship := func() {
		if len(cur) == 0 {
			return
		}
		ready = append(ready, cur)
		cur, curBytes = nil, 0
		linger.Stop()
		lingerC = nil
	}
	add := func(p *pending) {
		if len(cur) > 0 && curBytes+p.size > c.cfg.batchBytes {
			ship()
		}
		cur = append(cur, p)
		curBytes += p.size
		if len(cur) >= c.cfg.batchEvents {
			ship()
		} else if lingerC == nil {
			linger.Reset(c.cfg.linger)
			lingerC = linger.C
		}
	}
	takeIn := func() {
		c.inMu.Lock()
		q := c.inQ
		c.inQ = nil
		c.inMu.Unlock()
		for _, p := range q {
			add(p)
		}
	}

	for {
		if draining || c.cfg.linger == 0 {
			ship()
		}
		var out chan []*pending
		var head []*pending
		if len(ready) > 0 {
			out, head = c.out, ready[0]
		}
		switch {
		case len(waiting) == 0:
			retryC = nil
		case retryC == nil || !waiting[0].due.Equal(retryAt):
			retryAt = waiting[0].due
			retryT.Reset(time.Until(retryAt))
			retryC = retryT.C
		}
		select {
		case <-c.inSignal:
			takeIn()
		case r := <-c.back:
			if r.halves != nil {
				ready = append(ready, r.halves...)
			} else {
				heap.Push(&waiting, r)
			}
		case out <- head:
			ready[0] = nil
			ready = ready[1:]
		case <-lingerC:
			lingerC = nil
			ship()
		case <-retryC:
			retryC = nil
			now := time.Now()
			for len(waiting) > 0 && !waiting[0].due.After(now) {
				for _, p := range heap.Pop(&waiting).(returned).events {
					add(p)
				}
			}
		case <-c.flushReq:
			takeIn()
			ship()
		case <-closing:
			closing, draining = nil, true
			takeIn()
		case <-c.quit:
			linger.Stop()
			retryT.Stop()
			c.inMu.Lock()
			q := c.inQ
			c.inQ, c.inShut = nil, true
			c.inMu.Unlock()
			held := append(q, cur...)
			for _, b := range ready {
				held = append(held, b...)
			}
			for _, r := range waiting {
				held = append(held, r.events...)
			}
			for _, p := range held {
				c.undeliver(p, errAbandoned)
			}
			return
		}
	}
}
