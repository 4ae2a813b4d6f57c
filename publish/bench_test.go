package publish

import (
	"context"
	"crypto/rand"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/record"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// oldLinger is Config.Linger's default before it became 0, for the
// benchmarks that compare the two.
const oldLinger = 5 * time.Millisecond

// BenchmarkPublish publishes batches of 100 records of about 300 bytes
// (key, value and headers) from one caller to a kfake broker that discards
// what it acknowledges. A caller waiting for acks pays the linger once per
// call, hence the two sub-benchmarks.
func BenchmarkPublish(b *testing.B) {
	for _, linger := range []time.Duration{0, oldLinger} {
		b.Run("linger="+linger.String(), func(b *testing.B) { benchmarkPublish(b, linger) })
	}
}

// BenchmarkPublishConcurrent is many callers at once, each publishing
// perCall records and waiting for their acks, the gateway's pattern, with
// no linger and with the old one: cpu-ns/record is the process's CPU time
// (producer and kfake) per record, so it prices how well records batch
// while produce requests are in flight; run it with -cpu 1 to match the
// benchmark layout's GOMAXPROCS=1.
func BenchmarkPublishConcurrent(b *testing.B) {
	for _, perCall := range []int{1, 100} {
		for _, callers := range []int{8, 64} {
			for _, linger := range []time.Duration{0, oldLinger} {
				name := fmt.Sprintf("records=%d/callers=%d/linger=%v", perCall, callers, linger)
				b.Run(name, func(b *testing.B) { benchmarkPublishConcurrent(b, perCall, callers, linger) })
			}
		}
	}
}

func benchmarkPublishConcurrent(b *testing.B, perCall, callers int, linger time.Duration) {
	const topic = "ingest.bench"
	c := newCluster(b, []string{topic}, kfake.BlackholeProduce())
	// The default delivery timeout: the tests' 1s minimum fails records
	// when a busy machine starves the benchmark.
	p := newTestProducer(b, c.ListenAddrs(), func(c *Config) {
		c.Linger = linger
		c.DeliveryTimeout = NewDefaultConfig().DeliveryTimeout
	})
	events, _ := benchEvents(topic, perCall)
	b.SetParallelism((callers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	ctx := context.Background()
	b.ReportAllocs()
	start := processCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		records := make([]*kgo.Record, perCall)
		for pb.Next() {
			for i := range records {
				records[i] = record.NewEvent(&events[i])
			}
			for _, err := range p.Publish(ctx, records) {
				if err != nil {
					b.Error(err)
					return
				}
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(processCPU(b)-start)/float64(b.N*perCall), "cpu-ns/record")
}

// processCPU is the process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchEvents are n events of about 300 bytes as records (key, value and
// headers) to topic, and that size.
func benchEvents(topic string, n int) ([]record.Event, int) {
	value := make([]byte, 120)
	rand.Read(value)
	events := make([]record.Event, n)
	for i := range events {
		events[i] = record.Event{
			Topic: topic, Key: fmt.Appendf(nil, "customer-%d", i%10), Value: value,
			ID: fmt.Sprintf("evt-%06d", i), Type: "order.created", Source: "shop",
			OccurredAt: time.Now(), IngestedAt: time.Now(), Fingerprint: "sha256:0123456789abcdef",
		}
	}
	size := 0
	for _, h := range record.NewEvent(&events[0]).Headers {
		size += len(h.Key) + len(h.Value)
	}
	return events, size + len(events[0].Key) + len(value)
}

func benchmarkPublish(b *testing.B, linger time.Duration) {
	const (
		topic   = "ingest.bench"
		perCall = 100
	)
	c := newCluster(b, []string{topic}, kfake.BlackholeProduce())
	p := newTestProducer(b, c.ListenAddrs(), func(c *Config) { c.Linger = linger })
	events, size := benchEvents(topic, perCall)
	b.SetBytes(int64(size * perCall))

	ctx := context.Background()
	records := make([]*kgo.Record, perCall)
	b.ReportAllocs()
	for b.Loop() {
		for i := range records {
			records[i] = record.NewEvent(&events[i])
		}
		for _, err := range p.Publish(ctx, records) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(size), "bytes/record")
}
