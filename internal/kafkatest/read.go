package kafkatest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// RecordAt reads the record at offset of topic's partition on brokers, by
// consuming that partition from exactly that offset, and fails the test
// when none comes within 10 seconds or the first one fetched is another.
func RecordAt(t testing.TB, brokers []string, topic string, partition int32, offset int64) *kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(offset)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no record at %s[%d]@%d within 10s", topic, partition, offset)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("reading %s[%d]@%d: %v", topic, partition, offset, fe.Err)
		}
		if recs := fs.Records(); len(recs) > 0 {
			r := recs[0]
			if r.Topic != topic || r.Partition != partition || r.Offset != offset {
				t.Fatalf("asked for %s[%d]@%d, read %s[%d]@%d first", topic, partition, offset, r.Topic, r.Partition, r.Offset)
			}
			return r
		}
	}
}
