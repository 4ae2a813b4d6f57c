package consumer

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// The caller's trace context the test records carry.
const (
	testTraceID    = "4bf92f3577b34da6a3ce929d0e0e4736"
	testParentSpan = "00f067aa0ba902b7"
	sampledTP      = "00-" + testTraceID + "-" + testParentSpan + "-01"
	unsampledTP    = "00-" + testTraceID + "-" + testParentSpan + "-00"
	testTracestate = "vendor=abc"
)

// tracedDeliverer is newTestDeliverer with a tracer provider that samples
// every span (parent-based, as tracing.New's) into the returned recorder.
func tracedDeliverer(t *testing.T, cfg Config, s sink.Sink) (*deliverer, *endsLog, []string, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())), sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	addrs := newCluster(t, 1)
	c, err := New(cfg, testVersions(t), s, []kgo.Opt{kgo.SeedBrokers(addrs...)},
		WithLogger(slog.New(slog.DiscardHandler)), WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.client.Close)
	ends := &endsLog{done: map[int64]bool{}}
	c.deliverer.run = ends
	return c.deliverer, ends, addrs, rec
}

// withTrace sets r's traceparent (and tracestate when not empty).
func withTrace(r *kgo.Record, tp, ts string) *kgo.Record {
	r.Headers = setHeader(r.Headers, record.HeaderTraceparent, tp)
	if ts != "" {
		r.Headers = setHeader(r.Headers, record.HeaderTracestate, ts)
	}
	return r
}

func setHeader(hs []kgo.RecordHeader, key, v string) []kgo.RecordHeader {
	for i := range hs {
		if hs[i].Key == key {
			hs[i].Value = []byte(v)
			return hs
		}
	}
	return append(hs, kgo.RecordHeader{Key: key, Value: []byte(v)})
}

// tracedJobs are sourceJobs whose records carry traceparent tp.
func tracedJobs(t *testing.T, tp string, ids ...string) []*job {
	t.Helper()
	jobs := sourceJobs(t, ids...)
	for _, j := range jobs {
		withTrace(j.rec, tp, testTracestate)
	}
	return jobs
}

