package publish

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/waitfor"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testWait bounds every wait in these tests. It is a guard against hangs,
// never an assertion about how long something took.
const testWait = 30 * time.Second

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newCluster starts a one-broker kfake cluster with the given topics (three
// partitions each) and closes it when the test ends.
func newCluster(t testing.TB, topics []string, opts ...kfake.Opt) *kfake.Cluster {
	return kafkatest.Fake(t, 3, topics, opts...)
}

// testDeliveryTimeout is the tests' Config.DeliveryTimeout, franz-go's
// minimum: a test whose records cannot be delivered (no broker) waits it
// out when its producer closes, and the 10s default would make that wait
// most of the package's test time. No assertion depends on it; a test
// that needs another sets it in edit.
const testDeliveryTimeout = minDeliveryTimeout

// newTestProducer creates a producer on brokers, with testDeliveryTimeout
// and cfg adjusted by edit, and closes it when the test ends.
func newTestProducer(t testing.TB, brokers []string, edit func(*Config), opts ...Option) *Producer {
	t.Helper()
	return newTestProducerOn(t, brokers, nil, edit, opts...)
}

// newTestProducerOn is newTestProducer on the connection conn (nil: made
// of the config's block).
func newTestProducerOn(t testing.TB, brokers []string, conn []kgo.Opt, edit func(*Config), opts ...Option) *Producer {
	t.Helper()
	cfg := NewDefaultConfig()
	cfg.Brokers = brokers
	cfg.DeliveryTimeout = testDeliveryTimeout
	if edit != nil {
		edit(&cfg)
	}
	p, err := NewProducer(cfg, conn, append([]Option{WithLogger(discardLogger())}, opts...)...)
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testWait)
		defer cancel()
		_ = p.Close(ctx)
	})
	return p
}

// consume reads n records from topic, from the start, failing the test if
// they do not arrive before testWait.
func consume(t testing.TB, brokers []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records from %s before the test's deadline", len(got), n, topic)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("consume %s[%d]: %v", e.Topic, e.Partition, e.Err)
		}
		got = append(got, fs.Records()...)
	}
	if len(got) > n {
		t.Fatalf("consumed %d records from %s, want %d", len(got), topic, n)
	}
	return got
}

// waitFor polls cond until it holds, failing the test after testWait.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitfor.Condition(t, testWait, what, cond)
}

// closedPort returns a loopback address on which nothing listens.
func closedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// murmur2 is Kafka's Java client hash (Utils.murmur2), written out here so
// that the test checks franz-go's partitioner against the Java client and
// not against itself.
func murmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(data))
	n := len(data) / 4
	for i := range n {
		k := uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[4*n:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// javaPartition is the partition the Java client picks for key.
func javaPartition(key []byte, partitions int) int32 {
	return int32(int(uint32(murmur2(key))&0x7fffffff) % partitions)
}
