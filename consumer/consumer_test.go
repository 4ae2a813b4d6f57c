package consumer

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// TestOrderPerKeyParallelAcrossKeys: records of one key reach the sink in
// offset order while different keys are written concurrently.
func TestOrderPerKeyParallelAcrossKeys(t *testing.T) {
	addrs := newCluster(t, 2)
	ids := produceEvents(t, addrs, 400, 20)
	s := newMemSink()
	s.latency = 2 * time.Millisecond
	r := start(t, testConfig("order"), addrs, s)
	waitFor(t, 20*time.Second, "all events in the sink", func() bool { return s.hasAll(ids) })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.peak < 2 {
		t.Fatalf("peak concurrency %d, want > 1", s.peak)
	}
	for key, got := range s.order {
		if !slices.IsSorted(got) {
			t.Fatalf("key %s written out of order: %v", key, got)
		}
	}
	for id, n := range s.writes {
		if n != 1 {
			t.Fatalf("event %s written %d times", id, n)
		}
	}
}

// TestCommitsOnlyFinished: with writes of one key blocked, the committed
// offset stops at the first blocked record while the other keys finish.
func TestCommitsOnlyFinished(t *testing.T) {
	addrs := newCluster(t, 1)
	ids := produceEvents(t, addrs, 50, 5)
	s := newMemSink()
	blocked := make(chan struct{})
	s.setFail(func(b []sink.Event) error {
		if string(b[0].Key) == "k4" {
			<-blocked
		}
		return nil
	})
	r := start(t, testConfig("commits"), addrs, s)
	waitFor(t, 20*time.Second, "other keys written", func() bool { return s.count() == 40 })
	// Offsets 0-3 finished, 4 (key k4) is in flight, 5-49 of other keys
	// finished: the commit must be exactly 4.
	waitFor(t, 20*time.Second, "offset 4 committed", func() bool {
		return committed(t, addrs, "commits", testTopic)[0] >= 4
	})
	if off := committed(t, addrs, "commits", testTopic)[0]; off != 4 {
		t.Fatalf("committed %d while offset 4 is unfinished", off)
	}
	close(blocked)
	waitFor(t, 20*time.Second, "all written", func() bool { return s.hasAll(ids) })
	waitFor(t, 20*time.Second, "offset 50 committed", func() bool {
		return committed(t, addrs, "commits", testTopic)[0] == 50
	})
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestPoisonEventToDLQ: an event the sink refuses permanently goes to the
// DLQ at once with its envelope, and an undecodable record too; the rest
// flows.
func TestPoisonEventToDLQ(t *testing.T) {
	addrs := newCluster(t, 1)
	ids := produceEvents(t, addrs, 30, 30)
	bad := eventRecord(t, testTopic, "garbled", "kx", []byte{0xff, 0xff, 0xff})
	produce(t, addrs, bad)
	s := newMemSink()
	s.setFail(func(b []sink.Event) error {
		for _, e := range b {
			if e.ID == "e00007" {
				return sink.PermanentError(errors.New("receiver says 422"))
			}
		}
		return nil
	})
	cfg := testConfig("poison")
	cfg.WriteBatch = 8
	reg := prometheus.NewRegistry()
	r := start(t, cfg, addrs, s, WithRegisterer(reg))
	want := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == "e00007" })
	waitFor(t, 20*time.Second, "the rest written", func() bool { return s.hasAll(want) })
	waitFor(t, 20*time.Second, "two dead letters", func() bool { return len(readAll(t, addrs, record.DLQTopic(testTopic))) == 2 })
	waitFor(t, 20*time.Second, "everything committed", func() bool {
		return committed(t, addrs, "poison", testTopic)[0] == 31
	})
	metric := func(name string, labels map[string]string) float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
		next:
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
						continue next
					}
				}
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
		return sum
	}
	if got := metric("sluice_consumer_dead_letters_total", map[string]string{"kind": "dlq"}); got != 2 {
		t.Fatalf("dead letters metric %v, want 2", got)
	}
	if got := metric("sluice_consumer_events_total", map[string]string{"outcome": "written"}); got != 29 {
		t.Fatalf("written metric %v, want 29", got)
	}
	// The gauge follows the commit's answer, which the broker may show a
	// moment before the consumer has read it.
	waitFor(t, 20*time.Second, "the committed offset metric at 31", func() bool {
		return metric("sluice_consumer_committed_offset", map[string]string{"topic": testTopic}) == 31
	})
	// One mode at a time (NORMAL, or DRAIN_DLQ over the two dead letters).
	if got := metric("sluice_consumer_mode", nil); got != 1 {
		t.Fatalf("mode metric sums to %v", got)
	}
	if got := metric("sluice_consumer_mode", map[string]string{"mode": "PAUSED"}); got != 0 {
		t.Fatalf("mode metric PAUSED = %v", got)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Fatalf("%d metric families left registered after Run", len(mfs))
	}
	if s.count() != 29 {
		t.Fatalf("sink holds %d events, want 29", s.count())
	}
	dl := readAll(t, addrs, record.DLQTopic(testTopic))
	byClass := map[string]record.Envelope{}
	for _, rec := range dl {
		env, err := record.ParseEnvelope(rec)
		if err != nil {
			t.Fatal(err)
		}
		byClass[env.Class] = env
		if env.Retryable || env.DLQRetries != 0 || env.Group != "poison" || env.Sink != "mem" ||
			env.SourceTopic != testTopic || env.FirstFailureAt.IsZero() || env.LastFailureAt.IsZero() {
			t.Fatalf("envelope %+v", env)
		}
	}
	p, ok := byClass["permanent"]
	if !ok || p.SourceOffset != 7 || p.Attempts != 1 || p.Error == "" {
		t.Fatalf("permanent envelope %+v", p)
	}
	d, ok := byClass["decode"]
	if !ok || d.SourceOffset != 30 || d.Attempts != 0 {
		t.Fatalf("decode envelope %+v", d)
	}
	// The original key, value and headers are kept.
	for _, rec := range dl {
		if env, _ := record.ParseEnvelope(rec); env.Class == "decode" {
			if string(rec.Key) != "kx" || string(rec.Value) != string(bad.Value) {
				t.Fatalf("dead letter lost the original record: key %q value %x", rec.Key, rec.Value)
			}
			for _, h := range bad.Headers {
				if !slices.ContainsFunc(rec.Headers, func(x kgo.RecordHeader) bool { return x.Key == h.Key && string(x.Value) == string(h.Value) }) {
					t.Fatalf("header %s lost", h.Key)
				}
			}
		}
	}
}

