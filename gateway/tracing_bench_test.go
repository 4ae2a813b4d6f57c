package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// discardSpans is an exporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkIngestTracing is BenchmarkIngest's "results" as a traced
// request: a batch of 100 log lines under the request's SERVER span,
// parented on a caller's sampled traceparent (a new trace id each time),
// judged and accepted at once. tracing=off is the default no-op provider
// (no span at all, the records carry the caller's traceparent); 1% and
// 100% an SDK provider with a TraceIDRatioBased sampler (the caller's flag
// does not decide) and a batching exporter that discards: at 1% most
// requests make a span that does not record and no per-event span, at
// 100% each makes its span, its stage events and a `send` span per event.
// Read cpu-ns/event (the process's CPU time, the exporter's goroutine and
// the GC's included) and allocs/op (a batch's) against off.
func BenchmarkIngestTracing(b *testing.B) {
	registry, payload, _ := benchLogLine(b)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	const perBatch = 100
	events := make([]*ingestv1.Event, perBatch)
	for j := range events {
		events[j] = &ingestv1.Event{Id: fmt.Sprintf("b-%d", j), Type: "examples.logs.v1.LogLine",
			OccurredAt: timestamppb.New(now), PartitionKey: fmt.Sprintf("svc-%d", j%16), Payload: &ingestv1.Event_Binary{Binary: payload}}
	}
	// Callers' contexts, each of a trace of its own.
	ctxs := make([]context.Context, 1024)
	for i := range ctxs {
		tp := fmt.Sprintf("00-%016x%016x-00f067aa0ba902b7-01", uint64(i+1)*0x9e3779b97f4a7c15, uint64(i+1)*0xbf58476d1ce4e5b9)
		ctxs[i] = metadata.NewIncomingContext(context.Background(), metadata.MD{traceparentMetadata: {tp}})
	}
	for _, mode := range []struct {
		name    string
		sampler sdktrace.Sampler // nil: no provider
	}{{"off", nil}, {"1%", sdktrace.TraceIDRatioBased(0.01)}, {"100%", sdktrace.AlwaysSample()}} {
		b.Run("tracing="+mode.name, func(b *testing.B) {
			var tp trace.TracerProvider = noop.NewTracerProvider()
			if mode.sampler != nil {
				sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(mode.sampler), sdktrace.WithBatcher(discardSpans{}))
				defer sdk.Shutdown(context.Background())
				tp = sdk
			}
			cfg := NewDefaultConfig()
			cfg.Dedup.Window = 0
			cfg.Sources = []SourceConfig{{Name: "bench", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}}}
			s, err := New(cfg, served(registry), &positionedKafka{}, WithClock(func() time.Time { return now }), WithTracerProvider(tp))
			if err != nil {
				b.Fatal(err)
			}
			src := &source{name: "bench"}
			b.ReportAllocs()
			cpu := processCPU(b)
			i := 0
			for b.Loop() {
				ctx, span := s.startRequest(ctxs[i%len(ctxs)], spanPublish, "grpc", src)
				results := s.judge(ctx, src, &batch{events: events})
				span.end()
				if results[perBatch-1].GetOutcome() != ingestv1.Outcome_ACCEPTED {
					b.Fatalf("result %v", results[perBatch-1])
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perBatch), "ns/event")
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N*perBatch), "cpu-ns/event")
		})
	}
}
