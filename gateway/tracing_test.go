package gateway_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	ce "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/record"
)

// The caller's trace context in these tests: sampled.
const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
	callerTP    = "00-" + callerTrace + "-" + callerSpan + "-01"
)

// recorder is a tracer provider that samples what its parent sampled and
// every root, and records the spans.
func recorder(t *testing.T) (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())), sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return rec, tp
}

// endedSpans waits until n spans named name have ended, and returns them.
func endedSpans(t *testing.T, rec *tracetest.SpanRecorder, name string, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	var got []sdktrace.ReadOnlySpan
	eventually(t, "spans named "+name, func() bool {
		got = got[:0]
		for _, s := range rec.Ended() {
			if s.Name() == name {
				got = append(got, s)
			}
		}
		return len(got) >= n
	})
	if len(got) != n {
		t.Fatalf("%d spans named %s, want %d", len(got), name, n)
	}
	return got
}

// attr is the span's attribute key, or an empty value.
func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func eventNames(s sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, e := range s.Events() {
		names = append(names, e.Name)
	}
	return names
}

// traceparentOf is a span's context as a record carries it.
func traceparentOf(sc trace.SpanContext) string {
	tp, _ := tracing.Headers(sc)
	return tp
}

// checkRequest checks a traced request's spans: one SERVER span named
// server, a child of the caller's span (parent, or a new root when parent
// is ""), with the stage events; a `send {topic}` PRODUCER span per event
// of ids, its child, ended with a Kafka position; and each record carries
// its event's send span's context. It returns the server span.
func checkRequest(t *testing.T, h *harness, rec *tracetest.SpanRecorder, server, parent string, ids ...string) sdktrace.ReadOnlySpan {
	t.Helper()
	srv := endedSpans(t, rec, server, 1)[0]
	if srv.SpanKind() != trace.SpanKindServer {
		t.Errorf("%s: kind %v, want server", server, srv.SpanKind())
	}
	if parent == "" {
		if srv.Parent().IsValid() {
			t.Errorf("%s: parent %v, want a new root", server, srv.Parent())
		}
	} else if srv.Parent().SpanID().String() != parent || srv.SpanContext().TraceID().String() != callerTrace || !srv.Parent().IsRemote() {
		t.Errorf("%s: parent %v in trace %s, want the caller's span %s of %s", server, srv.Parent(), srv.SpanContext().TraceID(), parent, callerTrace)
	}
	for _, want := range []string{"decoded", "checked", "admitted"} {
		if !strings.Contains(strings.Join(eventNames(srv), ","), want) {
			t.Errorf("%s: events %v, want %s", server, eventNames(srv), want)
		}
	}
	if got := attr(srv, tracing.AttrOutcome+".accepted").AsInt64(); got != int64(len(ids)) {
		t.Errorf("%s: %d accepted, want %d", server, got, len(ids))
	}
	topic := h.topics[typeLog]
	sends := endedSpans(t, rec, "send "+topic, len(ids))
	byID := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range sends {
		if s.SpanKind() != trace.SpanKindProducer || s.Parent().SpanID() != srv.SpanContext().SpanID() ||
			s.SpanContext().TraceID() != srv.SpanContext().TraceID() {
			t.Errorf("send span %v kind %v parent %v: want a PRODUCER child of %s", s.SpanContext(), s.SpanKind(), s.Parent(), server)
		}
		if attr(s, tracing.AttrDestination).AsString() != topic || attr(s, tracing.AttrMessagingSystem).AsString() != "kafka" ||
			attr(s, tracing.AttrPartition).AsString() == "" {
			t.Errorf("send span attributes %v", s.Attributes())
		}
		if s.EndTime().After(srv.EndTime()) {
			t.Errorf("send span ends after its request's")
		}
		byID[attr(s, tracing.AttrEventID).AsString()] = s
	}
	recs := h.consumeIDs(topic, ids)
	for _, r := range recs {
		hs, err := record.ParseEvent(r)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(ids, hs.ID) {
			continue
		}
		s := byID[hs.ID]
		if s == nil {
			t.Errorf("record %s has no send span", hs.ID)
			continue
		}
		if want := traceparentOf(s.SpanContext()); hs.Traceparent != want {
			t.Errorf("record %s traceparent %s, want its send span's %s", hs.ID, hs.Traceparent, want)
		}
	}
	return srv
}

