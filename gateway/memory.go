package gateway

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/share"
)

// requestOverhead is the fixed part of a request's charge: its events'
// structures beyond their bytes, its answer, and the transient memory of
// checking one payload at a time (contract.FullReportBytes bounds what a
// refusal's violations take).
const requestOverhead = 64 << 10

// requestCost is what a request of n bytes is charged while the gateway
// holds it: the bytes as received and the decoded copy of them (strings
// and payloads are copied out of the message, which is then freed; each
// JSON payload's binary form is no larger than its text, and a binary one
// is published as received), and requestOverhead. One moment is not
// covered: while a gRPC message is decoded, its HTTP/2 frames and their
// contiguous copy exist together with the events being built, up to three
// times n. The charge is not raised for it, since a decode that had to
// wait for room while holding its message would have many such decodes
// wait on each other; Config.Validate keeps RequestMemoryBytes within a
// third of MemoryLimit instead, so that moment stays within half of it.
func requestCost(n int) int64 { return 2*int64(n) + requestOverhead }

// memoryBudget is one half of Limits.RequestMemoryBytes: the bytes that
// requests held at once may be charged. It is split among the sources
// (share.Pool): a source waits for room on its own account, so another
// source's waiters are never ahead of it, and its own waiters are served
// in the order they came (account), so a large request is not starved by
// small ones.
type memoryBudget struct {
	pool *share.Pool
	// anon is the account of a request without a source: no guarantee.
	anon account
	// held is the sum of the holds, for sluice_request_memory_bytes.
	held atomic.Int64
}

// account is a source's place in a memoryBudget: its tenant, and its turn
// (a semaphore.Weighted of one, which serves its waiters in order): the
// one of the source's requests that waits for room on the pool holds it.
type account struct {
	t    *share.Tenant
	turn *semaphore.Weighted
}

func newAccount(t *share.Tenant) account { return account{t: t, turn: semaphore.NewWeighted(1)} }

func newMemoryBudget(capacity int64, reserved float64, weights map[string]float64) (*memoryBudget, error) {
	p, err := share.New(capacity, reserved, weights)
	if err != nil {
		return nil, err
	}
	return &memoryBudget{pool: p, anon: newAccount(p.Tenant(""))}, nil
}

// newSourceBudget is a budget of one source's own (a webhook's
// pre-authentication pool): not split, every byte shared.
func newSourceBudget(capacity int64) *memoryBudget {
	p, err := share.New(max(capacity, 0), 0, nil)
	if err != nil {
		panic(err) // share.New refuses only a negative capacity or a bad weight
	}
	return &memoryBudget{pool: p, anon: newAccount(p.Tenant(""))}
}

// take waits for its turn among a's waiters and then for n bytes of a's
// room, until ctx ends.
func (m *memoryBudget) take(ctx context.Context, a account, n int64) (*memoryHold, error) {
	if err := a.turn.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	defer a.turn.Release(1)
	if err := a.t.Take(ctx, n); err != nil {
		return nil, err
	}
	m.held.Add(n)
	return &memoryHold{m: m, t: a.t, n: n}, nil
}

// tryTake takes n bytes of a's room if there is room now and none of a's
// requests is waiting.
func (m *memoryBudget) tryTake(a account, n int64) (*memoryHold, bool) {
	if !a.turn.TryAcquire(1) {
		return nil, false
	}
	defer a.turn.Release(1)
	if !a.t.TryTake(n) {
		return nil, false
	}
	m.held.Add(n)
	return &memoryHold{m: m, t: a.t, n: n}, true
}

// takeNow takes n bytes of the budget's own room (anon's) if there is
// room now, whoever waits: for a budget that is never waited on (a
// webhook's pre-authentication pool).
func (m *memoryBudget) takeNow(n int64) (*memoryHold, bool) {
	if !m.anon.t.TryTake(n) {
		return nil, false
	}
	m.held.Add(n)
	return &memoryHold{m: m, t: m.anon.t, n: n}, true
}

// account is src's account, or anon for a source without one.
func (m *memoryBudget) account(src *source, pick func(*tenancy) account) account {
	if src == nil || src.tenancy == nil {
		return m.anon
	}
	return pick(src.tenancy)
}

func (m *memoryBudget) inUse() float64 { return float64(m.held.Load()) }

// memoryHold is one request's charge. It is owned by one goroutine at a
// time; release is idempotent.
type memoryHold struct {
	m *memoryBudget
	t *share.Tenant
	n int64
}

// shrink hands back what the hold has beyond n.
func (h *memoryHold) shrink(n int64) {
	if h == nil || n >= h.n {
		return
	}
	d := h.n - n
	h.n = n
	h.m.held.Add(-d)
	h.t.Give(d)
}

func (h *memoryHold) release() { h.shrink(0) }

// holdMemory charges n bytes of src's share of the budget, waiting for
// room at most Limits.MaxQueueWait and at most half of what ctx's deadline
// leaves (as waitTurn does). A request that does not get its charge is
// refused before it is read: RATE_LIMITED when the room left is other
// sources' guarantees, else UNAVAILABLE; both with Retry-After.
func (s *Service) holdMemory(ctx context.Context, src *source, n int64) (*memoryHold, *Failure) {
	a := s.memory.account(src, func(t *tenancy) account { return t.memory })
	// With room now and none of the source's requests waiting, the charge
	// is taken without the timer and context a wait needs.
	if ctx.Err() == nil {
		if h, ok := s.memory.tryTake(a, n); ok {
			return h, nil
		}
	}
	wait := s.cfg.Limits.MaxQueueWait
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d)/2)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	h, err := s.memory.take(wctx, a, n)
	if err != nil {
		s.metrics.memoryRefusals.Inc()
		if src != nil {
			if f := s.overShare(src, a.t, s.memory.pool, n, "request memory"); f != nil {
				return nil, f
			}
		}
		return nil, &Failure{Reason: ingestv1.Reason_UNAVAILABLE, RetryAfter: s.cfg.UnavailableRetryAfter,
			Message: fmt.Sprintf("the gateway is at capacity: no room for a request of up to %d bytes within %v", n, wait.Round(time.Millisecond))}
	}
	return h, nil
}
