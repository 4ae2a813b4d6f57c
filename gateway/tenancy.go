package gateway

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/promreg"
	"github.com/sluicehq/sluice/internal/share"
)

// Sources are tenants. Each budget a request takes a place in (request
// memory, in two halves; the receiving gate of gRPC Publish calls; the
// stream slots) is a share.Pool: limits.reserved_share of it is split
// among the configured sources by their share, as guarantees no other
// source can hold, and the rest is lent to whoever has used its own. A
// source waits, or is refused, on its own account only: while its
// guarantee has room it never queues behind another source. A source
// refused while the budget has room (the room is others' guarantees) is
// over its share: RATE_LIMITED, naming the source and the budget. A source
// refused because the budget is full is refused as before the shares:
// UNAVAILABLE, the gateway's capacity. With one source the source may
// hold the whole budget, so a single-source gateway answers as it did.
//
// Besides its shares a source may have bounds of its own (max_requests,
// max_streams), and its events/s and bytes/s buckets (sources.go).

// tenancy is one source's accounts in the gateway's budgets.
type tenancy struct {
	memory, streamMemory account
	receiving            *share.Tenant
	streams              *share.Tenant
	// requests counts the source's requests held (max_requests), and
	// openStreams its streams (max_streams).
	requests, openStreams boundedCount
	receivedBytes         prometheus.Counter
}

// boundedCount counts what is held against a limit; limit 0 is no limit.
type boundedCount struct {
	limit int64
	n     atomic.Int64
}

// take counts one if the limit has room; false, counting nothing, if not.
func (c *boundedCount) take() bool {
	if c.n.Add(1) > c.limit && c.limit > 0 {
		c.n.Add(-1)
		return false
	}
	return true
}

func (c *boundedCount) give() { c.n.Add(-1) }

// newTenancies builds the budgets' pools and gives every configured
// source its accounts.
func (s *Service) newTenancies() error {
	cfg := s.cfg
	weights := cfg.SourceShares()
	r := cfg.Limits.ReservedShare
	pool := func(capacity int64) (*share.Pool, error) { return share.New(capacity, r, weights) }
	var err error
	if s.memory, err = newMemoryBudget(cfg.RequestMemory()/2, r, weights); err != nil {
		return err
	}
	if s.streamMemory, err = newMemoryBudget(cfg.RequestMemory()/2, r, weights); err != nil {
		return err
	}
	if s.receiving.pool, err = pool(int64(cfg.Limits.ReceivingRequests)); err != nil {
		return err
	}
	if s.streams.pool, err = pool(int64(cfg.Limits.MaxStreams)); err != nil {
		return err
	}
	for _, src := range s.sources.byName {
		src.tenancy = &tenancy{
			memory:        newAccount(s.memory.pool.Tenant(src.name)),
			streamMemory:  newAccount(s.streamMemory.pool.Tenant(src.name)),
			receiving:     s.receiving.pool.Tenant(src.name),
			streams:       s.streams.pool.Tenant(src.name),
			requests:      boundedCount{limit: int64(src.cfg.MaxRequests)},
			openStreams:   boundedCount{limit: int64(src.cfg.MaxStreams)},
			receivedBytes: s.metrics.receivedBytes.WithLabelValues(src.name),
		}
		if g, call := src.memory.t.Guarantee(), s.receiveCost(codingIdentity); g < call {
			s.log.Info("a source's guarantee of request memory holds no gRPC call of max_request_bytes; its calls borrow from the shared remainder",
				"source", src.name, "guarantee_bytes", g, "call_bytes", call)
		}
	}
	return nil
}

// overShare is the refusal of src, whose account t in pool had no room
// for n: RATE_LIMITED when t cannot take n now while the pool has room for
// it (the room is others' guarantees); else nil, and the caller answers
// UNAVAILABLE: the pool is full, or the refusal was not the shares' (a
// wait that ended with its deadline while t had room).
func (s *Service) overShare(src *source, t *share.Tenant, pool *share.Pool, n int64, what string) *Failure {
	if t.Limit()-t.Used() >= n || pool.Free() < n {
		return nil
	}
	return &Failure{Reason: ingestv1.Reason_RATE_LIMITED, RetryAfter: s.cfg.UnavailableRetryAfter,
		Message: fmt.Sprintf("source %s is over its share of %s: the room left is other sources' guarantees (limits.reserved_share)", src.name, what)}
}

// enterRequest counts a request of src against its max_requests until
// release; a source over it is refused RATE_LIMITED.
func (s *Service) enterRequest(src *source) (release func(), f *Failure) {
	if src.tenancy == nil {
		return func() {}, nil
	}
	if !src.requests.take() {
		return nil, &Failure{Reason: ingestv1.Reason_RATE_LIMITED, RetryAfter: s.cfg.UnavailableRetryAfter,
			Message: fmt.Sprintf("source %s is over its max_requests: %d requests are already held", src.name, src.requests.limit)}
	}
	return src.requests.give, nil
}

// enterRequestUntil is enterRequest released when ctx, the call's, ends.
func (s *Service) enterRequestUntil(ctx context.Context, src *source) *Failure {
	release, f := s.enterRequest(src)
	if f != nil {
		return f
	}
	context.AfterFunc(ctx, release)
	return nil
}

// registerSourceGauges registers, for each configured source, what it
// holds of the budgets: sluice_source_request_memory_bytes (both halves),
// sluice_source_requests_in_flight and sluice_source_streams.
func (s *Service) registerSourceGauges(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	var cs []prometheus.Collector
	for name, src := range s.sources.byName {
		t := src.tenancy
		labels := prometheus.Labels{"source": name}
		cs = append(cs,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "sluice_source_request_memory_bytes",
				Help:        "Bytes of limits.request_memory_bytes (both halves) a source's requests and streams hold.",
				ConstLabels: labels,
			}, func() float64 { return float64(t.memory.t.Used() + t.streamMemory.t.Used()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "sluice_source_requests_in_flight",
				Help:        "A source's requests held (REST, CloudEvents, webhooks, gRPC Publish), from before the body is read to the answer: what sources[].max_requests bounds.",
				ConstLabels: labels,
			}, func() float64 { return float64(t.requests.n.Load()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "sluice_source_streams",
				Help:        "A source's authenticated streams open: what sources[].max_streams and its share of limits.max_streams bound.",
				ConstLabels: labels,
			}, func() float64 { return float64(t.openStreams.n.Load()) }),
		)
	}
	if err := promreg.Register(reg, cs...); err != nil {
		return fmt.Errorf("gateway: registering metrics: %w", err)
	}
	return nil
}
