package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/time/rate"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/breaker"
	"github.com/sluicehq/sluice/internal/clip"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// Mode is what the consumer is doing as a whole.
type Mode int32

const (
	// ModeNormal consumes the source topics; DLQ topics are paused.
	ModeNormal Mode = iota
	// ModePaused has fetching paused: the sink's breaker is open.
	ModePaused
	// ModeDrainDLQ consumes the source topics and retries DLQ records at
	// the drain rate: the sink is healthy and the DLQ has records.
	ModeDrainDLQ
)

func (m Mode) String() string {
	switch m {
	case ModeNormal:
		return "NORMAL"
	case ModePaused:
		return "PAUSED"
	case ModeDrainDLQ:
		return "DRAIN_DLQ"
	}
	return fmt.Sprintf("mode(%d)", int32(m))
}

var allModes = [...]Mode{ModeNormal, ModePaused, ModeDrainDLQ}

// ErrClosed is returned by Run when the Kafka client was closed under it.
var ErrClosed = errors.New("consumer: client closed")

// Consumer reads the source topics of one group and writes their events
// to a sink. See the package documentation for what it guarantees.
type Consumer struct {
	cfg     Config
	reg     *contract.Registry
	sink    sink.Sink
	o       options
	log     *slog.Logger
	client  *kgo.Client
	m       *metrics
	breaker *breaker.Breaker
	limiter *rate.Limiter

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
	// fatal is the first error that stopped Run (a *DeadLetterError).
	fatalMu sync.Mutex
	fatal   error
	// produceWarn holds back repeated warnings of failing DLQ produces.
	produceWarn logThrottle
}

// drainPass retries the DLQ records of its partitions up to the end
// offsets it found when it started.
type drainPass struct {
	parts []*partState
}

type topicPartition struct {
	topic     string
	partition int32
}

// partState is one assigned partition.
type partState struct {
	tp  topicPartition
	dlq bool
	wm  *Watermark
	ctx context.Context
	// abandon cancels the partition's work; its offsets are then never
	// committed by this member.
	abandon context.CancelFunc
	gone    atomic.Bool
	// next is one past the highest offset polled; -1 before any.
	next atomic.Int64
	// passEnd is, on a DLQ partition, the end offset of the drain pass:
	// records from it on are left for a later pass. 0 outside a pass.
	passEnd atomic.Int64
	// polledPass says every record of the pass has been polled.
	polledPass atomic.Bool

	mu        sync.Mutex
	count     int
	idle      chan struct{} // closed while count is 0
	committed int64         // last committed offset, -1 before any
}

func newPartState(parent context.Context, tp topicPartition, dlq bool) *partState {
	ctx, cancel := context.WithCancel(parent)
	p := &partState{tp: tp, dlq: dlq, wm: NewWatermark(), ctx: ctx, abandon: cancel, idle: make(chan struct{}), committed: -1}
	close(p.idle)
	p.next.Store(-1)
	return p
}

func (p *partState) add() {
	p.mu.Lock()
	if p.count == 0 {
		p.idle = make(chan struct{})
	}
	p.count++
	p.mu.Unlock()
}

func (p *partState) release() {
	p.mu.Lock()
	p.count--
	if p.count == 0 {
		close(p.idle)
	}
	p.mu.Unlock()
}

func (p *partState) idleChan() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idle
}

// job is one polled record on its way to the sink or the DLQ.
type job struct {
	rec  *kgo.Record
	part *partState
	key  string
	// env is the envelope of a DLQ record being drained; nil otherwise.
	env *record.Envelope
}

// keyQueue holds the jobs of one key in offset order; jobs[0] is running
// or ready.
type keyQueue struct {
	jobs []*job
}

