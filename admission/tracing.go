package admission

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/record"
)

// WithTracerProvider makes admission's spans with tp's tracer
// (tracing.TracerName), overriding the default of a no-op provider, with
// which it makes none: a `spool append` span around a request's appends
// and their fsync, a child of the request's span when that records; and,
// when draining, a `send {topic}` PRODUCER span for each spooled record
// whose trace context is sampled, continuing the record's trace. A
// drained record then carries that span's context (its traceparent and
// tracestate are rewritten to it, in the same trace), so the consumer's
// span follows the send that reached Kafka. A nil tp keeps the default.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return option{func(o *options) {
		if _, off := tp.(noop.TracerProvider); tp != nil && !off {
			o.tracer = tp.Tracer(tracing.TracerName)
		}
	}}
}

// startSpoolAppend starts the `spool append` span of n records when the
// request's span in ctx records; nil otherwise.
func (a *Admission) startSpoolAppend(ctx context.Context, n int) trace.Span {
	if a.tracer == nil || !trace.SpanFromContext(ctx).IsRecording() {
		return nil
	}
	_, span := a.tracer.Start(ctx, "spool append", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.Int(tracing.AttrEvents, n)))
	return span
}

// endSpoolAppend ends span with the outcome of the appends of idx's
// records in out.
func endSpoolAppend(span trace.Span, out []Admitted, idx []int) {
	if span == nil {
		return
	}
	refused := 0
	var first error
	for _, i := range idx {
		if out[i].Err != nil {
			refused++
			if first == nil {
				first = out[i].Err
			}
		}
	}
	span.SetAttributes(attribute.Int("sluice.spooled", len(idx)-refused), attribute.Int("sluice.refused", refused))
	if first != nil {
		span.RecordError(first)
		span.SetStatus(codes.Error, first.Error())
	}
	span.End()
}

// startDrainSends starts a `send {topic}` span for each record whose trace
// context is sampled, and has the record carry it: its Context (the
// producer ends it at Kafka's answer) and its traceparent and tracestate
// headers. It returns the spans by record, or nil when none was started.
func (d *drainer) startDrainSends(records []*kgo.Record) []trace.Span {
	if d.tracer == nil {
		return nil
	}
	var spans []trace.Span
	for i, r := range records {
		parent := tracing.FromRecord(context.Background(), r.Headers)
		if !trace.SpanContextFromContext(parent).IsSampled() {
			continue
		}
		_, span := d.tracer.Start(parent, "send "+r.Topic, trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(
				attribute.String(tracing.AttrMessagingSystem, tracing.MessagingSystemKafka),
				attribute.String(tracing.AttrDestination, r.Topic),
				attribute.String(tracing.AttrOperationType, tracing.OperationSend),
				attribute.String(tracing.AttrEventID, headerValue(r.Headers, record.HeaderEventID)),
				attribute.String(tracing.AttrAdmission, ModeSpooling.String())))
		if !span.IsRecording() {
			continue
		}
		if spans == nil {
			spans = make([]trace.Span, len(records))
		}
		spans[i] = span
		tp, ts := tracing.Headers(span.SpanContext())
		setHeader(r, tracing.HeaderTraceparent, tp)
		setHeader(r, tracing.HeaderTracestate, ts)
		r.Context = trace.ContextWithSpan(context.Background(), span)
	}
	return spans
}

// endDrainSends ends the spans startDrainSends started that the producer
// has not (it ends them at Kafka's answer): with errs[i], the record's
// outcome, when it failed.
func endDrainSends(spans []trace.Span, errs []error) {
	for i, span := range spans {
		if span == nil {
			continue
		}
		if i < len(errs) && errs[i] != nil {
			span.RecordError(errs[i])
			span.SetStatus(codes.Error, errs[i].Error())
		}
		span.End()
	}
}

// headerValue is the last value of the header key in headers, or "".
func headerValue(headers []kgo.RecordHeader, key string) string {
	v := ""
	for _, h := range headers {
		if h.Key == key {
			v = string(h.Value)
		}
	}
	return v
}

// setHeader sets the header key of r to v: its last value replaced, or
// added; an empty v removes every value of it.
func setHeader(r *kgo.Record, key, v string) {
	if v == "" {
		kept := r.Headers[:0]
		for _, h := range r.Headers {
			if h.Key != key {
				kept = append(kept, h)
			}
		}
		r.Headers = kept
		return
	}
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == key {
			r.Headers[i].Value = []byte(v)
			return
		}
	}
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: key, Value: []byte(v)})
}
