package publish

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/tracing"
)

// Producer produces records to Kafka idempotently with acks=all. It is safe
// for concurrent use.
type Producer struct {
	cfg        Config
	client     *kgo.Client
	metrics    *metrics
	registerer prometheus.Registerer // nil when metrics are not registered
	log        *slog.Logger
	topics     topicWatch // WithTopics, and what CheckTopics found
	// tracing: WithTracerProvider was given; the producer ends the span a
	// record's Context carries at its ack.
	tracing bool

	mu        sync.Mutex
	closed    bool          // Close was called: Publish refuses new calls
	producing int           // Publish calls still handing records to the client
	idle      chan struct{} // made by Close; closed when producing reaches 0

	// clientClosed is set just before the client is closed, so a Publish
	// that outlived Close's context stops handing records to it.
	clientClosed atomic.Bool

	budget budget
}

// budget is the producer's own account of the records handed to the client
// and not yet answered, against Config.MaxBufferedRecords and
// MaxBufferedBytes. Send takes room for a prefix of its records at once,
// under mu, so it can stop at the first record that does not fit: a record
// is never refused while a later one of the same Send gets in, which would
// let the later one overtake it (the caller spools the refused one).
// Answers give room back without mu; they only make room, so a Send that
// misses one only refuses early.
//
// The client's own limits are set a record above these (one record and
// BatchMaxBytes more), so the client never refuses with ErrMaxBuffered on
// its own: it answers a record (calling the callback that gives its room
// back) before it takes the record out of its own count, and its callbacks
// run one at a time, so at most one record is counted by the client and
// not by the budget.
type budget struct {
	mu         sync.Mutex
	records    atomic.Int64
	bytes      atomic.Int64
	maxRecords int64
	maxBytes   int64
}

// take takes room for the longest prefix of sizes that fits and returns
// its length.
func (b *budget) take(sizes []int64) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	recs, bytes := b.records.Load(), b.bytes.Load()
	n := 0
	for _, sz := range sizes {
		if recs+1 > b.maxRecords || bytes+sz > b.maxBytes {
			break
		}
		recs, bytes = recs+1, bytes+sz
		n++
	}
	b.records.Add(int64(n))
	var sum int64
	for _, sz := range sizes[:n] {
		sum += sz
	}
	b.bytes.Add(sum)
	return n
}

func (b *budget) give(size int64) {
	b.records.Add(-1)
	b.bytes.Add(-size)
}

// recordSize is what the client counts of a record against its byte
// limit: key, value and header keys and values.
func recordSize(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

// NewProducer validates cfg and creates the Kafka client on conn, the
// connection options kafkaconn.Config.Options made of cfg's connection
// block: a process with several Kafka clients makes them once, so that the
// password is read and the block's warnings are logged once. A nil conn is
// made of cfg's block here. It does not connect: use Ping to check that a
// broker answers.
func NewProducer(cfg Config, conn []kgo.Opt, opts ...Option) (*Producer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{logger: slog.Default()}
	for _, opt := range opts {
		opt.apply(&o)
	}
	if conn == nil {
		var err error
		if conn, err = cfg.Config.Options(o.logger); err != nil {
			return nil, err
		}
	}
	codecs, _ := compressionCodecs(cfg.Compression)
	kopts := append(slices.Clone(conn),
		kgo.WithLogger(newKgoLogger(o.logger)),
		// Durability: franz-go's defaults, stated so that they cannot
		// change under us. Idempotence is on unless DisableIdempotentWrite
		// is given; it needs acks=all.
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// Keyed records: murmur2 of the key modulo the partition count,
		// like the Java client. Unkeyed records: sticky batches of 64 KiB,
		// preferring less backed-up partitions. This is franz-go's default.
		kgo.RecordPartitioner(kgo.UniformBytesPartitioner(64<<10, true, true, nil)),
		kgo.RecordDeliveryTimeout(cfg.DeliveryTimeout),
		// Batching: see Config.Linger. With idempotence franz-go keeps
		// at most 5 produce requests in flight per broker (1 until the
		// broker first answers) and ignores
		// MaxProduceRequestsInflightPerBroker, so that window is fixed;
		// records that arrive while it is full wait for the next request.
		kgo.ProducerLinger(cfg.Linger),
		// A record and a batch above the budget's limits: see budget.
		kgo.MaxBufferedRecords(cfg.MaxBufferedRecords+1),
		kgo.MaxBufferedBytes(int(cfg.MaxBufferedBytes)+int(cfg.BatchMaxBytes)),
		kgo.ProducerBatchMaxBytes(cfg.BatchMaxBytes),
		kgo.ProducerBatchCompression(codecs...),
	)
	client, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("publish: kafka client: %w", err)
	}
	p := &Producer{cfg: cfg, client: client, log: o.logger, topics: newTopicWatch(o.topics), tracing: o.tracing}
	p.budget.maxRecords, p.budget.maxBytes = int64(cfg.MaxBufferedRecords), cfg.MaxBufferedBytes
	p.metrics = newMetrics(func() float64 { return float64(client.BufferedProduceRecords()) }, p.topics.topics)
	if o.registerer != nil {
		if err := p.metrics.register(o.registerer); err != nil {
			client.Close()
			return nil, fmt.Errorf("publish: register metrics: %w", err)
		}
		p.registerer = o.registerer
	}
	return p, nil
}

