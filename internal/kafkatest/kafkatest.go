// Package kafkatest gives tests a Kafka to run against: the real cluster
// named by SLUICE_KAFKA_BROKERS when it is set (scripts/kafka.sh up starts
// one), with a topic of the test's own that is deleted afterwards.
package kafkatest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EnvBrokers names the environment variable with the real cluster's
// comma-separated seed brokers.
const EnvBrokers = "SLUICE_KAFKA_BROKERS"

// wait bounds each admin call.
const wait = 30 * time.Second

// Brokers returns the real cluster's brokers, or skips the test when
// SLUICE_KAFKA_BROKERS is not set, so `go test ./...` runs anywhere.
func Brokers(t testing.TB) []string {
	t.Helper()
	env := os.Getenv(EnvBrokers)
	if env == "" {
		t.Skip(EnvBrokers + " is not set: skipping the test against a real Kafka (scripts/kafka.sh up starts one)")
	}
	var brokers []string
	for _, b := range strings.Split(env, ",") {
		if b = strings.TrimSpace(b); b != "" {
			brokers = append(brokers, b)
		}
	}
	return brokers
}

// CreateTopic creates a topic named after the test and the time, with the
// broker's default replication, and deletes it when the test ends.
func CreateTopic(t testing.TB, brokers []string, partitions int32, configs map[string]*string) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	topic := fmt.Sprintf("sluice.test.%s.%d", strings.ToLower(t.Name()), time.Now().UnixNano())
	topic = strings.NewReplacer("/", "-", "_", "-", " ", "-").Replace(topic)
	if len(topic) > 249 {
		topic = topic[len(topic)-249:]
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, partitions, -1, configs, topic); err != nil {
		cl.Close()
		t.Fatalf("create topic %s: %v", topic, err)
	}
	t.Cleanup(func() {
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if _, err := adm.DeleteTopic(ctx, topic); err != nil {
			t.Logf("delete topic %s: %v", topic, err)
		}
	})
	return topic
}
