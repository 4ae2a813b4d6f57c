package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
)

// The drainer writes its cursor after ackEvery records or ackInterval,
// whichever comes first, and whenever it has caught up with the spool
// (but with spool-first). A cursor write is two fsyncs (the file's and
// its directory's, spool.Ack), about a millisecond of CPU on the gateway's
// core: at the spool's full rate ackInterval sets the pace, so a crash
// publishes again at most ackInterval of drained records, never loses one.
const (
	ackEvery    = 1 << 15
	ackInterval = 200 * time.Millisecond
	// idleCheck is how long the drainer waits for records before it checks
	// whether it can return to DIRECT.
	idleCheck = 500 * time.Millisecond
	// finishBound caps how long the switch back to DIRECT holds requests.
	finishBound = 250 * time.Millisecond
	// drainWindow is how many batches the drainer keeps in flight.
	drainWindow = 4
	// drainBackoffStart is the ceiling of the first wait after a failed
	// drain step; it doubles up to Config.DrainBackoffMax.
	drainBackoffStart = 100 * time.Millisecond
)

// drainer replays the spool to Kafka in order. Admission starts one when it
// has a spool, and Close stops it and waits for it.
//
// A failed publish acknowledges what was published before the first
// failure, rewinds and retries after a backoff, so a record is never
// skipped; records after the failure that did reach Kafka are published
// again (duplicates, absorbed by identity downstream).
//
// Per-key order rests on the client writing each partition in the order
// it was handed records, which holds but for one case: the client fails a
// partition's buffered records together (a delivery timeout, a fatal
// error), and a record handed over after such a failure is written ahead
// of the failed ones it follows, whose retry comes later. So the drainer
// hands the client nothing while the client could still fail a record
// handed over before and not known to be written:
//   - after a failed step, and after a direct publish gave up waiting
//     (Admit), it waits until the client has answered every such record
//     (unsettled) before it sends again, from the rewound position;
//   - within a pass it sends a batch only while the oldest batch in
//     flight is younger than half the client's delivery timeout (sendAge),
//     so no record in flight can have timed out by then.
//
// A fatal error that fails a batch while later ones are being handed over
// is not covered; it is a permanent refusal (the drain blocks at it, see
// below) until an operator fixes its cause. A failed
// acknowledgement (the cursor write hit ENOSPC, EIO or EROFS) is a drain
// failure too: whatever Ack returned, the read position goes back to the
// first record not acknowledged, so a later acknowledgement can only cover
// records that were published.
//
// A record Kafka refuses permanently (publish.Refusal: too large for the
// topic, not authorized, ...) is handled like any failure, since an
// operator may fix the topic or the ACL, but it is not silent: from the
// first refusal until the record is published, blocked says why (Ready
// returns it), sluice_spool_drain_blocked{reason} is 1, and the refusal
// is logged as an error.
type drainer struct {
	cfg     Config
	kafka   kafka
	spool   *buffer.Spool
	state   *modeState // the mode, and the lock the return to DIRECT takes
	rate    *drainRate // fed with each batch published
	backoff backoff.Config
	log     *slog.Logger
	metrics *metrics

	done chan struct{} // closed when run returns

	// unsettled are Sends given up on whose records the client may still
	// fail; Admit adds to it too.
	unsettled unsettledSends
	// sendAge: a batch is sent only while the oldest in flight is younger.
	sendAge time.Duration

	// blocked is set by run's goroutine while Kafka refuses the record
	// the drain is at permanently; Ready reads it.
	blocked atomic.Pointer[drainBlocked]

	// The rest belongs to run's goroutine.
	failures    int             // consecutive failed steps, for the backoff
	pending     buffer.Position // published, not yet acknowledged to the spool
	havePending bool
	unacked     int
	lastAck     time.Time
	window      []*drainBatch // sent, oldest first
	held        *drainBatch   // read, not sent yet: fill sends it next

	// shares, when set, get back each record's bytes once it is
	// published; given is the last record given back, so that records
	// published again after a rewind are not given back twice.
	shares   *spoolShares
	given    buffer.Position
	hasGiven bool

	// tracer makes the `send` spans of sampled records (tracing.go); nil
	// for none.
	tracer trace.Tracer
}

func newDrainer(cfg Config, k kafka, spool *buffer.Spool, state *modeState, rate *drainRate, log *slog.Logger, m *metrics) *drainer {
	return &drainer{
		cfg: cfg, kafka: k, spool: spool, state: state, rate: rate, log: log, metrics: m,
		backoff: backoff.Config{Initial: drainBackoffStart, Max: cfg.DrainBackoffMax},
		done:    make(chan struct{}),
		sendAge: k.DeliveryTimeout() / 2,
	}
}

