package consumer

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/sluicehq/sluice/internal/breaker"
)

// fetchSwitch is the part of the Kafka client that pauses and resumes
// fetching.
type fetchSwitch interface {
	PauseFetchTopics(topics ...string) []string
	ResumeFetchTopics(topics ...string)
	ResumeFetchPartitions(map[string][]int32)
}

// drainer decides the mode and runs drain passes: when a pass starts
// (the quiet time since the breaker last changed or the last pass
// ended), which DLQ partitions it covers, when it is over, the drain
// rate, and which topics are fetched. One lock, mu, over the pass and the
// quiet time; the mode is an atomic.
type drainer struct {
	fetch         fetchSwitch
	sources, dlqs []string
	clock         Clock
	// interval is DLQ.DrainInterval: the quiet time before a pass.
	interval time.Duration
	// pacer admits drained records at DLQ.DrainRate, round-robin
	// between their sources.
	pacer *fairPacer
	log   *slog.Logger
	// modeGauge is sluice_consumer_mode.
	modeGauge *prometheus.GaugeVec

	mode atomic.Int32
	wake chan struct{}

	mu sync.Mutex
	// pass is the drain pass in progress, if any.
	pass *drainPass
	// quietSince is when the sink was last seen unhealthy or the last
	// pass ended: a pass starts interval after it.
	quietSince time.Time
}

// drainPass retries the DLQ records of its partitions up to the end
// offsets it found when it started.
type drainPass struct {
	parts []*partState
}

func newDrainer(fetch fetchSwitch, sources, dlqs []string, cfg DLQConfig, clock Clock, log *slog.Logger, modeGauge *prometheus.GaugeVec) *drainer {
	return &drainer{
		fetch:      fetch,
		sources:    sources,
		dlqs:       dlqs,
		clock:      clock,
		interval:   cfg.DrainInterval,
		pacer:      newFairPacer(rate.NewLimiter(rate.Limit(cfg.DrainRate), 1)),
		log:        log,
		modeGauge:  modeGauge,
		wake:       make(chan struct{}, 1),
		quietSince: clock.Now(),
	}
}

// quiet restarts the quiet time: the breaker changed state.
func (d *drainer) quiet() {
	d.mu.Lock()
	d.quietSince = d.clock.Now()
	d.mu.Unlock()
	d.wakeMode()
}

// pace waits for the drain rate to admit one record of source, in its
// source's turn.
func (d *drainer) pace(ctx context.Context, source string) error { return d.pacer.wait(ctx, source) }

// maybeStartPass starts a drain pass over the DLQ partitions with
// records, up to their current end offsets, when the breaker is closed and
// has been, with no pass, for DLQ.DrainInterval.
func (d *drainer) maybeStartPass(pending map[*partState]int64, st breaker.State) {
	if len(pending) == 0 || st != breaker.Closed {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pass != nil || d.clock.Now().Sub(d.quietSince) < d.interval {
		return
	}
	pass := &drainPass{}
	resume := make(map[string][]int32)
	for p, end := range pending {
		if p.gone.Load() {
			continue
		}
		p.beginPass(end)
		pass.parts = append(pass.parts, p)
		resume[p.tp.topic] = append(resume[p.tp.topic], p.tp.partition)
	}
	if len(pass.parts) == 0 {
		return
	}
	d.pass = pass
	d.fetch.ResumeFetchPartitions(resume)
	d.log.Info("drain pass", "partitions", resume)
	d.wakeMode()
}

// passActive reports whether a drain pass is in progress. A pass is over
// when each of its partitions was revoked or had all its pass records
// polled and finished; passActive then ends it.
func (d *drainer) passActive() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pass == nil {
		return false
	}
	for _, p := range d.pass.parts {
		if p.gone.Load() {
			continue
		}
		if p.passPending() {
			return true
		}
	}
	for _, p := range d.pass.parts {
		p.endPass()
	}
	d.pass = nil
	d.quietSince = d.clock.Now()
	d.log.Info("drain pass done")
	return false
}
