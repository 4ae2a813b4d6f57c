package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/consumer/dlq"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/internal/eventtest"
	"github.com/sluicehq/sluice/internal/waitfor"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

const (
	testTopic = eventtest.Topic
	testType  = eventtest.Type
)

func testRegistry(t testing.TB) *contract.Registry { return eventtest.Registry(t) }

// testVersions serves the example contracts, keeping the default number
// of versions.
func testVersions(t testing.TB) *contract.Versions { return newVersions(t, testRegistry(t), 0) }

// newVersions serves r, keeping keep versions of each type.
func newVersions(t testing.TB, r *contract.Registry, keep int) *contract.Versions {
	t.Helper()
	v, err := contract.NewVersions(r, keep)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// logLine returns a valid LogLine in protobuf binary.
func logLine(t testing.TB) []byte { return eventtest.LogLine(t) }

// eventRecord is a source record as the gateway publishes it.
func eventRecord(t testing.TB, topic, id, key string, value []byte) *kgo.Record {
	return eventtest.Record(t, topic, id, key, value)
}

// newCluster starts kfake with the test topic, its DLQ and parked topics.
func newCluster(t testing.TB, partitions int32) []string {
	t.Helper()
	cl, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.SeedTopics(partitions, testTopic, record.DLQTopic(testTopic), record.ParkedTopic(testTopic), record.AuditTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl.ListenAddrs()
}

func produce(t testing.TB, addrs []string, recs ...*kgo.Record) { eventtest.Produce(t, addrs, recs...) }

// produceEvents produces n events with ids e0..e(n-1) over keys keys.
func produceEvents(t testing.TB, addrs []string, n, keys int) []string {
	t.Helper()
	v := logLine(t)
	var recs []*kgo.Record
	var ids []string
	for i := range n {
		id := fmt.Sprintf("e%05d", i)
		ids = append(ids, id)
		recs = append(recs, eventRecord(t, testTopic, id, fmt.Sprintf("k%d", i%keys), v))
	}
	produce(t, addrs, recs...)
	return ids
}

// readAll reads a topic from start to its current end with a plain client.
func readAll(t testing.TB, addrs []string, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	recs, err := readToEnd(ctx, []kgo.Opt{kgo.SeedBrokers(addrs...)}, topic)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// readToEnd reads any topic as dlq.List reads a DLQ topic, selecting
// everything.
func readToEnd(ctx context.Context, kopts []kgo.Opt, topic string) ([]*kgo.Record, error) {
	var out []*kgo.Record
	err := dlq.List(ctx, kopts, topic, dlq.Selection{}, func(d dlq.DeadLetter) error {
		out = append(out, d.Record)
		return nil
	})
	return out, err
}

// committed returns the group's committed offsets of topic by partition.
func committed(t testing.TB, addrs []string, group, topic string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil {
			out[o.Partition] = o.At
		}
	})
	return out
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	waitfor.Condition(t, d, what, cond)
}

// memSink is a test sink keyed by event id. The test sets its latency and
// failures; it records writes per id, the order of ids per key, the JSON
// last written of each id, and the most writes that ran at once.
type memSink struct {
	latency time.Duration
	// fail, when set, decides the outcome of a write.
	fail atomic.Pointer[func([]sink.Event) error]
	// gate, when set, blocks every write until it is closed or the write's
	// context ends.
	gate atomic.Pointer[chan struct{}]

	mu     sync.Mutex
	writes map[string]int
	order  map[string][]string
	json   map[string]string
	cur    int
	peak   int
	calls  int
}

func newMemSink() *memSink {
	return &memSink{writes: map[string]int{}, order: map[string][]string{}, json: map[string]string{}}
}

func (s *memSink) Name() string { return "mem" }
func (s *memSink) Close() error { return nil }

func (s *memSink) setFail(f func([]sink.Event) error) { s.fail.Store(&f) }

func (s *memSink) Write(ctx context.Context, batch []sink.Event) ([]sink.Conflict, error) {
	s.mu.Lock()
	s.cur++
	s.calls++
	s.peak = max(s.peak, s.cur)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cur--
		s.mu.Unlock()
	}()
	if g := s.gate.Load(); g != nil {
		select {
		case <-*g:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if s.latency > 0 {
		select {
		case <-time.After(s.latency):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f := s.fail.Load(); f != nil && *f != nil {
		if err := (*f)(batch); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range batch {
		s.writes[e.ID]++
		s.order[string(e.Key)] = append(s.order[string(e.Key)], e.ID)
		s.json[e.ID] = string(e.JSON)
	}
	return nil, nil
}

// ids returns the distinct ids written, sorted.
func (s *memSink) ids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.writes))
	for id := range s.writes {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// jsonOf returns the JSON last written of event id.
func (s *memSink) jsonOf(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.json[id]
}

func (s *memSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.writes)
}

func (s *memSink) hasAll(ids []string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if s.writes[id] == 0 {
			return false
		}
	}
	return true
}

// testConfig is a config with tiny intervals for tests.
func testConfig(group string) Config {
	c := NewDefaultConfig()
	c.Group = group
	c.Topics = []string{testTopic}
	c.Retry.InitialBackoff = time.Millisecond
	c.Retry.MaxBackoff = 5 * time.Millisecond
	c.Retry.MaxElapsed = 5 * time.Second
	c.Breaker.Cooldown = 50 * time.Millisecond
	c.CommitInterval = 20 * time.Millisecond
	c.LagInterval = 50 * time.Millisecond
	c.RevokeTimeout = 2 * time.Second
	c.DLQ.DrainRate = 10000
	c.DLQ.DrainInterval = 50 * time.Millisecond
	return c
}

type running struct {
	c    *Consumer
	stop func() error
}

// start runs a consumer of the example contracts until the test ends or
// stop is called.
func start(t testing.TB, cfg Config, addrs []string, s sink.Sink, opts ...Option) running {
	t.Helper()
	return startVersions(t, cfg, testVersions(t), addrs, s, opts...)
}

// startVersions is start with the contract versions given.
func startVersions(t testing.TB, cfg Config, versions *contract.Versions, addrs []string, s sink.Sink, opts ...Option) running {
	t.Helper()
	c, err := New(cfg, versions, s, []kgo.Opt{
		kgo.SeedBrokers(addrs...),
		kgo.FetchMaxWait(50 * time.Millisecond),
		kgo.HeartbeatInterval(100 * time.Millisecond),
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(30 * time.Second):
				runErr = errors.New("Run did not return")
			}
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return running{c: c, stop: stop}
}

// sample returns the sample of metric name with exactly labels in reg,
// and whether reg has it.
func sample(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) (*dto.Metric, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			return m, true
		}
	}
	return nil, false
}

// gauge returns the value of the gauge name with exactly labels in reg,
// and whether reg has it.
func gauge(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	m, ok := sample(t, reg, name, labels)
	return m.GetGauge().GetValue(), ok
}

// counter returns the value of the counter name with labels in reg, 0 when
// it has none.
func counter(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	m, _ := sample(t, reg, name, labels)
	return m.GetCounter().GetValue()
}

// closeGate makes every write of s wait until the returned open is called (or
// the write's context ends).
func (s *memSink) closeGate() (open func()) {
	g := make(chan struct{})
	s.gate.Store(&g)
	var once sync.Once
	return func() { once.Do(func() { close(g) }) }
}