// run drains until ctx ends, then settles what is in flight and
// acknowledges what was published.
func (d *drainer) run(ctx context.Context) {
	defer close(d.done)
	d.lastAck = time.Now()
	defer func() {
		if err := d.ack(); err != nil {
			d.log.Error("admission: drain stopping", "err", err)
		}
	}()
	// ready is done: Next with it returns what is there without waiting.
	ready, notWaiting := context.WithCancel(ctx)
	notWaiting()
	for ctx.Err() == nil {
		idle, readErr := d.fill(ctx, ready)
		if idle {
			err := d.ack()
			if err == nil {
				err = d.finish(ctx)
			}
			if err != nil {
				d.failed(ctx, err)
			}
			continue
		}
		var (
			b    *drainBatch
			n    int
			last buffer.Position
			err  = readErr
		)
		if len(d.window) > 0 {
			// A read error waits until what was sent before it is settled.
			b, d.window = d.window[0], d.window[1:]
			n, last, err = b.wait(ctx, d.cfg.DrainTimeout)
			if err != nil {
				d.unsettled.add(b.sent)
			}
		} else if err == nil {
			continue // stopping
		}
		if n > 0 {
			d.pending, d.havePending = last, true
			d.unacked += n
			d.published(last)
			d.giveBack(b)
		}
		if err != nil {
			d.failed(ctx, err)
			continue
		}
		// Every acknowledgement is a durable cursor write (fsyncs that
		// would slow the appends), so they are coalesced; an unwritten one
		// only means records published again after a crash, never a loss.
		// Catching up is worth a write only on the way back to DIRECT
		// (finish needs every record acknowledged); with spool-first the
		// drainer catches up after nearly every batch.
		caughtUp := b.short && len(d.window) == 0 && d.held == nil
		if caughtUp && !d.cfg.SpoolFirst || d.unacked >= ackEvery || time.Since(d.lastAck) >= ackInterval {
			err = d.ack()
		}
		if err == nil && caughtUp {
			err = d.finish(ctx)
		}
		if err != nil {
			d.failed(ctx, err)
			continue
		}
		d.failures = 0
	}
	for _, b := range d.window {
		b.wait(ctx, d.cfg.DrainTimeout)
	}
}

// fill keeps up to drainWindow batches in flight: reading and sending the
// next while Kafka acknowledges the earlier ones hides the round trip a
// one-at-a-time drainer waits out per batch. It waits for records only
// when nothing is in flight, and then at most idleCheck, so that an empty
// spool in SPOOLING mode (an append that failed) still returns to DIRECT:
// idle reports that wait ran out. readErr is a read that failed for
// another reason than ctx.
func (d *drainer) fill(ctx, ready context.Context) (idle bool, readErr error) {
	for len(d.window) < drainWindow && d.maySend() {
		b := d.held
		if b == nil {
			wait, cancelWait := ready, context.CancelFunc(func() {})
			if len(d.window) == 0 {
				wait, cancelWait = context.WithTimeout(ctx, idleCheck)
			}
			var err error
			b, err = d.read(wait)
			idle = len(d.window) == 0 && errors.Is(err, context.DeadlineExceeded) && wait.Err() != nil && ctx.Err() == nil
			cancelWait()
			if err != nil {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
					readErr = err
				}
				return idle, readErr
			}
		}
		// A direct publish may have given up while the read waited: the
		// batch is held, read but not sent, until it may be.
		d.held = b
		if len(d.window) == 0 {
			if d.unsettled.wait(ctx, d.log) != nil {
				return false, nil // stopping
			}
		} else if !d.maySend() {
			break
		}
		d.held = nil
		d.hand(ctx, b)
		d.window = append(d.window, b)
		if b.short {
			break // caught up with the appends: nothing more to read now
		}
	}
	return false, nil
}

// maySend reports whether another batch may join those in flight (see
// drainer's order). A batch the producer refused part of is the last one
// sent until it is settled: a later batch must not get into Kafka ahead of
// its refused records. With nothing in flight fill waits for what is
// unsettled instead.
func (d *drainer) maySend() bool {
	if len(d.window) == 0 {
		return true
	}
	return d.window[len(d.window)-1].sent.HandedOver() && !d.unsettled.any() &&
		time.Since(d.window[0].start) < d.sendAge
}

