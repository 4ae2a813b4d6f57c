package dlq

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/clip"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
)

// DeadLetterError is Send's error when Kafka refused a record's dead letter
// for good and then refused its parked copy too, or the copy could not be
// made to fit. The consumer's Run returns it: the record is neither
// written nor dead-lettered, so its offset is not committed, and Run
// stops rather than skip it.
type DeadLetterError struct {
	// Topic, Partition and Offset locate the record: in its source topic,
	// or in its DLQ topic for a drained record.
	Topic     string
	Partition int32
	Offset    int64
	// Refused is the topic that refused the dead letter; Parked the one
	// its copy was meant for.
	Refused, Parked string
	// Err is Kafka's refusal of the dead letter and what failed the copy.
	Err error
}

func (e *DeadLetterError) Error() string {
	return fmt.Sprintf("dlq: record %s/%d@%d can be neither dead-lettered to %s nor parked in %s: %v",
		e.Topic, e.Partition, e.Offset, e.Refused, e.Parked, e.Err)
}

func (e *DeadLetterError) Unwrap() error { return e.Err }

// produceWarnInterval spaces the warnings of DLQ produces that keep failing
// transiently: Kafka being away fails every in-flight dead letter at once.
const produceWarnInterval = 5 * time.Second

// ProducerConfig is how a Producer retries and bounds what it produces.
type ProducerConfig struct {
	// ProduceTimeout bounds one produce attempt.
	ProduceTimeout time.Duration
	// Backoff spaces the retries of a produce that failed transiently.
	Backoff backoff.Config
	// MaxRecordBytes is the client's kgo.ProducerBatchMaxBytes: a parked
	// copy of a refused dead letter is cut to fit it.
	MaxRecordBytes int
	// MaxErrorBytes bounds the refusal a parked copy carries in
	// sluice-dlq-refusal.
	MaxErrorBytes int
}

// Clock is the time source of a Producer's retries and warnings; tests
// pass one they control.
type Clock interface {
	Now() time.Time
	// After delivers once d has passed.
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// ProducerOption changes a default of NewProducer.
type ProducerOption interface{ apply(*Producer) }

type producerOption func(*Producer)

func (f producerOption) apply(p *Producer) { f(p) }

// WithLogger replaces slog.Default(). A nil logger keeps it.
func WithLogger(l *slog.Logger) ProducerOption {
	return producerOption(func(p *Producer) {
		if l != nil {
			p.log = l
		}
	})
}

// WithClock times retries and spaces warnings with c; by default the
// system clock.
func WithClock(c Clock) ProducerOption {
	return producerOption(func(p *Producer) {
		if c != nil {
			p.clock = c
		}
	})
}

// Producer produces dead letters and parked records, and parks a bounded
// copy of one Kafka refuses for good. It is safe for concurrent use.
type Producer struct {
	cl    *kgo.Client
	cfg   ProducerConfig
	log   *slog.Logger
	clock Clock
	m     producerMetrics
	warn  logThrottle
}

// producerMetrics are a Producer's collectors.
type producerMetrics struct {
	// errors counts failed produces by publish.Retryable's verdict;
	// truncated the parked copies cut to fit; undeliverable the records
	// that could be neither dead-lettered nor parked.
	errors        *prometheus.CounterVec
	truncated     *prometheus.CounterVec
	undeliverable *prometheus.CounterVec
}

// NewProducer returns a Producer that produces through cl. cl must ask for
// acks from all in-sync replicas and have kgo.ProducerBatchMaxBytes set to
// cfg.MaxRecordBytes. Unlike the components that open clients of their own
// (and take the connection options), the Producer is a part of its owner,
// the consumer: it shares the consumer's client, its connections and its
// idempotent producer, and never closes it.
func NewProducer(cl *kgo.Client, cfg ProducerConfig, opts ...ProducerOption) *Producer {
	p := &Producer{
		cl:    cl,
		cfg:   cfg,
		log:   slog.Default(),
		clock: systemClock{},
		warn:  logThrottle{every: produceWarnInterval},
		m: producerMetrics{
			errors: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "sluice_consumer_dead_letter_produce_errors_total",
				Help: "Failed produces of DLQ and parked records, by class: retryable (retried) or permanent (the record is parked cut to fit, or the consumer stops).",
			}, []string{"topic", "class"}),
			truncated: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "sluice_consumer_dead_letters_truncated_total",
				Help: "Parked copies of refused dead letters whose value was cut to fit dlq.max_record_bytes.",
			}, []string{"topic"}),
			undeliverable: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "sluice_consumer_undeliverable_total",
				Help: "Records whose dead letter and parked copy Kafka both refused: the consumer stopped without committing past them.",
			}, []string{"topic"}),
		},
	}
	for _, o := range opts {
		o.apply(p)
	}
	return p
}

// Collectors returns the producer's metrics, for the caller to register
// with its own.
func (p *Producer) Collectors() []prometheus.Collector {
	return []prometheus.Collector{p.m.errors, p.m.truncated, p.m.undeliverable}
}