func logEvent(h *harness, id string) ev {
	return ev{ID: id, Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
}

// TestTracingUnary: a Publish call's SERVER span is a child of the
// caller's traceparent, each event's `send` span its child, and the
// record carries the send span's context.
func TestTracingUnary(t *testing.T) {
	rec, tp := recorder(t)
	h := newHarness(t, harnessOpts{tracer: tp})
	ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 15*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "traceparent", callerTP)
	resp, err := h.client.Publish(ctx, &ingestv1.PublishRequest{Events: []*ingestv1.Event{logEvent(h, "tr-unary").proto()}})
	if err != nil {
		t.Fatal(err)
	}
	wantAccepted(t, resp.GetResults(), "tr-unary")
	srv := checkRequest(t, h, rec, "sluice.ingest.v1.IngestService/Publish", callerSpan, "tr-unary")
	if attr(srv, tracing.AttrSource).AsString() != "all" || attr(srv, tracing.AttrTransport).AsString() != "grpc" {
		t.Errorf("server span attributes %v", srv.Attributes())
	}
}

// TestTracingREST: POST /v1/events, one event and a batch of two.
func TestTracingREST(t *testing.T) {
	rec, tp := recorder(t)
	h := newHarness(t, harnessOpts{tracer: tp})
	resp, body := h.postRESTHeaders(keyAll, restBody(logEvent(h, "tr-rest")), map[string]string{"Traceparent": callerTP})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	checkRequest(t, h, rec, "POST /v1/events", callerSpan, "tr-rest")
	rec.Reset()

	const other = "1111111111111111"
	resp, body = h.postRESTHeaders(keyAll, restBody(logEvent(h, "tr-rest-1"), logEvent(h, "tr-rest-2")),
		map[string]string{"Traceparent": "00-" + callerTrace + "-" + other + "-01"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	srv := checkRequest(t, h, rec, "POST /v1/events", other, "tr-rest-1", "tr-rest-2")
	if attr(srv, tracing.AttrEvents).AsInt64() != 2 || attr(srv, tracing.AttrRequestBytes).AsInt64() == 0 {
		t.Errorf("server span attributes %v", srv.Attributes())
	}
}

// TestTracingStream: a PublishStream batch gets a SERVER span of its own,
// parented on the stream's traceparent.
func TestTracingStream(t *testing.T) {
	rec, tp := recorder(t)
	h := newHarness(t, harnessOpts{tracer: tp})
	ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 30*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "traceparent", callerTP)
	stream, err := h.client.PublishStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&ingestv1.PublishStreamRequest{BatchId: 1,
		Events: []*ingestv1.Event{logEvent(h, "tr-stream-1").proto(), logEvent(h, "tr-stream-2").proto()}}); err != nil {
		t.Fatal(err)
	}
	out, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, out.GetResults(), ingestv1.Outcome_ACCEPTED, ingestv1.Outcome_ACCEPTED)
	checkRequest(t, h, rec, "sluice.ingest.v1.IngestService/PublishStream", callerSpan, "tr-stream-1", "tr-stream-2")
	_ = stream.CloseSend()
}

