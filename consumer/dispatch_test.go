package consumer

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/record"
)

// newTestDispatcher is a dispatcher of MaxInFlight max and WriteBatch
// batch, with testTopic's partition 0 and its DLQ's partition 0 assigned.
func newTestDispatcher(t *testing.T, max, batch int) (*dispatcher, prometheus.Gauge) {
	t.Helper()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "in_flight"})
	d := newDispatcher(max, batch, g)
	t.Cleanup(d.abandonAll)
	d.assign(map[string][]int32{testTopic: {0}, record.DLQTopic(testTopic): {0}})
	return d, g
}

func rec(topic string, partition int32, offset int64, key string) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: partition, Offset: offset, Key: []byte(key)}
}

// dispatchAll dispatches recs and returns what they asked to rewind.
func dispatchAll(d *dispatcher, recs ...*kgo.Record) map[string]map[int32]kgo.EpochOffset {
	rewind := make(map[string]map[int32]kgo.EpochOffset)
	for _, r := range recs {
		d.dispatch(r, rewind)
	}
	return rewind
}

// offsetsOf returns the offsets of the jobs of batch.
func offsetsOf(batch []*job) []int64 {
	var out []int64
	for _, j := range batch {
		out = append(out, j.rec.Offset)
	}
	return out
}

// readyBatch returns the next batch at once, failing if there is none.
func readyBatch(t *testing.T, d *dispatcher) []*job {
	t.Helper()
	if len(d.ready) == 0 {
		t.Fatal("no job ready")
	}
	batch, ok := d.next(make(chan struct{}), nil)
	if !ok {
		t.Fatal("next stopped")
	}
	return batch
}

// TestDispatcherOrderPerKey: a key's next record is handed out only once
// the one before it finished; other keys run meanwhile; the watermark
// commits only below the lowest unfinished offset.
func TestDispatcherOrderPerKey(t *testing.T) {
	d, g := newTestDispatcher(t, 8, 8)
	dispatchAll(d,
		rec(testTopic, 0, 0, "a"), rec(testTopic, 0, 1, "b"), rec(testTopic, 0, 2, "a"),
		rec(testTopic, 0, 3, "b"), rec(testTopic, 0, 4, "a"), rec(testTopic, 0, 5, "c"))
	if v := testutil.ToFloat64(g); v != 6 {
		t.Fatalf("in flight gauge %v, want 6", v)
	}
	first := readyBatch(t, d)
	if got := offsetsOf(first); !slices.Equal(got, []int64{0, 1, 5}) {
		t.Fatalf("first batch %v, want the heads of a, b and c", got)
	}
	if len(d.ready) != 0 {
		t.Fatalf("%d jobs ready behind running heads", len(d.ready))
	}
	// c's and b's heads finish; a's is still running.
	d.finish(first[2], true)
	d.finish(first[1], true)
	if got := offsetsOf(readyBatch(t, d)); !slices.Equal(got, []int64{3}) {
		t.Fatalf("after b's head: %v, want b's next, 3", got)
	}
	if off, ok := d.parts[topicPartition{testTopic, 0}].wm.committable(); ok {
		t.Fatalf("committable %d while offset 0 runs", off)
	}
	if d.finish(first[0], true) {
		t.Fatal("finish reported idle with jobs in flight")
	}
	if off, _ := d.parts[topicPartition{testTopic, 0}].wm.committable(); off != 2 {
		t.Fatalf("committable %d, want 2 (0 and 1 done, 2 not)", off)
	}
	if got := offsetsOf(readyBatch(t, d)); !slices.Equal(got, []int64{2}) {
		t.Fatalf("after a's head: %v, want a's next, 2", got)
	}
	if v := testutil.ToFloat64(g); v != 3 {
		t.Fatalf("in flight gauge %v, want 3", v)
	}
}

// TestDispatcherBatches: a batch holds ready jobs of one partition, up to
// the write batch; a DLQ job is a batch alone; next reports false once
// stop is closed.
func TestDispatcherBatches(t *testing.T) {
	d, _ := newTestDispatcher(t, 16, 2)
	d.assign(map[string][]int32{testTopic: {1}})
	dispatchAll(d, rec(testTopic, 0, 0, "a"), rec(testTopic, 0, 1, "b"), rec(testTopic, 0, 2, "c"), rec(testTopic, 1, 0, "a"))
	if got := offsetsOf(readyBatch(t, d)); !slices.Equal(got, []int64{0, 1}) {
		t.Fatalf("first batch %v, want two of partition 0", got)
	}
	b := readyBatch(t, d)
	if len(b) != 1 || b[0].rec.Offset != 2 || b[0].rec.Partition != 0 {
		t.Fatalf("second batch %v, want partition 0's offset 2 alone", offsetsOf(b))
	}
	if b := readyBatch(t, d); len(b) != 1 || b[0].rec.Partition != 1 {
		t.Fatalf("third batch %v, want partition 1's record", offsetsOf(b))
	}

	dl := d.parts[topicPartition{record.DLQTopic(testTopic), 0}]
	dl.beginPass(10)
	dispatchAll(d, rec(record.DLQTopic(testTopic), 0, 0, "x"), rec(record.DLQTopic(testTopic), 0, 1, "y"))
	if b := readyBatch(t, d); len(b) != 1 {
		t.Fatalf("a DLQ batch of %d jobs", len(b))
	}
	stop := make(chan struct{})
	close(stop)
	// One DLQ job is still ready; a closed stop may or may not win the
	// race with it, but once the queue is empty stop must end next.
	for {
		b, ok := d.next(stop, nil)
		if !ok {
			break
		}
		if len(b) != 1 {
			t.Fatalf("a DLQ batch of %d jobs", len(b))
		}
	}
}

