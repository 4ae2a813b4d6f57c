package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/consumer/dlq"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/breaker"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// errClosed is returned by Run when the Kafka client was closed under it.
var errClosed = errors.New("consumer: client closed")

// Consumer reads the source topics of one group and writes their events
// to a sink. See the package documentation for what it guarantees. It
// composes four owners, each with its own state: the dispatcher
// (partitions, keys, in flight, watermarks), the committer (commits,
// lag), the drainer (drain passes, quiet time, drain rate, mode) and the
// deliverer (sink, breaker, retry budget, dead letters, audit). The
// Consumer runs their goroutines and routes the group's rebalances to
// them.
type Consumer struct {
	cfg    Config
	o      options
	log    *slog.Logger
	client *kgo.Client
	m      *metrics

	dispatcher *dispatcher
	committer  *committer
	drainer    *drainer
	deliverer  *deliverer

	running atomic.Bool
	// stopPolling ends Run's polling; Run sets it before any work starts.
	stopPolling context.CancelFunc
	// fatal is the first error that stopped Run (a *dlq.DeadLetterError).
	fatalMu sync.Mutex
	fatal   error
}

// New builds a consumer. versions are the contracts it decodes with, read
// anew for every record, so that a registry swapped in by a reload is used
// from the next record on. kopts carry the Kafka connection (seed brokers,
// TLS, SASL); New adds the group, topics and commit settings. Nothing is
// fetched before Run. The consumer records its decisions about events in
// s when s is an audit.Writer (the table sinks), else as records of
// record.AuditTopic through its client.
func New(cfg Config, versions *contract.Versions, s sink.Sink, kopts []kgo.Opt, opts ...Option) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if versions == nil {
		return nil, errors.New("consumer: nil contract versions")
	}
	if s == nil {
		return nil, errors.New("consumer: nil sink")
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt.apply(&o)
	}
	c := &Consumer{
		cfg: cfg,
		o:   o,
		log: o.logger.With("component", "consumer", "group", cfg.Group, "sink", s.Name()),
		m:   newMetrics(),
	}
	sources := cfg.SourceTopics()
	var dlqs []string
	for _, t := range sources {
		dlqs = append(dlqs, record.DLQTopic(t))
	}
	c.m.initLabels(s.Name(), sources, versions)
	label := sourceLabels(o.sources)
	for _, name := range o.sources {
		c.m.dlqBacklog.WithLabelValues(label(name))
	}
	c.m.dlqBacklog.WithLabelValues(otherSource)
	c.dispatcher = newDispatcher(cfg.MaxInFlight, cfg.WriteBatch, c.m.inFlight)
	all := append(append([]string(nil), sources...), dlqs...)
	kopts = append(append([]kgo.Opt(nil), kopts...),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(all...),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// The client's own records, audit rows and dead letters, are
		// waited for before their jobs finish, and so before the next
		// record of their key is written: a linger would add to every
		// key's turn. With none, records still batch behind the produce
		// request in flight.
		kgo.ProducerLinger(0),
		// Config.Validate checked that a dead letter of the largest event
		// fits; a larger one is parked cut to fit.
		kgo.ProducerBatchMaxBytes(cfg.DLQ.MaxRecordBytes),
		kgo.OnPartitionsAssigned(c.onAssigned),
		kgo.OnPartitionsRevoked(c.onRevoked),
		kgo.OnPartitionsLost(c.onLost),
	)
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("consumer: kafka client: %w", err)
	}
	c.client = cl
	c.dispatcher.setDrain(cfg.drainReadAhead(), c.m.dlqBacklog, label, cl.ResumeFetchPartitions)
	c.committer = &committer{client: cl, group: cfg.Group, log: c.log, committedGauge: c.m.committed, lag: c.m.lag}
	c.drainer = newDrainer(cl, sources, dlqs, cfg.DLQ, o.clock, c.log, c.m.mode)
	d := &deliverer{
		cfg:      cfg,
		sink:     s,
		versions: versions,
		sources:  sources,
		clock:    o.clock,
		log:      c.log,
		m:        c.m,
		run:      c,
		tracer:   newTracer(o.tracerProvider, cfg.Group, s.Name()),
	}
	d.breaker = breaker.New(breaker.Config{
		Window:       cfg.Breaker.Window,
		MinRequests:  cfg.Breaker.MinRequests,
		FailureRatio: cfg.Breaker.FailureRatio,
		Cooldown:     cfg.Breaker.Cooldown,
	}, o.clock, func(st breaker.State) {
		c.m.circuit.WithLabelValues(s.Name()).Set(float64(st))
		c.log.Info("circuit breaker", "state", st.String())
		c.drainer.quiet()
	})
	d.deadLetters = dlq.NewProducer(cl, dlq.ProducerConfig{
		ProduceTimeout: cfg.WriteTimeout,
		Backoff:        backoff.Config{Initial: cfg.Retry.InitialBackoff, Max: cfg.Retry.MaxBackoff},
		MaxRecordBytes: int(cfg.DLQ.MaxRecordBytes),
		MaxErrorBytes:  cfg.DLQ.MaxErrorBytes,
	}, dlq.WithLogger(c.log), dlq.WithClock(o.clock))
	if a, ok := s.(audit.Writer); ok {
		d.auditor, d.sinkAudits = a, true
		d.fallback = dlq.NewTopicAuditor(cl, o.clock.Now)
	} else {
		d.auditor = dlq.NewTopicAuditor(cl, o.clock.Now)
	}
	c.deliverer = d
	// DLQ topics are fetched only in DRAIN_DLQ.
	cl.PauseFetchTopics(dlqs...)
	if o.registerer != nil {
		if err := c.m.register(o.registerer, d.deadLetters.Collectors()...); err != nil {
			cl.Close()
			return nil, fmt.Errorf("consumer: register metrics: %w", err)
		}
	}
	c.drainer.setMode(ModeNormal)
	c.m.circuit.WithLabelValues(s.Name()).Set(float64(breaker.Closed))
	return c, nil
}