// New builds a consumer. kopts carry the Kafka connection (seed brokers,
// TLS, SASL); New adds the group, topics and commit settings. Nothing is
// fetched before Run.
func New(cfg Config, reg *contract.Registry, s sink.Sink, kopts []kgo.Opt, opts ...Option) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if reg == nil {
		return nil, errors.New("consumer: nil contract registry")
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
		reg:      reg,
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
	c.produceWarn.every = produceWarnInterval
	for _, t := range c.sources {
		c.dlqs = append(c.dlqs, record.DLQTopic(t))
	}
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
	// DLQ topics are fetched only in DRAIN_DLQ.
	cl.PauseFetchTopics(c.dlqs...)
	if o.registerer != nil {
		if err := c.m.register(o.registerer); err != nil {
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

// Breaker returns the sink's circuit breaker.
func (c *Consumer) Breaker() *breaker.Breaker { return c.breaker }

// Run consumes until ctx is canceled or the client fails, then stops:
// polling ends, in-flight work gets RevokeTimeout to finish, what is
// unfinished then is abandoned, finished offsets are committed and the
// client leaves the group. Run may be called once; it closes the client.
//
// Run also stops, the same way, when a record can be neither written,
// dead-lettered nor parked: it then returns a *DeadLetterError naming the
// record, whose offset is not committed.
func (c *Consumer) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("consumer: Run called twice")
	}
	defer func() {
		if c.o.registerer != nil {
			c.m.unregister(c.o.registerer)
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

// poll fetches while there is room in flight and hands each record to its
// key's queue. Rebalances are blocked from PollRecords until
// AllowRebalance, so a record is registered in its partition's watermark
// before the partition can be revoked.
func (c *Consumer) poll(ctx context.Context) error {
	for {
		free, err := c.waitFree(ctx)
		if err != nil {
			return nil
		}
		fetches := c.client.PollRecords(ctx, free)
		if fetches.IsClientClosed() {
			c.client.AllowRebalance()
			return ErrClosed
		}
		if ctx.Err() != nil {
			c.client.AllowRebalance()
			return nil
		}
		fetches.EachError(func(t string, p int32, err error) {
			c.log.Warn("fetch", "topic", t, "partition", p, "err", err)
		})
		rewind := make(map[string]map[int32]kgo.EpochOffset)
		fetches.EachRecord(func(r *kgo.Record) { c.dispatch(r, rewind) })
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
		}
		c.client.AllowRebalance()
	}
}

// waitFree returns how many records may be polled, waiting while none may.
func (c *Consumer) waitFree(ctx context.Context) (int, error) {
	for {
		c.mu.Lock()
		free := c.cfg.MaxInFlight - c.inFlight
		c.mu.Unlock()
		if free > 0 {
			return free, nil
		}
		select {
		case <-c.freed:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// dispatch registers r as in flight and queues it behind earlier records
// of its key. A DLQ record at or past its pass's end is not dispatched:
// its partition goes into rewind, to be fetched again from it.
func (c *Consumer) dispatch(r *kgo.Record, rewind map[string]map[int32]kgo.EpochOffset) {
	tp := topicPartition{r.Topic, r.Partition}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.parts[tp]
	if p == nil || p.gone.Load() {
		// Not ours (any more): its owner fetches it from the committed
		// offset.
		return
	}
	if p.dlq {
		end := p.passEnd.Load()
		if r.Offset >= end {
			if rewind[r.Topic] == nil {
				rewind[r.Topic] = make(map[int32]kgo.EpochOffset)
			}
			if _, ok := rewind[r.Topic][r.Partition]; !ok {
				rewind[r.Topic][r.Partition] = kgo.EpochOffset{Epoch: -1, Offset: r.Offset}
			}
			p.polledPass.Store(true)
			return
		}
		if r.Offset == end-1 {
			p.polledPass.Store(true)
		}
	}
	if err := p.wm.Add(r.Offset); err != nil {
		// A refetch of an offset already in flight.
		return
	}
	p.next.Store(r.Offset + 1)
	p.add()
	c.inFlight++
	c.m.inFlight.Set(float64(c.inFlight))
	j := &job{rec: r, part: p, key: r.Topic + "\x00" + strconv.Itoa(int(r.Partition)) + "\x00" + string(r.Key)}
	if q := c.keys[j.key]; q != nil {
		q.jobs = append(q.jobs, j)
		return
	}
	c.keys[j.key] = &keyQueue{jobs: []*job{j}}
	c.ready <- j
}

// finish ends j: done says its side effect happened (written, or
// dead-lettered and acknowledged), so its offset may be committed. The
// next job of its key becomes ready.
func (c *Consumer) finish(j *job, done bool) {
	if done && !j.part.gone.Load() {
		j.part.wm.Done(j.rec.Offset)
	}
	c.mu.Lock()
	q := c.keys[j.key]
	q.jobs = q.jobs[1:]
	if len(q.jobs) == 0 {
		delete(c.keys, j.key)
	} else {
		c.ready <- q.jobs[0]
	}
	c.inFlight--
	n := c.inFlight
	c.m.inFlight.Set(float64(n))
	c.mu.Unlock()
	j.part.release()
	select {
	case c.freed <- struct{}{}:
	default:
	}
	if n == 0 || j.part.dlq {
		c.wakeMode()
	}
}

// work runs batches of ready jobs until stop is closed.
func (c *Consumer) work(stop <-chan struct{}) {
	batch := make([]*job, 0, c.cfg.WriteBatch)
	for {
		var j *job
		select {
		case j = <-c.ready:
		case <-stop:
			return
		}
		batch = append(batch[:0], j)
		// A batch holds jobs of one partition, so that it is abandoned
		// with its partition; DLQ records run alone, each its own drain.
	fill:
		for !j.part.dlq && len(batch) < c.cfg.WriteBatch {
			select {
			case next := <-c.ready:
				if next.part != j.part {
					c.ready <- next
					break fill
				}
				batch = append(batch, next)
			default:
				break fill
			}
		}
		c.process(batch)
	}
}

// process decodes a batch and delivers what decoded.
func (c *Consumer) process(batch []*job) {
	ctx := batch[0].part.ctx
	if ctx.Err() != nil {
		for _, j := range batch {
			c.finish(j, false)
		}
		return
	}
	events := make([]sink.Event, 0, len(batch))
	jobs := make([]*job, 0, len(batch))
	for _, j := range batch {
		topic := j.rec.Topic
		if j.part.dlq {
			env, err := record.ParseEnvelope(j.rec)
			if err != nil {
				// A DLQ record sluice did not write: park it rather than
				// loop on it.
				c.deadLetter(ctx, j, &failure{class: record.ClassDecode, err: err, park: record.ParkedUnreadable})
				continue
			}
			if !env.Retryable {
				c.m.events.WithLabelValues("skipped").Inc()
				c.finish(j, true)
				continue
			}
			j.env = &env
			// The envelope is anyone's who may write the DLQ topic: the
			// source topic is the DLQ topic's own.
			topic = record.SourceOf(j.rec.Topic)
			if reason, err := c.checkDrained(topic, j.rec, &env); err != nil {
				c.m.drainRefused.WithLabelValues(j.rec.Topic, reason).Inc()
				c.deadLetter(ctx, j, &failure{class: record.ClassDecode, err: err, park: reason})
				continue
			}
			if err := c.limiter.Wait(ctx); err != nil {
				c.finish(j, false)
				continue
			}
		}
		ev, err := Decode(c.reg, topic, j.rec)
		if err != nil {
			c.deadLetter(ctx, j, &failure{class: record.ClassDecode, err: err})
			continue
		}
		if j.env != nil {
			// The sink sees where the event was published, not where it
			// was dead-lettered.
			ev.Partition, ev.Offset = j.env.SourcePartition, j.env.SourceOffset
		}
		events = append(events, ev)
		jobs = append(jobs, j)
	}
	if len(jobs) > 0 {
		c.deliver(ctx, jobs, events)
	}
}

// failure is why a job goes to the DLQ.
type failure struct {
	class     string
	err       error
	attempts  int
	retryable bool
	first     time.Time
	// park sends the record straight to the parked topic with this
	// reason.
	park string
}

// deliver writes the events of jobs, retrying transient failures, and
// finishes every job: written, dead-lettered or abandoned.
func (c *Consumer) deliver(ctx context.Context, jobs []*job, events []sink.Event) {
	name := c.sink.Name()
	drain := jobs[0].part.dlq
	attempts := 0
	var first time.Time
	for {
		if !c.acquire(ctx) {
			for _, j := range jobs {
				c.finish(j, false)
			}
			return
		}
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, c.cfg.WriteTimeout)
		conflicts, err := c.sink.Write(wctx, events)
		cancel()
		c.m.sinkLatency.WithLabelValues(name).Observe(time.Since(start).Seconds())
		if err == nil {
			c.breaker.Record(false)
			c.reportConflicts(name, events, conflicts)
			for _, j := range jobs {
				c.m.events.WithLabelValues("written").Inc()
				c.finish(j, true)
			}
			return
		}
		if ctx.Err() != nil {
			// Abandoned mid-write: the outcome is unknown, and unknown is
			// never committed.
			c.breaker.Abandon()
			for _, j := range jobs {
				c.finish(j, false)
			}
			return
		}
		class, retryAfter := sink.Classify(err)
		c.m.sinkErrors.WithLabelValues(name, class.String()).Inc()
		c.breaker.Record(class == sink.Transient)
		now := c.o.clock.Now()
		if first.IsZero() {
			first = now
		}
		attempts++
		if class == sink.Permanent {
			if len(jobs) > 1 {
				// Find the event that fails alone; the others are written.
				half := len(jobs) / 2
				c.deliver(ctx, jobs[:half], events[:half])
				c.deliver(ctx, jobs[half:], events[half:])
				return
			}
			c.deadLetter(ctx, jobs[0], &failure{class: class.String(), err: err, attempts: attempts, first: first})
			return
		}
		if c.breaker.State() != breaker.Closed {
			// The sink is down, not this event: wait for the breaker
			// without spending the retry budget.
			attempts, first = 0, time.Time{}
			continue
		}
		// The budget is spent only once the breaker has seen enough writes
		// to tell this event's failure from an outage starting.
		spent := (drain || attempts >= c.cfg.Retry.MaxAttempts) && c.breaker.Judged()
		if spent || now.Sub(first) >= c.cfg.Retry.MaxElapsed {
			for _, j := range jobs {
				c.deadLetter(ctx, j, &failure{class: class.String(), err: err, attempts: attempts, retryable: true, first: first})
			}
			return
		}
		c.m.retries.WithLabelValues(name).Inc()
		select {
		case <-c.o.clock.After(c.backoff(attempts, retryAfter)):
		case <-ctx.Done():
		}
	}
}

// reportConflicts counts and logs the conflicts a write reported: events
// whose identity the sink held with another payload. The sink kept what it
// held and recorded the copy, so their jobs finish as written.
func (c *Consumer) reportConflicts(name string, events []sink.Event, conflicts []sink.Conflict) {
	for _, cf := range conflicts {
		if cf.Index < 0 || cf.Index >= len(events) {
			c.log.Error("sink reported a conflict outside its batch", "sink", name, "index", cf.Index, "batch", len(events))
			continue
		}
		e := &events[cf.Index]
		c.m.sinkConflicts.WithLabelValues(name, e.Source).Inc()
		c.log.Warn("sink conflict: identity held with another payload, the first kept", "sink", name,
			"source", e.Source, "id", e.ID, "payload_fingerprint", e.PayloadFingerprint,
			"stored_fingerprint", cf.StoredFingerprint, "topic", e.Topic, "partition", e.Partition, "offset", e.Offset)
	}
}

// acquire waits until the breaker lets a write through. It reports false
// when ctx is done first.
func (c *Consumer) acquire(ctx context.Context) bool {
	for {
		ok, wait, changed := c.breaker.Acquire()
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-c.o.clock.After(wait):
		case <-ctx.Done():
			return false
		}
	}
}

// backoff is the wait before retry number attempt (1 for the first):
// full jitter over an exponential ceiling, and never less than what the
// sink asked for.
func (c *Consumer) backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := backoff.Config{Initial: c.cfg.Retry.InitialBackoff, Max: c.cfg.Retry.MaxBackoff}.Wait(attempt, nil)
	return max(d, retryAfter)
}

// deadLetter produces j's record to its DLQ or parked topic and finishes
// j once the produce is acknowledged. A produce that fails transiently is
// retried while j's partition is ours; one Kafka refuses for good (too
// large, not authorized) is replaced by a bounded copy in the parked
// topic. When that is refused too, Run stops with a *DeadLetterError and
// j stays unfinished, so its offset is never committed.
func (c *Consumer) deadLetter(ctx context.Context, j *job, f *failure) {
	now := c.o.clock.Now()
	env := record.Envelope{
		Class:           f.class,
		Error:           clip.String(f.err.Error(), c.cfg.DLQ.MaxErrorBytes),
		Sink:            c.sink.Name(),
		Attempts:        f.attempts,
		FirstFailureAt:  now,
		LastFailureAt:   now,
		Retryable:       f.retryable,
		SourceTopic:     j.rec.Topic,
		SourcePartition: j.rec.Partition,
		SourceOffset:    j.rec.Offset,
		Group:           c.cfg.Group,
	}
	if !f.first.IsZero() {
		env.FirstFailureAt = f.first
	}
	source := j.rec.Topic
	park := f.park
	if j.part.dlq {
		// A drained record goes back to the DLQ or parked topic of the
		// topic it was drained from, whatever its envelope says.
		source = record.SourceOf(j.rec.Topic)
		env.SourceTopic = source
		if prev := j.env; prev != nil {
			env.SourcePartition = prev.SourcePartition
			env.SourceOffset = prev.SourceOffset
			env.FirstFailureAt = prev.FirstFailureAt
			env.DLQRetries = prev.DLQRetries + 1
			env.Attempts = prev.Attempts + f.attempts
			switch {
			case park != "":
			case env.DLQRetries > c.cfg.DLQ.MaxRetries:
				park = record.ParkedMaxRetries
			case now.After(prev.FirstFailureAt.Add(c.cfg.DLQ.Deadline)):
				park = record.ParkedDeadline
			}
		}
	}
	topic, kind := record.DLQTopic(source), "dlq"
	if park != "" {
		topic, kind = record.ParkedTopic(source), "parked"
		env.ParkedReason = park
		env.Retryable = false
	}
	err := c.produceDeadLetter(ctx, record.NewDeadLetter(topic, j.rec, &env))
	if err != nil && ctx.Err() == nil {
		// Kafka will never take it: park a copy cut to fit instead.
		refused := topic
		topic, kind = record.ParkedTopic(source), "parked"
		env, err = c.parkRefused(ctx, j, env, refused, err)
	}
	if err != nil {
		c.finish(j, false)
		return
	}
	c.m.deadLetters.WithLabelValues(topic, kind, env.Class).Inc()
	c.m.events.WithLabelValues(kind).Inc()
	c.log.Info("dead-lettered", "topic", topic, "event_topic", j.rec.Topic, "partition", j.rec.Partition,
		"offset", j.rec.Offset, "class", env.Class, "err", env.Error, "parked_reason", env.ParkedReason)
	c.finish(j, true)
}

func (c *Consumer) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, ps := range assigned {
		for _, p := range ps {
			tp := topicPartition{t, p}
			c.parts[tp] = newPartState(c.workCtx, tp, record.IsDerived(t))
		}
	}
	c.log.Info("partitions assigned", "partitions", assigned)
}

// detach removes the partitions from the assignment and returns their
// states.
func (c *Consumer) detach(m map[string][]int32) []*partState {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*partState
	for t, ps := range m {
		for _, p := range ps {
			tp := topicPartition{t, p}
			if st := c.parts[tp]; st != nil {
				out = append(out, st)
				delete(c.parts, tp)
				c.m.lag.DeleteLabelValues(t, strconv.Itoa(int(p)))
			}
		}
	}
	return out
}

// onRevoked lets in-flight work of the revoked partitions finish, up to
// RevokeTimeout, abandons the rest and commits what finished, before the
// partitions move to another member.
func (c *Consumer) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	parts := c.detach(revoked)
	deadline := time.NewTimer(c.cfg.RevokeTimeout)
	defer deadline.Stop()
wait:
	for _, p := range parts {
		select {
		case <-p.idleChan():
		case <-deadline.C:
			break wait
		case <-c.workCtx.Done():
			// Run is stopping and has already waited for the work.
			break wait
		}
	}
	c.commitMu.Lock()
	for _, p := range parts {
		p.gone.Store(true)
		p.abandon()
	}
	c.commitMu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, c.cfg.RevokeTimeout)
	c.commitPartsAlways(cctx, parts)
	cancel()
	c.log.Info("partitions revoked", "partitions", revoked)
}

