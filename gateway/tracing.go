package gateway

import (
	"context"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sluicehq/sluice/admission"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/tracing"
)

// Tracing. The gateway makes its own spans rather than taking otelgrpc's
// or otelhttp's handlers: a PublishStream lives for hours and gets a span
// per batch, the codec and the authentication tap run before any handler,
// a caller's trace context must pass the gateway's bounds before it is a
// parent, and a record's context must be the gateway's `send` span's
// (kotel, on the producer, would replace it with a span of its own and
// cost every record a span, sampled or not).
//
// A request's span (a SERVER span named for its method or route) is
// parented on the caller's traceparent and tracestate (tracing.FromHeaders:
// a malformed traceparent makes it a new root, a hostile tracestate is
// dropped whole). When it records, each event gets a `send {topic}`
// PRODUCER span whose context its record carries, and the stages of judge
// are events on the request's span; when it does not, the records carry
// the request span's context and no per-event span is made. With no
// provider (the default), no span is made at all and a record carries the
// caller's valid traceparent and tracestate as they came, as before there
// was tracing.

// Span names of the gateway's server spans.
const (
	spanPublish       = "sluice.ingest.v1.IngestService/Publish"
	spanPublishStream = "sluice.ingest.v1.IngestService/PublishStream"
	spanREST          = "POST /v1/events"
	spanCloudEvents   = "POST /v1/cloudevents"
	spanWebhook       = "POST " + webhookPath + "{source}"
)

// serverKind is made once: an option made per request is an allocation.
var serverKind = trace.WithSpanKind(trace.SpanKindServer)

// tracestateMetadata is the W3C tracestate, as gRPC metadata and as REST
// passes its header on.
const tracestateMetadata = "tracestate"

// WithTracerProvider makes the gateway's spans with tp's tracer
// (tracing.TracerName), overriding the default of a no-op provider, with
// which the gateway makes no span. A nil tp keeps the default.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(o *options) {
		if tp != nil {
			o.tp = tp
		}
	})
}

// tracerOf is tp's tracer, and whether it makes spans at all (not a no-op
// provider).
func tracerOf(tp trace.TracerProvider) (trace.Tracer, bool) {
	if tp == nil {
		return noop.Tracer{}, false
	}
	if _, ok := tp.(noop.TracerProvider); ok {
		return noop.Tracer{}, false
	}
	return tp.Tracer(tracing.TracerName), true
}

// startRequest starts the SERVER span of a request named name, parented on
// the trace context in ctx's incoming metadata, when the gateway traces:
// the returned context carries it. span is nil when the gateway does not
// trace (end and the others do nothing then). Spans take the wall clock's
// time, not the service's clock (WithClock).
func (s *Service) startRequest(ctx context.Context, name, transport string, src *source) (context.Context, requestSpan) {
	if !s.tracing {
		return ctx, requestSpan{}
	}
	md := metadataOf(ctx)
	ctx = tracing.FromHeaders(ctx, first(md, traceparentMetadata), first(md, tracestateMetadata))
	ctx, span := s.tracer.Start(ctx, name, serverKind)
	if span.IsRecording() {
		span.SetAttributes(attribute.String(tracing.AttrTransport, transport))
		if src != nil {
			span.SetAttributes(attribute.String(tracing.AttrSource, src.name))
		}
	}
	return ctx, requestSpan{span: span}
}

// requestSpan is a request's server span; its methods do nothing when span
// is nil, when the gateway does not trace.
type requestSpan struct{ span trace.Span }

// source names the request's source once it is known.
func (r requestSpan) source(src *source) {
	if r.span != nil && src != nil && r.span.IsRecording() {
		r.span.SetAttributes(attribute.String(tracing.AttrSource, src.name))
	}
}

// decoded adds the `decoded` event: the request's events and bytes.
func (r requestSpan) decoded(b *batch) {
	if r.span == nil || !r.span.IsRecording() {
		return
	}
	r.span.SetAttributes(attribute.Int(tracing.AttrEvents, len(b.events)), attribute.Int(tracing.AttrRequestBytes, b.size))
	r.span.AddEvent("decoded", trace.WithAttributes(attribute.Int(tracing.AttrEvents, len(b.events))))
}

// fail ends the request as a whole-request failure f.
func (r requestSpan) fail(f *Failure) {
	if r.span == nil || !r.span.IsRecording() {
		return
	}
	r.span.SetAttributes(attribute.String(tracing.AttrOutcome, f.Reason.String()))
	r.span.SetStatus(codes.Error, f.Message)
}

// end ends the span, now.
func (r requestSpan) end() {
	if r.span != nil {
		r.span.End()
	}
}

// recordTrace is what judge gives every record of a request: the trace
// context to carry (tp, ts) when no per-event span is made, and the
// request's span when it records (then each event gets a `send` span).
type recordTrace struct {
	tp, ts string
	span   trace.Span // nil unless recording
	// links are the request's batch.links, when span records.
	links []string
}

// link is event i's CloudEvents traceparent, for its `send` span's link.
func (t recordTrace) link(i int) string {
	if t.links == nil {
		return ""
	}
	return t.links[i]
}

