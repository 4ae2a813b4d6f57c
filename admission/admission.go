package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
)

// Durability says where an admitted record was made durable.
type Durability int

const (
	// DurabilityKafka: acknowledged by Kafka with acks=all.
	DurabilityKafka Durability = iota + 1
	// DurabilityLocalDisk: fsync'd in the spool; the drainer publishes it.
	DurabilityLocalDisk
)

// Admitted is the answer for one record. Err is nil when the record is
// durable; otherwise RetryAfter is the wait to suggest when retrying may
// help (a full spool, Kafka unavailable without a spool).
type Admitted struct {
	Durability Durability
	Err        error
	RetryAfter time.Duration
}

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

// The drainer writes its cursor after ackEvery records or ackInterval,
// whichever comes first, and whenever it has caught up with the spool.
const (
	ackEvery    = 4096
	ackInterval = 200 * time.Millisecond
	// idleCheck is how long the drainer waits for records before it checks
	// whether it can return to DIRECT.
	idleCheck = 500 * time.Millisecond
	// finishBound caps how long the switch back to DIRECT holds requests.
	finishBound = 250 * time.Millisecond
	// drainWindow is how many batches the drainer keeps in flight.
	drainWindow = 4
	// drainBackoffStart is the first wait after a failed drain step; it
	// doubles up to Config.DrainBackoffMax.
	drainBackoffStart = 100 * time.Millisecond
	// maxRecycledEncoding is the largest encoding buffer kept for reuse.
	maxRecycledEncoding = 1 << 20
)

// kafka is what admission needs of Kafka: *publish.Producer, seen through
// producerKafka, or a test's stand-in.
type kafka interface {
	Publish(ctx context.Context, records []*kgo.Record) []error
	Send(ctx context.Context, records []*kgo.Record) sending
}

// sending is one Send's records on their way to Kafka (*publish.Sent).
type sending interface {
	HandedOver() bool
	Wait(ctx context.Context) []error
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
// (Producer.Send); the rest are spooled behind them.
type Admission struct {
	cfg   Config
	kafka kafka
	spool *buffer.Spool // nil: DIRECT only, failures are answered
	log   *slog.Logger

	beforeFallback func() // options.beforeFallback

	mu       sync.RWMutex // held shared to choose a mode and append; exclusively to return to DIRECT
	mode     atomic.Int32
	inFlight atomic.Int64

	rateMu    sync.Mutex
	drainRate float64 // bytes/s drained, smoothed; 0 until measured

	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}

	metrics *metrics

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
		wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}),
	}
	a.metrics = newMetrics(func() float64 { return float64(a.Mode()) }, a.rate)
	if o.registerer != nil {
		if err := a.metrics.register(o.registerer); err != nil {
			return nil, err
		}
	}
	if spool != nil && (!spool.Empty() || cfg.SpoolFirst) {
		a.mode.Store(int32(ModeSpooling))
	}
	if spool == nil {
		close(a.stopped)
		return a, nil
	}
	go a.drain()
	return a, nil
}

// Mode is the current admission mode.
func (a *Admission) Mode() Mode { return Mode(a.mode.Load()) }

// pinger is a kafka that can tell whether Kafka answers (*publish.Producer).
type pinger interface {
	Ping(ctx context.Context) error
}

