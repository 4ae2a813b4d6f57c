package admission

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/record"
)

// TestDrainSends: a drained record whose trace context is sampled gets a
// `send` span continuing it, and carries that span's context; an
// unsampled one, or one without a context, is left as it was.
func TestDrainSends(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())), sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	var o options
	WithTracerProvider(tp).apply(&o)
	d := &drainer{tracer: o.tracer}

	const (
		sampled   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
	)
	mk := func(id, tp, ts string) *kgo.Record {
		return record.NewEvent(&record.Event{Topic: "t", Value: []byte("v"), ID: id, Type: "x", Source: "s", Traceparent: tp, Tracestate: ts})
	}
	records := []*kgo.Record{mk("a", sampled, "vendor=1"), mk("b", unsampled, ""), mk("c", "", "")}
	spans := d.startDrainSends(records)
	if len(spans) != 3 || spans[0] == nil || spans[1] != nil || spans[2] != nil {
		t.Fatalf("spans %v: want one, for the sampled record", spans)
	}
	endDrainSends(spans, []error{nil, nil, nil})
	ended := rec.Ended()
	if len(ended) != 1 || ended[0].Name() != "send t" || ended[0].SpanKind() != trace.SpanKindProducer ||
		ended[0].Parent().SpanID().String() != "00f067aa0ba902b7" || ended[0].Parent().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("ended spans %v", ended)
	}
	hs, err := record.ParseEvent(records[0])
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := tracing.Headers(ended[0].SpanContext()); hs.Traceparent != want || hs.Tracestate != "vendor=1" {
		t.Errorf("drained record carries %s %q, want its send span's %s and the tracestate", hs.Traceparent, hs.Tracestate, want)
	}
	if trace.SpanFromContext(records[0].Context).SpanContext().SpanID() != ended[0].SpanContext().SpanID() {
		t.Errorf("the record's Context does not carry its send span")
	}
	for i, want := range []string{unsampled, ""} {
		if hs, err := record.ParseEvent(records[i+1]); err != nil || hs.Traceparent != want || records[i+1].Context != nil {
			t.Errorf("record %d: %+v %v, want it untouched", i+1, hs, err)
		}
	}
}

// TestSetHeader: the last value replaced, or added; empty removes all.
func TestSetHeader(t *testing.T) {
	r := &kgo.Record{Headers: []kgo.RecordHeader{{Key: "k", Value: []byte("1")}, {Key: "x"}, {Key: "k", Value: []byte("2")}}}
	setHeader(r, "k", "3")
	if len(r.Headers) != 3 || string(r.Headers[0].Value) != "1" || string(r.Headers[2].Value) != "3" {
		t.Fatalf("replaced: %v", r.Headers)
	}
	setHeader(r, "n", "4")
	if len(r.Headers) != 4 || r.Headers[3].Key != "n" {
		t.Fatalf("added: %v", r.Headers)
	}
	setHeader(r, "k", "")
	if len(r.Headers) != 2 || r.Headers[0].Key != "x" || r.Headers[1].Key != "n" {
		t.Fatalf("removed: %v", r.Headers)
	}
}