// recordTraceOf is recordTrace for a request whose context is ctx.
// Without tracing it is the caller's traceparent when it is valid, and its
// tracestate when within the bounds, as they came: what the records
// carried before there was tracing.
func (s *Service) recordTraceOf(ctx context.Context) recordTrace {
	if !s.tracing {
		md := metadataOf(ctx)
		tp := first(md, traceparentMetadata)
		if _, ok := tracing.ParseTraceparent(tp); !ok {
			return recordTrace{}
		}
		return recordTrace{tp: tp, ts: boundedTracestate(first(md, tracestateMetadata))}
	}
	span := trace.SpanFromContext(ctx)
	var t recordTrace
	if span.IsRecording() {
		t.span = span
	}
	t.tp, t.ts = tracing.Headers(span.SpanContext())
	return t
}

// boundedTracestate is ts when it is within tracing's bounds and parses to
// at least one member, else "" (dropped whole, as tracing.FromHeaders
// drops it; FuzzBoundedTracestate holds them equal).
func boundedTracestate(ts string) string {
	if ts == "" || len(ts) > tracing.MaxTracestateBytes {
		return ""
	}
	state, err := trace.ParseTraceState(ts)
	if err != nil || state.Len() == 0 || state.Len() > tracing.MaxTracestateMembers {
		return "" // a list of no members ("," say) carries nothing
	}
	return ts
}

// event adds a stage's event to the request's span when it records.
func (t recordTrace) event(name string, attrs ...attribute.KeyValue) {
	if t.span != nil {
		t.span.AddEvent(name, trace.WithAttributes(attrs...))
	}
}

// checked adds the `checked` event: the events that passed the checks,
// and those refused, by reason.
func (t recordTrace) checked(results []*ingestv1.EventResult, passed int) {
	if t.span == nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.Int("passed", passed)}
	byReason := map[string]int{}
	for _, r := range results {
		if r != nil && r.GetOutcome() == ingestv1.Outcome_REJECTED {
			byReason[r.GetRejection().GetReason().String()]++
		}
	}
	for reason, n := range byReason {
		attrs = append(attrs, attribute.Int("rejected."+reason, n))
	}
	t.span.AddEvent("checked", trace.WithAttributes(attrs...))
}

// outcomes sets the request span's outcome counts from its results.
func (t recordTrace) outcomes(results []*ingestv1.EventResult) {
	if t.span == nil {
		return
	}
	var n [4]int
	for _, r := range results {
		if o := int(r.GetOutcome()); o >= 0 && o < len(n) {
			n[o]++
		}
	}
	t.span.SetAttributes(
		attribute.Int(tracing.AttrEvents, len(results)),
		attribute.Int(tracing.AttrOutcome+".accepted", n[ingestv1.Outcome_ACCEPTED]),
		attribute.Int(tracing.AttrOutcome+".duplicate", n[ingestv1.Outcome_DUPLICATE]),
		attribute.Int(tracing.AttrOutcome+".rejected", n[ingestv1.Outcome_REJECTED]))
}

// startSend starts event c's `send {topic}` PRODUCER span, a child of the
// request's recording span in ctx; link, when valid, is a CloudEvent's own
// traceparent (its distributed tracing extension), linked to.
func (s *Service) startSend(ctx context.Context, topic, id, link string) trace.Span {
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String(tracing.AttrMessagingSystem, tracing.MessagingSystemKafka),
			attribute.String(tracing.AttrDestination, topic),
			attribute.String(tracing.AttrOperationType, tracing.OperationSend),
			attribute.String(tracing.AttrEventID, id)),
	}
	if link != "" {
		if sc := trace.SpanContextFromContext(tracing.FromHeaders(context.Background(), link, "")); sc.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
		}
	}
	_, span := s.tracer.Start(ctx, "send "+topic, opts...)
	return span
}

// endSend ends a `send` span with what admission made of its record: the
// producer ends one at Kafka's ack already (publish.WithTracerProvider),
// when this changes nothing; a spooled one ends here, as does a refused
// one, with an error.
func endSend(span trace.Span, a admission.Admitted) {
	if span == nil {
		return
	}
	switch {
	case a.Err != nil:
		span.RecordError(a.Err)
		span.SetStatus(codes.Error, a.Err.Error())
	case a.Durability == admission.DurabilityLocalDisk:
		span.SetAttributes(attribute.String(tracing.AttrAdmission, admission.ModeSpooling.String()))
	case a.Durability == admission.DurabilityKafka:
		span.SetAttributes(attribute.String(tracing.AttrPartition, strconv.Itoa(int(a.Partition))),
			attribute.Int64(tracing.AttrOffset, a.Offset))
	}
	span.End()
}

// restTraceMetadata adds a REST request's traceparent and tracestate
// headers to md.
func restTraceMetadata(md map[string][]string, h http.Header) {
	if tp := h["Traceparent"]; len(tp) > 0 {
		md[traceparentMetadata] = tp
	}
	if ts := h["Tracestate"]; len(ts) > 0 {
		md[tracestateMetadata] = ts
	}
}

// admitted adds the `admitted` event: how admission made the records
// durable (sluice.admission SPOOLING when any went to the spool, DIRECT
// otherwise), and how many it refused.
func (t recordTrace) admitted(out []admission.Admitted) {
	if t.span == nil {
		return
	}
	mode, refused := admission.ModeDirect, 0
	for _, a := range out {
		switch {
		case a.Err != nil:
			refused++
		case a.Durability == admission.DurabilityLocalDisk:
			mode = admission.ModeSpooling
		}
	}
	t.span.AddEvent("admitted", trace.WithAttributes(attribute.String(tracing.AttrAdmission, mode.String()),
		attribute.Int("records", len(out)), attribute.Int("refused", refused)))
}
