package consumer

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
)

// drainRead is how a drain pass reads its DLQ partitions so that one
// source's dead letters cannot starve another's: the dispatcher's part
// of the fair drain (the drainer's fairPacer is the other).
//
// A pass reads a partition in offset order, as Kafka gives it. Each
// source (record.HeaderSource) may have readAhead drained records in
// flight at once; a record of a source at that bound is deferred: its
// offset is marked in the watermark (not done, so never committed past)
// and the record is dropped from memory, and so are the later records of
// that source in the partition, so that a source's records are still
// taken in offset order. The read goes on, and the other sources'
// records behind the deferred ones are dispatched. When the read reaches
// the pass's end, or no source with deferred records has room, the
// partition is rewound to its first deferred offset and paused (parked)
// until one of those sources has finished half its read-ahead; it is
// then read again from there, and only its deferred records are taken.
//
// Bounds: at most readAhead drained records of a source in flight (and
// the dispatcher's maxInFlight in all); at most maxMarks offsets held in
// a partition's watermark from its commit point on (16 B each), past
// which the partition is parked until its commit point moves. A parked
// partition is resumed only by a finish, so a partition is read again at
// most once per finished record.
//
// Order: a source's drained records are taken in offset order; records
// of different sources may be taken out of offset order, which the
// consumer never promised across a DLQ round trip.
type drainRead struct {
	readAhead int
	maxMarks  int
	// resume resumes fetching parked partitions (the client's
	// ResumeFetchPartitions); called without the dispatcher's lock.
	resume func(map[string][]int32)
	// backlog is sluice_consumer_dlq_backlog, by label(source).
	backlog *prometheus.GaugeVec
	label   func(source string) string

	// held counts the drained records in flight by source.
	held map[string]int
	// scans are the DLQ partitions with deferred records or parked.
	scans map[*partState]*drainScan
}

// drainScan is a DLQ partition's deferred records and whether it is
// parked.
type drainScan struct {
	// deferred counts the partition's deferred records by source.
	deferred map[string]int
	// skip holds the sources whose deferred records this read of the
	// partition left deferred: their later ones stay deferred too.
	skip map[string]bool
	// parked: rewound and waiting for room; paused: the poll loop has
	// paused it since; wake: room came since it was parked.
	parked, paused, wake bool
}

func newDrainRead(readAhead, maxInFlight int) drainRead {
	return drainRead{
		readAhead: max(readAhead, 1),
		maxMarks:  16 * maxInFlight,
		resume:    func(map[string][]int32) {},
		label:     func(string) string { return "" },
		held:      make(map[string]int),
		scans:     make(map[*partState]*drainScan),
	}
}

// setDrain sets the read-ahead of a source, the backlog gauge and its
// labels, and how parked partitions are resumed. Called before Run.
func (d *dispatcher) setDrain(readAhead int, backlog *prometheus.GaugeVec, label func(string) string, resume func(map[string][]int32)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.drain.readAhead = max(readAhead, 1)
	d.drain.backlog, d.drain.label, d.drain.resume = backlog, label, resume
}

func (r *drainRead) addBacklog(source string, n float64) {
	if r.backlog != nil && n != 0 {
		r.backlog.WithLabelValues(r.label(source)).Add(n)
	}
}

// scan returns p's scan state, created when create says so.
func (r *drainRead) scan(p *partState, create bool) *drainScan {
	s := r.scans[p]
	if s == nil && create {
		s = &drainScan{deferred: make(map[string]int)}
		r.scans[p] = s
	}
	return s
}

func (r *drainRead) room(source string) bool { return r.held[source] < r.readAhead }

// roomToResume reports whether a source with deferred records in s has
// finished half its read-ahead.
func (r *drainRead) roomToResume(s *drainScan) bool {
	for src := range s.deferred {
		if r.held[src] <= r.readAhead/2 {
			return true
		}
	}
	return false
}

// dispatchDrained takes r, a record of p, a DLQ partition: dispatched,
// deferred, skipped (read again, not deferred) or not taken (past the
// pass's end, or after a rewind of p in this poll). Under mu.
func (d *dispatcher) dispatchDrained(p *partState, r *kgo.Record, rewind map[string]map[int32]kgo.EpochOffset) {
	if _, ok := rewind[r.Topic][r.Partition]; ok {
		// Rewound in this poll: what follows is read again.
		return
	}
	end := p.passEnd.Load()
	if r.Offset >= end {
		d.endScan(p, r.Offset, true, rewind)
		return
	}
	src := sourceOf(r)
	dr := &d.drain
	s := dr.scan(p, false)
	if r.Offset <= p.wm.lastSeen() {
		// Read again after a rewind: only a deferred record is taken.
		if s != nil && p.wm.deferred(r.Offset) {
			if s.skip[src] || !dr.room(src) {
				if s.skip == nil {
					s.skip = make(map[string]bool)
				}
				s.skip[src] = true
				if !d.roomAhead(s) {
					d.park(p, rewind)
					return
				}
			} else {
				p.wm.undefer(r.Offset)
				if s.deferred[src]--; s.deferred[src] == 0 {
					delete(s.deferred, src)
				}
				d.enqueue(p, r, src)
			}
		}
		if r.Offset == end-1 {
			d.endScan(p, end, false, rewind)
		}
		return
	}
	if p.wm.live() >= dr.maxMarks {
		d.park(p, rewind)
		if _, ok := rewind[r.Topic][r.Partition]; !ok {
			setRewind(rewind, p, r.Offset)
		}
		return
	}
	if err := p.wm.add(r.Offset); err != nil {
		return
	}
	p.next.Store(r.Offset + 1)
	dr.addBacklog(src, 1)
	if (s != nil && s.deferred[src] > 0) || !dr.room(src) {
		p.wm.deferLast()
		s = dr.scan(p, true)
		s.deferred[src]++
	} else {
		d.enqueue(p, r, src)
	}
	if r.Offset == end-1 {
		d.endScan(p, end, false, rewind)
	}
}

