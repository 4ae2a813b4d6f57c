package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/time/rate"

	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// attemptSink records the id of every event a write tried, in order,
// whatever the write returned.
type attemptSink struct {
	*memSink
	mu       sync.Mutex
	attempts []string
}

func (s *attemptSink) Write(ctx context.Context, batch []sink.Event) ([]sink.Conflict, error) {
	s.mu.Lock()
	for _, e := range batch {
		s.attempts = append(s.attempts, e.ID)
	}
	s.mu.Unlock()
	return s.memSink.Write(ctx, batch)
}

func (s *attemptSink) tried() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.attempts)
}

// deadLetterOf is the retryable dead letter in topic's DLQ of an event of
// source, as the consumer writes one.
func deadLetterOf(t *testing.T, topic, source, id, key string) *kgo.Record {
	t.Helper()
	ev := eventRecord(t, topic, id, key, logLine(t))
	for i, h := range ev.Headers {
		if h.Key == record.HeaderSource {
			ev.Headers[i].Value = []byte(source)
		}
	}
	now := time.Now().UTC()
	return record.NewDeadLetter(record.DLQTopic(topic), ev, &record.Envelope{
		Class: sink.Transient.String(), Error: "receiver 503", Sink: "mem", Attempts: 2,
		FirstFailureAt: now, LastFailureAt: now, Retryable: true,
		SourceTopic: topic, SourcePartition: 0, SourceOffset: 0, Group: "fair",
	})
}

// TestDrainFairAcrossSources: source a floods the DLQ with poison (dead
// letters the sink refuses again, each one costing a drain step), far
// more than the consumer's in-flight bound, ahead of source b's few
// retryable ones. b's are drained within a few drain steps of the pass's
// start, as if alone, not after a's flood; every record of a is still
// tried once, each key's in DLQ order, and the DLQ is committed to its
// end.
func TestDrainFairAcrossSources(t *testing.T) {
	drainFair(t, newCluster(t, 1), testTopic, "fair")
}

// TestIntegrationDrainFairAcrossSources is TestDrainFairAcrossSources
// against the real Kafka named by SLUICE_KAFKA_BROKERS.
func TestIntegrationDrainFairAcrossSources(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic, _ := integrationTopics(ctx, t, brokers, 1, nil)
	drainFair(t, brokers, topic, topic+"-fair")
}

// drainFair runs TestDrainFairAcrossSources on topic, its DLQ and parked
// topics of one partition each on the brokers addrs, with a consumer of
// group.
func drainFair(t *testing.T, addrs []string, topic, group string) {
	const nA, nB = 150, 4
	var recs []*kgo.Record
	for i := range nA {
		recs = append(recs, deadLetterOf(t, topic, "a", fmt.Sprintf("a%04d", i), fmt.Sprintf("ka%d", i%40)))
	}
	var bIDs []string
	for i := range nB {
		id := fmt.Sprintf("b%04d", i)
		bIDs = append(bIDs, id)
		recs = append(recs, deadLetterOf(t, topic, "b", id, fmt.Sprintf("kb%d", i)))
	}
	produce(t, addrs, recs...)

	s := &attemptSink{memSink: newMemSink()}
	s.setFail(func(b []sink.Event) error {
		if b[0].ID[0] == 'a' {
			return sink.PermanentError(errors.New("receiver 422"))
		}
		return nil
	})
	cfg := drainConfig(group)
	cfg.Topics = []string{topic}
	// a's flood is far past the in-flight bound: the drain must read past
	// it to find b's.
	cfg.MaxInFlight = 64
	cfg.DLQ.DrainRate = 100
	reg := prometheus.NewRegistry()
	r := start(t, cfg, addrs, s, WithRegisterer(reg), WithSources("a", "b"))
	waitFor(t, 30*time.Second, "b's dead letters written", func() bool { return s.hasAll(bIDs) })
	tried := s.tried()
	lastB := 0
	for i, id := range tried {
		if id[0] == 'b' {
			lastB = i
		}
	}
	aBefore := lastB + 1 - nB
	t.Logf("drain steps until b's %d dead letters were written: %d (%d of a's %d before b's last); read-ahead per source %d, in-flight bound %d",
		nB, lastB+1, aBefore, nA, cfg.drainReadAhead(), cfg.MaxInFlight)
	// Round-robin admission: one of a's per b's, and those admitted
	// before b's reached the rate; a first-come order would admit a's
	// read-ahead (16) first.
	if aBefore > nB+4 {
		t.Errorf("%d of a's dead letters were drained before b's last one, want at most %d", aBefore, nB+4)
	}

	waitFor(t, 30*time.Second, "every dead letter tried", func() bool { return len(s.tried()) == nA+nB })
	waitFor(t, 30*time.Second, "DLQ committed past the pass", func() bool {
		return committed(t, addrs, group, record.DLQTopic(topic))[0] >= nA+nB
	})
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	// Each of a's tried once, each key's in DLQ order (keys are i%40).
	seen := map[string]int{}
	last := map[int]int{}
	for _, id := range s.tried() {
		if id[0] != 'a' {
			continue
		}
		seen[id]++
		var i int
		if _, err := fmt.Sscanf(id, "a%d", &i); err != nil {
			t.Fatal(err)
		}
		if prev, ok := last[i%40]; ok && prev > i {
			t.Errorf("key ka%d: a%04d tried after a%04d", i%40, i, prev)
		}
		last[i%40] = i
	}
	for i := range nA {
		if id := fmt.Sprintf("a%04d", i); seen[id] != 1 {
			t.Errorf("%s tried %d times, want once", id, seen[id])
		}
	}
}

