package eventtest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/contracttest"
	"github.com/sluicehq/sluice/record"
)

// The event type of the test events, and its topic.
const (
	Type  = "examples.logs.v1.LogLine"
	Topic = "ingest." + Type
)

var (
	regOnce sync.Once
	regVal  *contract.Registry
	regErr  error
)

// Registry is the example contracts, loaded once per test binary.
func Registry(t testing.TB) *contract.Registry {
	t.Helper()
	regOnce.Do(func() { regVal, regErr = contract.Load(examples.Contracts, examples.Types) })
	if regErr != nil {
		t.Fatal(regErr)
	}
	return regVal
}

// LogLine returns a valid LogLine in protobuf binary.
func LogLine(t testing.TB) []byte {
	t.Helper()
	c, ok := Registry(t).Lookup(Type)
	if !ok {
		t.Fatal("no LogLine contract")
	}
	b, err := c.CheckJSON(examples.LogLineJSON)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Record is a LogLine event's record as the gateway publishes it to topic,
// with value as its message, under the schema version of Registry.
func Record(t testing.TB, topic, id, key string, value []byte) *kgo.Record {
	t.Helper()
	c, _ := Registry(t).Lookup(Type)
	return VersionRecord(t, topic, id, key, c.Fingerprint(), value)
}

// VersionRecord is Record published under the schema version whose
// fingerprint is fingerprint.
func VersionRecord(t testing.TB, topic, id, key, fingerprint string, value []byte) *kgo.Record {
	t.Helper()
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	return record.NewEvent(&record.Event{
		Topic: topic, Key: []byte(key), Value: value, ID: id, Type: Type, Source: "test",
		OccurredAt: now, IngestedAt: now, Fingerprint: fingerprint,
	})
}

// AddRegion adds field 10, region, a string, to LogLine: Evolved(t,
// AddRegion()) is a later version of Type.
func AddRegion() contracttest.Edit {
	return contracttest.AddField(Type, "region", 10, descriptorpb.FieldDescriptorProto_TYPE_STRING)
}

// WithRegion returns value, a LogLine in protobuf binary, with region
// (AddRegion's field) set to region: a value the example contracts cannot
// read without loss.
func WithRegion(value []byte, region string) []byte {
	return protowire.AppendString(protowire.AppendTag(slices.Clip(value), 10, protowire.BytesType), region)
}

// Evolved is the example contracts with edits (package contracttest)
// applied, loaded: a later schema version of the types they change.
func Evolved(t testing.TB, edits ...contracttest.Edit) *contract.Registry {
	t.Helper()
	r, err := contract.Load(contracttest.Evolve(t, examples.Contracts, edits...), examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// produceWait bounds Produce.
const produceWait = 20 * time.Second

// Produce produces recs (to Topic when a record names none) with a client
// that takes records of up to 4 MiB, and fails the test unless Kafka
// acknowledges every one.
func Produce(t testing.TB, addrs []string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(Topic), kgo.ProducerBatchMaxBytes(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), produceWait)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TopicCluster starts an in-process Kafka (kfake) with Topic, its DLQ and
// parked topics and the audit topic, one partition each, with the topic
// configs given by name, and returns it, for faults, with its addresses.
// The test's cleanup closes it.
func TopicCluster(t testing.TB, configs map[string]map[string]string) (*kfake.Cluster, []string) {
	t.Helper()
	cl, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	for _, tp := range []string{Topic, record.DLQTopic(Topic), record.ParkedTopic(Topic), record.AuditTopic} {
		if err := cl.CreateTopic(tp, 1, configs[tp]); err != nil {
			t.Fatal(err)
		}
	}
	return cl, cl.ListenAddrs()
}