// completion is one record's answer from the client.
type completion struct {
	i   int
	err error
}

// Publish produces every record and waits until each is acknowledged by
// Kafka or failed, or ctx is done. errs[i] is nil when records[i] was
// acknowledged (acks=all), and records[i].Partition and Offset are then
// where Kafka has it; otherwise errs[i] is a *ProduceError, and Retryable
// says whether sending the event again may succeed.
//
// When ctx ends first, the unanswered records get an error wrapping
// ErrTimeout; records not yet handed to the client are not produced, the
// others may still be written later. Publish never blocks past ctx, also
// not when the client's buffer is full. A nil or topic-less record fails
// permanently without being produced; the others are produced in order.
//
// The records belong to the producer once passed, also after Publish
// returned: the client sets their partition and offset, and may still be
// sending the unanswered ones. A record's Timestamp should be unset (the
// client stamps it): Config.DeliveryTimeout counts from it.
func (p *Producer) Publish(ctx context.Context, records []*kgo.Record) []error {
	return p.Send(ctx, records).Wait(ctx)
}

// Sent is a Send's records on their way to Kafka.
type Sent struct {
	p        *Producer
	records  []*kgo.Record
	errs     []error
	answered []bool
	pending  int
	done     chan completion
	start    time.Time
	// handed is how many of the records, a prefix, were handed to the
	// client; the others were answered at once.
	handed int
	// unsettled counts the handed-over records the client has not
	// answered, plus one while Send is still handing over; settled is
	// closed when it reaches 0.
	unsettled atomic.Int64
	settled   chan struct{}
}

// settle counts one answer (or the end of Send's handing over) and closes
// settled after the last.
func (s *Sent) settle() {
	if s.unsettled.Add(-1) == 0 {
		close(s.settled)
	}
}

// Settled is closed once the client has answered every record of the Send
// it was handed, whether or not Wait still waits: from then on none of
// them can be written or failed any more. A caller that stopped waiting
// (Wait's ctx ended) and sends records of the same keys again must wait
// for it first: the client fails a partition's buffered records together
// (a delivery timeout, a fatal error), and a record handed over after such
// a failure would get into Kafka ahead of the failed ones it follows.
func (s *Sent) Settled() <-chan struct{} { return s.settled }

// DeliveryTimeout is Config.DeliveryTimeout: a record the client holds
// longer, and has not sent, is failed with every record buffered behind it
// on its partition.
func (p *Producer) DeliveryTimeout() time.Duration { return p.cfg.DeliveryTimeout }

