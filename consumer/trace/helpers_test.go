package trace

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/consumer"
	"github.com/sluicehq/sluice/internal/eventtest"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/record"
)

const (
	topic  = eventtest.Topic
	source = "test" // eventtest's records' source
	group  = "g"
)

var (
	dlqTopic    = record.DLQTopic(topic)
	parkedTopic = record.ParkedTopic(topic)
	// now is the tests' clock; the events were ingested the day before.
	now        = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	failedAt   = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	consumerAt = time.Date(2026, 11, 29, 8, 0, 1, 0, time.UTC)
)

// rowsReader is an edge fake of a sink's audit table: the rows given,
// those of the identity asked for, in the order given.
type rowsReader struct {
	rows []audit.Row
	err  error
}

func (r *rowsReader) AuditRows(_ context.Context, src, id string) ([]audit.Row, error) {
	if r.err != nil {
		return nil, r.err
	}
	var out []audit.Row
	for _, row := range r.rows {
		if row.Source == src && row.EventID == id {
			out = append(out, row)
		}
	}
	return out, nil
}

// fixture is a kfake cluster with the test topic, its DLQ and parked
// topics and sluice.audit, and the consumer config of group g on it.
type fixture struct {
	t       testing.TB
	cluster *kfake.Cluster
	addrs   []string
	cfg     consumer.Config
}

func newFixture(t testing.TB, partitions int32) *fixture {
	t.Helper()
	c := kafkatest.Fake(t, partitions, []string{topic, dlqTopic, parkedTopic, record.AuditTopic})
	cfg := consumer.NewDefaultConfig()
	cfg.Group = group
	cfg.Topics = []string{topic}
	return &fixture{t: t, cluster: c, addrs: c.ListenAddrs(), cfg: cfg}
}

func (f *fixture) kopts() []kgo.Opt { return []kgo.Opt{kgo.SeedBrokers(f.addrs...)} }

func (f *fixture) tracer(opts ...Option) *Tracer {
	f.t.Helper()
	tr, err := New(f.cfg, f.kopts(), append([]Option{WithClock(func() time.Time { return now })}, opts...)...)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(tr.Close)
	return tr
}

// produce produces recs to the partitions they name, and returns them
// with their offsets.
func (f *fixture) produce(recs ...*kgo.Record) []*kgo.Record {
	f.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		f.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		f.t.Fatal(err)
	}
	return recs
}

// commit commits offset for the group in topic's partition, as a member
// of the group does.
func (f *fixture) commit(topic string, partition int32, offset int64) {
	f.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.addrs...))
	if err != nil {
		f.t.Fatal(err)
	}
	defer cl.Close()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: partition, At: offset, LeaderEpoch: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CommitOffsets(ctx, group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		f.t.Fatalf("commit %s/%d@%d: %v", topic, partition, offset, err)
	}
}

// event is the test event id as the gateway publishes it, to partition.
func event(t testing.TB, id string, partition int32) *kgo.Record {
	t.Helper()
	r := eventtest.Record(t, topic, id, id, eventtest.LogLine(t))
	r.Partition = partition
	return r
}

// deadLetter is the record of event id in dlTopic (a DLQ or parked
// topic), its envelope env filled with the source's coordinates.
func deadLetter(t testing.TB, dlTopic, id string, env record.Envelope) *kgo.Record {
	t.Helper()
	if env.SourceTopic == "" {
		env.SourceTopic = topic
	}
	if env.Group == "" {
		env.Group = group
	}
	if env.Sink == "" {
		env.Sink = "http"
	}
	if env.FirstFailureAt.IsZero() {
		env.FirstFailureAt = failedAt
	}
	if env.LastFailureAt.IsZero() {
		env.LastFailureAt = env.FirstFailureAt
	}
	return record.NewDeadLetter(dlTopic, event(t, id, env.SourcePartition), &env)
}

// auditRecord is row as a record of sluice.audit, as a TopicAuditor
// writes it.
func auditRecord(t testing.TB, row audit.Row) *kgo.Record {
	t.Helper()
	rec, err := audit.NewRecord(row)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func trace(t testing.TB, tr *Tracer, q Query) *Answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := tr.Trace(ctx, q)
	if err != nil {
		t.Fatalf("trace %s/%s: %v", q.Source, q.ID, err)
	}
	return a
}

func searched(a *Answer, what string) *Search {
	for i := range a.Searched {
		if a.Searched[i].What == what {
			return &a.Searched[i]
		}
	}
	return nil
}
