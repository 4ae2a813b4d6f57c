package client

import (
	"context"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// sendLoop is one of MaxInFlight sender goroutines: each takes a batch
// from the batcher, sends it as one request and acts on the answer.
func (c *Client) sendLoop() {
	defer c.wg.Done()
	for {
		probe, ok := c.pace.wait(c.quit)
		if !ok {
			return
		}
		select {
		case b := <-c.out:
			c.pace.done(probe, c.send(b))
		case <-c.quit:
			return
		}
	}
}

// send sends one batch on the next connection, under RequestTimeout cut
// short to the latest EventTimeout among its events. Events whose
// EventTimeout passed while they waited are not sent. It returns how long
// the answer told the whole client to wait (pacer), or 0.
func (c *Client) send(batch []*pending) time.Duration {
	now := c.cfg.clock()
	live := batch[:0]
	latest := time.Time{}
	for _, p := range batch {
		if !now.Before(p.deadline) {
			c.undeliver(p, errEventTimeout)
			continue
		}
		live = append(live, p)
		if p.deadline.After(latest) {
			latest = p.deadline
		}
	}
	if len(live) == 0 {
		return 0
	}
	select {
	case <-c.quit:
		for _, p := range live {
			c.undeliver(p, errAbandoned)
		}
		return 0
	default:
	}
	events := make([]*ingestv1.Event, len(live))
	for i, p := range live {
		p.attempts++
		events[i] = p.ev
	}
	deadline := now.Add(c.cfg.reqTimeout)
	if latest.Before(deadline) {
		deadline = latest
	}
	ctx, cancel := context.WithTimeout(c.ctx, deadline.Sub(now))
	cn := c.conns[c.next.Add(1)%uint64(len(c.conns))]
	start := time.Now()
	var results []*ingestv1.EventResult
	var err error
	if cn.streams != nil {
		results, err = cn.streams.roundTrip(ctx, events)
	} else {
		var resp *ingestv1.PublishResponse
		resp, err = cn.api.Publish(ctx, &ingestv1.PublishRequest{Events: events})
		results = resp.GetResults()
	}
	cancel()
	c.cfg.metrics.Request(len(live), time.Since(start), err)
	return c.answer(live, results, err)
}

// answer acts on a request's answer: each event is judged, then finished,
// retried or split. It returns the longest retry_after of a refusal that
// holds the whole client (pacer.holds), or 0.
func (c *Client) answer(live []*pending, results []*ingestv1.EventResult, err error) (hold time.Duration) {
	if err != nil && c.ctx.Err() != nil {
		// Close's ctx ended and cancelled the request.
		for _, p := range live {
			c.undeliver(p, errAbandoned)
		}
		return 0
	}
	n := len(live)
	var byIndex []*ingestv1.EventResult
	if err == nil {
		byIndex = make([]*ingestv1.EventResult, n)
		for _, r := range results {
			if i := int(r.GetIndex()); i < n && byIndex[i] == nil {
				byIndex[i] = r
			}
		}
	}
	var toSplit []*pending
	retries := map[retryKey][]*pending{}
	for i, p := range live {
		var v verdict
		switch {
		case err != nil:
			v = judge(nil, err, n)
		case byIndex[i] == nil:
			v = judge(nil, status.Errorf(codes.Internal, "client: the answer has no result for index %d", i), n)
		default:
			v = judge(byIndex[i], nil, n)
		}
		switch v.action {
		case succeed:
			r := byIndex[i]
			c.finish(p, Result{Outcome: r.GetOutcome(), Durability: r.GetDurability(), Kafka: r.GetKafka(), Spool: r.GetSpool()})
		case reject:
			rej := *v.rejection
			rej.ID = p.ev.GetId()
			c.finish(p, Result{Err: &rej})
		case split:
			toSplit = append(toSplit, p)
		case retry:
			p.last, p.reason = v.err, v.reason
			if v.after > 0 {
				p.waits++
				if holds(v.reason) {
					hold = max(hold, v.after)
				}
			}
			k := retryKey{v.reason, v.after}
			retries[k] = append(retries[k], p)
		}
	}
	if len(toSplit) > 0 {
		for _, p := range toSplit {
			p.splits++
		}
		halves := [][]*pending{toSplit}
		if half := len(toSplit) / 2; half > 0 {
			halves = [][]*pending{toSplit[:half:half], toSplit[half:]}
		}
		c.giveBack(returned{halves: halves}, toSplit)
	}
	for k, ps := range retries {
		c.retry(k, ps)
	}
	return hold
}

// judged is the attempts MaxAttempts counts: the requests judged for the
// event whose answer did not say when to come back.
func (p *pending) judged() int { return p.attempts - p.splits - p.waits }

type retryKey struct {
	reason ingestv1.Reason
	after  time.Duration
}

// retry schedules events for another attempt after k.after, or the
// backoff when the answer gave no retry_after. An event out of attempts,
// or whose EventTimeout would pass first, ends undelivered instead.
func (c *Client) retry(k retryKey, ps []*pending) {
	wait := k.after
	if wait <= 0 {
		attempts := 0
		for _, p := range ps {
			attempts = max(attempts, p.judged())
		}
		wait = c.backoff(attempts)
	}
	now := c.cfg.clock()
	again := ps[:0]
	for _, p := range ps {
		if p.judged() >= c.cfg.maxAttempts || !now.Add(wait).Before(p.deadline) {
			c.undeliver(p, nil)
			continue
		}
		again = append(again, p)
	}
	if len(again) == 0 {
		return
	}
	c.cfg.metrics.Retry(k.reason, len(again))
	c.cfg.log.Debug("retrying", "events", len(again), "reason", k.reason.String(), "after", wait)
	c.giveBack(returned{due: time.Now().Add(wait), events: again}, again)
}

// giveBack hands events back to the batcher, or ends them when Close's
// end came first.
func (c *Client) giveBack(r returned, ps []*pending) {
	select {
	case c.back <- r:
	case <-c.quit:
		for _, p := range ps {
			c.undeliver(p, errAbandoned)
		}
	}
}

// backoff is full jitter: a wait drawn from [0, min(max, base·2^(attempts-1))).
func (c *Client) backoff(attempts int) time.Duration {
	ceil := c.cfg.backoffBase
	for i := 1; i < attempts && ceil < c.cfg.backoffMax; i++ {
		ceil *= 2
	}
	ceil = min(ceil, c.cfg.backoffMax)
	return rand.N(ceil) + 1
}
