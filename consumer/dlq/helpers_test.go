package dlq

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/waitfor"
	"github.com/sluicehq/sluice/record"
)

const (
	testTopic = "ingest.examples.logs.v1.LogLine"
	testType  = "examples.logs.v1.LogLine"
)

var (
	regOnce sync.Once
	regVal  *contract.Registry
	regErr  error
)

func testRegistry(t testing.TB) *contract.Registry {
	t.Helper()
	regOnce.Do(func() { regVal, regErr = contract.Load(examples.Contracts, examples.Types) })
	if regErr != nil {
		t.Fatal(regErr)
	}
	return regVal
}

// logLine returns a valid LogLine in protobuf binary.
func logLine(t testing.TB) []byte {
	t.Helper()
	c, ok := testRegistry(t).Lookup(testType)
	if !ok {
		t.Fatal("no LogLine contract")
	}
	b, err := c.CheckJSON(examples.LogLineJSON)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

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
	t.Helper()
	c, _ := testRegistry(t).Lookup(testType)
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	return record.NewEvent(&record.Event{
		Topic: topic, Key: []byte(key), Value: value, ID: id, Type: testType, Source: "test",
		OccurredAt: now, IngestedAt: now, Fingerprint: c.Fingerprint(),
	})
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

// newTopicCluster starts kfake with the test topic, its DLQ and parked
// topics and the audit topic, one partition each, with the topic configs
// given by name, and returns the cluster for faults.
func newTopicCluster(t testing.TB, configs map[string]map[string]string) (*kfake.Cluster, []string) {
	t.Helper()
	cl, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	for _, tp := range []string{testTopic, record.DLQTopic(testTopic), record.ParkedTopic(testTopic), record.AuditTopic} {
		if err := cl.CreateTopic(tp, 1, configs[tp]); err != nil {
			t.Fatal(err)
		}
	}
	return cl, cl.ListenAddrs()
}

// produce produces recs with a client that takes records of up to 4 MiB.
func produce(t testing.TB, addrs []string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ProducerBatchMaxBytes(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

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
