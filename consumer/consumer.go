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
	"golang.org/x/time/rate"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/consumer/dlq"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/breaker"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// ErrClosed is returned by Run when the Kafka client was closed under it.
var ErrClosed = errors.New("consumer: client closed")

// Consumer reads the source topics of one group and writes their events
// to a sink. See the package documentation for what it guarantees.
type Consumer struct {
	cfg     Config
	sink    sink.Sink
	o       options
	log     *slog.Logger
	client  *kgo.Client
	m       *metrics
	breaker *breaker.Breaker
	limiter *rate.Limiter
	// deadLetters produces the DLQ and parked records through client.
	deadLetters *dlq.Producer
	// auditor records the decisions about events: the sink when it is a
	// audit.Writer (sinkAudits: it then records written rows in its
	// writes), else a dlq.TopicAuditor on client. fallback, with a sink
	// that audits, is a dlq.TopicAuditor for the rows the sink did not
	// take.
	auditor, fallback audit.Writer
	sinkAudits        bool
	// versions are the contracts records are decoded and drained records
	// checked with: the registry served and the versions kept before it.
	versions *contract.Versions

	sources []string
	dlqs    []string

	// workCtx is canceled to abandon all work.
	workCtx    context.Context
	abandonAll context.CancelFunc

	mu       sync.Mutex
	parts    map[topicPartition]*partState
	keys     map[string]*keyQueue
	inFlight int
	// freed receives a token whenever in-flight work finishes.
	freed chan struct{}
	// ready holds jobs at the head of their key's queue; every in-flight
	// job is in it at most once, so MaxInFlight bounds it.
	ready chan *job

	// commitMu serializes commits, so that a periodic commit never lands
	// after a revoke's final commit of the same partition.
	commitMu sync.Mutex

	mode     atomic.Int32
	modeWake chan struct{}
	running  atomic.Bool

	// pass is the drain pass in progress, if any.
	passMu sync.Mutex
	pass   *drainPass
	// quietSince is when the sink was last seen unhealthy or the last
	// pass ended: a pass starts DLQ.DrainInterval after it.
	quietSince time.Time

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
// s when s is a audit.Writer (the table sinks), else as records of
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
		cfg:      cfg,
		versions: versions,
		sink:     s,
		o:        o,
		log:      o.logger.With("component", "consumer", "group", cfg.Group, "sink", s.Name()),
		m:        newMetrics(),
		limiter:  rate.NewLimiter(rate.Limit(cfg.DLQ.DrainRate), 1),
		sources:  cfg.SourceTopics(),
		parts:    make(map[topicPartition]*partState),
		keys:     make(map[string]*keyQueue),
		freed:    make(chan struct{}, 1),
		ready:    make(chan *job, cfg.MaxInFlight),
		modeWake: make(chan struct{}, 1),
	}
	for _, t := range c.sources {
		c.dlqs = append(c.dlqs, record.DLQTopic(t))
	}
	c.m.initLabels(s.Name(), c.sources, versions)
	c.workCtx, c.abandonAll = context.WithCancel(context.Background())
	c.quietSince = o.clock.Now()
	c.breaker = breaker.New(breaker.Config{
		Window:       cfg.Breaker.Window,
		MinRequests:  cfg.Breaker.MinRequests,
		FailureRatio: cfg.Breaker.FailureRatio,
		Cooldown:     cfg.Breaker.Cooldown,
	}, o.clock, func(st breaker.State) {
		c.m.circuit.WithLabelValues(s.Name()).Set(float64(st))
		c.log.Info("circuit breaker", "state", st.String())
		c.passMu.Lock()
		c.quietSince = o.clock.Now()
		c.passMu.Unlock()
		c.wakeMode()
	})
	all := append(append([]string(nil), c.sources...), c.dlqs...)
	kopts = append(append([]kgo.Opt(nil), kopts...),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(all...),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
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
	c.deadLetters = dlq.NewProducer(cl, dlq.ProducerConfig{
		ProduceTimeout: cfg.WriteTimeout,
		Backoff:        backoff.Config{Initial: cfg.Retry.InitialBackoff, Max: cfg.Retry.MaxBackoff},
		MaxRecordBytes: int(cfg.DLQ.MaxRecordBytes),
		MaxErrorBytes:  cfg.DLQ.MaxErrorBytes,
	}, dlq.WithLogger(c.log), dlq.WithClock(o.clock))
	if a, ok := s.(audit.Writer); ok {
		c.auditor, c.sinkAudits = a, true
		c.fallback = dlq.NewTopicAuditor(cl, o.clock.Now)
	} else {
		c.auditor = dlq.NewTopicAuditor(cl, o.clock.Now)
	}
	// DLQ topics are fetched only in DRAIN_DLQ.
	cl.PauseFetchTopics(c.dlqs...)
	if o.registerer != nil {
		if err := c.m.register(o.registerer, c.deadLetters.Collectors()...); err != nil {
			cl.Close()
			return nil, fmt.Errorf("consumer: register metrics: %w", err)
		}
	}
	c.setMode(ModeNormal)
	c.m.circuit.WithLabelValues(s.Name()).Set(float64(breaker.Closed))
	return c, nil
}

// Mode returns the current mode.
func (c *Consumer) Mode() Mode { return Mode(c.mode.Load()) }

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
			c.m.unregister(c.o.registerer, c.deadLetters.Collectors()...)
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
	c.waitIdle(c.cfg.RevokeTimeout)
	c.abandonAll()
	close(stop)
	wg.Wait()
	stopLoops()
	loops.Wait()
	cctx, cancel := context.WithTimeout(context.Background(), c.cfg.RevokeTimeout)
	c.commitParts(cctx, c.assigned())
	cancel()
	c.client.Close()
	c.fatalMu.Lock()
	defer c.fatalMu.Unlock()
	if c.fatal != nil {
		return c.fatal
	}
	return err
}

// waitIdle waits until nothing is in flight or d passes.
func (c *Consumer) waitIdle(d time.Duration) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		n := c.inFlight
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.freed:
		case <-deadline.C:
			return
		}
	}
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