// ack writes the cursor for what was published, if anything is pending.
func (d *drainer) ack() error {
	if !d.havePending {
		return nil
	}
	err := d.spool.Ack(d.pending)
	d.havePending, d.unacked, d.lastAck = false, 0, time.Now()
	if err != nil {
		return fmt.Errorf("admission: acknowledging the spool at %v: %w", d.pending, err)
	}
	return nil
}

// failed handles every failed drain step alike: it gives up on what is in
// flight (the next pass waits until the client settled it), acknowledges
// what was published before the failure (an acknowledgement that fails is
// only logged: the rewind below makes up for it), rewinds to the first
// record not acknowledged and backs off.
func (d *drainer) failed(ctx context.Context, err error) {
	// Records of later batches may reach Kafka too: they are read again
	// after the rewind and published twice (duplicates, absorbed by
	// identity downstream), never skipped.
	for _, later := range d.window {
		d.unsettled.add(later.sent)
	}
	d.window, d.held = nil, nil // the rewind reads the held batch again
	if aerr := d.ack(); aerr != nil {
		err = errors.Join(err, aerr)
	}
	if ctx.Err() != nil {
		return
	}
	d.spool.Rewind()
	d.metrics.drainErrors.Inc()
	if reason := publish.Refusal(err); reason != "" {
		d.refused(reason, err)
	}
	d.failures++
	d.log.Warn("admission: drain failed; retrying", "err", err, "backoff", d.backoff.Ceiling(d.failures))
	sleep(ctx, d.backoff.Wait(d.failures, backoff.Full))
}

// drainBlocked is why the drain is stuck: Kafka refuses the spooled record
// at pos permanently. It is the error Ready returns.
type drainBlocked struct {
	reason string // publish.Refusal's
	topic  string // "" when the error did not say
	pos    buffer.Position
	hasPos bool
	err    error // Kafka's refusal
	since  time.Time
}

func (b *drainBlocked) Error() string {
	where := "a record"
	if b.hasPos {
		where = "the record at " + b.pos.String()
	}
	if b.topic != "" {
		where += " for topic " + b.topic
	}
	return fmt.Sprintf("admission: spool drain blocked since %s: Kafka refuses %s permanently (%s): %v; "+
		"it stays in the spool with every record behind it, and is retried",
		b.since.UTC().Format(time.RFC3339), where, b.reason, b.err)
}

func (b *drainBlocked) Unwrap() error { return b.err }

// spooledError is the failure of the spooled record at pos.
type spooledError struct {
	pos buffer.Position
	err error
}

func (e *spooledError) Error() string { return fmt.Sprintf("spooled record at %v: %v", e.pos, e.err) }
func (e *spooledError) Unwrap() error { return e.err }

// refused records that Kafka refused a spooled record permanently for
// reason: the first refusal of a record (or another reason for it) is
// logged as an error, and the drain is blocked until it is published.
func (d *drainer) refused(reason string, err error) {
	d.metrics.drainRefusals.WithLabelValues(reason).Inc()
	b := &drainBlocked{reason: reason, err: err, since: time.Now()}
	var se *spooledError
	if errors.As(err, &se) {
		b.pos, b.hasPos, b.err = se.pos, true, se.err
	}
	var pe *publish.ProduceError
	if errors.As(err, &pe) {
		b.topic = pe.Topic
	}
	prev := d.blocked.Load()
	if prev != nil && prev.pos == b.pos && prev.hasPos == b.hasPos {
		b.since = prev.since
	}
	if prev == nil || prev.reason != b.reason || prev.pos != b.pos || prev.topic != b.topic {
		d.log.Error("admission: Kafka refuses a spooled record permanently; the drain stays at it and retries, nothing is dropped",
			"reason", reason, "topic", b.topic, "pos", b.pos.String(), "err", b.err)
	}
	if prev != nil && prev.reason != reason {
		d.metrics.drainBlocked.WithLabelValues(prev.reason).Set(0)
	}
	d.metrics.drainBlocked.WithLabelValues(reason).Set(1)
	d.blocked.Store(b)
}

// published unblocks the drain once the record it was blocked at is
// published: last is the last record published, in spool order.
func (d *drainer) published(last buffer.Position) {
	b := d.blocked.Load()
	if b == nil || b.hasPos && last.Compare(b.pos) < 0 {
		return
	}
	d.blocked.Store(nil)
	d.metrics.drainBlocked.WithLabelValues(b.reason).Set(0)
	d.log.Info("admission: Kafka took the spooled record it refused; the drain goes on",
		"reason", b.reason, "topic", b.topic, "pos", b.pos.String(), "blocked_for", time.Since(b.since).Round(time.Millisecond))
}