// Send produces the dead letter of src with env to topic, a DLQ or parked
// topic (record.NewDeadLetter), and returns the topic and envelope of what
// Kafka acknowledged.
//
// A produce that fails transiently (publish.Retryable) is retried with
// Backoff while ctx lives: that is push-back while Kafka is away, and
// the warnings are spaced. One Kafka refuses for good (too large, not
// authorized) is replaced by a copy in topic's parked topic, marked
// dlq_refused, its value cut to fit MaxRecordBytes (record.NewParkedCopy).
//
// The error is ctx's once ctx is done, or a *DeadLetterError when the copy
// was refused too or could not be made to fit: nothing was produced.
func (p *Producer) Send(ctx context.Context, topic string, src *kgo.Record, env record.Envelope) (string, record.Envelope, error) {
	err := p.produce(ctx, record.NewDeadLetter(topic, src, &env))
	if err != nil && ctx.Err() == nil {
		// Kafka will never take it: park a copy cut to fit instead.
		refused := topic
		topic = record.ParkedTopic(record.SourceOf(refused))
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.AddEvent("refused", trace.WithAttributes(attribute.String(tracing.AttrDestination, refused),
				attribute.String("error.message", err.Error())))
		}
		env, err = p.parkRefused(ctx, src, env, refused, err)
	}
	return topic, env, err
}

// produce produces rec. Errors publish.Retryable calls transient are
// retried with capped backoff while ctx lives. It returns nil once Kafka
// acknowledged rec, ctx's error once ctx is done, or the first permanent
// error.
func (p *Producer) produce(ctx context.Context, rec *kgo.Record) error {
	for attempt := 1; ; attempt++ {
		// The client stamps what it is given; each attempt gets a record
		// of its own.
		r := &kgo.Record{Topic: rec.Topic, Key: rec.Key, Value: rec.Value, Headers: rec.Headers}
		pctx, cancel := context.WithTimeout(ctx, p.cfg.ProduceTimeout)
		err := p.cl.ProduceSync(pctx, r).FirstErr()
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !publish.Retryable(err) {
			p.m.errors.WithLabelValues(rec.Topic, "permanent").Inc()
			p.log.Warn("dead-letter produce refused", "topic", rec.Topic, "bytes", record.BatchBytes(rec), "err", err)
			return err
		}
		p.m.errors.WithLabelValues(rec.Topic, "retryable").Inc()
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.AddEvent("retry", trace.WithAttributes(attribute.Int("sluice.attempt", attempt),
				attribute.String("error.message", err.Error())))
		}
		if held, ok := p.warn.allow(p.clock.Now()); ok {
			p.log.Warn("dead-letter produce failing, retrying", "topic", rec.Topic, "attempt", attempt,
				"failures_not_logged", held, "err", err)
		}
		select {
		case <-p.clock.After(p.cfg.Backoff.Wait(attempt, nil)):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// parkRefused parks, in place of src's dead letter that refused refused
// for good, a copy with env marked dlq_refused and the value cut to fit
// MaxRecordBytes. It returns the copy's envelope, ctx's error when ctx
// ended first, or, when the copy is refused as well, a *DeadLetterError.
func (p *Producer) parkRefused(ctx context.Context, src *kgo.Record, env record.Envelope, refused string, refusal error) (record.Envelope, error) {
	source := record.SourceOf(refused)
	env.ParkedReason = record.ParkedDLQRefused
	env.Retryable = false
	env.Refusal = clip.String(refused+": "+refusal.Error(), p.cfg.MaxErrorBytes)
	parked := record.ParkedTopic(source)
	rec, err := record.NewParkedCopy(parked, src, &env, p.cfg.MaxRecordBytes)
	if err == nil {
		if err = p.produce(ctx, rec); err == nil {
			if len(rec.Value) < len(src.Value) {
				env.TruncatedFrom = len(src.Value)
				p.m.truncated.WithLabelValues(parked).Inc()
			}
			return env, nil
		}
		if ctx.Err() != nil {
			return env, err
		}
	}
	dle := &DeadLetterError{Topic: src.Topic, Partition: src.Partition, Offset: src.Offset,
		Refused: refused, Parked: parked, Err: fmt.Errorf("%w; parked copy: %w", refusal, err)}
	p.m.undeliverable.WithLabelValues(src.Topic).Inc()
	p.log.Error("dead letter and parked copy refused, stopping", "topic", src.Topic, "partition", src.Partition,
		"offset", src.Offset, "err", dle.Err)
	return env, dle
}

// logThrottle lets one log line through per interval and counts the ones
// it held back.
type logThrottle struct {
	every time.Duration

	mu   sync.Mutex
	last time.Time
	held int
}

// allow reports whether a line may be logged at now, and how many were held
// back since the last one.
func (t *logThrottle) allow(now time.Time) (held int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.last.IsZero() && now.Sub(t.last) < t.every {
		t.held++
		return 0, false
	}
	held, t.held, t.last = t.held, 0, now
	return held, true
}
