package publish

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/record"
)

// Integration tests run against the Kafka cluster named by
// SLUICE_KAFKA_BROKERS (package kafkatest). Each test creates its own topic
// and deletes it.

func integrationBrokers(t *testing.T) []string { return kafkatest.Brokers(t) }

func createTopic(t *testing.T, brokers []string, partitions int32, configs map[string]*string) string {
	return kafkatest.CreateTopic(t, brokers, partitions, configs)
}

func TestIntegrationKafkaPublishConsume(t *testing.T) {
	brokers := integrationBrokers(t)
	topic := createTopic(t, brokers, 3, nil)
	testPublishConsume(t, brokers, topic, 3)
}

func TestIntegrationKafkaTooLarge(t *testing.T) {
	brokers := integrationBrokers(t)
	topic := createTopic(t, brokers, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("4096")})
	p := newTestProducer(t, brokers, func(c *Config) { c.Compression = "none" })

	large := make([]byte, 8<<10)
	rand.Read(large)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	err := p.Publish(ctx, []*kgo.Record{record.NewEvent(&record.Event{Topic: topic, ID: "big", Type: "t", Value: large})})[0]
	if !errors.Is(err, kerr.MessageTooLarge) || Retryable(err) {
		t.Fatalf("got %v, want a permanent MESSAGE_TOO_LARGE", err)
	}
	if err := p.Publish(ctx, []*kgo.Record{record.NewEvent(&record.Event{Topic: topic, ID: "small", Type: "t"})})[0]; err != nil {
		t.Fatalf("small record after a large one: %v", err)
	}
}
