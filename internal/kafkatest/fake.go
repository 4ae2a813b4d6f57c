package kafkatest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Fake starts a one-broker in-process Kafka (kfake) with topics, of
// partitions each, and opts; the test's cleanup closes it.
func Fake(t testing.TB, partitions int32, topics []string, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	opts = append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...)}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}