// drainBatch is one read of the spool on its way to Kafka.
type drainBatch struct {
	d       *drainer
	entries []buffer.Entry // the decodable entries, one per record sent
	records []*kgo.Record  // the records, until they are sent
	read    int            // entries read, decodable or not
	last    buffer.Position
	short   bool // fewer entries than asked for: the reader caught up
	bytes   int
	sent    sending
	start   time.Time
	// charges are what each of entries was charged to its source, when
	// the spool is shared by sources; published is how many of entries
	// wait found published, in order.
	charges   []spoolCharge
	published int
	// spans are the records' `send` spans, by record, or nil
	// (startDrainSends).
	spans []trace.Span
}

// read reads the next records of the spool, waiting for some under wait's
// context.
func (d *drainer) read(wait context.Context) (*drainBatch, error) {
	entries, err := d.spool.Next(wait, d.cfg.DrainBatch)
	if err != nil {
		return nil, err
	}
	b := &drainBatch{d: d, read: len(entries), last: entries[len(entries)-1].Pos, short: len(entries) < d.cfg.DrainBatch}
	b.records = make([]*kgo.Record, 0, len(entries))
	b.entries = entries[:0:0]
	if d.shares != nil {
		b.charges = make([]spoolCharge, 0, len(entries))
	}
	for _, e := range entries {
		r, err := record.DecodeSpooledInPlace(e.Data) // Data is the drainer's own
		if err != nil {
			// The spool's checksum passed, so this is not disk damage but
			// a record this version cannot read; it is counted and logged
			// with its position, never silently dropped.
			d.metrics.undecodable.Inc()
			d.log.Error("admission: spooled record does not decode; skipped", "pos", fmt.Sprint(e.Pos), "err", err)
			continue
		}
		b.records = append(b.records, r)
		b.entries = append(b.entries, e)
		b.bytes += len(e.Data)
		if d.shares != nil {
			b.charges = append(b.charges, spoolCharge{tenant: d.shares.tenantOf(r), bytes: buffer.FrameBytes(len(e.Data))})
		}
	}
	return b, nil
}

// hand sends the batch's records to Kafka in order; publishing stops when
// ctx ends.
func (d *drainer) hand(ctx context.Context, b *drainBatch) {
	b.start = time.Now()
	b.spans = d.startDrainSends(b.records)
	b.sent = d.kafka.Send(ctx, b.records)
	b.records = nil
}

// wait waits for the batch's records, at most timeout from when they were
// sent, and returns how many of the entries read were published, in order,
// and the position of the last; err is set when a record failed, after the
// records before it.
func (b *drainBatch) wait(ctx context.Context, timeout time.Duration) (int, buffer.Position, error) {
	d := b.d
	wctx, cancel := context.WithDeadline(ctx, b.start.Add(timeout))
	errs := b.sent.Wait(wctx)
	cancel()
	endDrainSends(b.spans, errs)
	b.spans = nil
	for i, err := range errs {
		if err != nil {
			err = &spooledError{pos: b.entries[i].Pos, err: err}
			if i == 0 {
				return 0, buffer.Position{}, err
			}
			d.metrics.drained.Add(float64(i))
			b.published = i
			return i, b.entries[i-1].Pos, err
		}
	}
	d.metrics.drained.Add(float64(len(errs)))
	b.published = len(errs)
	d.rate.observe(b.bytes, time.Since(b.start))
	return b.read, b.last, nil
}

// giveBack gives b's entries that were published back to their sources'
// shares, but those given back before a rewind. It is called for batches
// in spool order only, from the first record not acknowledged on (never
// for the later batches failed settles after an earlier one failed), so
// that given is a prefix of the spool.
func (d *drainer) giveBack(b *drainBatch) {
	if d.shares == nil || b.published == 0 {
		return
	}
	// One Give per source and batch: a batch is mostly one source's.
	var sums []spoolCharge
	for i, c := range b.charges[:b.published] {
		pos := b.entries[i].Pos
		if d.hasGiven && pos.Compare(d.given) <= 0 {
			continue
		}
		d.given, d.hasGiven = pos, true
		if k := len(sums) - 1; k >= 0 && sums[k].tenant == c.tenant {
			sums[k].bytes += c.bytes
		} else {
			sums = append(sums, c)
		}
	}
	for _, c := range sums {
		c.tenant.Give(c.bytes)
	}
}

