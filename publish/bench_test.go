package publish

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/record"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkPublish publishes batches of 100 records of about 300 bytes
// (key, value and headers) from one caller to a kfake broker that discards
// what it acknowledges. A caller waiting for acks pays the linger once per
// call, hence the two sub-benchmarks.
func BenchmarkPublish(b *testing.B) {
	for _, linger := range []time.Duration{NewDefaultConfig().Linger, 0} {
		b.Run("linger="+linger.String(), func(b *testing.B) { benchmarkPublish(b, linger) })
	}
}

func benchmarkPublish(b *testing.B, linger time.Duration) {
	const (
		topic   = "ingest.bench"
		perCall = 100
	)
	c := newCluster(b, []string{topic}, kfake.BlackholeProduce())
	p := newTestProducer(b, c.ListenAddrs(), func(c *Config) { c.Linger = linger })

	value := make([]byte, 120)
	rand.Read(value)
	events := make([]record.Event, perCall)
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
	size += len(events[0].Key) + len(value)
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
