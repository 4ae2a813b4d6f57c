package kafkatest

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkaconn"
)

// RecordAt reads the record at offset of topic's partition on brokers, by
// consuming that partition from exactly that offset (kafkaconn.Read), and
// fails the test when none comes within 10 seconds or the first one
// fetched is another.
func RecordAt(t testing.TB, brokers []string, topic string, partition int32, offset int64) *kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var first *kgo.Record
	// The span has no end: the first record fetched stops the read.
	span := kafkaconn.Span{Topic: topic, Partition: partition, From: offset, End: math.MaxInt64}
	err = kafkaconn.Read(ctx, cl, []kafkaconn.Span{span}, 0, func(r *kgo.Record) (bool, error) {
		first = r
		return true, nil
	})
	if fe, ok := err.(*kafkaconn.FetchError); ok {
		t.Fatalf("reading %s[%d]@%d: %v", topic, partition, offset, fe.Err)
	}
	if err != nil || first == nil {
		t.Fatalf("no record at %s[%d]@%d within 10s", topic, partition, offset)
	}
	if first.Topic != topic || first.Partition != partition || first.Offset != offset {
		t.Fatalf("asked for %s[%d]@%d, read %s[%d]@%d first", topic, partition, offset, first.Topic, first.Partition, first.Offset)
	}
	return first
}
