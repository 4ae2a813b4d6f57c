package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/waitfor"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
)

// testWait bounds every wait in these tests. It is a guard against hangs,
// never an assertion about how long something took.
const testWait = 30 * time.Second

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newCluster starts a one-broker kfake cluster with the given topics (three
// partitions each) and closes it when the test ends.
func newCluster(t testing.TB, topics []string, opts ...kfake.Opt) *kfake.Cluster {
	return kafkatest.Fake(t, 3, topics, opts...)
}

// newTestProducer creates a producer on brokers, with cfg adjusted by edit,
// and closes it when the test ends.
func newTestProducer(t testing.TB, brokers []string, edit func(*publish.Config)) *publish.Producer {
	t.Helper()
	cfg := publish.NewDefaultConfig()
	cfg.Brokers = brokers
	if edit != nil {
		edit(&cfg)
	}
	p, err := publish.NewProducer(cfg, nil, publish.WithLogger(discardLogger()))
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testWait)
		defer cancel()
		_ = p.Close(ctx)
	})
	return p
}

// outage makes a kfake cluster drop every produce request while it is on:
// the faults are injected at the broker, the client and spool are real.
// While it is on, allow produce requests still get through, one each;
// passed counts the produce requests let through.
type outage struct {
	on     atomic.Bool
	allow  atomic.Int64
	passed atomic.Int64
}

func (o *outage) install(c *kfake.Cluster) {
	c.ControlKey(kmsg.Produce.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if o.on.Load() && !o.allowed() {
			return nil, errors.New("injected outage"), true
		}
		o.passed.Add(1)
		return nil, nil, false
	})
}

// allowed takes one of the requests allowed through, if any is left.
func (o *outage) allowed() bool {
	for {
		n := o.allow.Load()
		if n <= 0 {
			return false
		}
		if o.allow.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// waitFor checks cond every millisecond until it holds, or fails the test
// after testWait.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitfor.Condition(t, testWait, what, cond)
}

func openSpool(t *testing.T, dir string, edit func(*buffer.Config)) *buffer.Spool {
	t.Helper()
	cfg := buffer.NewDefaultConfig(dir)
	cfg.MinFreeBytes = 1
	if edit != nil {
		edit(&cfg)
	}
	s, err := buffer.Open(cfg, buffer.WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newTestAdmission(t *testing.T, p *publish.Producer, s *buffer.Spool, edit func(*Config), reg prometheus.Registerer) *Admission {
	t.Helper()
	cfg := NewDefaultConfig()
	cfg.LatencyThreshold = 300 * time.Millisecond
	cfg.DrainTimeout = time.Second
	cfg.DrainBackoffMax = 200 * time.Millisecond
	if edit != nil {
		edit(&cfg)
	}
	opts := []Option{WithLogger(discardLogger())}
	if reg != nil {
		opts = append(opts, WithRegisterer(reg))
	}
	a, err := New(cfg, p, s, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// keyed builds n records of topic over keys k0..k(keys-1), numbered in
// their value so order per key can be checked.
func keyed(topic string, from, n, keys int) []*kgo.Record { return keyedAs("", topic, from, n, keys) }

// keyedAs is keyed with the keys prefixed, so that concurrent senders each
// have keys of their own (order is only promised to one sequential sender).
func keyedAs(prefix, topic string, from, n, keys int) []*kgo.Record {
	out := make([]*kgo.Record, n)
	for i := range out {
		seq := from + i
		out[i] = record.NewEvent(&record.Event{Topic: topic, Key: []byte(fmt.Sprintf("%sk%d", prefix, seq%keys)), Value: []byte(fmt.Sprintf("%08d", seq)),
			ID: fmt.Sprintf("e-%d", seq), Type: "t", Source: "s", OccurredAt: time.Unix(1, 0), IngestedAt: time.Unix(1, 0), Fingerprint: "f"})
	}
	return out
}

// waitMode checks the mode every few milliseconds until it is m, or fails
// at the deadline.
func waitMode(t *testing.T, a *Admission, m Mode) {
	t.Helper()
	deadline := time.After(testWait)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for a.Mode() != m {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("admission is %v, waited for %v", a.Mode(), m)
		}
	}
}

// consumeAll reads topic from the start until n distinct values arrived.
func consumeAll(t *testing.T, brokers []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	var out []*kgo.Record
	distinct := map[string]bool{}
	for len(distinct) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records arrived", len(distinct), n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			distinct[string(r.Value)] = true
		})
	}
	return out
}

// checkKeyOrder: for every key, the first copies of its records appear in
// the order they were admitted (duplicates after a retry are allowed).
func checkKeyOrder(t *testing.T, recs []*kgo.Record) {
	t.Helper()
	last := map[string]string{}
	seen := map[string]bool{}
	for _, r := range recs {
		v := string(r.Value)
		if seen[v] {
			continue
		}
		seen[v] = true
		k := string(r.Key)
		if prev, ok := last[k]; ok && v < prev {
			t.Fatalf("key %s: %s arrived after %s", k, v, prev)
		}
		last[k] = v
	}
}
