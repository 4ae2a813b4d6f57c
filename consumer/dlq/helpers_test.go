package dlq

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/internal/eventtest"
	"github.com/sluicehq/sluice/internal/waitfor"
	"github.com/sluicehq/sluice/record"
)

const (
	testTopic = eventtest.Topic
	testType  = eventtest.Type
)

func testRegistry(t testing.TB) *contract.Registry { return eventtest.Registry(t) }

// logLine returns a valid LogLine in protobuf binary.
func logLine(t testing.TB) []byte { return eventtest.LogLine(t) }

// brokenLogLine is a LogLine that decodes but breaks its contract: its
// message is empty.
func brokenLogLine(t testing.TB) []byte {
	t.Helper()
	return protowire.AppendBytes(protowire.AppendTag(logLine(t), 3, protowire.BytesType), nil)
}

// bigLogLine is a LogLine whose message is n random letters: it decodes,
// breaks the contract's max_bytes and does not compress much.
func bigLogLine(t testing.TB, n int) []byte {
	t.Helper()
	rnd := rand.New(rand.NewPCG(1, uint64(n)))
	msg := make([]byte, n)
	for i := range msg {
		msg[i] = byte('a' + rnd.IntN(26))
	}
	b := protowire.AppendTag(logLine(t), 3, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

// eventRecord is a source record as the gateway publishes it.
func eventRecord(t testing.TB, topic, id, key string, value []byte) *kgo.Record {
	return eventtest.Record(t, topic, id, key, value)
}

// dlqRecord is a retryable dead letter of event id in the test topic's
// DLQ whose envelope names source as its source topic.
func dlqRecord(t testing.TB, id, source string, value []byte) *kgo.Record {
	t.Helper()
	at := time.Now().UTC()
	env := record.Envelope{Class: "transient", Error: "receiver 503", Sink: "mem", Attempts: 2, FirstFailureAt: at,
		LastFailureAt: at, Retryable: true, SourceTopic: source, SourceOffset: 7, Group: "g"}
	return record.NewDeadLetter(record.DLQTopic(testTopic), eventRecord(t, testTopic, id, id, value), &env)
}

// newTopicCluster is eventtest.TopicCluster: the test topic, its DLQ,
// parked and audit topics, with the topic configs given by name.
func newTopicCluster(t testing.TB, configs map[string]map[string]string) (*kfake.Cluster, []string) {
	return eventtest.TopicCluster(t, configs)
}

func produce(t testing.TB, addrs []string, recs ...*kgo.Record) { eventtest.Produce(t, addrs, recs...) }

// readAll reads a topic from start to its current end with a plain client.
func readAll(t testing.TB, addrs []string, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	err := scanTopic(ctx, []kgo.Opt{kgo.SeedBrokers(addrs...)}, topic, nil, func(r *kgo.Record) error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustEnvelope(t testing.TB, r *kgo.Record) record.Envelope {
	t.Helper()
	env, err := record.ParseEnvelope(r)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	waitfor.Condition(t, d, what, cond)
}