// TestDispatcherInFlightBound: waitFree answers the free slots, and waits
// while there are none until a job finishes or its context ends.
func TestDispatcherInFlightBound(t *testing.T) {
	d, _ := newTestDispatcher(t, 2, 2)
	if n, err := d.waitFree(context.Background()); err != nil || n != 2 {
		t.Fatalf("waitFree = %d, %v; want 2", n, err)
	}
	dispatchAll(d, rec(testTopic, 0, 0, "a"), rec(testTopic, 0, 1, "a"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := d.waitFree(ctx); err == nil {
		t.Fatalf("waitFree = %d with no slot free", n)
	}
	j := readyBatch(t, d)[0]
	done := make(chan int, 1)
	go func() {
		n, _ := d.waitFree(context.Background())
		done <- n
	}()
	d.finish(j, true)
	if n := <-done; n != 1 {
		t.Fatalf("waitFree = %d after one finished, want 1", n)
	}
	if d.idle() {
		t.Fatal("idle with one job in flight")
	}
	if !d.finish(readyBatch(t, d)[0], false) || !d.idle() {
		t.Fatal("not idle after the last job finished")
	}
	d.waitIdle(time.Hour)
}

// TestDispatcherDrainPassEnd: a DLQ record at or past its pass's end is
// not dispatched but rewound to, the first one per partition; outside a
// pass every DLQ record is rewound.
func TestDispatcherDrainPassEnd(t *testing.T) {
	d, _ := newTestDispatcher(t, 8, 8)
	dlqTopic := record.DLQTopic(testTopic)
	p := d.parts[topicPartition{dlqTopic, 0}]
	rewind := dispatchAll(d, rec(dlqTopic, 0, 3, "a"), rec(dlqTopic, 0, 4, "a"))
	if got := rewind[dlqTopic][0]; got.Offset != 3 || d.inFlight != 0 {
		t.Fatalf("outside a pass: rewind to %d with %d in flight; want 3 and none", got.Offset, d.inFlight)
	}

	p.beginPass(5)
	if !p.passPending() {
		t.Fatal("a pass just begun has nothing pending")
	}
	rewind = dispatchAll(d, rec(dlqTopic, 0, 3, "a"), rec(dlqTopic, 0, 4, "b"), rec(dlqTopic, 0, 5, "a"), rec(dlqTopic, 0, 6, "a"))
	if got := rewind[dlqTopic][0]; got.Offset != 5 || got.Epoch != -1 {
		t.Fatalf("rewind %+v, want offset 5", got)
	}
	if d.inFlight != 2 || p.next.Load() != 5 {
		t.Fatalf("%d in flight, next %d; want 2 and 5", d.inFlight, p.next.Load())
	}
	if !p.polledPass.Load() || !p.passPending() {
		t.Fatal("the pass is polled, and pending while its records run")
	}
	for range 2 {
		d.finish(readyBatch(t, d)[0], true)
	}
	if p.passPending() {
		t.Fatal("the pass is pending with every record finished")
	}
	p.endPass()
	if p.passEnd.Load() != 0 {
		t.Fatal("endPass kept the end offset")
	}
}

// TestDispatcherDetach: records of partitions not assigned, or retired,
// are not dispatched; a job of a retired partition finishes without
// marking its watermark.
func TestDispatcherDetach(t *testing.T) {
	d, _ := newTestDispatcher(t, 8, 8)
	dispatchAll(d, rec(testTopic, 7, 0, "a"), rec(testTopic, 0, 0, "a"))
	if d.inFlight != 1 {
		t.Fatalf("%d in flight, want 1: partition 7 is not assigned", d.inFlight)
	}
	j := readyBatch(t, d)[0]
	parts := d.detach(map[string][]int32{testTopic: {0, 7}})
	if len(parts) != 1 || parts[0] != j.part {
		t.Fatalf("detach returned %d states, want partition 0's", len(parts))
	}
	for _, p := range d.assigned() {
		if p.tp.topic == testTopic {
			t.Fatalf("partition %d still assigned", p.tp.partition)
		}
	}
	select {
	case <-j.part.idleChan():
		t.Fatal("partition idle with a job running")
	default:
	}
	j.part.retire()
	if j.part.ctx.Err() == nil {
		t.Fatal("retire left the partition's work running")
	}
	d.finish(j, true)
	if _, ok := j.part.wm.committable(); ok {
		t.Fatal("a retired partition's watermark moved")
	}
	<-j.part.idleChan()
	d.abandonAll()
	<-d.abandoned()
	for _, p := range d.assigned() {
		if p.ctx.Err() == nil {
			t.Fatal("abandonAll left a partition's work running")
		}
	}
}

// keysJobs returns the jobs in flight.
func (d *dispatcher) keysJobs() []*job {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*job
	for _, q := range d.keys {
		out = append(out, q.jobs...)
	}
	return out
}