// HandedOver reports whether every record of the Send was handed to the
// client. When not, a prefix was and the rest are already answered with
// the refusal (a full buffer, a record too large): a caller keeping
// several Sends in flight must not send more records of their keys until
// it has settled this one, or those could reach Kafka first.
func (s *Sent) HandedOver() bool { return s.handed == len(s.records) }

// Send hands records to the client, in order, and returns at once; Wait
// answers them. Records of one Send reach each partition before those of a
// later Send, so a caller can keep several Sends in flight and still keep
// per-key order. Records are not handed over once ctx is done; they are
// answered as Publish answers them.
func (p *Producer) Send(ctx context.Context, records []*kgo.Record) *Sent {
	s := &Sent{
		p:        p,
		records:  records,
		errs:     make([]error, len(records)),
		answered: make([]bool, len(records)),
		// Capacity len(records): every callback can deliver without
		// blocking, also after Wait returned and nobody reads any more.
		done:    make(chan completion, len(records)),
		start:   time.Now(),
		settled: make(chan struct{}),
	}
	s.unsettled.Store(1)
	defer s.settle()
	if len(records) == 0 {
		return s
	}
	if !p.enter() {
		for i, r := range records {
			s.errs[i] = p.recordError(topicOf(r), ErrClosed)
			s.answered[i] = true
		}
		return s
	}
	sizes := make([]int64, len(records))
	for i, r := range records {
		if r != nil {
			sizes[i] = recordSize(r)
		}
	}
	// Room for the longest prefix that fits; a record too large for a
	// batch on its own takes none (it is refused below, as the client
	// would refuse it).
	fits := p.budget.take(admissible(sizes, int64(p.cfg.BatchMaxBytes)))
	s.handed = fits
	for i, r := range records {
		if i >= fits {
			// Not handed over, so never produced; neither is any later
			// record of this Send.
			s.errs[i] = p.recordError(topicOf(r), p.refusal(r, sizes[i]))
			s.answered[i] = true
			continue
		}
		var refused error
		switch {
		case ctx.Err() != nil || p.clientClosed.Load():
			refused = p.unanswered(ctx) // not handed over, so never produced
		case r == nil:
			refused = fmt.Errorf("%w: nil record", errInvalidRecord)
		case r.Topic == "":
			refused = fmt.Errorf("%w: no topic", errInvalidRecord)
		}
		if refused != nil {
			p.budget.give(sizes[i])
			s.errs[i] = p.recordError(topicOf(r), refused)
			s.answered[i] = true
			continue
		}
		s.pending++
		s.unsettled.Add(1)
		size := sizes[i]
		// The record gets no context of the caller's: a caller giving up
		// must not fail the records of others buffered on the same
		// partition (franz-go fails a partition's buffered records
		// together to keep the idempotent sequence gapless), and a record
		// is bounded by DeliveryTimeout anyway. The budget has room for
		// it, so the client takes it without waiting.
		p.client.TryProduce(context.Background(), r, func(r *kgo.Record, err error) {
			p.budget.give(size)
			if err == nil {
				tracing.Observe(ctx, p.metrics.latency, time.Since(s.start).Seconds())
			}
			if p.tracing {
				endRecordSpan(r, err)
			}
			// Settled before the answer is delivered: a Wait that got every
			// answer finds the Send settled.
			s.settle()
			s.done <- completion{i, err}
		})
	}
	p.exit()
	return s
}

// Wait waits until each record of the Send is acknowledged by Kafka or
// failed, or ctx is done, and answers them as Publish does. Call it once.
func (s *Sent) Wait(ctx context.Context) []error {
	p := s.p
wait:
	for s.pending > 0 {
		select {
		case c := <-s.done:
			s.pending--
			s.answered[c.i] = true
			if c.err != nil {
				s.errs[c.i] = p.recordError(s.records[c.i].Topic, c.err)
			}
		case <-ctx.Done():
			break wait
		}
	}
	for i, ok := range s.answered {
		if !ok {
			s.errs[i] = p.recordError(topicOf(s.records[i]), p.unanswered(ctx))
		}
	}
	for _, err := range s.errs {
		p.metrics.answered(err)
	}
	return s.errs
}

