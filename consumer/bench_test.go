package consumer

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/sink"
)

// benchConsume produces b.N events over 1,000 keys to one partition and
// measures how fast a consumer writes them to s and commits their offsets.
func benchConsume(b *testing.B, cfg Config, s sink.Sink) {
	addrs := newCluster(b, 1)
	v := logLine(b)
	const chunk = 5000
	for i := 0; i < b.N; i += chunk {
		var recs []*kgo.Record
		for j := i; j < min(i+chunk, b.N); j++ {
			recs = append(recs, eventRecord(b, testTopic, fmt.Sprintf("e%08d", j), fmt.Sprintf("k%d", j%1000), v))
		}
		produce(b, addrs, recs...)
	}
	b.ResetTimer()
	r := start(b, cfg, addrs, s)
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
func BenchmarkConsumerMemSink(b *testing.B) {
	s := newMemSink()
	s.latency = 100 * time.Millisecond
	cfg := testConfig("bench-mem")
	cfg.MaxInFlight = benchInFlight
	cfg.CommitInterval = 100 * time.Millisecond
	benchConsume(b, cfg, s)
}

// benchInFlight leaves room for keys whose next record waits behind
// the one being written, beyond the 1,000 keys writing at once.
const benchInFlight = 2048
