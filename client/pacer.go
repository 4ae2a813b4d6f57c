package client

import (
	"sync"
	"time"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// pacer holds every sender back while the gateway has told the client as a
// whole to wait: a RATE_LIMITED answer is about the source's bucket, which
// all of the client's requests draw on, and a BUFFER_FULL answer about the
// gateway's spool, which they all fill. Without it, each of MaxInFlight
// senders would wait out its own retry_after and be refused again by the
// bucket another had just emptied. After the wait requests go one at a
// time, each a probe, until releaseAfter in a row were not told to wait.
type pacer struct {
	mu sync.Mutex
	// held: told to wait since the last request answered without it.
	held bool
	// until: no request before it.
	until time.Time
	// probing: the probe is out; the other senders wait for its answer.
	probing bool
	// released counts the probes in a row not told to wait.
	released int
	// changed is closed, and replaced, whenever the state changes.
	changed chan struct{}
}

// releaseAfter is how many probes in a row must go unrefused before the
// senders go together again.
const releaseAfter = 2

func newPacer() *pacer { return &pacer{changed: make(chan struct{})} }

// holds reports whether an answer's reason tells the whole client to wait.
func holds(r ingestv1.Reason) bool {
	return r == ingestv1.Reason_RATE_LIMITED || r == ingestv1.Reason_BUFFER_FULL
}

// wait returns when a sender may send its next request: probe says it is
// the one request let out after a wait. ok is false when quit closed first.
func (p *pacer) wait(quit <-chan struct{}) (probe, ok bool) {
	for {
		p.mu.Lock()
		if !p.held {
			p.mu.Unlock()
			return false, true
		}
		changed := p.changed
		d := time.Until(p.until)
		if d <= 0 && !p.probing {
			p.probing = true
			p.mu.Unlock()
			return true, true
		}
		p.mu.Unlock()
		var timer *time.Timer
		var due <-chan time.Time
		if d > 0 {
			timer = time.NewTimer(d)
			due = timer.C
		}
		select {
		case <-due:
		case <-changed:
		case <-quit:
			return false, false
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// done records a request's end: wait > 0 when it was told to wait so long
// (holds), 0 when it was answered otherwise or not at all. Once held, the
// senders go together again only after releaseAfter probes in a row were
// not told to wait: a bucket that has just admitted one request is most
// likely empty, and a request sent beside the probe would be refused.
func (p *pacer) done(probe bool, wait time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	changed := probe
	switch {
	case wait > 0:
		p.held, p.released = true, 0
		if until := time.Now().Add(wait); until.After(p.until) {
			p.until = until
		}
		changed = true
	case probe && p.held:
		p.released++
		p.held = p.released < releaseAfter
	}
	if probe {
		p.probing = false
	}
	if changed {
		close(p.changed)
		p.changed = make(chan struct{})
	}
}
