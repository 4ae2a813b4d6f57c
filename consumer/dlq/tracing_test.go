package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/record"
)

const (
	eventTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	eventSpanID  = "00f067aa0ba902b7"
	eventTP      = "00-" + eventTraceID + "-" + eventSpanID + "-01"
	eventTS      = "vendor=abc"
)

// tracedDeadLetter is dlqRecord of an event that carried eventTP and
// eventTS.
func tracedDeadLetter(t *testing.T, id string) *kgo.Record {
	t.Helper()
	ev := eventRecord(t, testTopic, id, id, logLine(t))
	ev.Headers = append(ev.Headers,
		kgo.RecordHeader{Key: record.HeaderTraceparent, Value: []byte(eventTP)},
		kgo.RecordHeader{Key: record.HeaderTracestate, Value: []byte(eventTS)})
	at := time.Now().UTC()
	env := record.Envelope{Class: "transient", Error: "receiver 503", Sink: "mem", Attempts: 2, FirstFailureAt: at,
		LastFailureAt: at, Retryable: true, SourceTopic: testTopic, Group: "g"}
	return record.NewDeadLetter(record.DLQTopic(testTopic), ev, &env)
}

func headerOf(r *kgo.Record, key string) string {
	v := ""
	for _, h := range r.Headers {
		if h.Key == key {
			v = string(h.Value)
		}
	}
	return v
}

// TestReplayTraced: a replay is a root `replay {topic}` span, with an
// event per record refused; each record replayed has a `replay record` span, its child, linked to the dead
// letter's own trace, and the replayed record carries that span's context
// in place of the event's.
func TestReplayTraced(t *testing.T) {
	addrs := replayCluster(t, tracedDeadLetter(t, "again"), dlqRecord(t, "elsewhere", orderTopic, logLine(t)))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())), sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A caller's span in ctx is not the replay's parent.
	caller := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled})
	ctx = trace.ContextWithSpanContext(ctx, caller)
	opts := replayOpts(t, "alice")
	opts.TracerProvider = tp
	rep, err := Replay(ctx, []kgo.Opt{kgo.SeedBrokers(addrs...)}, record.DLQTopic(testTopic), Selection{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	var job, one sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "replay " + record.DLQTopic(testTopic):
			job = s
		case "replay record":
			one = s
		}
	}
	if job == nil || one == nil || len(rec.Ended()) != 2 {
		t.Fatalf("ended %d spans, want the replay's and its record's", len(rec.Ended()))
	}
	if job.Parent().IsValid() || job.SpanKind() != trace.SpanKindInternal {
		t.Errorf("replay span: parent %v, kind %v; want a root, internal", job.Parent(), job.SpanKind())
	}
	attrs := map[string]string{}
	for _, kv := range job.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	if attrs[attrReplayID] != rep.ReplayID || attrs[attrReplayActor] != "alice" || attrs[attrReplayReplayed] != "1" {
		t.Errorf("replay span attributes %v", attrs)
	}
	if ev := job.Events(); len(ev) != 1 || ev[0].Name != "refused" {
		t.Errorf("replay span events %v, want the refusal of the record whose envelope names another topic", ev)
	}
	if one.Parent().SpanID() != job.SpanContext().SpanID() || one.SpanContext().TraceID() != job.SpanContext().TraceID() {
		t.Errorf("replay record span is not the replay span's child")
	}
	if one.SpanKind() != trace.SpanKindProducer {
		t.Errorf("replay record span kind %v", one.SpanKind())
	}
	if l := one.Links(); len(l) != 1 || l[0].SpanContext.TraceID().String() != eventTraceID || l[0].SpanContext.SpanID().String() != eventSpanID {
		t.Errorf("replay record links %v, want the dead letter's traceparent", l)
	}
	out := readAll(t, addrs, testTopic)
	if len(out) != 1 {
		t.Fatalf("%d records replayed", len(out))
	}
	wantTP, _ := tracing.Headers(one.SpanContext())
	if got := headerOf(out[0], record.HeaderTraceparent); got != wantTP {
		t.Errorf("replayed traceparent %q, want the replay record span's %q", got, wantTP)
	}
	if got := headerOf(out[0], record.HeaderTracestate); got != "" {
		t.Errorf("replayed tracestate %q, want none (the replay's trace has none)", got)
	}
	if _, err := record.ParseEvent(out[0]); err != nil {
		t.Errorf("replayed record does not parse: %v", err)
	}
}

// TestReplayUntraced: without a tracer provider, the replayed record
// keeps the event's traceparent and tracestate, as before tracing.
func TestReplayUntraced(t *testing.T) {
	addrs := replayCluster(t, tracedDeadLetter(t, "again"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := Replay(ctx, []kgo.Opt{kgo.SeedBrokers(addrs...)}, record.DLQTopic(testTopic), Selection{}, replayOpts(t, "bob")); err != nil {
		t.Fatal(err)
	}
	out := readAll(t, addrs, testTopic)
	if len(out) != 1 {
		t.Fatalf("%d records replayed", len(out))
	}
	if tp, ts := headerOf(out[0], record.HeaderTraceparent), headerOf(out[0], record.HeaderTracestate); tp != eventTP || ts != eventTS {
		t.Errorf("replayed trace context %q %q, want the event's", tp, ts)
	}
}
