package consumer

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// Attribute keys of the consumer's own spans, beside internal/tracing's.
const (
	attrWriteAttempt = "sluice.sink.attempt"
	attrConflicts    = "sluice.sink.conflicts"
	// attrStoredFingerprint is on a conflict event: the payload
	// fingerprint the sink held.
	attrStoredFingerprint = "sluice.sink.stored_fingerprint"
	attrErrorType         = "error.type" // OpenTelemetry's general error class key
	attrDLQClass          = "sluice.dlq.class"
	attrDLQAttempts       = "sluice.dlq.attempts"
	attrDLQReason         = "sluice.dlq.reason"
	attrDLQRetries        = "sluice.dlq.retries"
	attrDrained           = "sluice.drained"
)

// outcomeConflict and outcomeAbandoned are span outcomes only: a conflict
// counts as written in sluice_consumer_events_total, and an abandoned record
// is not finished at all (it is fetched again).
const (
	outcomeConflict  = "conflict"
	outcomeAbandoned = "abandoned"
)

// maxWriteLinks bounds the links of a `sink write` span to the process
// spans of its batch.
const maxWriteLinks = 128

// tracer starts the consumer's spans: `process {topic}` per record, child
// of the trace context in the record's headers; `sink write {sink}` per
// write attempt, child of the first recording record's and linked to each
// recording record's; `dead_letter {topic}` and `park {topic}` per dead
// letter, child of its record's.
//
// The spans are sluice's own rather than franz-go's kotel hooks: kotel
// starts a span and a context per record whatever the sampler decides, and
// its producer hook writes the span's context over a record's traceparent,
// where a dead letter must keep its event's. Here a record that is not
// sampled costs a scan of its headers and nothing else, and with tracing
// off (the no-op provider) not even that.
//
// Only recording spans are kept (job.span); a nil span means none.
type tracer struct {
	t trace.Tracer
	// off is set with the no-op provider: no span is ever started.
	off   bool
	group string
	// sinkName is the sink's name; writeName the span name of its writes.
	sinkName, writeName string
}

func newTracer(tp trace.TracerProvider, group, sinkName string) *tracer {
	_, off := tp.(noop.TracerProvider)
	return &tracer{
		t:         tp.Tracer(tracing.TracerName),
		off:       off,
		group:     group,
		sinkName:  sinkName,
		writeName: "sink write " + sinkName,
	}
}

// startProcess starts j's `process {topic}` span, child of the trace
// context of j's record, and keeps it on j when it records. A record whose
// traceparent says its trace is not sampled starts no span at all: the
// providers sluice builds (tracing.New) sample on the parent's decision,
// so the span would not record, and skipping it saves its allocations.
func (t *tracer) startProcess(ctx context.Context, j *job) {
	if t.off || unsampledParent(j.rec.Headers) {
		return
	}
	r := j.rec
	_, span := t.t.Start(tracing.FromRecord(ctx, r.Headers), "process "+r.Topic, trace.WithSpanKind(trace.SpanKindConsumer))
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(
		attribute.String(tracing.AttrMessagingSystem, tracing.MessagingSystemKafka),
		attribute.String(tracing.AttrDestination, r.Topic),
		attribute.String(tracing.AttrOperationType, tracing.OperationProcess),
		attribute.String(tracing.AttrPartition, strconv.Itoa(int(r.Partition))),
		attribute.Int64(tracing.AttrOffset, r.Offset),
		attribute.String(tracing.AttrConsumerGroup, t.group),
		attribute.String(tracing.AttrSink, t.sinkName),
	)
	if id := headerValue(r.Headers, record.HeaderEventID); id != "" {
		span.SetAttributes(attribute.String(tracing.AttrEventID, id))
	}
	if j.part.dlq {
		span.SetAttributes(attribute.Bool(attrDrained, true))
	}
	j.span = span
}

