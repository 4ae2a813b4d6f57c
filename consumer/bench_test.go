package consumer

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// benchConsume produces b.N events over 1,000 keys to one partition and
// measures how fast a consumer writes them to s and commits their offsets.
func benchConsume(b *testing.B, cfg Config, s sink.Sink, opts ...Option) {
	benchConsumeTraced(b, cfg, s, -1, opts...)
}

// benchConsumeTraced is benchConsume with records that carry a
// traceparent, sampled for pct in a hundred of them (a gateway sampling
// pct%), when pct is not negative.
func benchConsumeTraced(b *testing.B, cfg Config, s sink.Sink, pct int, opts ...Option) {
	addrs := newCluster(b, 1)
	v := logLine(b)
	const chunk = 5000
	for i := 0; i < b.N; i += chunk {
		var recs []*kgo.Record
		for j := i; j < min(i+chunk, b.N); j++ {
			r := eventRecord(b, testTopic, fmt.Sprintf("e%08d", j), fmt.Sprintf("k%d", j%1000), v)
			if pct >= 0 {
				flags := "00"
				if j%100 < pct {
					flags = "01"
				}
				tp := fmt.Sprintf("00-%032x-%016x-%s", j+1, j+1, flags)
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: record.HeaderTraceparent, Value: []byte(tp)})
			}
			recs = append(recs, r)
		}
		produce(b, addrs, recs...)
	}
	b.ResetTimer()
	r := start(b, cfg, addrs, s, opts...)
	// The group join is not the consumer's pace: events/s counts from
	// the assignment on.
	waitFor(b, time.Minute, "assignment", func() bool { return len(r.c.dispatcher.assigned()) > 0 })
	assigned, cpu0 := time.Now(), processCPU(b)
	waitFor(b, 10*time.Minute, "every offset committed", func() bool {
		for _, p := range r.c.dispatcher.assigned() {
			return r.c.committer.committedOffset(p) == int64(b.N)
		}
		return false
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(assigned).Seconds(), "events/s")
	// The process's CPU, the receiver's and the broker's included: on a
	// shared machine events/s follows the CPU left over, CPU per event
	// does not.
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/event")
	if err := r.stop(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkConsumerHTTPSink: the HTTP sink against a receiver with a 100 ms
// round trip; max_in_flight 1024 keeps up to 1,000 keys writing at once.
func BenchmarkConsumerHTTPSink(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(100 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	}))
	b.Cleanup(srv.Close)
	hc := sink.NewDefaultConfig().HTTP
	hc.URL = srv.URL
	hc.MaxIdleConns = 1100
	s, err := sink.OpenHTTP(hc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	cfg := testConfig("bench-http")
	cfg.MaxInFlight = benchInFlight
	cfg.CommitInterval = 100 * time.Millisecond
	benchConsume(b, cfg, s)
}

// BenchmarkConsumerSQLiteSink: the embedded SQLite sink, batches of up to
// 256 events per transaction.
func BenchmarkConsumerSQLiteSink(b *testing.B) {
	s := openSQLite(b, filepath.Join(b.TempDir(), "events.db"))
	cfg := testConfig("bench-sqlite")
	cfg.WriteBatch = 256
	cfg.SinkConcurrency = 1
	cfg.CommitInterval = 100 * time.Millisecond
	benchConsume(b, cfg, s)
}

// BenchmarkConsumerMemSink: a test sink that sleeps 100 ms per write; the
// consumer's own overhead (poll, decode, dispatch, commit) sets the pace.
// Every record carries a traceparent, sampled in the share of records
// that the tracing ratio says (as a gateway sampling at that ratio marks
// them); tracing is off (the no-op provider), or an SDK provider with
// tracing.New's parent-based sampler whose batched exporter discards the
// spans.
func BenchmarkConsumerMemSink(b *testing.B) {
	for _, tt := range []struct {
		name string
		pct  int
	}{{"off", 0}, {"1%", 1}, {"100%", 100}} {
		b.Run("tracing="+tt.name, func(b *testing.B) {
			s := newMemSink()
			s.latency = 100 * time.Millisecond
			cfg := testConfig("bench-mem")
			cfg.MaxInFlight = benchInFlight
			cfg.CommitInterval = 100 * time.Millisecond
			var opts []Option
			if tt.name != "off" {
				tp := sdktrace.NewTracerProvider(
					sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(float64(tt.pct)/100))),
					sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				opts = append(opts, WithTracerProvider(tp))
			}
			benchConsumeTraced(b, cfg, s, tt.pct, opts...)
		})
	}
}

// benchInFlight leaves room for keys whose next record waits behind
// the one being written, beyond the 1,000 keys writing at once.
const benchInFlight = 2048