// TestTracingSpooled: a spooled event's `send` span ends when it is
// spooled, beside a `spool append` span; the drain's `send` span
// continues the same trace from the spooled record's context, and the
// record that reaches Kafka carries the drain's span.
func TestTracingSpooled(t *testing.T) {
	rec, tp := recorder(t)
	h := newHarness(t, harnessOpts{tracer: tp, spool: spoolAt(t.TempDir(), 1<<20),
		admission: func(c *admission.Config) { c.SpoolFirst = true }})
	resp, body := h.postRESTHeaders(keyAll, restBody(logEvent(h, "tr-spooled")), map[string]string{"Traceparent": callerTP})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	srv := endedSpans(t, rec, "POST /v1/events", 1)[0]
	appendSpan := endedSpans(t, rec, "spool append", 1)[0]
	if appendSpan.Parent().SpanID() != srv.SpanContext().SpanID() {
		t.Errorf("spool append's parent %v, want the request's span", appendSpan.Parent())
	}
	topic := h.topics[typeLog]
	sends := endedSpans(t, rec, "send "+topic, 2)
	var gw, drain sdktrace.ReadOnlySpan
	for _, s := range sends {
		if s.Parent().SpanID() == srv.SpanContext().SpanID() {
			gw = s
		} else {
			drain = s
		}
	}
	if gw == nil || drain == nil {
		t.Fatalf("send spans %v: want the gateway's and the drain's", sends)
	}
	admitted := ""
	for _, e := range srv.Events() {
		for _, kv := range e.Attributes {
			if e.Name == "admitted" && string(kv.Key) == tracing.AttrAdmission {
				admitted = kv.Value.AsString()
			}
		}
	}
	if admitted != "SPOOLING" {
		t.Errorf("the request's admitted event: sluice.admission %q, want SPOOLING", admitted)
	}
	if attr(gw, tracing.AttrAdmission).AsString() != "SPOOLING" {
		t.Errorf("the gateway's send span: %v, want sluice.admission SPOOLING", gw.Attributes())
	}
	if drain.Parent().SpanID() != gw.SpanContext().SpanID() || drain.SpanContext().TraceID().String() != callerTrace {
		t.Errorf("the drain's send span's parent %v, want the spooled record's (%v)", drain.Parent(), gw.SpanContext())
	}
	recs := h.consumeIDs(topic, []string{"tr-spooled"})
	hs, err := record.ParseEvent(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := traceparentOf(drain.SpanContext()); hs.Traceparent != want {
		t.Errorf("drained record's traceparent %s, want the drain's span %s", hs.Traceparent, want)
	}
}

// TestTracingWebhook: a webhook delivery's traceparent header is its
// span's parent.
func TestTracingWebhook(t *testing.T) {
	rec, tp := recorder(t)
	h := newHarness(t, harnessOpts{tracer: tp, types: []string{examples.StripeEventType}, config: webhookSources(t, nil)})
	now := h.clock.Now()
	body := stripeEvent(t, "evt_traced", now.Add(-time.Second))
	headers := signStripe(body, stripeSecret, now)
	headers["Traceparent"] = callerTP
	resp, out := h.deliver("stripe", body, headers)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	srv := endedSpans(t, rec, "POST /v1/webhooks/{source}", 1)[0]
	if srv.Parent().SpanID().String() != callerSpan || attr(srv, tracing.AttrSource).AsString() != "stripe" {
		t.Errorf("webhook span: parent %v, attributes %v", srv.Parent(), srv.Attributes())
	}
	topic := h.topics[examples.StripeEventType]
	send := endedSpans(t, rec, "send "+topic, 1)[0]
	recs := h.consume(topic, 1)
	if got, _ := headerOf(recs[0], record.HeaderTraceparent); got != traceparentOf(send.SpanContext()) {
		t.Errorf("record's traceparent %s, want the send span's", got)
	}
}

// TestTracingCloudEvent: a CloudEvent's own traceparent (its distributed
// tracing extension) is a link of its `send` span; the request's
// traceparent header is the request span's parent.
func TestTracingCloudEvent(t *testing.T) {
	rec, tp := recorder(t)
	h := newHarness(t, harnessOpts{tracer: tp, config: func(c *gateway.Config) {
		for i := range c.Sources {
			if c.Sources[i].Name == "all" {
				c.Sources[i].CloudEvents = gateway.CloudEventsConfig{Types: map[string]string{"com.example.log": typeLog}}
			}
		}
	}})
	const linked = "00-22222222222222222222222222222222-3333333333333333-01"
	e := logCloudEvent(t, "tr-ce")
	e.SetTime(h.clock.Now())
	e.SetExtension("traceparent", linked)
	p, err := cehttp.New(cehttp.WithTarget("http://"+h.srv.HTTPAddr()+"/v1/cloudevents"),
		cehttp.WithHeader("X-Api-Key", keyAll), cehttp.WithHeader("Traceparent", callerTP))
	if err != nil {
		t.Fatal(err)
	}
	client, err := ce.NewClient(p)
	if err != nil {
		t.Fatal(err)
	}
	if res := client.Send(ce.WithEncodingStructured(context.Background()), e); !ce.IsACK(res) {
		t.Fatalf("not accepted: %v", res)
	}
	srv := endedSpans(t, rec, "POST /v1/cloudevents", 1)[0]
	if srv.Parent().SpanID().String() != callerSpan {
		t.Errorf("cloudevents span's parent %v, want the caller's", srv.Parent())
	}
	send := endedSpans(t, rec, "send "+h.topics[typeLog], 1)[0]
	links := send.Links()
	if len(links) != 1 || traceparentOf(links[0].SpanContext) != linked {
		t.Errorf("send span links %v, want the event's own traceparent %s", links, linked)
	}
}

// TestTracingMalformedTraceparent: a traceparent that does not parse is
// dropped: the request's span is a new root, and the record carries its
// send span's context in that new trace.
func TestTracingMalformedTraceparent(t *testing.T) {
	rec, tp := recorder(t)
	h := newHarness(t, harnessOpts{tracer: tp})
	bad := "00-" + strings.ToUpper(callerTrace) + "-" + callerSpan + "-01"
	resp, body := h.postRESTHeaders(keyAll, restBody(logEvent(h, "tr-bad")), map[string]string{"Traceparent": bad})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	srv := checkRequest(t, h, rec, "POST /v1/events", "", "tr-bad")
	if strings.EqualFold(srv.SpanContext().TraceID().String(), callerTrace) {
		t.Errorf("the malformed traceparent's trace id was kept")
	}
}

// TestTracingHostileTracestate: a tracestate over the bounds is dropped
// whole and the traceparent kept; one within them reaches the record.
func TestTracingHostileTracestate(t *testing.T) {
	rec, tp := recorder(t)
	h := newHarness(t, harnessOpts{tracer: tp})
	hostile := "a=" + strings.Repeat("b", tracing.MaxTracestateBytes)
	resp, body := h.postRESTHeaders(keyAll, restBody(logEvent(h, "tr-hostile")),
		map[string]string{"Traceparent": callerTP, "Tracestate": hostile})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	srv := checkRequest(t, h, rec, "POST /v1/events", callerSpan, "tr-hostile")
	if srv.SpanContext().TraceState().Len() != 0 {
		t.Errorf("hostile tracestate kept: %v", srv.SpanContext().TraceState())
	}
	rec.Reset()
	resp, body = h.postRESTHeaders(keyAll, restBody(logEvent(h, "tr-state")),
		map[string]string{"Traceparent": callerTP, "Tracestate": "vendor=abc,other=x"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	checkRequest(t, h, rec, "POST /v1/events", callerSpan, "tr-state")
	for _, r := range h.consumeIDs(h.topics[typeLog], []string{"tr-hostile", "tr-state"}) {
		hs, err := record.ParseEvent(r)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"tr-hostile": "", "tr-state": "vendor=abc,other=x"}[hs.ID]
		if hs.Tracestate != want {
			t.Errorf("%s: record's tracestate %q, want %q", hs.ID, hs.Tracestate, want)
		}
	}
}

// TestTracingUnsampled: a caller's unsampled context makes no span; the
// records carry the request span's context (the caller's trace, not
// sampled).
func TestTracingUnsampled(t *testing.T) {
	rec, tp := recorder(t)
	h := newHarness(t, harnessOpts{tracer: tp})
	unsampled := "00-" + callerTrace + "-" + callerSpan + "-00"
	resp, body := h.postRESTHeaders(keyAll, restBody(logEvent(h, "tr-unsampled")), map[string]string{"Traceparent": unsampled})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	recs := h.consumeIDs(h.topics[typeLog], []string{"tr-unsampled"})
	hs, err := record.ParseEvent(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(hs.Traceparent, "00-"+callerTrace+"-") || !strings.HasSuffix(hs.Traceparent, "-00") || hs.Traceparent == unsampled {
		t.Errorf("record's traceparent %s, want the request span's in the caller's trace, unsampled", hs.Traceparent)
	}
	if n := len(rec.Ended()) + len(rec.Started()); n != 0 {
		t.Errorf("%d spans recorded for an unsampled request", n)
	}
}

// TestTracingOff: without a tracer provider the records carry the
// caller's traceparent and tracestate byte for byte, as before there was
// tracing (any version the W3C spec lets through, any flags); a malformed
// traceparent and a hostile tracestate are dropped.
func TestTracingOff(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	const later = "01-" + callerTrace + "-" + callerSpan + "-03"
	cases := []struct {
		id, tp, ts     string
		wantTP, wantTS string
	}{
		{"off-plain", callerTP, "", callerTP, ""},
		{"off-later", later, "vendor=abc", later, "vendor=abc"},
		{"off-hostile", callerTP, "a=" + strings.Repeat("b", tracing.MaxTracestateBytes), callerTP, ""},
		{"off-bad", "00-" + callerTrace + "-" + callerSpan + "-0", "vendor=abc", "", ""},
	}
	var ids []string
	for _, c := range cases {
		headers := map[string]string{"Traceparent": c.tp}
		if c.ts != "" {
			headers["Tracestate"] = c.ts
		}
		resp, body := h.postRESTHeaders(keyAll, restBody(logEvent(h, c.id)), headers)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", c.id, resp.StatusCode, body)
		}
		ids = append(ids, c.id)
	}
	ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 15*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "traceparent", later, "tracestate", "k=v")
	if _, err := h.client.Publish(ctx, &ingestv1.PublishRequest{Events: []*ingestv1.Event{logEvent(h, "off-grpc").proto()}}); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, struct{ id, tp, ts, wantTP, wantTS string }{"off-grpc", later, "k=v", later, "k=v"})
	ids = append(ids, "off-grpc")
	got := map[string]*kgo.Record{}
	for _, r := range h.consumeIDs(h.topics[typeLog], ids) {
		id, _ := headerOf(r, record.HeaderEventID)
		got[id] = r
	}
	for _, c := range cases {
		r := got[c.id]
		if r == nil {
			t.Fatalf("%s: no record", c.id)
		}
		tp, _ := headerOf(r, record.HeaderTraceparent)
		ts, _ := headerOf(r, record.HeaderTracestate)
		if tp != c.wantTP || ts != c.wantTS {
			t.Errorf("%s: record carries traceparent %q tracestate %q, want %q %q", c.id, tp, ts, c.wantTP, c.wantTS)
		}
	}
}

// TestTracingRecordLimits: the records' limits count a tracestate of the
// largest size the gateway passes on.
func TestTracingRecordLimits(t *testing.T) {
	l := testConfig().RecordLimits([]string{"all"}, []string{"t"})
	if l.Tracestate != tracing.MaxTracestateBytes || l.Traceparent != tracing.TraceparentLen {
		t.Fatalf("RecordLimits: traceparent %d tracestate %d", l.Traceparent, l.Tracestate)
	}
}