// Mode returns the current mode.
func (c *Consumer) Mode() Mode { return c.drainer.current() }

// Run consumes until ctx is canceled or the client fails, then stops:
// polling ends, in-flight work gets RevokeTimeout to finish, what is
// unfinished then is abandoned, finished offsets are committed and the
// client leaves the group. Run may be called once; it closes the client.
//
// Run also stops, the same way, when a record can be neither written,
// dead-lettered nor parked: it then returns a *dlq.DeadLetterError naming the
// record, whose offset is not committed.
func (c *Consumer) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("consumer: Run called twice")
	}
	defer func() {
		if c.o.registerer != nil {
			c.m.unregister(c.o.registerer, c.deliverer.deadLetters.Collectors()...)
		}
	}()

	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	c.stopPolling = stopPolling

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range c.cfg.sinkConcurrency() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.work(stop)
		}()
	}
	var loops sync.WaitGroup
	loopCtx, stopLoops := context.WithCancel(context.Background())
	loops.Add(3)
	go func() { defer loops.Done(); c.commitLoop(loopCtx) }()
	go func() { defer loops.Done(); c.lagLoop(loopCtx) }()
	go func() { defer loops.Done(); c.modeLoop(loopCtx) }()

	err := c.poll(pollCtx)

	// Graceful stop: give in-flight work RevokeTimeout, then abandon it.
	c.dispatcher.waitIdle(c.cfg.RevokeTimeout)
	c.dispatcher.abandonAll()
	close(stop)
	wg.Wait()
	stopLoops()
	loops.Wait()
	cctx, cancel := context.WithTimeout(context.Background(), c.cfg.RevokeTimeout)
	c.committer.commit(cctx, c.dispatcher.assigned())
	cancel()
	c.client.Close()
	c.fatalMu.Lock()
	defer c.fatalMu.Unlock()
	if c.fatal != nil {
		return c.fatal
	}
	return err
}

// poll fetches while there is room in flight and hands each record to the
// dispatcher. Rebalances are blocked from PollRecords until
// AllowRebalance, so a record is registered in its partition's watermark
// before the partition can be revoked.
func (c *Consumer) poll(ctx context.Context) error {
	for {
		free, err := c.dispatcher.waitFree(ctx)
		if err != nil {
			return nil
		}
		fetches := c.client.PollRecords(ctx, free)
		if fetches.IsClientClosed() {
			c.client.AllowRebalance()
			return errClosed
		}
		if ctx.Err() != nil {
			c.client.AllowRebalance()
			return nil
		}
		fetches.EachError(func(t string, p int32, err error) {
			c.log.Warn("fetch", "topic", t, "partition", p, "err", err)
		})
		rewind := make(map[string]map[int32]kgo.EpochOffset)
		fetches.EachRecord(func(r *kgo.Record) { c.dispatcher.dispatch(r, rewind) })
		if len(rewind) > 0 {
			// DLQ records past the drain pass were polled: stop their
			// partitions and fetch them again in the next pass.
			pause := make(map[string][]int32)
			for t, ps := range rewind {
				for p := range ps {
					pause[t] = append(pause[t], p)
				}
			}
			c.client.PauseFetchPartitions(pause)
			c.client.SetOffsets(rewind)
			// Those parked for room that got it meanwhile are read again.
			c.dispatcher.rewound(rewind)
		}
		c.client.AllowRebalance()
	}
}