// onLost abandons the partitions' work at once: the group has moved on
// and a commit would be refused.
func (c *Consumer) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	for _, p := range c.detach(lost) {
		p.gone.Store(true)
		p.abandon()
	}
	c.log.Warn("partitions lost", "partitions", lost)
}

func (c *Consumer) assigned() []*partState {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*partState, 0, len(c.parts))
	for _, p := range c.parts {
		out = append(out, p)
	}
	return out
}

func (c *Consumer) commitLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			cctx, cancel := context.WithTimeout(ctx, c.cfg.RevokeTimeout)
			c.commitParts(cctx, c.assigned())
			cancel()
		case <-ctx.Done():
			return
		}
	}
}

// commitParts commits the finished offsets of partitions still assigned.
func (c *Consumer) commitParts(ctx context.Context, parts []*partState) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	live := parts[:0:0]
	for _, p := range parts {
		if !p.gone.Load() {
			live = append(live, p)
		}
	}
	c.commitLocked(ctx, live)
}

// commitPartsAlways commits the finished offsets of revoked partitions.
func (c *Consumer) commitPartsAlways(ctx context.Context, parts []*partState) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	c.commitLocked(ctx, parts)
}

func (c *Consumer) commitLocked(ctx context.Context, parts []*partState) {
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	type pending struct {
		p   *partState
		off int64
	}
	var todo []pending
	for _, p := range parts {
		off, ok := p.wm.Committable()
		p.mu.Lock()
		prev := p.committed
		p.mu.Unlock()
		if !ok || off <= prev {
			continue
		}
		if offsets[p.tp.topic] == nil {
			offsets[p.tp.topic] = make(map[int32]kgo.EpochOffset)
		}
		offsets[p.tp.topic][p.tp.partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
		todo = append(todo, pending{p, off})
	}
	if len(todo) == 0 {
		return
	}
	var failed map[topicPartition]bool
	c.client.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			c.log.Warn("commit", "err", err)
			failed = map[topicPartition]bool{}
			for _, t := range todo {
				failed[t.p.tp] = true
			}
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					if failed == nil {
						failed = map[topicPartition]bool{}
					}
					failed[topicPartition{t.Topic, p.Partition}] = true
					c.log.Warn("commit", "topic", t.Topic, "partition", p.Partition, "code", p.ErrorCode)
				}
			}
		}
	})
	for _, t := range todo {
		if failed[t.p.tp] {
			continue
		}
		t.p.mu.Lock()
		t.p.committed = t.off
		t.p.mu.Unlock()
		c.m.committed.WithLabelValues(t.p.tp.topic, strconv.Itoa(int(t.p.tp.partition))).Set(float64(t.off))
	}
}