// admissible is sizes up to the first record that could never be produced
// because it does not fit a batch alone.
func admissible(sizes []int64, batchMax int64) []int64 {
	for i, sz := range sizes {
		if sz > batchMax {
			return sizes[:i]
		}
	}
	return sizes
}

// refusal is why a record of a Send was not handed to the client: it is too
// large for a batch, or it, or an earlier record of the Send, did not fit
// in the buffer.
func (p *Producer) refusal(r *kgo.Record, size int64) error {
	if r != nil && size > int64(p.cfg.BatchMaxBytes) {
		return fmt.Errorf("%w (uncompressed_bytes=%d, batch_max_bytes=%d)", kerr.MessageTooLarge, size, p.cfg.BatchMaxBytes)
	}
	return fmt.Errorf("%w: %d records, %d bytes buffered of %d and %d", ErrBufferFull,
		p.budget.records.Load(), p.budget.bytes.Load(), p.budget.maxRecords, p.budget.maxBytes)
}

// unanswered is the cause for a record Publish stops waiting for.
func (p *Producer) unanswered(ctx context.Context) error {
	if ctx.Err() == nil && p.clientClosed.Load() {
		return ErrClosed
	}
	return fmt.Errorf("%w: %w", ErrTimeout, context.Cause(ctx))
}

func topicOf(r *kgo.Record) string {
	if r == nil {
		return ""
	}
	return r.Topic
}

// enter registers a Publish call that will hand records to the client, or
// reports false when the producer is closed.
func (p *Producer) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.producing++
	return true
}

func (p *Producer) exit() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.producing--
	if p.producing == 0 && p.idle != nil {
		close(p.idle)
	}
}

// Close stops accepting records (Publish answers ErrClosed), waits for the
// Publish calls in progress to hand over their records, flushes what is
// buffered until ctx is done, closes the client and unregisters the metrics.
// Records still unacknowledged when ctx ends are failed with an error
// wrapping ErrClosed (they may have been written). Close returns ctx's error
// in that case, and ErrClosed when called again.
func (p *Producer) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.closed = true
	p.idle = make(chan struct{})
	if p.producing == 0 {
		close(p.idle)
	}
	idle := p.idle
	p.mu.Unlock()

	var err error
	select {
	case <-idle:
		if ferr := p.client.Flush(ctx); ferr != nil {
			err = ferr
		}
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	if err != nil {
		err = fmt.Errorf("publish: close: %d records not flushed: %w", p.client.BufferedProduceRecords(), err)
	}
	p.clientClosed.Store(true)
	p.client.Close()
	if p.registerer != nil {
		p.metrics.unregister(p.registerer)
	}
	return err
}

// Ping checks that a broker answers a metadata request, bounded by ctx. It
// is meant for readiness checks.
func (p *Producer) Ping(ctx context.Context) error {
	if err := p.checkOpen(); err != nil {
		return err
	}
	if err := p.client.Ping(ctx); err != nil {
		return fmt.Errorf("publish: ping: %w", err)
	}
	return nil
}

// checkOpen returns ErrClosed once Close was called.
func (p *Producer) checkOpen() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	return nil
}

// endRecordSpan ends the span r.Context carries, when it records (the
// gateway's `send {topic}` span), at Kafka's answer: with the record's
// partition and offset, or the error. Records without one cost a lookup.
func endRecordSpan(r *kgo.Record, err error) {
	span := trace.SpanFromContext(r.Context)
	if !span.IsRecording() {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else {
		span.SetAttributes(attribute.String(tracing.AttrPartition, strconv.Itoa(int(r.Partition))),
			attribute.Int64(tracing.AttrOffset, r.Offset))
	}
	span.End()
}
