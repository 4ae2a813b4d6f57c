package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/internal/share"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
)

// Mode is the admission mode.
type Mode int32

const (
	// ModeDirect produces to Kafka and answers after its ack.
	ModeDirect Mode = iota
	// ModeSpooling appends to the spool and answers after fsync; the
	// drainer replays the spool to Kafka in order.
	ModeSpooling
)

func (m Mode) String() string {
	if m == ModeSpooling {
		return "SPOOLING"
	}
	return "DIRECT"
}

// maxRecycledEncoding is the largest encoding buffer kept for reuse.
const maxRecycledEncoding = 1 << 20

// kafka is what admission needs of Kafka: *publish.Producer, seen through
// producerKafka, or a test's stand-in.
type kafka interface {
	Send(ctx context.Context, records []*kgo.Record) sending
	// DeliveryTimeout is how long the client may hold a record before it
	// fails it, and every record buffered behind it on its partition.
	DeliveryTimeout() time.Duration
}

// sending is one Send's records on their way to Kafka (*publish.Sent).
type sending interface {
	HandedOver() bool
	Wait(ctx context.Context) []error
	// Settled is closed once the client answered every record handed
	// over, also those Wait stopped waiting for.
	Settled() <-chan struct{}
}

// producerKafka is a *publish.Producer as admission's kafka.
type producerKafka struct{ *publish.Producer }

func (p producerKafka) Send(ctx context.Context, records []*kgo.Record) sending {
	return p.Producer.Send(ctx, records)
}

// Admission decides, record by record, whether Kafka or the spool makes a
// record durable, and owns the drainer that empties the spool into Kafka.
//
// Order: while the spool holds records, every new record goes to the spool
// too, and the drainer publishes the spool in order, so records of one key
// reach Kafka in the order they were admitted. The switch back to DIRECT
// takes the mode lock exclusively, so no spool append is under way when
// the drainer finds the spool empty, and every append happens under the
// lock shared with the mode SPOOLING, so none can land after the switch.
// Within one request, the producer hands Kafka a prefix of the records
// (publish.Producer.Send); the rest are spooled behind them.
type Admission struct {
	cfg   Config
	kafka kafka
	spool *buffer.Spool // nil: DIRECT only, failures are answered
	log   *slog.Logger
	// tracer makes the `spool append` spans (tracing.go); nil for none.
	tracer trace.Tracer

	beforeFallback func() // options.beforeFallback

	state    modeState
	inFlight atomic.Int64
	rate     drainRate

	drainer   *drainer // nil without a spool
	stopDrain context.CancelFunc
	closeOnce sync.Once
	closed    chan struct{}

	metrics *metrics
	shares  *spoolShares // nil without WithSourceShares or a spool

	// encoded recycles the buffers records are encoded into before an
	// append (the spool copies them).
	encoded sync.Pool
}

// New starts admission over producer and spool (nil for no spool). A
// spool that holds records from before a restart starts in SPOOLING and is
// drained first. Close stops it; it closes neither producer nor spool.
func New(cfg Config, producer *publish.Producer, spool *buffer.Spool, opts ...Option) (*Admission, error) {
	return newAdmission(cfg, producerKafka{producer}, spool, opts...)
}

