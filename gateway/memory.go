package gateway

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
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

// memoryBudget is Limits.RequestMemoryBytes: the bytes that requests held
// at once may be charged, across every transport. Waiters are served in
// order (semaphore.Weighted), so a large request is not starved by small
// ones.
type memoryBudget struct {
	sem *semaphore.Weighted
	// held is the sum of the holds, for sluice_request_memory_bytes.
	held atomic.Int64
}

func newMemoryBudget(capacity int64) *memoryBudget {
	return &memoryBudget{sem: semaphore.NewWeighted(capacity)}
}

// take waits for n bytes of room until ctx ends.
func (m *memoryBudget) take(ctx context.Context, n int64) (*memoryHold, error) {
	if err := m.sem.Acquire(ctx, n); err != nil {
		return nil, err
	}
	m.held.Add(n)
	return &memoryHold{m: m, n: n}, nil
}

// tryTake takes n bytes of room if there is room now.
func (m *memoryBudget) tryTake(n int64) (*memoryHold, bool) {
	if !m.sem.TryAcquire(n) {
		return nil, false
	}
	m.held.Add(n)
	return &memoryHold{m: m, n: n}, true
}

func (m *memoryBudget) inUse() float64 { return float64(m.held.Load()) }

// memoryHold is one request's charge. It is owned by one goroutine at a
// time; release is idempotent.
type memoryHold struct {
	m *memoryBudget
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
	h.m.sem.Release(d)
}

func (h *memoryHold) release() { h.shrink(0) }

// holdMemory charges n bytes to the budget, waiting for room at most
// Limits.MaxQueueWait and at most half of what ctx's deadline leaves (as
// waitTurn does). A request that does not get its charge is refused
// UNAVAILABLE with Retry-After before it is read.
func (s *Service) holdMemory(ctx context.Context, n int64) (*memoryHold, *Failure) {
	// With room now and no one waiting, the charge is taken without the
	// timer and context a wait needs.
	if ctx.Err() == nil {
		if h, ok := s.memory.tryTake(n); ok {
			return h, nil
		}
	}
	wait := s.cfg.Limits.MaxQueueWait
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d)/2)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	h, err := s.memory.take(wctx, n)
	if err != nil {
		s.metrics.memoryRefusals.Inc()
		return nil, &Failure{Reason: ingestv1.Reason_UNAVAILABLE, RetryAfter: s.cfg.UnavailableRetryAfter,
			Message: fmt.Sprintf("the gateway is at capacity: no room for a request of up to %d bytes within %v", n, wait.Round(time.Millisecond))}
	}
	return h, nil
}