// lagLoop measures lag and decides whether the DLQ needs draining.
func (c *Consumer) lagLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.LagInterval)
	defer t.Stop()
	for {
		c.measureLag(ctx)
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

func (c *Consumer) measureLag(ctx context.Context) {
	parts := c.assigned()
	if len(parts) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.LagInterval+5*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.client)
	var topics []string
	seen := map[string]bool{}
	for _, p := range parts {
		if !seen[p.tp.topic] {
			seen[p.tp.topic] = true
			topics = append(topics, p.tp.topic)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		c.log.Debug("lag: list end offsets", "err", err)
		return
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		c.log.Debug("lag: list start offsets", "err", err)
		return
	}
	committed, err := adm.FetchOffsets(ctx, c.cfg.Group)
	if err != nil {
		c.log.Debug("lag: fetch offsets", "err", err)
		return
	}
	pending := map[*partState]int64{}
	for _, p := range parts {
		end, ok := ends.Lookup(p.tp.topic, p.tp.partition)
		if !ok || end.Err != nil {
			continue
		}
		pos := int64(0)
		if s, ok := starts.Lookup(p.tp.topic, p.tp.partition); ok && s.Err == nil {
			pos = s.Offset
		}
		if o, ok := committed.Lookup(p.tp.topic, p.tp.partition); ok && o.Err == nil && o.At > pos {
			pos = o.At
		}
		lag := max(end.Offset-pos, 0)
		c.m.lag.WithLabelValues(p.tp.topic, strconv.Itoa(int(p.tp.partition))).Set(float64(lag))
		if p.dlq && end.Offset > max(pos, p.next.Load()) {
			pending[p] = end.Offset
		}
	}
	c.maybeStartPass(pending)
}

// maybeStartPass starts a drain pass over the DLQ partitions with
// records, up to their current end offsets, when the breaker is closed and
// has been, with no pass, for DLQ.DrainInterval.
func (c *Consumer) maybeStartPass(pending map[*partState]int64) {
	if len(pending) == 0 || c.breaker.State() != breaker.Closed {
		return
	}
	c.passMu.Lock()
	defer c.passMu.Unlock()
	if c.pass != nil || c.o.clock.Now().Sub(c.quietSince) < c.cfg.DLQ.DrainInterval {
		return
	}
	pass := &drainPass{}
	resume := make(map[string][]int32)
	for p, end := range pending {
		if p.gone.Load() {
			continue
		}
		p.polledPass.Store(false)
		p.passEnd.Store(end)
		pass.parts = append(pass.parts, p)
		resume[p.tp.topic] = append(resume[p.tp.topic], p.tp.partition)
	}
	if len(pass.parts) == 0 {
		return
	}
	c.pass = pass
	c.client.ResumeFetchPartitions(resume)
	c.log.Info("drain pass", "partitions", resume)
	c.wakeMode()
}

// passActive reports whether a drain pass is in progress. A pass is over
// when each of its partitions was revoked or had all its pass records
// polled and finished; passActive then ends it.
func (c *Consumer) passActive() bool {
	c.passMu.Lock()
	defer c.passMu.Unlock()
	if c.pass == nil {
		return false
	}
	for _, p := range c.pass.parts {
		if p.gone.Load() {
			continue
		}
		if !p.polledPass.Load() || p.wm.InFlight() > 0 {
			return true
		}
	}
	for _, p := range c.pass.parts {
		p.passEnd.Store(0)
	}
	c.pass = nil
	c.quietSince = c.o.clock.Now()
	c.log.Info("drain pass done")
	return false
}

func (c *Consumer) wakeMode() {
	select {
	case c.modeWake <- struct{}{}:
	default:
	}
}

// modeLoop runs the mode state machine: PAUSED while the breaker is not
// closed (fetching stays on when nothing is in flight, so that a record
// can be the half-open probe), else DRAIN_DLQ while the DLQ has records,
// else NORMAL.
func (c *Consumer) modeLoop(ctx context.Context) {
	for {
		c.evaluateMode()
		select {
		case <-c.modeWake:
		case <-ctx.Done():
			return
		}
	}
}

func (c *Consumer) evaluateMode() {
	st := c.breaker.State()
	c.mu.Lock()
	idle := c.inFlight == 0
	c.mu.Unlock()
	var m Mode
	switch {
	case st != breaker.Closed:
		m = ModePaused
	case c.passActive():
		m = ModeDrainDLQ
	default:
		m = ModeNormal
	}
	switch {
	case m == ModePaused && !idle:
		c.client.PauseFetchTopics(c.sources...)
		c.client.PauseFetchTopics(c.dlqs...)
	case m == ModePaused:
		c.client.ResumeFetchTopics(c.sources...)
	case m == ModeDrainDLQ:
		c.client.ResumeFetchTopics(c.sources...)
		c.client.ResumeFetchTopics(c.dlqs...)
	default:
		c.client.ResumeFetchTopics(c.sources...)
		c.client.PauseFetchTopics(c.dlqs...)
	}
	if old := c.setMode(m); old != m {
		c.log.Info("mode", "from", old.String(), "to", m.String())
	}
}

func (c *Consumer) setMode(m Mode) Mode {
	old := Mode(c.mode.Swap(int32(m)))
	for _, x := range allModes {
		v := 0.0
		if x == m {
			v = 1
		}
		c.m.mode.WithLabelValues(x.String()).Set(v)
	}
	return old
}

// Collectors returns the consumer's metrics, for callers that register
// them elsewhere.
func (c *Consumer) Collectors() []prometheus.Collector { return c.m.collectors() }