// Ready reports whether a record admitted now could be made durable. While
// records go to the spool (SpoolFirst, or SPOOLING until it is drained)
// that needs the spool to take appends (buffer.Spool.Health), whatever
// Kafka does; otherwise Kafka answering a ping within ctx, or a spool that
// takes appends, will do. It is meant for readiness checks; the error says
// why a record would be refused. A producer without Ping counts as
// answering.
func (a *Admission) Ready(ctx context.Context) error {
	select {
	case <-a.stop:
		return fmt.Errorf("admission: closed")
	default:
	}
	if a.spool != nil && (a.cfg.SpoolFirst || a.Mode() == ModeSpooling) {
		if serr := a.spool.Health(); serr != nil {
			return fmt.Errorf("records go to the spool (%s), and it refuses appends: %w", a.Mode(), serr)
		}
		return nil
	}
	p, ok := a.kafka.(pinger)
	if !ok {
		return nil
	}
	kerr := p.Ping(ctx)
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
	a.mu.RLock()
	if a.spool != nil && a.Mode() == ModeDirect && a.inFlight.Load()+int64(len(records)) > int64(a.cfg.InFlightBudget) {
		a.enterSpooling("in_flight_budget")
	}
	if a.spool != nil && a.Mode() == ModeSpooling {
		a.spoolAll(ctx, records, out, all(len(records)))
		a.mu.RUnlock()
		return out
	}
	a.inFlight.Add(int64(len(records)))
	a.mu.RUnlock()

	pctx, cancel := context.WithDeadline(ctx, a.directDeadline(ctx))
	errs := a.kafka.Publish(pctx, records)
	cancel()
	a.inFlight.Add(-int64(len(records)))

	var retry []int
	for i, err := range errs {
		switch {
		case err == nil:
			out[i] = Admitted{Durability: DurabilityKafka}
		case a.spool != nil && publish.Retryable(err) && ctx.Err() == nil:
			retry = append(retry, i)
		default:
			out[i] = Admitted{Err: err, RetryAfter: retryAfterOf(err)}
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
		a.mu.RLock()
		a.enterSpooling(reasonOf(errs[retry[0]]))
		a.spoolAll(ctx, records, out, retry)
		a.mu.RUnlock()
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
// holds a.mu shared.
//
// A request may be larger than one append can carry (the spool's
// MaxAppendBytes), so its records go in as many appends as they need, one
// after another. The first append that fails answers its records and every
// later one with its error, so that none is spooled behind a refused one. A
// record too large for the spool on its own is refused alone, permanently.
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
	)
	flush := func() {
		if len(appended) == 0 || err != nil {
			return
		}
		chunk := make([][]byte, len(appended))
		for k, j := range appended {
			chunk[k] = data[j]
		}
		if err = a.spool.Append(ctx, chunk...); err != nil {
			a.refuseSpooled(err, out, idx[from:], data[from:])
		} else {
			a.metrics.spooled.Add(float64(len(appended)))
			for _, j := range appended {
				out[idx[j]] = Admitted{Durability: DurabilityLocalDisk}
			}
		}
		appended, framed = appended[:0], 0
	}
	for j := range data {
		if rerr := cfg.CheckRecord(len(data[j])); rerr != nil {
			out[idx[j]] = Admitted{Err: &publish.ProduceError{Topic: records[idx[j]].Topic,
				Err: fmt.Errorf("%w: %d bytes spooled: %w", buffer.ErrTooLarge, len(data[j]), rerr)}}
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
	if err == nil {
		a.signal()
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
		out[i] = Admitted{Err: err, RetryAfter: wait}
	}
}

// fullRetryAfter estimates when the drainer will have freed the bytes a
// refused request needs: its size over the observed drain rate, at least a
// second and at most a minute (5s while no drain rate is known).
func (a *Admission) fullRetryAfter(need int) time.Duration {
	rate := a.rate()
	if rate <= 0 {
		return 5 * time.Second
	}
	secs := math.Max(1, math.Min(60, math.Ceil(float64(need)/rate)))
	return time.Duration(secs) * time.Second
}

func (a *Admission) rate() float64 {
	a.rateMu.Lock()
	defer a.rateMu.Unlock()
	return a.drainRate
}

func (a *Admission) enterSpooling(reason string) {
	if a.mode.CompareAndSwap(int32(ModeDirect), int32(ModeSpooling)) {
		a.metrics.switches.WithLabelValues("SPOOLING", reason).Inc()
		a.log.Warn("admission: spooling", "reason", reason)
	}
}

func (a *Admission) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// reasonOf labels why a record fell back to the spool.
func reasonOf(err error) string {
	switch {
	case errors.Is(err, publish.ErrTimeout):
		return "latency"
	case errors.Is(err, publish.ErrBufferFull):
		return "in_flight_budget"
	}
	return "kafka_error"
}

func retryAfterOf(err error) time.Duration {
	var pe *publish.ProduceError
	if errors.As(err, &pe) {
		return pe.RetryAfter
	}
	return 0
}

// drain replays the spool to Kafka in order until Close. A failed publish
// acknowledges what was published before the first failure, rewinds and
// retries after a backoff, so a record is never skipped; records after the
// failure that did reach Kafka are published again (duplicates, absorbed by
// identity downstream). A failed acknowledgement (the cursor write hit
// ENOSPC, EIO or EROFS) is a drain failure too: whatever Ack returned, the
// read position goes back to the first record not acknowledged, so a later
// acknowledgement can only cover records that were published.
func (a *Admission) drain() {
	defer close(a.stopped)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-a.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	backoff := drainBackoffStart
	var (
		pending     buffer.Position // published, not yet acknowledged to the spool
		havePending bool
		unacked     int
		lastAck     = time.Now()
		window      []*drainBatch // sent, oldest first
	)
	ack := func() error {
		if !havePending {
			return nil
		}
		err := a.spool.Ack(pending)
		havePending, unacked, lastAck = false, 0, time.Now()
		if err != nil {
			return fmt.Errorf("admission: acknowledging the spool at %v: %w", pending, err)
		}
		return nil
	}
	defer func() {
		if err := ack(); err != nil {
			a.log.Error("admission: drain stopping", "err", err)
		}
	}()
	// failed handles every failed drain step alike: it settles what is in
	// flight, acknowledges what was published before the failure (an
	// acknowledgement that fails is only logged: the rewind below makes up
	// for it), rewinds to the first record not acknowledged and backs off.
	failed := func(err error) {
		// Records of later batches may reach Kafka too: they are read
		// again after the rewind and published twice (duplicates,
		// absorbed by identity downstream), never skipped.
		for _, later := range window {
			later.wait(ctx, a.cfg.DrainTimeout)
		}
		window = nil
		if aerr := ack(); aerr != nil {
			err = errors.Join(err, aerr)
		}
		if ctx.Err() != nil {
			return
		}
		a.spool.Rewind()
		a.metrics.drainErrors.Inc()
		a.log.Warn("admission: drain failed; retrying", "err", err, "backoff", backoff)
		a.sleep(ctx, time.Duration(rand.Int64N(int64(backoff))+1))
		backoff = min(2*backoff, a.cfg.DrainBackoffMax)
	}
	// ready is done: Next with it returns what is there without waiting.
	ready, notWaiting := context.WithCancel(ctx)
	notWaiting()
	for ctx.Err() == nil {
		// Keep up to drainWindow batches in flight: reading and sending the
		// next while Kafka acknowledges the earlier ones hides the round
		// trip a one-at-a-time drainer waits out per batch. Wait for
		// records only when nothing is in flight, and then bounded, so that
		// an empty spool in SPOOLING mode (an append that failed) still
		// returns to DIRECT.
		idle := false
		var readErr error
		// A batch the producer refused part of is the last one sent until
		// it is settled: a later batch must not get into Kafka ahead of
		// its refused records.
		for len(window) < drainWindow && (len(window) == 0 || window[len(window)-1].sent.HandedOver()) {
			wait, cancelWait := ready, context.CancelFunc(func() {})
			if len(window) == 0 {
				wait, cancelWait = context.WithTimeout(ctx, idleCheck)
			}
			b, err := a.sendBatch(wait, ctx)
			idle = len(window) == 0 && errors.Is(err, context.DeadlineExceeded) && wait.Err() != nil && ctx.Err() == nil
			cancelWait()
			if err != nil {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
					readErr = err
				}
				break
			}
			window = append(window, b)
			if b.short {
				break // caught up with the appends: nothing more to read now
			}
		}
		if idle {
			err := ack()
			if err == nil {
				err = a.finishDrain(ctx)
			}
			if err != nil {
				failed(err)
			}
			continue
		}
		var (
			b    *drainBatch
			n    int
			last buffer.Position
			err  = readErr
		)
		if len(window) > 0 {
			// A read error waits until what was sent before it is settled.
			b, window = window[0], window[1:]
			n, last, err = b.wait(ctx, a.cfg.DrainTimeout)
		} else if err == nil {
			continue // stopping
		}
		if n > 0 {
			pending, havePending = last, true
			unacked += n
		}
		if err != nil {
			failed(err)
			continue
		}
		// Every acknowledgement is a durable cursor write (fsyncs that
		// would slow the appends), so they are coalesced; an unwritten one
		// only means records published again after a crash, never a loss.
		// Catching up is worth a write only on the way back to DIRECT
		// (finishDrain needs every record acknowledged); with spool-first
		// the drainer catches up after nearly every batch.
		caughtUp := b.short && len(window) == 0
		if caughtUp && !a.cfg.SpoolFirst || unacked >= ackEvery || time.Since(lastAck) >= ackInterval {
			err = ack()
		}
		if err == nil && caughtUp {
			err = a.finishDrain(ctx)
		}
		if err != nil {
			failed(err)
			continue
		}
		backoff = drainBackoffStart
	}
	for _, b := range window {
		b.wait(ctx, a.cfg.DrainTimeout)
	}
}

// drainBatch is one read of the spool on its way to Kafka.
type drainBatch struct {
	a       *Admission
	entries []buffer.Entry // the decodable entries, one per record sent
	read    int            // entries read, decodable or not
	last    buffer.Position
	short   bool // fewer entries than asked for: the reader caught up
	bytes   int
	sent    sending
	start   time.Time
}

// sendBatch reads the next records of the spool (waiting for some under
// wait's context) and sends them to Kafka in order; publishing stops when
// ctx ends.
func (a *Admission) sendBatch(wait, ctx context.Context) (*drainBatch, error) {
	entries, err := a.spool.Next(wait, a.cfg.DrainBatch)
	if err != nil {
		return nil, err
	}
	b := &drainBatch{a: a, read: len(entries), last: entries[len(entries)-1].Pos, short: len(entries) < a.cfg.DrainBatch}
	records := make([]*kgo.Record, 0, len(entries))
	b.entries = entries[:0:0]
	for _, e := range entries {
		r, err := record.DecodeSpooledInPlace(e.Data) // Data is the drainer's own
		if err != nil {
			// The spool's checksum passed, so this is not disk damage but
			// a record this version cannot read; it is counted and logged
			// with its position, never silently dropped.
			a.metrics.undecodable.Inc()
			a.log.Error("admission: spooled record does not decode; skipped", "pos", fmt.Sprint(e.Pos), "err", err)
			continue
		}
		records = append(records, r)
		b.entries = append(b.entries, e)
		b.bytes += len(e.Data)
	}
	b.start = time.Now()
	b.sent = a.kafka.Send(ctx, records)
	return b, nil
}

// wait waits for the batch's records, at most timeout from when they were
// sent, and returns how many of the entries read were published, in order,
// and the position of the last; err is set when a record failed, after the
// records before it.
func (b *drainBatch) wait(ctx context.Context, timeout time.Duration) (int, buffer.Position, error) {
	a := b.a
	wctx, cancel := context.WithDeadline(ctx, b.start.Add(timeout))
	errs := b.sent.Wait(wctx)
	cancel()
	for i, err := range errs {
		if err != nil {
			if i == 0 {
				return 0, buffer.Position{}, err
			}
			a.metrics.drained.Add(float64(i))
			return i, b.entries[i-1].Pos, err
		}
	}
	a.metrics.drained.Add(float64(len(errs)))
	a.observeRate(b.bytes, time.Since(b.start))
	return b.read, b.last, nil
}

// drainBatch publishes the next records of the spool and waits for them:
// see sendBatch and drainBatch.wait.
func (a *Admission) drainBatch(wait, ctx context.Context, timeout time.Duration) (int, buffer.Position, error) {
	b, err := a.sendBatch(wait, ctx)
	if err != nil {
		return 0, buffer.Position{}, err
	}
	return b.wait(ctx, timeout)
}

// finishDrain returns to DIRECT once the drainer has caught up. Under
// steady load the spool is rarely empty at any instant, so it takes the
// mode lock exclusively (new requests wait; none is appending), publishes
// what is left, and switches. It gives up, staying SPOOLING, if that takes
// longer than finishBound (or LatencyThreshold, if shorter): requests wait
// at most that long. A publish or an acknowledgement that fails rewinds the
// spool to the first record not acknowledged, whatever was published after
// it, and is returned for the drainer to back off.
func (a *Admission) finishDrain(ctx context.Context) error {
	if a.cfg.SpoolFirst || a.Mode() == ModeDirect {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	deadline := time.Now().Add(min(a.cfg.LatencyThreshold, finishBound))
	for !a.spool.Empty() {
		if time.Now().After(deadline) {
			return nil
		}
		dctx, cancel := context.WithDeadline(ctx, deadline)
		n, last, err := a.drainBatch(dctx, dctx, time.Until(deadline))
		cancel()
		var aerr error
		if n > 0 {
			if aerr = a.spool.Ack(last); aerr != nil {
				aerr = fmt.Errorf("admission: acknowledging the spool at %v: %w", last, aerr)
			}
		}
		if err == nil && aerr == nil {
			continue
		}
		a.spool.Rewind()
		if aerr != nil {
			return errors.Join(err, aerr)
		}
		if dctx.Err() != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil // out of time, not a failure: the main loop goes on
		}
		return err
	}
	if a.mode.CompareAndSwap(int32(ModeSpooling), int32(ModeDirect)) {
		a.metrics.switches.WithLabelValues("DIRECT", "drained").Inc()
		a.log.Info("admission: spool drained; direct")
	}
	return nil
}

func (a *Admission) observeRate(bytes int, took time.Duration) {
	if took <= 0 {
		took = time.Millisecond
	}
	r := float64(bytes) / took.Seconds()
	a.rateMu.Lock()
	defer a.rateMu.Unlock()
	if a.drainRate == 0 {
		a.drainRate = r
		return
	}
	a.drainRate = 0.8*a.drainRate + 0.2*r
}

func (a *Admission) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Close stops the drainer and waits for it. Records left in the spool stay
// there for the next start. It does not close the producer or the spool.
func (a *Admission) Close() {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
	<-a.stopped
}