// TestDrainBacklogBySource: sluice_consumer_dlq_backlog counts by source
// the records the pass has read and not finished, and is back to 0 once
// they are.
func TestDrainBacklogBySource(t *testing.T) {
	addrs := newCluster(t, 1)
	produce(t, addrs, deadLetterOf(t, testTopic, "a", "a0", "k"), deadLetterOf(t, testTopic, "a", "a1", "k"),
		deadLetterOf(t, testTopic, "b", "b0", "k"), deadLetterOf(t, testTopic, "zz", "z0", "k"))
	s := newMemSink()
	open := s.closeGate()
	reg := prometheus.NewRegistry()
	r := start(t, drainConfig("backlog"), addrs, s, WithRegisterer(reg), WithSources("a", "b"))
	want := map[string]float64{"a": 2, "b": 1, "other": 1}
	waitFor(t, 20*time.Second, "backlog by source", func() bool {
		for src, n := range want {
			if v, _ := gauge(t, reg, "sluice_consumer_dlq_backlog", map[string]string{"source": src}); v != n {
				return false
			}
		}
		return true
	})
	open()
	waitFor(t, 20*time.Second, "backlog drained", func() bool {
		for src := range want {
			if v, _ := gauge(t, reg, "sluice_consumer_dlq_backlog", map[string]string{"source": src}); v != 0 {
				return false
			}
		}
		return true
	})
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if got := s.ids(); len(got) != 4 {
		t.Fatalf("drained %v, want the 4 dead letters", got)
	}
}

