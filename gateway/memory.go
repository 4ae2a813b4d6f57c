package gateway

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

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
// source's waiters are never ahead of it; its own waiters are woken
// together when room comes back, and the first to fit takes it.
type memoryBudget struct {
	pool *share.Pool
	// held is the sum of the holds, for sluice_request_memory_bytes.
	held atomic.Int64
}

func newMemoryBudget(capacity int64, reserved float64, weights map[string]float64) (*memoryBudget, error) {
	p, err := share.New(capacity, reserved, weights)
	if err != nil {
		return nil, err
	}
	return &memoryBudget{pool: p}, nil
}

// newSourceBudget is a budget of one source's own (a webhook's
// pre-authentication pool): not split, every byte shared.
func newSourceBudget(capacity int64) *memoryBudget {
	p, err := share.New(max(capacity, 0), 0, nil)
	if err != nil {
		panic(err) // share.New refuses only a negative capacity or a bad weight
	}
	return &memoryBudget{pool: p}
}

// take waits for n bytes of t's room until ctx ends.
func (m *memoryBudget) take(ctx context.Context, t *share.Tenant, n int64) (*memoryHold, error) {
	if err := t.Take(ctx, n); err != nil {
		return nil, err
	}
	m.held.Add(n)
	return &memoryHold{m: m, t: t, n: n}, nil
}

// tryTake takes n bytes of t's room if there is room now.
func (m *memoryBudget) tryTake(t *share.Tenant, n int64) (*memoryHold, bool) {
	if !t.TryTake(n) {
		return nil, false
	}
	m.held.Add(n)
	return &memoryHold{m: m, t: t, n: n}, true
}

// tenant is src's account, or, for a source without one, an account
// without a guarantee.
func (m *memoryBudget) tenant(src *source, pick func(*tenancy) *share.Tenant) *share.Tenant {
	if src == nil || src.tenancy == nil {
		return m.pool.Tenant("")
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
	t := s.memory.tenant(src, func(t *tenancy) *share.Tenant { return t.memory })
	// With room now, the charge is taken without the timer and context a
	// wait needs.
	if ctx.Err() == nil {
		if h, ok := s.memory.tryTake(t, n); ok {
			return h, nil
		}
	}
	wait := s.cfg.Limits.MaxQueueWait
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d)/2)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	h, err := s.memory.take(wctx, t, n)
	if err != nil {
		s.metrics.memoryRefusals.Inc()
		if src != nil {
			if f := s.overShare(src, s.memory.pool, n, "request memory"); f != nil {
				return nil, f
			}
		}
		return nil, &Failure{Reason: ingestv1.Reason_UNAVAILABLE, RetryAfter: s.cfg.UnavailableRetryAfter,
			Message: fmt.Sprintf("the gateway is at capacity: no room for a request of up to %d bytes within %v", n, wait.Round(time.Millisecond))}
	}
	return h, nil
}