// publish publishes the next records of the spool and waits for them: see
// send and drainBatch.wait. A batch it gives up on is unsettled.
func (d *drainer) publish(wait, ctx context.Context, timeout time.Duration) (int, buffer.Position, error) {
	b, err := d.read(wait)
	if err != nil {
		return 0, buffer.Position{}, err
	}
	d.hand(ctx, b)
	n, last, err := b.wait(ctx, timeout)
	if err != nil {
		d.unsettled.add(b.sent)
	}
	d.giveBack(b)
	return n, last, err
}

// finish returns to DIRECT once the drainer has caught up. Under steady
// load the spool is rarely empty at any instant, so it takes the mode lock
// exclusively (new requests wait; none is appending), publishes what is
// left, and switches. It gives up, staying SPOOLING, if that takes longer
// than finishBound (or LatencyThreshold, if shorter): requests wait at most
// that long. A publish or an acknowledgement that fails rewinds the spool
// to the first record not acknowledged, whatever was published after it,
// and is returned for the drainer to back off.
func (d *drainer) finish(ctx context.Context) error {
	if d.cfg.SpoolFirst || d.state.get() == ModeDirect || d.held != nil {
		return nil // finish reads on from the reader: not past a held batch
	}
	d.state.mu.Lock()
	defer d.state.mu.Unlock()
	deadline := time.Now().Add(min(d.cfg.LatencyThreshold, finishBound))
	for !d.spool.Empty() {
		// With records unsettled nothing may be sent: the main loop waits.
		if time.Now().After(deadline) || d.unsettled.any() {
			return nil
		}
		dctx, cancel := context.WithDeadline(ctx, deadline)
		n, last, err := d.publish(dctx, dctx, time.Until(deadline))
		cancel()
		var aerr error
		if n > 0 {
			d.published(last)
			if aerr = d.spool.Ack(last); aerr != nil {
				aerr = fmt.Errorf("admission: acknowledging the spool at %v: %w", last, aerr)
			}
		}
		if err == nil && aerr == nil {
			continue
		}
		d.spool.Rewind()
		if aerr != nil {
			return errors.Join(err, aerr)
		}
		if dctx.Err() != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil // out of time, not a failure: the main loop goes on
		}
		return err
	}
	d.state.toDirect()
	return nil
}

// unsettledSends are Sends someone stopped waiting for while the client
// still held some of their records. Each holds at least one record in the
// client, whose buffer is bounded, and a settled one is dropped at the
// next add, any or wait: the list is bounded by the client's buffer.
type unsettledSends struct {
	mu   sync.Mutex
	list []sending
}

// add keeps s if the client still holds some of its records.
func (u *unsettledSends) add(s sending) {
	if settled(s) {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.pruneLocked()
	u.list = append(u.list, s)
}

func (u *unsettledSends) pruneLocked() {
	u.list = slices.DeleteFunc(u.list, settled)
}

// any reports whether one is unsettled.
func (u *unsettledSends) any() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.pruneLocked()
	return len(u.list) > 0
}

// wait waits until every one is settled, also those added meanwhile, or
// ctx ends (its error).
func (u *unsettledSends) wait(ctx context.Context, log *slog.Logger) error {
	logged := false
	for {
		u.mu.Lock()
		u.pruneLocked()
		var next sending
		if len(u.list) > 0 {
			next = u.list[0]
		}
		n := len(u.list)
		u.mu.Unlock()
		if next == nil {
			return nil
		}
		if !logged {
			log.Debug("admission: the drain waits until the client has answered the records it gave up on", "sends", n)
			logged = true
		}
		select {
		case <-next.Settled():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func settled(s sending) bool {
	select {
	case <-s.Settled():
		return true
	default:
		return false
	}
}

// drainRate is the smoothed rate at which the drainer publishes spooled
// bytes, which a full spool's retry-after is estimated from.
type drainRate struct {
	mu          sync.Mutex
	bytesPerSec float64 // 0 until measured
}

func (r *drainRate) observe(bytes int, took time.Duration) {
	if took <= 0 {
		took = time.Millisecond
	}
	v := float64(bytes) / took.Seconds()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bytesPerSec == 0 {
		r.bytesPerSec = v
		return
	}
	r.bytesPerSec = 0.8*r.bytesPerSec + 0.2*v
}

func (r *drainRate) get() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytesPerSec
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