// endProcess ends j's span with outcome; err, when not nil, is why j failed
// (its span's error status).
func (t *tracer) endProcess(j *job, outcome string, err error) {
	span := j.span
	if span == nil {
		return
	}
	j.span = nil
	span.SetAttributes(attribute.String(tracing.AttrOutcome, outcome))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// event adds a span event to j's span, when it records.
func (j *job) event(name string, attrs ...attribute.KeyValue) {
	if j.span != nil {
		j.span.AddEvent(name, trace.WithAttributes(attrs...))
	}
}

// retried adds a `retry` event to the recording spans of jobs, whose
// write failed the attempt-th time with class and will be tried again.
func retried(jobs []*job, class sink.Class, attempt int) {
	for _, j := range jobs {
		if j.span != nil {
			j.span.AddEvent("retry", trace.WithAttributes(attribute.String(attrErrorType, class.String()),
				attribute.Int(attrWriteAttempt, attempt)))
		}
	}
}

// startWrite starts the `sink write` span of one write of jobs' events, the
// attempt-th of the batch, and returns ctx carrying it. Without a
// recording job it starts nothing and returns ctx and nil.
func (t *tracer) startWrite(ctx context.Context, jobs []*job, attempt int) (context.Context, trace.Span) {
	if t.off {
		return ctx, nil
	}
	var parent trace.Span
	var links []trace.Link
	for _, j := range jobs {
		if j.span == nil {
			continue
		}
		if parent == nil {
			parent = j.span
			links = make([]trace.Link, 0, min(len(jobs), maxWriteLinks))
		}
		if len(links) < maxWriteLinks {
			links = append(links, trace.Link{SpanContext: j.span.SpanContext()})
		}
	}
	if parent == nil {
		return ctx, nil
	}
	wctx, span := t.t.Start(trace.ContextWithSpan(ctx, parent), t.writeName,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithLinks(links...),
		trace.WithAttributes(
			attribute.String(tracing.AttrSink, t.sinkName),
			attribute.Int(tracing.AttrEvents, len(jobs)),
			attribute.Int(attrWriteAttempt, attempt),
		))
	return wctx, span
}

// endWrite ends a `sink write` span (nil: none) with the write's result.
func endWrite(span trace.Span, conflicts int, err error) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.Int(attrConflicts, conflicts))
	if err != nil {
		class, _ := sink.Classify(err)
		span.SetAttributes(attribute.String(attrErrorType, class.String()))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// startDeadLetter starts the `dead_letter {topic}` span (`park {topic}`
// when env parks it) of j's dead letter, child of j's span, and returns
// ctx carrying it; nothing when j's span does not record.
func (t *tracer) startDeadLetter(ctx context.Context, j *job, topic string, env *record.Envelope) (context.Context, trace.Span) {
	if j.span == nil {
		return ctx, nil
	}
	dctx, span := t.t.Start(trace.ContextWithSpan(ctx, j.span), deadLetterSpanName(topic, env.ParkedReason),
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String(tracing.AttrMessagingSystem, tracing.MessagingSystemKafka),
			attribute.String(tracing.AttrDestination, topic),
			attribute.String(tracing.AttrOperationType, tracing.OperationSend),
			attribute.String(attrDLQClass, env.Class),
			attribute.Int(attrDLQAttempts, env.Attempts),
			attribute.Int(attrDLQRetries, env.DLQRetries),
		))
	if env.ParkedReason != "" {
		span.SetAttributes(attribute.String(attrDLQReason, env.ParkedReason))
	}
	return dctx, span
}

// endDeadLetter ends a dead letter's span (nil: none): produced to topic
// with env, or failed with err. When the producer parked it in place of a
// refused dead letter, the span is renamed to the park.
func endDeadLetter(span trace.Span, topic string, env *record.Envelope, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		span.End()
		return
	}
	span.SetName(deadLetterSpanName(topic, env.ParkedReason))
	span.SetAttributes(attribute.String(tracing.AttrDestination, topic))
	if env.ParkedReason != "" {
		span.SetAttributes(attribute.String(attrDLQReason, env.ParkedReason))
	}
	span.End()
}

func deadLetterSpanName(topic, parkedReason string) string {
	if parkedReason != "" {
		return "park " + topic
	}
	return "dead_letter " + topic
}

// observe records v in obs with j's trace id as an exemplar when j's span
// records (tracing.Observe), else plainly, without building a context.
func (j *job) observe(obs prometheus.Observer, v float64) {
	if j.span == nil {
		obs.Observe(v)
		return
	}
	tracing.Observe(trace.ContextWithSpan(context.Background(), j.span), obs, v)
}

// unsampledParent reports whether headers carry a well-formed traceparent
// (version 00) whose sampled flag is clear. It reads the bytes in place:
// no allocation.
func unsampledParent(headers []kgo.RecordHeader) bool {
	v := lastHeader(headers, record.HeaderTraceparent)
	if len(v) != tracing.TraceparentLen || v[0] != '0' || v[1] != '0' || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return false
	}
	for i, c := range v {
		if i == 2 || i == 35 || i == 52 {
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	flags := v[54]
	if flags >= 'a' {
		flags -= 'a' - 10
	} else {
		flags -= '0'
	}
	return flags&1 == 0
}

// lastHeader is the value of the last header named key, as Kafka clients
// read a repeated header; nil when there is none.
func lastHeader(headers []kgo.RecordHeader, key string) []byte {
	var v []byte
	for i := range headers {
		if headers[i].Key == key {
			v = headers[i].Value
		}
	}
	return v
}

// headerValue is lastHeader as a string.
func headerValue(headers []kgo.RecordHeader, key string) string {
	return string(lastHeader(headers, key))
}