// TestFairPacerRoundRobin: admissions alternate between the sources
// waiting, whatever order they queued in; a source that stops waiting
// leaves the turn to the others.
func TestFairPacerRoundRobin(t *testing.T) {
	p := newFairPacer(rate.NewLimiter(rate.Inf, 1))
	var ws []*paceWaiter
	queue := func(src string) {
		w := &paceWaiter{source: src, granted: make(chan struct{})}
		if len(p.queues[src]) == 0 {
			p.ring = append(p.ring, src)
		}
		p.queues[src] = append(p.queues[src], w)
		ws = append(ws, w)
	}
	for range 5 {
		queue("a")
	}
	queue("b")
	queue("b")
	queue("c")
	var order []string
	for range len(ws) {
		before := p.waiting("a") + p.waiting("b") + p.waiting("c")
		p.grantNext()
		if p.waiting("a")+p.waiting("b")+p.waiting("c") != before-1 {
			t.Fatal("grantNext admitted no waiter")
		}
		for _, w := range ws {
			select {
			case <-w.granted:
				if !slices.Contains(order, fmt.Sprintf("%p", w)) {
					order = append(order, fmt.Sprintf("%p", w))
				}
			default:
			}
		}
	}
	var sources []string
	for _, id := range order {
		for _, w := range ws {
			if fmt.Sprintf("%p", w) == id {
				sources = append(sources, w.source)
			}
		}
	}
	if want := []string{"a", "b", "c", "a", "b", "a", "a", "a"}; !slices.Equal(sources, want) {
		t.Fatalf("admitted in order %v, want %v", sources, want)
	}

	// Through wait: every waiter is admitted, and a canceled one leaves.
	var wg sync.WaitGroup
	for _, src := range []string{"a", "a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.wait(t.Context(), src); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	slow := newFairPacer(rate.NewLimiter(rate.Every(time.Hour), 0))
	if err := slow.wait(ctx, "a"); err == nil {
		t.Fatal("a canceled wait was admitted")
	}
	if slow.waiting("a") != 0 || len(slow.ring) != 0 {
		t.Fatal("a canceled waiter stayed queued")
	}
}

// srcRec is a DLQ record of source at offset.
func srcRec(source string, offset int64) *kgo.Record {
	r := rec(record.DLQTopic(testTopic), 0, offset, fmt.Sprintf("%s%d", source, offset))
	r.Headers = []kgo.RecordHeader{{Key: record.HeaderSource, Value: []byte(source)}}
	return r
}

// TestDispatcherDefersPastReadAhead: a source at its read-ahead has its
// later records deferred, while another source's behind them are
// dispatched; at the pass's end the partition is rewound to the first
// deferred record and resumed once the source finished half its
// read-ahead; read again, only deferred records are taken, the source's
// in offset order, and the pass is polled once none is left.
func TestDispatcherDefersPastReadAhead(t *testing.T) {
	d, _ := newTestDispatcher(t, 32, 1)
	var resumed [][]int32
	backlog := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "backlog"}, []string{"source"})
	d.setDrain(2, backlog, sourceLabels([]string{"a", "b"}), func(m map[string][]int32) {
		resumed = append(resumed, m[record.DLQTopic(testTopic)])
	})
	dlqTopic := record.DLQTopic(testTopic)
	p := d.parts[topicPartition{dlqTopic, 0}]
	p.beginPass(7)
	ready := func() []int64 {
		var got []int64
		for len(d.ready) > 0 {
			got = append(got, readyBatch(t, d)[0].rec.Offset)
		}
		slices.Sort(got)
		return got
	}
	jobs := func() map[int64]*job {
		out := map[int64]*job{}
		for _, j := range d.keysJobs() {
			out[j.rec.Offset] = j
		}
		return out
	}
	// a0 a1 dispatched, a2 a3 deferred (a is at its bound), b4
	// dispatched, a5 deferred, b6 dispatched: the pass's last record.
	rewind := dispatchAll(d, srcRec("a", 0), srcRec("a", 1), srcRec("a", 2), srcRec("a", 3),
		srcRec("b", 4), srcRec("a", 5), srcRec("b", 6))
	if got := rewind[dlqTopic][0]; got.Offset != 2 {
		t.Fatalf("rewound to %+v, want the first deferred offset, 2", got)
	}
	if got := ready(); !slices.Equal(got, []int64{0, 1, 4, 6}) || p.polledPass.Load() {
		t.Fatalf("dispatched %v (pass polled: %v), want 0 1 4 6 and the pass not polled", got, p.polledPass.Load())
	}
	if a, b := testutil.ToFloat64(backlog.WithLabelValues("a")), testutil.ToFloat64(backlog.WithLabelValues("b")); a != 5 || b != 2 {
		t.Fatalf("backlog a %v, b %v; want 5 and 2 read", a, b)
	}
	d.rewound(rewind)
	if len(resumed) != 0 {
		t.Fatal("resumed with a at its read-ahead")
	}
	js := jobs()
	// b finishing does not resume: b has nothing deferred.
	d.finish(js[4], true)
	if len(resumed) != 0 {
		t.Fatal("resumed on a finish of b")
	}
	d.finish(js[0], true)
	if len(resumed) != 1 || !slices.Equal(resumed[0], []int32{0}) {
		t.Fatalf("resumed %v, want partition 0 once a finished half its read-ahead", resumed)
	}

	// Read again from 2: a2 taken (a has room for one), a3 left, and so
	// a5: a has no room, so the read stops, rewound to 3.
	rewind = dispatchAll(d, srcRec("a", 2), srcRec("a", 3), srcRec("b", 4))
	if got := rewind[dlqTopic][0]; got.Offset != 3 {
		t.Fatalf("rewound to %+v, want 3", got)
	}
	if got := ready(); !slices.Equal(got, []int64{2}) {
		t.Fatalf("dispatched %v, want 2", got)
	}
	d.rewound(rewind)
	js = jobs()
	d.finish(js[1], true)
	d.finish(js[2], true)
	if len(resumed) != 2 {
		t.Fatalf("resumed %d times, want 2: a has room", len(resumed))
	}
	rewind = dispatchAll(d, srcRec("a", 3), srcRec("b", 4), srcRec("a", 5), srcRec("b", 6))
	if got, ok := rewind[dlqTopic][0]; ok {
		t.Fatalf("rewound to %+v with room for a's last two", got)
	}
	if got := ready(); !slices.Equal(got, []int64{3, 5}) || !p.polledPass.Load() {
		t.Fatalf("dispatched %v (pass polled: %v), want 3 5 and the pass polled", got, p.polledPass.Load())
	}
	if _, ok := p.wm.firstDeferred(); ok {
		t.Fatal("a record left deferred")
	}
	for _, j := range jobs() {
		d.finish(j, true)
	}
	if off, _ := p.wm.committable(); off != 7 || p.passPending() {
		t.Fatalf("commit point %d (pending %v), want 7 with the pass done", off, p.passPending())
	}
	if a := testutil.ToFloat64(backlog.WithLabelValues("a")); a != 0 {
		t.Fatalf("a's backlog %v after the pass, want 0", a)
	}
}