// TestTransientRetriesThenDLQ: a transient failure is retried up to
// max_attempts and then dead-lettered as retryable.
func TestTransientRetriesThenDLQ(t *testing.T) {
	addrs := newCluster(t, 1)
	ids := produceEvents(t, addrs, 40, 40)
	s := newMemSink()
	var tries int
	s.setFail(func(b []sink.Event) error {
		if b[0].ID == "e00003" {
			s.mu.Lock()
			tries++
			s.mu.Unlock()
			return sink.TransientError(fmt.Errorf("flaky"), 0)
		}
		return nil
	})
	cfg := testConfig("transient")
	cfg.Retry.MaxAttempts = 3
	// One failing event among many good writes does not open the breaker.
	cfg.Breaker.MinRequests = 10
	// No drain pass while the test reads the DLQ: a pass retries the dead
	// letter once more (a fourth try) before the consumer stops, which is
	// the drain's business, not this test's.
	cfg.DLQ.DrainInterval = time.Hour
	r := start(t, cfg, addrs, s)
	want := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == "e00003" })
	waitFor(t, 20*time.Second, "the rest written", func() bool { return s.hasAll(want) })
	waitFor(t, 20*time.Second, "one dead letter", func() bool { return len(readAll(t, addrs, record.DLQTopic(testTopic))) == 1 })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	env, err := record.ParseEnvelope(readAll(t, addrs, record.DLQTopic(testTopic))[0])
	if err != nil {
		t.Fatal(err)
	}
	if !env.Retryable || env.Class != "transient" || tries < 3 || env.Attempts != tries {
		t.Fatalf("envelope %+v after %d tries", env, tries)
	}
}
