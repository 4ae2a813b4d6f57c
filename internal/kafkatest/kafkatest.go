package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicehq/sluice/internal/kafkaconn"
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
	return split(env)
}

func split(list string) []string {
	var out []string
	for _, b := range strings.Split(list, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// The secure cluster `SLUICE_KAFKA_SECURE=1 scripts/kafka.sh up` starts:
// a SASL_SSL listener, the CA that signed its certificate, and a SCRAM
// user whose password is in EnvSCRAMPassword.
const (
	EnvSecureBrokers = "SLUICE_KAFKA_SASL_SSL_BROKERS"
	EnvCA            = "SLUICE_KAFKA_CA"
	EnvSCRAMUser     = "SLUICE_KAFKA_SCRAM_USER"
	EnvSCRAMPassword = "SLUICE_KAFKA_SCRAM_PASSWORD"
)

// Secure returns the connection block of the secure cluster (TLS with its
// CA, SCRAM-SHA-512 with the password read from EnvSCRAMPassword), or
// skips the test when the cluster's variables are not all set.
func Secure(t testing.TB) kafkaconn.Config {
	t.Helper()
	for _, env := range []string{EnvSecureBrokers, EnvCA, EnvSCRAMUser, EnvSCRAMPassword} {
		if os.Getenv(env) == "" {
			t.Skip(env + " is not set: skipping the test against a SASL_SSL Kafka (SLUICE_KAFKA_SECURE=1 scripts/kafka.sh up starts one)")
		}
	}
	c := kafkaconn.NewDefaultConfig()
	c.Brokers = split(os.Getenv(EnvSecureBrokers))
	c.TLS.CAFile = os.Getenv(EnvCA)
	c.SASL = kafkaconn.SASLConfig{Mechanism: kafkaconn.MechanismSCRAMSHA512, Username: os.Getenv(EnvSCRAMUser), PasswordEnv: EnvSCRAMPassword}
	return c
}

// CreateTopic creates a topic named after the test and the time, with the
// broker's default replication, and deletes it when the test ends.
func CreateTopic(t testing.TB, brokers []string, partitions int32, configs map[string]*string) string {
	t.Helper()
	return CreateTopicOn(t, []kgo.Opt{kgo.SeedBrokers(brokers...)}, partitions, configs)
}

// CreateTopicOn is CreateTopic over the connection conn (kafkaconn.Config.Options).
func CreateTopicOn(t testing.TB, conn []kgo.Opt, partitions int32, configs map[string]*string) string {
	t.Helper()
	topic := fmt.Sprintf("sluice.test.%s.%d", strings.ToLower(t.Name()), time.Now().UnixNano())
	topic = strings.NewReplacer("/", "-", "_", "-", " ", "-").Replace(topic)
	if len(topic) > 249 {
		topic = topic[len(topic)-249:]
	}
	CreateTopicsOn(t, conn, partitions, configs, topic)
	return topic
}

// CreateTopicsOn creates the topics named over conn, with the broker's
// default replication, and deletes them when the test ends: the topics
// whose names follow from another's (its DLQ, its parked topic).
func CreateTopicsOn(t testing.TB, conn []kgo.Opt, partitions int32, configs map[string]*string, topics ...string) {
	t.Helper()
	cl, err := kgo.NewClient(conn...)
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	resp, err := adm.CreateTopics(ctx, partitions, -1, configs, topics...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		cl.Close()
		t.Fatalf("create topics %v: %v", topics, err)
	}
	if err := known(ctx, cl, topics); err != nil {
		cl.Close()
		t.Fatalf("created topics %v: %v", topics, err)
	}
	t.Cleanup(func() {
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		resp, err := adm.DeleteTopics(ctx, topics...)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Logf("delete topics %v: %v", topics, err)
		}
	})
}

// EnsureTopicOn creates a topic that tests share (sluice.audit) over conn
// unless it exists; it is left behind.
func EnsureTopicOn(t testing.TB, conn []kgo.Opt, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(conn...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// known returns once every broker's metadata names each of topics with a
// leader for every partition. A topic the controller has created reaches
// each broker's metadata a moment later; a test that asks a broker about
// it before then is told it does not exist.
func known(ctx context.Context, cl *kgo.Client, topics []string) error {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	for _, topic := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	if _, err := req.RequestWith(ctx, cl); err != nil { // discovers the brokers
		return err
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		lagging, err := lagging(ctx, cl, req, len(topics))
		if err != nil || lagging == "" {
			return err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", lagging, ctx.Err())
		}
	}
}

// lagging names a broker whose metadata does not yet show all n topics
// req asks for, each partition led, or returns "".
func lagging(ctx context.Context, cl *kgo.Client, req *kmsg.MetadataRequest, n int) (string, error) {
	for i, b := range cl.DiscoveredBrokers() {
		resp, err := req.RequestWith(ctx, b)
		if err != nil {
			return "", err
		}
		ready := 0
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 || len(rt.Partitions) == 0 {
				continue
			}
			led := true
			for _, p := range rt.Partitions {
				led = led && p.ErrorCode == 0 && p.Leader >= 0
			}
			if led {
				ready++
			}
		}
		if ready < n {
			return fmt.Sprintf("broker %d of those known knows %d of %d topics", i+1, ready, n), nil
		}
	}
	return "", nil
}
