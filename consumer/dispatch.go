package consumer

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/record"
)

// job is one polled record on its way to the sink or the DLQ.
type job struct {
	rec  *kgo.Record
	part *partState
	key  string
	// source is a DLQ record's source (record.HeaderSource); "" for a
	// record of a source topic.
	source string
	// env is the envelope of a DLQ record being drained; nil otherwise.
	env *record.Envelope
	// span is the record's `process {topic}` span while it records, from
	// the deliverer's process to its end (tracer.endProcess); nil when
	// tracing is off or the record is not sampled.
	span trace.Span
	// conflict is set when the sink held j's event with another payload
	// (its span's outcome); only while span records.
	conflict bool
}

// keyQueue holds the jobs of one key in offset order; jobs[0] is running
// or ready.
type keyQueue struct {
	jobs []*job
}

// dispatcher owns the assigned partitions, the queues of keys and the
// in-flight count. It admits at most maxInFlight polled records, hands
// out the records of one key one at a time in offset order, and marks in
// each partition's watermark the offsets that finished. One lock, mu.
type dispatcher struct {
	maxInFlight int
	writeBatch  int
	// inFlightGauge is sluice_consumer_in_flight.
	inFlightGauge prometheus.Gauge
	// work is the parent of every partition's context: abandonAll
	// cancels the work of every partition at once.
	work       context.Context
	abandonAll context.CancelFunc

	mu       sync.Mutex
	parts    map[topicPartition]*partState
	keys     map[string]*keyQueue
	inFlight int
	// freed receives a token whenever in-flight work finishes.
	freed chan struct{}
	// ready holds jobs at the head of their key's queue; every in-flight
	// job is in it at most once, so maxInFlight bounds it.
	ready chan *job

	// drain is the read of DLQ partitions in drain passes, under mu.
	drain drainRead
}

func newDispatcher(maxInFlight, writeBatch int, inFlight prometheus.Gauge) *dispatcher {
	d := &dispatcher{
		maxInFlight:   maxInFlight,
		writeBatch:    writeBatch,
		inFlightGauge: inFlight,
		parts:         make(map[topicPartition]*partState),
		keys:          make(map[string]*keyQueue),
		freed:         make(chan struct{}, 1),
		ready:         make(chan *job, maxInFlight),
		drain:         newDrainRead(maxInFlight, maxInFlight),
	}
	d.work, d.abandonAll = context.WithCancel(context.Background())
	return d
}

// waitFree returns how many records may be polled, waiting while none may.
func (d *dispatcher) waitFree(ctx context.Context) (int, error) {
	for {
		d.mu.Lock()
		free := d.maxInFlight - d.inFlight
		d.mu.Unlock()
		if free > 0 {
			return free, nil
		}
		select {
		case <-d.freed:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// dispatch registers r as in flight and queues it behind earlier records
// of its key. A DLQ record at or past its pass's end is not dispatched:
// its partition goes into rewind, to be fetched again from it.
func (d *dispatcher) dispatch(r *kgo.Record, rewind map[string]map[int32]kgo.EpochOffset) {
	tp := topicPartition{r.Topic, r.Partition}
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.parts[tp]
	if p == nil || p.gone.Load() {
		// Not ours (any more): its owner fetches it from the committed
		// offset.
		return
	}
	if p.dlq {
		d.dispatchDrained(p, r, rewind)
		return
	}
	if err := p.wm.add(r.Offset); err != nil {
		// A refetch of an offset already in flight.
		return
	}
	p.next.Store(r.Offset + 1)
	d.enqueue(p, r, "")
}

// enqueue makes r, whose offset is in p's watermark, a job in flight,
// behind the jobs of its key. Under mu.
func (d *dispatcher) enqueue(p *partState, r *kgo.Record, source string) {
	p.add()
	d.inFlight++
	d.inFlightGauge.Set(float64(d.inFlight))
	j := &job{rec: r, part: p, source: source, key: r.Topic + "\x00" + strconv.Itoa(int(r.Partition)) + "\x00" + string(r.Key)}
	if p.dlq {
		d.drain.held[source]++
	}
	if q := d.keys[j.key]; q != nil {
		q.jobs = append(q.jobs, j)
		return
	}
	d.keys[j.key] = &keyQueue{jobs: []*job{j}}
	d.ready <- j
}

// finish ends j: done says its side effect happened (written, or
// dead-lettered and acknowledged), so its offset may be committed. The
// next job of its key becomes ready. It reports whether nothing is in
// flight any more.
func (d *dispatcher) finish(j *job, done bool) (idle bool) {
	if done && !j.part.gone.Load() {
		j.part.wm.done(j.rec.Offset)
	}
	d.mu.Lock()
	q := d.keys[j.key]
	q.jobs = q.jobs[1:]
	if len(q.jobs) == 0 {
		delete(d.keys, j.key)
	} else {
		d.ready <- q.jobs[0]
	}
	d.inFlight--
	n := d.inFlight
	d.inFlightGauge.Set(float64(n))
	var resume map[string][]int32
	if j.part.dlq {
		resume = d.finishDrained(j)
	}
	d.mu.Unlock()
	if len(resume) > 0 {
		d.drain.resume(resume)
	}
	j.part.release()
	select {
	case d.freed <- struct{}{}:
	default:
	}
	return n == 0
}

// next waits for a ready job and returns it in batch (reused), with the
// ready jobs of its partition that follow, up to writeBatch. It reports
// false once stop is closed. A batch holds jobs of one partition, so that
// it is abandoned with its partition; a DLQ record is a batch alone, each
// its own drain.
func (d *dispatcher) next(stop <-chan struct{}, batch []*job) ([]*job, bool) {
	var j *job
	select {
	case j = <-d.ready:
	case <-stop:
		return batch[:0], false
	}
	batch = append(batch[:0], j)
	for !j.part.dlq && len(batch) < d.writeBatch {
		select {
		case next := <-d.ready:
			if next.part != j.part {
				d.ready <- next
				return batch, true
			}
			batch = append(batch, next)
		default:
			return batch, true
		}
	}
	return batch, true
}

// assign adds the partitions to the assignment.
func (d *dispatcher) assign(assigned map[string][]int32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for t, ps := range assigned {
		for _, p := range ps {
			tp := topicPartition{t, p}
			d.parts[tp] = newPartState(d.work, tp, record.IsDerived(t))
		}
	}
}

// detach removes the partitions from the assignment and returns their
// states.
func (d *dispatcher) detach(m map[string][]int32) []*partState {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*partState
	for t, ps := range m {
		for _, p := range ps {
			tp := topicPartition{t, p}
			if st := d.parts[tp]; st != nil {
				out = append(out, st)
				delete(d.parts, tp)
				d.forgetDrained(st)
			}
		}
	}
	return out
}

// assigned returns the states of the partitions assigned.
func (d *dispatcher) assigned() []*partState {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*partState, 0, len(d.parts))
	for _, p := range d.parts {
		out = append(out, p)
	}
	return out
}

// idle reports whether nothing is in flight.
func (d *dispatcher) idle() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inFlight == 0
}

// waitIdle waits until nothing is in flight or t passes.
func (d *dispatcher) waitIdle(t time.Duration) {
	deadline := time.NewTimer(t)
	defer deadline.Stop()
	for {
		d.mu.Lock()
		n := d.inFlight
		d.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-d.freed:
		case <-deadline.C:
			return
		}
	}
}

// abandoned is closed once abandonAll was called.
func (d *dispatcher) abandoned() <-chan struct{} { return d.work.Done() }