// TestDispatcherMarksBound: past maxMarks offsets held in a DLQ
// partition's watermark, the read stops (rewound, nothing added) until a
// finish frees room.
func TestDispatcherMarksBound(t *testing.T) {
	d, _ := newTestDispatcher(t, 32, 1)
	var resumed int
	d.setDrain(1, nil, sourceLabels(nil), func(map[string][]int32) { resumed++ })
	d.drain.maxMarks = 3
	dlqTopic := record.DLQTopic(testTopic)
	p := d.parts[topicPartition{dlqTopic, 0}]
	p.beginPass(10)
	// a0 dispatched, a1 deferred, b2 dispatched, b3 over the bound.
	rewind := dispatchAll(d, srcRec("a", 0), srcRec("a", 1), srcRec("b", 2), srcRec("b", 3))
	if got := rewind[dlqTopic][0]; got.Offset != 1 || p.wm.lastSeen() != 2 {
		t.Fatalf("rewound to %+v with %d seen last, want 1 and 2", got, p.wm.lastSeen())
	}
	d.rewound(rewind)
	if resumed != 0 {
		t.Fatal("resumed with no room")
	}
	a0 := readyBatch(t, d)[0]
	d.finish(a0, true)
	if resumed != 1 {
		t.Fatalf("resumed %d times after a0 finished, want 1", resumed)
	}
	// Read again: a1 taken, b3 added (a0's mark is passed), deferred
	// (b is at its read-ahead).
	rewind = dispatchAll(d, srcRec("a", 1), srcRec("b", 2), srcRec("b", 3))
	if got := readyBatch(t, d)[0].rec.Offset; got != 1 && got != 2 {
		t.Fatalf("ready %d", got)
	}
	if p.wm.lastSeen() != 3 || !p.wm.deferred(3) {
		t.Fatalf("b3: seen last %d, deferred %v; want it seen and deferred", p.wm.lastSeen(), p.wm.deferred(3))
	}
	if len(rewind) != 0 {
		t.Fatalf("rewound %v before the pass's end", rewind)
	}
}