// spansNamed returns the ended spans called name.
func spansNamed(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attrOf(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func wantAttr(t *testing.T, s sdktrace.ReadOnlySpan, key, want string) {
	t.Helper()
	v, ok := attrOf(s, key)
	if !ok || v.Emit() != want {
		t.Errorf("span %q: %s = %q (set %v), want %q", s.Name(), key, v.Emit(), ok, want)
	}
}

// wantChildOf checks that s is a child of parent in parent's trace.
func wantChildOf(t *testing.T, s sdktrace.ReadOnlySpan, parent trace.SpanContext) {
	t.Helper()
	if s.Parent().SpanID() != parent.SpanID() || s.SpanContext().TraceID() != parent.TraceID() {
		t.Errorf("span %q: parent %s in trace %s, want %s in %s", s.Name(), s.Parent().SpanID(),
			s.SpanContext().TraceID(), parent.SpanID(), parent.TraceID())
	}
}

// TestTraceWritten: each record's process span continues the trace in its
// headers (tracestate too), with the messaging attributes; the batch's sink
// write span is a child of the first and linked to each; the outcome is
// written.
func TestTraceWritten(t *testing.T) {
	d, ends, _, rec := tracedDeliverer(t, testConfig("trace-written"), newMemSink())
	d.process(tracedJobs(t, sampledTP, "a", "b", "c"))
	if got := ends.finished(); !allDone(got, 3, true) {
		t.Fatalf("finished %v, want 0..2 done", got)
	}
	procs := spansNamed(rec, "process "+testTopic)
	if len(procs) != 3 {
		t.Fatalf("%d process spans, want 3 (ended: %d)", len(procs), len(rec.Ended()))
	}
	for i, p := range procs {
		if p.SpanKind() != trace.SpanKindConsumer {
			t.Errorf("process span kind %v", p.SpanKind())
		}
		if got := p.Parent().TraceID().String(); got != testTraceID || p.Parent().SpanID().String() != testParentSpan || !p.Parent().IsRemote() {
			t.Errorf("process span parent %v, want the record's traceparent", p.Parent())
		}
		if got := p.SpanContext().TraceState().String(); got != testTracestate {
			t.Errorf("process span tracestate %q, want %q", got, testTracestate)
		}
		wantAttr(t, p, tracing.AttrMessagingSystem, "kafka")
		wantAttr(t, p, tracing.AttrDestination, testTopic)
		wantAttr(t, p, tracing.AttrOperationType, "process")
		wantAttr(t, p, tracing.AttrPartition, "0")
		wantAttr(t, p, tracing.AttrConsumerGroup, "trace-written")
		wantAttr(t, p, tracing.AttrOutcome, outcomeWritten)
		wantAttr(t, p, tracing.AttrEventID, []string{"a", "b", "c"}[i])
		if v, _ := attrOf(p, tracing.AttrOffset); v.AsInt64() != int64(i) {
			t.Errorf("offset %d, want %d", v.AsInt64(), i)
		}
	}
	writes := spansNamed(rec, "sink write mem")
	if len(writes) != 1 {
		t.Fatalf("%d sink write spans, want 1", len(writes))
	}
	w := writes[0]
	if w.SpanKind() != trace.SpanKindClient {
		t.Errorf("sink write span kind %v", w.SpanKind())
	}
	wantChildOf(t, w, procs[0].SpanContext())
	wantAttr(t, w, tracing.AttrEvents, "3")
	wantAttr(t, w, attrWriteAttempt, "1")
	wantAttr(t, w, attrConflicts, "0")
	if len(w.Links()) != 3 {
		t.Fatalf("sink write span has %d links, want 3", len(w.Links()))
	}
	for i, l := range w.Links() {
		if l.SpanContext.SpanID() != procs[i].SpanContext().SpanID() {
			t.Errorf("link %d to %s, want process span %s", i, l.SpanContext.SpanID(), procs[i].SpanContext().SpanID())
		}
	}
	// The sink's write ends before the records it wrote.
	if w.EndTime().After(procs[0].EndTime()) {
		t.Errorf("sink write ends after its parent")
	}
}

// conflictSink reports every event of a write as a conflict.
type conflictSink struct{ *memSink }

func (s conflictSink) Write(ctx context.Context, batch []sink.Event) ([]sink.Conflict, error) {
	if _, err := s.memSink.Write(ctx, batch); err != nil {
		return nil, err
	}
	out := make([]sink.Conflict, len(batch))
	for i := range batch {
		out[i] = sink.Conflict{Index: i, StoredFingerprint: "held"}
	}
	return out, nil
}

// TestTraceConflict: a record the sink held with another payload ends
// its process span as a conflict, with a conflict event; the write span
// counts it.
func TestTraceConflict(t *testing.T) {
	d, ends, _, rec := tracedDeliverer(t, testConfig("trace-conflict"), conflictSink{newMemSink()})
	d.process(tracedJobs(t, sampledTP, "a"))
	if got := ends.finished(); !allDone(got, 1, true) {
		t.Fatalf("finished %v, want 0 done", got)
	}
	procs := spansNamed(rec, "process "+testTopic)
	if len(procs) != 1 {
		t.Fatalf("%d process spans, want 1", len(procs))
	}
	wantAttr(t, procs[0], tracing.AttrOutcome, outcomeConflict)
	if ev := procs[0].Events(); len(ev) != 1 || ev[0].Name != "conflict" {
		t.Errorf("process span events %v, want one conflict", ev)
	}
	if w := spansNamed(rec, "sink write mem"); len(w) != 1 {
		t.Fatalf("%d sink write spans", len(w))
	} else {
		wantAttr(t, w[0], attrConflicts, "1")
	}
}

// TestTraceDeadLettered: a record the sink refuses for good has a
// dead_letter span, child of its process span; the process span ends
// dead-lettered with an error status; the write span has the error class;
// the dead letter keeps the record's traceparent and tracestate.
func TestTraceDeadLettered(t *testing.T) {
	s := newMemSink()
	s.setFail(func([]sink.Event) error { return sink.PermanentError(errors.New("receiver 422")) })
	d, ends, addrs, rec := tracedDeliverer(t, testConfig("trace-dlq"), s)
	d.process(tracedJobs(t, sampledTP, "a"))
	if got := ends.finished(); !allDone(got, 1, true) {
		t.Fatalf("finished %v, want 0 done", got)
	}
	procs := spansNamed(rec, "process "+testTopic)
	dls := spansNamed(rec, "dead_letter "+record.DLQTopic(testTopic))
	if len(procs) != 1 || len(dls) != 1 {
		t.Fatalf("%d process and %d dead_letter spans, want 1 each", len(procs), len(dls))
	}
	p, dl := procs[0], dls[0]
	wantAttr(t, p, tracing.AttrOutcome, outcomeDLQ)
	if p.Status().Code != codes.Error {
		t.Errorf("process span status %v, want an error", p.Status())
	}
	wantChildOf(t, dl, p.SpanContext())
	if dl.SpanKind() != trace.SpanKindProducer {
		t.Errorf("dead_letter span kind %v", dl.SpanKind())
	}
	wantAttr(t, dl, attrDLQClass, "permanent")
	wantAttr(t, dl, attrDLQAttempts, "1")
	wantAttr(t, dl, tracing.AttrDestination, record.DLQTopic(testTopic))
	if w := spansNamed(rec, "sink write mem"); len(w) != 1 {
		t.Fatalf("%d sink write spans", len(w))
	} else {
		wantAttr(t, w[0], attrErrorType, "permanent")
		if w[0].Status().Code != codes.Error {
			t.Errorf("sink write status %v, want an error", w[0].Status())
		}
	}
	got := readAll(t, addrs, record.DLQTopic(testTopic))
	if len(got) != 1 {
		t.Fatalf("%d dead letters", len(got))
	}
	if tp := headerValue(got[0].Headers, record.HeaderTraceparent); tp != sampledTP {
		t.Errorf("dead letter traceparent %q, want the record's %q", tp, sampledTP)
	}
	if ts := headerValue(got[0].Headers, record.HeaderTracestate); ts != testTracestate {
		t.Errorf("dead letter tracestate %q, want %q", ts, testTracestate)
	}
}

// TestTraceParked: a drained record without an envelope is parked: a park
// span, child of its process span, with the reason; the process span has
// a refused event and ends parked.
func TestTraceParked(t *testing.T) {
	d, ends, _, rec := tracedDeliverer(t, testConfig("trace-park"), newMemSink())
	dlqTopic := record.DLQTopic(testTopic)
	p := newPartState(t.Context(), topicPartition{dlqTopic, 0}, true)
	bare := withTrace(eventRecord(t, dlqTopic, "bare", "k", logLine(t)), sampledTP, "")
	d.process([]*job{{rec: bare, part: p, key: "k"}})
	if got := ends.finished(); !allDone(got, 1, true) {
		t.Fatalf("finished %v, want 0 done", got)
	}
	procs := spansNamed(rec, "process "+dlqTopic)
	parks := spansNamed(rec, "park "+record.ParkedTopic(testTopic))
	if len(procs) != 1 || len(parks) != 1 {
		t.Fatalf("%d process and %d park spans, want 1 each (ended %d)", len(procs), len(parks), len(rec.Ended()))
	}
	wantChildOf(t, parks[0], procs[0].SpanContext())
	wantAttr(t, parks[0], attrDLQReason, record.ParkedUnreadable)
	wantAttr(t, procs[0], tracing.AttrOutcome, outcomeParked)
	wantAttr(t, procs[0], attrDrained, "true")
	if ev := procs[0].Events(); len(ev) != 1 || ev[0].Name != "refused" {
		t.Errorf("process span events %v, want one refused", ev)
	}
}

// TestTraceDrainedWritten: a dead letter drained and written continues its
// event's original trace: its process span's parent is the traceparent the
// dead letter kept.
func TestTraceDrainedWritten(t *testing.T) {
	d, ends, _, rec := tracedDeliverer(t, testConfig("trace-drain"), newMemSink())
	dlqTopic := record.DLQTopic(testTopic)
	p := newPartState(t.Context(), topicPartition{dlqTopic, 0}, true)
	src := withTrace(eventRecord(t, testTopic, "again", "k", logLine(t)), sampledTP, testTracestate)
	at := d.clock.Now().UTC()
	dl := record.NewDeadLetter(dlqTopic, src, &record.Envelope{Class: "transient", Error: "receiver 503", Sink: "mem",
		Retryable: true, SourceTopic: testTopic, FirstFailureAt: at, LastFailureAt: at, Attempts: 1, DLQRetries: 1})
	d.process([]*job{{rec: dl, part: p, key: "k", source: "test"}})
	if got := ends.finished(); !allDone(got, 1, true) {
		t.Fatalf("finished %v, want 0 done", got)
	}
	procs := spansNamed(rec, "process "+dlqTopic)
	if len(procs) != 1 {
		t.Fatalf("%d process spans, want 1", len(procs))
	}
	pr := procs[0]
	if pr.Parent().TraceID().String() != testTraceID || pr.Parent().SpanID().String() != testParentSpan {
		t.Errorf("drained process span parent %v, want the original traceparent", pr.Parent())
	}
	wantAttr(t, pr, tracing.AttrOutcome, outcomeWritten)
	wantAttr(t, pr, attrDLQRetries, "1")
	wantAttr(t, pr, attrDrained, "true")
	if w := spansNamed(rec, "sink write mem"); len(w) != 1 {
		t.Fatalf("%d sink write spans", len(w))
	} else {
		wantChildOf(t, w[0], pr.SpanContext())
	}
}

// TestTraceUnsampled: a record whose traceparent is not sampled makes no
// span, nor does its batch's write; a record without a traceparent starts
// a new root trace (the sampler decides).
func TestTraceUnsampled(t *testing.T) {
	d, ends, _, rec := tracedDeliverer(t, testConfig("trace-unsampled"), newMemSink())
	d.process(tracedJobs(t, unsampledTP, "a", "b"))
	if got := ends.finished(); !allDone(got, 2, true) {
		t.Fatalf("finished %v, want 0..1 done", got)
	}
	if n := len(rec.Started()); n != 0 {
		t.Fatalf("%d spans started for unsampled records", n)
	}
	root := sourceJobs(t, "c")
	root[0].rec.Offset = 2
	d.process(root)
	procs := spansNamed(rec, "process "+testTopic)
	if len(procs) != 1 || procs[0].Parent().IsValid() {
		t.Fatalf("a record without traceparent: %d process spans, want one root", len(procs))
	}
}

// TestUnsampledParent: the header check that skips unsampled records.
func TestUnsampledParent(t *testing.T) {
	for _, tt := range []struct {
		tp   string
		want bool
	}{
		{unsampledTP, true},
		{"00-" + testTraceID + "-" + testParentSpan + "-02", true},
		{sampledTP, false},
		{"00-" + testTraceID + "-" + testParentSpan + "-03", false},
		{"00-" + testTraceID + "-" + testParentSpan + "-0f", false},
		{"00-" + testTraceID + "-" + testParentSpan + "-0e", true},
		{"", false},
		{"00-" + testTraceID + "-" + testParentSpan, false},
		{"01-" + testTraceID + "-" + testParentSpan + "-00", false},
		{"00-" + testTraceID + "-" + testParentSpan + "-0G", false},
		{"00_" + testTraceID + "-" + testParentSpan + "-00", false},
	} {
		r := withTrace(&kgo.Record{}, tt.tp, "")
		if got := unsampledParent(r.Headers); got != tt.want {
			t.Errorf("unsampledParent(%q) = %v, want %v", tt.tp, got, tt.want)
		}
	}
}

// TestUnsampledNoAllocs: with the no-op provider, or an unsampled record,
// starting and ending a record's span allocates nothing.
func TestUnsampledNoAllocs(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	p := newPartState(t.Context(), topicPartition{testTopic, 0}, false)
	for _, tt := range []struct {
		name string
		tr   *tracer
		tp   string
	}{
		{"off", newTracer(defaultOptions().tracerProvider, "g", "mem"), sampledTP},
		{"unsampled", newTracer(sdk, "g", "mem"), unsampledTP},
	} {
		j := &job{rec: withTrace(eventRecord(t, testTopic, "a", "k", logLine(t)), tt.tp, ""), part: p}
		jobs := []*job{j}
		allocs := testing.AllocsPerRun(100, func() {
			tt.tr.startProcess(t.Context(), j)
			_, span := tt.tr.startWrite(t.Context(), jobs, 1)
			endWrite(span, 0, nil)
			tt.tr.endProcess(j, outcomeWritten, nil)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per record", tt.name, allocs)
		}
	}
}

// TestTraceRetried: a write that fails transiently and is retried has a
// sink write span per attempt, the failed one with its class; the record's
// span has a retry event and ends written.
func TestTraceRetried(t *testing.T) {
	s := newMemSink()
	var failed atomic.Bool
	s.setFail(func([]sink.Event) error {
		if failed.CompareAndSwap(false, true) {
			return sink.TransientError(errors.New("receiver 503"), 0)
		}
		return nil
	})
	d, ends, _, rec := tracedDeliverer(t, testConfig("trace-retry"), s)
	d.process(tracedJobs(t, sampledTP, "a"))
	if got := ends.finished(); !allDone(got, 1, true) {
		t.Fatalf("finished %v, want 0 done", got)
	}
	writes := spansNamed(rec, "sink write mem")
	if len(writes) != 2 {
		t.Fatalf("%d sink write spans, want 2", len(writes))
	}
	wantAttr(t, writes[0], attrWriteAttempt, "1")
	wantAttr(t, writes[0], attrErrorType, "transient")
	wantAttr(t, writes[1], attrWriteAttempt, "2")
	if writes[1].Status().Code == codes.Error {
		t.Errorf("the second write failed: %v", writes[1].Status())
	}
	procs := spansNamed(rec, "process "+testTopic)
	if len(procs) != 1 {
		t.Fatalf("%d process spans", len(procs))
	}
	wantAttr(t, procs[0], tracing.AttrOutcome, outcomeWritten)
	if ev := procs[0].Events(); len(ev) != 1 || ev[0].Name != "retry" {
		t.Errorf("process span events %v, want one retry", ev)
	}
}

// TestTraceRun: a running consumer traces the records of its topic that
// are sampled, and those only; the sink write span of the sampled one is
// its process span's child.
func TestTraceRun(t *testing.T) {
	addrs := newCluster(t, 1)
	produce(t, addrs,
		withTrace(eventRecord(t, testTopic, "sampled", "k1", logLine(t)), sampledTP, ""),
		withTrace(eventRecord(t, testTopic, "unsampled", "k2", logLine(t)), unsampledTP, ""))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())), sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := newMemSink()
	r := start(t, testConfig("trace-run"), addrs, s, WithTracerProvider(tp), WithLogger(slog.New(slog.DiscardHandler)))
	waitFor(t, 20*time.Second, "both written", func() bool { return s.hasAll([]string{"sampled", "unsampled"}) })
	waitFor(t, 20*time.Second, "the process span ended", func() bool { return len(spansNamed(rec, "process "+testTopic)) > 0 })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	procs := spansNamed(rec, "process "+testTopic)
	if len(procs) != 1 {
		t.Fatalf("%d process spans, want the sampled record's only", len(procs))
	}
	wantAttr(t, procs[0], tracing.AttrEventID, "sampled")
	writes := spansNamed(rec, "sink write mem")
	if len(writes) != 1 {
		t.Fatalf("%d sink write spans, want 1", len(writes))
	}
	wantChildOf(t, writes[0], procs[0].SpanContext())
}

// BenchmarkRecordSpan: what tracing adds to one record of a batch of one:
// its process span started and ended, and its batch's write span, with
// tracing off, for a record not sampled and for one sampled (an SDK
// provider whose batched exporter discards).
func BenchmarkRecordSpan(b *testing.B) {
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	p := newPartState(b.Context(), topicPartition{testTopic, 0}, false)
	for _, tt := range []struct {
		name string
		tp   trace.TracerProvider
		tp55 string
	}{
		{"off", defaultOptions().tracerProvider, sampledTP},
		{"unsampled", sdk, unsampledTP},
		{"sampled", sdk, sampledTP},
	} {
		b.Run(tt.name, func(b *testing.B) {
			tr := newTracer(tt.tp, "g", "mem")
			j := &job{rec: withTrace(eventRecord(b, testTopic, "a", "k", logLine(b)), tt.tp55, ""), part: p}
			jobs := []*job{j}
			b.ReportAllocs()
			for b.Loop() {
				tr.startProcess(b.Context(), j)
				_, span := tr.startWrite(b.Context(), jobs, 1)
				endWrite(span, 0, nil)
				tr.endProcess(j, outcomeWritten, nil)
			}
		})
	}
}

// TestTraceExemplars: the sink latency and end-to-end latency of a
// sampled record carry its trace id as an exemplar; an unsampled one's do
// not.
func TestTraceExemplars(t *testing.T) {
	for _, tt := range []struct {
		tp   string
		want string
	}{{unsampledTP, ""}, {sampledTP, testTraceID}} {
		d, _, _, _ := tracedDeliverer(t, testConfig("trace-exemplar"), newMemSink())
		d.process(tracedJobs(t, tt.tp, "a"))
		for name, obs := range map[string]prometheus.Observer{
			"sink latency": d.m.sinkLatency.WithLabelValues("mem"),
			"end to end":   d.m.endToEnd.WithLabelValues(routeDirect),
		} {
			var m dto.Metric
			if err := obs.(prometheus.Metric).Write(&m); err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, b := range m.GetHistogram().GetBucket() {
				for _, l := range b.GetExemplar().GetLabel() {
					if l.GetName() == "trace_id" {
						got = l.GetValue()
					}
				}
			}
			if m.GetHistogram().GetSampleCount() != 1 || got != tt.want {
				t.Errorf("%s of a record with traceparent %s: %d observed, exemplar trace id %q, want %q",
					name, tt.tp, m.GetHistogram().GetSampleCount(), got, tt.want)
			}
		}
	}
}