// roomAhead reports whether a source with deferred records in s, not
// skipped in this read, has room: reading on may dispatch one.
func (d *dispatcher) roomAhead(s *drainScan) bool {
	for src := range s.deferred {
		if !s.skip[src] && d.drain.room(src) {
			return true
		}
	}
	return false
}

// endScan: the read of p reached its pass's end, at offset (a record
// there when past). With records deferred, p is parked at the first;
// otherwise every record of the pass is polled, and a record past the
// end is rewound to, for the next pass.
func (d *dispatcher) endScan(p *partState, offset int64, past bool, rewind map[string]map[int32]kgo.EpochOffset) {
	if s := d.drain.scan(p, false); s != nil && len(s.deferred) > 0 {
		d.park(p, rewind)
		return
	}
	p.polledPass.Store(true)
	if past {
		setRewind(rewind, p, offset)
	}
}

// park rewinds p to its first deferred offset, if any (the caller
// rewinds it otherwise), to be read again when there is room.
func (d *dispatcher) park(p *partState, rewind map[string]map[int32]kgo.EpochOffset) {
	s := d.drain.scan(p, true)
	s.parked, s.paused, s.skip = true, false, nil
	s.wake = d.drain.roomToResume(s) || (len(s.deferred) == 0 && p.wm.live() < d.drain.maxMarks)
	if first, ok := p.wm.firstDeferred(); ok {
		setRewind(rewind, p, first)
	}
}

func setRewind(rewind map[string]map[int32]kgo.EpochOffset, p *partState, offset int64) {
	if rewind[p.tp.topic] == nil {
		rewind[p.tp.topic] = make(map[int32]kgo.EpochOffset)
	}
	rewind[p.tp.topic][p.tp.partition] = kgo.EpochOffset{Epoch: -1, Offset: offset}
}

// rewound is told by the poll loop that the partitions of rewind are
// paused at their rewind offsets; it resumes at once those parked that
// got room meanwhile.
func (d *dispatcher) rewound(rewind map[string]map[int32]kgo.EpochOffset) {
	d.mu.Lock()
	resume := make(map[string][]int32)
	for p, s := range d.drain.scans {
		if _, ok := rewind[p.tp.topic][p.tp.partition]; !ok || !s.parked {
			continue
		}
		s.paused = true
		if s.wake {
			d.unpark(p, s, resume)
		}
	}
	d.mu.Unlock()
	if len(resume) > 0 {
		d.drain.resume(resume)
	}
}

// finishDrained accounts for j, a drained record, finishing, and returns
// the parked partitions to resume. Under mu.
func (d *dispatcher) finishDrained(j *job) map[string][]int32 {
	dr := &d.drain
	if dr.held[j.source]--; dr.held[j.source] <= 0 {
		delete(dr.held, j.source)
	}
	dr.addBacklog(j.source, -1)
	var resume map[string][]int32
	for p, s := range dr.scans {
		if !s.parked || p.gone.Load() {
			continue
		}
		if dr.roomToResume(s) || (len(s.deferred) == 0 && p == j.part) {
			s.wake = true
		}
		if s.wake && s.paused {
			if resume == nil {
				resume = make(map[string][]int32)
			}
			d.unpark(p, s, resume)
		}
	}
	return resume
}

func (d *dispatcher) unpark(p *partState, s *drainScan, resume map[string][]int32) {
	s.parked, s.paused, s.wake, s.skip = false, false, false, nil
	if len(s.deferred) == 0 {
		delete(d.drain.scans, p)
	}
	resume[p.tp.topic] = append(resume[p.tp.topic], p.tp.partition)
}

// forgetDrained drops the scan state of p, no longer assigned: its
// deferred records leave the backlog. Under mu.
func (d *dispatcher) forgetDrained(p *partState) {
	s := d.drain.scans[p]
	if s == nil {
		return
	}
	for src, n := range s.deferred {
		d.drain.addBacklog(src, -float64(n))
	}
	delete(d.drain.scans, p)
}
