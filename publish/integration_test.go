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
	// The product's delivery timeout, not the tests' 1s: a broker started
	// a moment ago may take longer than that to lead a topic just created
	// (CI saw "records have timed out before they were able to be
	// produced" on its first publish).
	testPublishConsume(t, brokers, topic, 3, func(c *Config) { c.DeliveryTimeout = NewDefaultConfig().DeliveryTimeout })
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

// TestIntegrationKafkaCheckTopics: against a real broker, which creates
// topics on demand (scripts/kafka.sh sets auto.create.topics.enable), the
// check names a missing topic UNKNOWN_TOPIC_OR_PARTITION and leaves it
// missing.
func TestIntegrationKafkaCheckTopics(t *testing.T) {
	brokers := integrationBrokers(t)
	have := createTopic(t, brokers, 1, nil)
	lack := have + ".missing"
	p := newTestProducer(t, brokers, nil, WithTopics(have, lack))
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), testWait)
		err := p.CheckTopics(ctx)
		cancel()
		var missing *MissingTopicsError
		if !errors.As(err, &missing) || len(missing.Topics) != 1 || missing.Topics[0] != lack || !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("CheckTopics: %v, want UNKNOWN_TOPIC_OR_PARTITION for %s only", err, lack)
		}
	}
	if listTopics(t, brokers).Has(lack) {
		t.Fatalf("the check created %s", lack)
	}
}