func newAdmission(cfg Config, kafka kafka, spool *buffer.Spool, opts ...Option) (*Admission, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.SpoolFirst && spool == nil {
		return nil, errors.New("admission.spool_first: needs a spool")
	}
	o := options{logger: slog.Default()}
	for _, opt := range opts {
		opt.apply(&o)
	}
	a := &Admission{
		cfg: cfg, kafka: kafka, spool: spool, log: o.logger, beforeFallback: o.beforeFallback,
		closed: make(chan struct{}), tracer: o.tracer,
	}
	a.metrics = newMetrics(func() float64 { return float64(a.Mode()) }, a.rate.get)
	a.state.log, a.state.switches = o.logger, a.metrics.switches
	if spool != nil && o.shareWeights != nil {
		shares, err := newSpoolShares(spool.Config(), o.shareReserved, o.shareWeights)
		if err != nil {
			return nil, err
		}
		a.shares = shares
		shares.warnSmall(spool.Config(), o.logger)
		// Before any append or drain, so that each record is charged once.
		// A read that fails (damage since Open verified the spool) leaves
		// the records after it charged to nobody: the drainer meets the
		// same error and handles it, and start-up goes on.
		if err := a.shares.chargePending(spool); err != nil {
			o.logger.Warn("admission: charging the spooled records to their sources stopped; those after it are charged to nobody", "err", err)
		}
		a.metrics.shares = a.shares
	}
	if o.registerer != nil {
		if err := a.metrics.register(o.registerer); err != nil {
			return nil, err
		}
	}
	if spool != nil && (!spool.Empty() || cfg.SpoolFirst) {
		a.state.current.Store(int32(ModeSpooling))
	}
	if spool == nil {
		return a, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.drainer, a.stopDrain = newDrainer(cfg, kafka, spool, &a.state, &a.rate, o.logger, a.metrics), cancel
	a.drainer.shares = a.shares
	a.drainer.tracer = o.tracer
	go a.drainer.run(ctx)
	return a, nil
}

// Mode is the current admission mode.
func (a *Admission) Mode() Mode { return a.state.get() }

// modeState is the admission mode and the lock that orders spool appends
// against the return to DIRECT.
type modeState struct {
	mu       sync.RWMutex // held shared to choose a mode and append; exclusively to return to DIRECT
	current  atomic.Int32 // a Mode
	switches *prometheus.CounterVec
	log      *slog.Logger
}

func (m *modeState) get() Mode { return Mode(m.current.Load()) }

// toSpooling switches from DIRECT to SPOOLING, for reason.
func (m *modeState) toSpooling(reason string) {
	if m.current.CompareAndSwap(int32(ModeDirect), int32(ModeSpooling)) {
		m.switches.WithLabelValues(ModeSpooling.String(), reason).Inc()
		m.log.Warn("admission: spooling", "reason", reason)
	}
}

// toDirect switches from SPOOLING to DIRECT once the spool is drained. The
// caller holds mu exclusively.
func (m *modeState) toDirect() {
	if m.current.CompareAndSwap(int32(ModeSpooling), int32(ModeDirect)) {
		m.switches.WithLabelValues(ModeDirect.String(), switchDrained).Inc()
		m.log.Info("admission: spool drained; direct")
	}
}

// pinger is a kafka that can tell whether Kafka answers (*publish.Producer).
type pinger interface {
	Ping(ctx context.Context) error
}

// topicChecker is a kafka that can tell whether Kafka answers and has its
// topics (*publish.Producer).
type topicChecker interface {
	CheckTopics(ctx context.Context) error
}

// askKafka checks the topics, when the kafka can: kerr is its answer
// (a *publish.MissingTopicsError among them when one is missing) and
// asked is false when it could not.
func (a *Admission) askKafka(ctx context.Context) (kerr error, asked bool) {
	tc, ok := a.kafka.(topicChecker)
	if !ok {
		return nil, false
	}
	return tc.CheckTopics(ctx), true
}

// Ready reports whether a record admitted now could be made durable and
// reach Kafka. It is meant for readiness checks; the error says why not.
//
// Not ready: while Kafka refuses the spooled record the drainer is at
// permanently (the drain is blocked: nothing behind it reaches Kafka
// until an operator fixes the cause), and while the cluster says a topic
// of publish.WithTopics does not exist (the error is a
// *publish.MissingTopicsError; it is asked within ctx at every call, and
// the last answer stands while no broker answers).
//
// Otherwise, while records go to the spool (SpoolFirst, or SPOOLING until
// it is drained) that needs the spool to take appends
// (buffer.Spool.Health), whatever Kafka does; else Kafka answering within
// ctx, or a spool that takes appends, will do. A producer that cannot be
// asked counts as answering.
func (a *Admission) Ready(ctx context.Context) error {
	select {
	case <-a.closed:
		return errors.New("admission: closed")
	default:
	}
	if a.drainer != nil {
		if b := a.drainer.blocked.Load(); b != nil {
			return b
		}
	}
	kerr, asked := a.askKafka(ctx)
	var missing *publish.MissingTopicsError
	if errors.As(kerr, &missing) {
		return fmt.Errorf("admission: %w", kerr)
	}
	if a.spool != nil && (a.cfg.SpoolFirst || a.Mode() == ModeSpooling) {
		if serr := a.spool.Health(); serr != nil {
			return fmt.Errorf("records go to the spool (%s), and it refuses appends: %w", a.Mode(), serr)
		}
		return nil
	}
	if !asked {
		if p, ok := a.kafka.(pinger); ok {
			kerr = p.Ping(ctx)
		}
	}
	if kerr == nil {
		return nil
	}
	if a.spool == nil {
		return fmt.Errorf("kafka unreachable and no spool: %w", kerr)
	}
	if serr := a.spool.Health(); serr != nil {
		return fmt.Errorf("kafka unreachable (%w) and the spool refuses appends (%w)", kerr, serr)
	}
	return nil
}

// Admit makes each record durable in Kafka or the spool, or says why not.
// It returns by ctx's deadline.
func (a *Admission) Admit(ctx context.Context, records []*kgo.Record) []Admitted {
	out := make([]Admitted, len(records))
	if len(records) == 0 {
		return out
	}
	a.state.mu.RLock()
	if a.spool != nil && a.Mode() == ModeDirect && a.inFlight.Load()+int64(len(records)) > int64(a.cfg.InFlightBudget) {
		a.state.toSpooling(switchInFlightBudget)
	}
	if a.spool != nil && a.Mode() == ModeSpooling {
		a.spoolTraced(ctx, records, out, all(len(records)))
		a.state.mu.RUnlock()
		return out
	}
	a.inFlight.Add(int64(len(records)))
	a.state.mu.RUnlock()

	pctx, cancel := context.WithDeadline(ctx, a.directDeadline(ctx))
	sent := a.kafka.Send(pctx, records)
	errs := sent.Wait(pctx)
	cancel()
	if a.drainer != nil {
		// Records the client still holds may yet be failed, with what is
		// buffered behind them: the drainer hands nothing over until then.
		a.drainer.unsettled.add(sent)
	}
	a.inFlight.Add(-int64(len(records)))

	var retry []int
	for i, err := range errs {
		switch {
		case err == nil:
			// The client set the partition and offset before it answered.
			out[i] = Admitted{Durability: DurabilityKafka, Partition: records[i].Partition, Offset: records[i].Offset}
		case a.spool != nil && publish.Retryable(err) && ctx.Err() == nil:
			retry = append(retry, i)
		default:
			out[i] = refused(err, retryAfterOf(err))
		}
	}
	if len(retry) > 0 {
		if a.beforeFallback != nil {
			a.beforeFallback()
		}
		// SPOOLING is entered under the mode lock: the drainer returns to
		// DIRECT only under it, with the spool empty, so it cannot do so
		// between the switch and the append, and no later record of these
		// keys goes directly to Kafka past the spooled ones.
		a.state.mu.RLock()
		a.state.toSpooling(reasonOf(errs[retry[0]]))
		a.spoolTraced(ctx, records, out, retry)
		a.state.mu.RUnlock()
	}
	return out
}

// directDeadline: LatencyThreshold from now, but leave the caller time to
// hear the answer and, if Kafka is slow, for the spool append.
func (a *Admission) directDeadline(ctx context.Context) time.Time {
	now := time.Now()
	d := now.Add(a.cfg.LatencyThreshold)
	if cd, ok := ctx.Deadline(); ok {
		if cd = cd.Add(-cd.Sub(now) / 4); cd.Before(d) {
			d = cd
		}
	}
	return d
}

func all(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// spoolAll appends records[idx], in order, and answers them. The caller
// holds a.state.mu shared.
//
// A request may be larger than one append can carry (the spool's
// MaxAppendBytes), so its records go in as many appends as they need, one
// after another. The first append that fails answers its records and every
// later one with its error, so that none is spooled behind a refused one. A
// record too large for the spool on its own is refused alone, permanently.
// spoolTraced is spoolAll in a `spool append` span when the request's
// span records.
func (a *Admission) spoolTraced(ctx context.Context, records []*kgo.Record, out []Admitted, idx []int) {
	span := a.startSpoolAppend(ctx, len(idx))
	a.spoolAll(ctx, records, out, idx)
	endSpoolAppend(span, out, idx)
}

func (a *Admission) spoolAll(ctx context.Context, records []*kgo.Record, out []Admitted, idx []int) {
	buf, _ := a.encoded.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	enc := (*buf)[:0]
	data := make([][]byte, len(idx))
	for j, i := range idx {
		start := len(enc)
		enc = record.AppendSpooled(enc, records[i])
		// A record encoded before enc grew keeps pointing at the old array,
		// which stays valid.
		data[j] = enc[start:len(enc):len(enc)]
	}
	cfg := a.spool.Config()
	limit := cfg.MaxAppendBytes()
	var (
		err      error
		from     int   // first index of data in the append being built
		framed   int64 // its framed bytes
		appended []int // positions in idx of the records it carries
		// charges are what each record of data was charged to its source
		// (with shares); overShare the sources refused for their share in
		// this call, whose later records are refused too, so that none is
		// spooled behind a refused one of its source.
		charges   []spoolCharge
		overShare map[*share.Tenant]*SourceFullError
	)
	if a.shares != nil {
		charges = make([]spoolCharge, len(data))
	}
	flush := func() {
		if len(appended) == 0 || err != nil {
			return
		}
		chunk := make([][]byte, len(appended))
		for k, j := range appended {
			chunk[k] = data[j]
		}
		var pos buffer.Position
		if pos, err = a.spool.Append(ctx, chunk...); err != nil {
			// Nothing of a full append is on disk; an append cut off by
			// ctx may still be written, and its records are then given
			// back twice, the second time by the drainer: the source is
			// under-charged until it drains, never over-charged for good.
			for _, j := range appended {
				if charges != nil && charges[j].tenant != nil {
					charges[j].tenant.Give(charges[j].bytes)
				}
			}
			a.refuseSpooled(err, out, idx[from:], data[from:])
		} else {
			a.metrics.spooled.Add(float64(len(appended)))
			for _, j := range appended {
				out[idx[j]] = Admitted{Durability: DurabilityLocalDisk, Spool: pos}
				pos.Offset += buffer.FrameBytes(len(data[j]))
			}
		}
		appended, framed = appended[:0], 0
	}
	for j := range data {
		if rerr := cfg.CheckRecord(len(data[j])); rerr != nil {
			out[idx[j]] = refused(&publish.ProduceError{Topic: records[idx[j]].Topic,
				Err: fmt.Errorf("%w: %d bytes spooled: %w", buffer.ErrTooLarge, len(data[j]), rerr)}, 0)
			a.metrics.tooLarge.Inc()
			continue
		}
		fb := buffer.FrameBytes(len(data[j]))
		if framed+fb > limit {
			flush()
			if err != nil {
				break
			}
		}
		if a.shares != nil {
			name := sourceOf(records[idx[j]])
			t := a.shares.tenant(name)
			serr := overShare[t]
			if serr != nil && serr.Source != name {
				// Another unconfigured source, sharing the account.
				serr = &SourceFullError{Source: name, Held: serr.Held, Limit: serr.Limit, Need: fb}
			}
			if serr == nil && !t.TryTake(fb) {
				serr = &SourceFullError{Source: name, Guaranteed: t != a.shares.other, Held: t.Used(), Limit: t.Limit(), Need: fb}
				if overShare == nil {
					overShare = make(map[*share.Tenant]*SourceFullError, 1)
				}
				overShare[t] = serr
			}
			if serr != nil {
				out[idx[j]] = refused(serr, a.fullRetryAfter(int(fb)))
				a.metrics.full.Inc()
				continue
			}
			charges[j] = spoolCharge{tenant: t, bytes: fb}
		}
		if len(appended) == 0 {
			from = j
		}
		appended = append(appended, j)
		framed += fb
	}
	flush()
	if cap(enc) <= maxRecycledEncoding {
		*buf = enc
		a.encoded.Put(buf)
	}
}

// refuseSpooled answers, with an append's error, the records of idx from
// the failed append on, but for those already refused as too large.
func (a *Admission) refuseSpooled(err error, out []Admitted, idx []int, data [][]byte) {
	var wait time.Duration
	full := errors.Is(err, buffer.ErrFull)
	if full {
		size := 0
		for _, d := range data {
			size += len(d)
		}
		wait = a.fullRetryAfter(size)
	}
	for _, i := range idx {
		if out[i].Err != nil {
			continue
		}
		if full {
			a.metrics.full.Inc()
		}
		out[i] = refused(err, wait)
	}
}

// fullRetryAfter estimates when the drainer will have freed the bytes a
// refused request needs: its size over the observed drain rate, at least a
// second and at most a minute (5s while no drain rate is known).
func (a *Admission) fullRetryAfter(need int) time.Duration {
	rate := a.rate.get()
	if rate <= 0 {
		return 5 * time.Second
	}
	secs := math.Max(1, math.Min(60, math.Ceil(float64(need)/rate)))
	return time.Duration(secs) * time.Second
}

// reasonOf labels why a record fell back to the spool.
func reasonOf(err error) string {
	switch {
	case errors.Is(err, publish.ErrTimeout):
		return switchLatency
	case errors.Is(err, publish.ErrBufferFull):
		return switchInFlightBudget
	}
	return switchKafkaError
}

func retryAfterOf(err error) time.Duration {
	var pe *publish.ProduceError
	if errors.As(err, &pe) {
		return pe.RetryAfter
	}
	return 0
}

// flushPoll is how often Flush looks at the spool.
const flushPoll = 20 * time.Millisecond

// Flush waits until the drainer has published every spooled record, ctx
// ends or admission is closed, and returns the records still spooled.
// It is for a stop: once no request comes any more, the spool can only
// shrink.
func (a *Admission) Flush(ctx context.Context) int64 {
	if a.spool == nil {
		return 0
	}
	tick := time.NewTicker(flushPoll)
	defer tick.Stop()
	for !a.spool.Empty() {
		select {
		case <-ctx.Done():
			return a.spool.Stats().Records
		case <-a.closed:
			return a.spool.Stats().Records
		case <-tick.C:
		}
	}
	return 0
}

// Close stops the drainer and waits for it. Records left in the spool stay
// there for the next start. It does not close the producer or the spool.
func (a *Admission) Close() {
	a.closeOnce.Do(func() {
		close(a.closed)
		if a.drainer != nil {
			a.stopDrain()
		}
	})
	if a.drainer != nil {
		<-a.drainer.done
	}
}
