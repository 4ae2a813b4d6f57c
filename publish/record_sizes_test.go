package publish

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/record"
)

// TestBatchMaxBytesHoldsSizes: a record with every field at its limit
// takes no more than record.Limits.Sizes says in the client's count and in
// a batch: a producer whose BatchMaxBytes is exactly Sizes().Batch
// produces it.
func TestBatchMaxBytesHoldsSizes(t *testing.T) {
	const topic = "ingest.limits"
	l := record.Limits{Value: 8 << 10, ID: 128, Type: 800, Key: 1024, Source: 64, Topic: len(topic),
		Fingerprint: 39, Traceparent: 55, Tracestate: 512, Attributes: 16, AttributeKey: 64, AttributeValue: 1024}
	fill := func(n int, c byte) string { return strings.Repeat(string(c), n) }
	attrs := map[string]string{}
	for i := range l.Attributes {
		attrs[fmt.Sprintf("%02d", i)+fill(l.AttributeKey-2, 'k')] = fill(l.AttributeValue, 'v')
	}
	rec := record.NewEvent(&record.Event{
		Topic: topic, Key: []byte(fill(l.Key, 'p')), Value: make([]byte, l.Value),
		ID: fill(l.ID, 'i'), Type: fill(l.Type, 't'), Source: fill(l.Source, 's'),
		OccurredAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), IngestedAt: time.Now(),
		Fingerprint: fill(l.Fingerprint, 'f'), Traceparent: fill(l.Traceparent, '0'), Tracestate: fill(l.Tracestate, 's'), Attributes: attrs,
	})
	sz := l.Sizes()
	if got := recordSize(rec); got > int64(sz.Client) {
		t.Errorf("client size %d, bound %d", got, sz.Client)
	}
	c := newCluster(t, []string{topic})
	p := newTestProducer(t, c.ListenAddrs(), func(c *Config) {
		c.BatchMaxBytes, c.Compression = int32(sz.Batch), "none"
	})
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if err := p.Publish(ctx, []*kgo.Record{rec})[0]; err != nil {
		t.Fatalf("a record at every limit, BatchMaxBytes %d: %v", sz.Batch, err)
	}
}