// work delivers batches of ready jobs until stop is closed.
func (c *Consumer) work(stop <-chan struct{}) {
	batch := make([]*job, 0, c.cfg.WriteBatch)
	for {
		var ok bool
		if batch, ok = c.dispatcher.next(stop, batch); !ok {
			return
		}
		c.deliverer.process(batch)
	}
}

// finish ends j (dispatcher.finish) and has the mode evaluated again when
// nothing is in flight any more, or j was drained.
func (c *Consumer) finish(j *job, done bool) {
	if c.dispatcher.finish(j, done) || j.part.dlq {
		c.drainer.wakeMode()
	}
}

// pace waits for the drain rate to admit a record of source.
func (c *Consumer) pace(ctx context.Context, source string) error {
	return c.drainer.pace(ctx, source)
}

// stop makes Run stop as if its context ended, and return err.
func (c *Consumer) stop(err error) {
	c.fatalMu.Lock()
	if c.fatal == nil {
		c.fatal = err
	}
	c.fatalMu.Unlock()
	c.stopPolling()
}

func (c *Consumer) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	c.dispatcher.assign(assigned)
	c.log.Info("partitions assigned", "partitions", assigned)
}

// onRevoked lets in-flight work of the revoked partitions finish, up to
// RevokeTimeout, abandons the rest and commits what finished, before the
// partitions move to another member.
func (c *Consumer) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	parts := c.dispatcher.detach(revoked)
	c.committer.forgetLag(parts)
	deadline := time.NewTimer(c.cfg.RevokeTimeout)
	defer deadline.Stop()
wait:
	for _, p := range parts {
		select {
		case <-p.idleChan():
		case <-deadline.C:
			break wait
		case <-c.dispatcher.abandoned():
			// Run is stopping and has already waited for the work.
			break wait
		}
	}
	c.committer.retire(parts)
	cctx, cancel := context.WithTimeout(ctx, c.cfg.RevokeTimeout)
	c.committer.commitRevoked(cctx, parts)
	cancel()
	c.log.Info("partitions revoked", "partitions", revoked)
}

// onLost abandons the partitions' work at once: the group has moved on
// and a commit would be refused. It retires them under the committer's
// lock: a commit in progress that took them for ours ends first, under
// the generation they were lost in, which the group refuses. franz-go
// rejoins only after onLost returns; a commit that went out after the
// rejoin would carry the next generation, which the group takes, and
// commit them for whichever member owns them by then.
func (c *Consumer) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	parts := c.dispatcher.detach(lost)
	c.committer.forgetLag(parts)
	c.committer.retire(parts)
	c.log.Warn("partitions lost", "partitions", lost)
}

// commitLoop commits the finished offsets every CommitInterval.
func (c *Consumer) commitLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			cctx, cancel := context.WithTimeout(ctx, c.cfg.RevokeTimeout)
			c.committer.commit(cctx, c.dispatcher.assigned())
			cancel()
		case <-ctx.Done():
			return
		}
	}
}

// lagLoop measures lag every LagInterval and starts a drain pass when the
// DLQ has records.
func (c *Consumer) lagLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.LagInterval)
	defer t.Stop()
	for {
		pending := c.committer.measureLag(ctx, c.dispatcher.assigned(), c.cfg.LagInterval+5*time.Second)
		c.drainer.maybeStartPass(pending, c.deliverer.breakerState())
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// modeLoop runs the mode state machine (drainer.evaluate) whenever it is
// woken.
func (c *Consumer) modeLoop(ctx context.Context) {
	for {
		c.drainer.evaluate(c.deliverer.breakerState(), c.dispatcher.idle())
		select {
		case <-c.drainer.woken():
		case <-ctx.Done():
			return
		}
	}
}
