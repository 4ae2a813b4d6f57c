package gateway

import (
	"sync"
	"time"
)

// refDedupWindow is the dedup window as it was before its index was built
// for the job: a map from digest to ring slot per shard, with a delete for
// each id forgotten. It stays here as the reference that
// TestDedupMatchesReference and FuzzDedupMatchesReference hold
// dedupWindow to: the same answers for the same stream of claims, settles
// and clock moves.
type refDedupWindow struct {
	window  time.Duration
	now     func() time.Time
	shards  [dedupShards]refDedupShard
	onEvict func()
}

type refDedupShard struct {
	mu        sync.Mutex
	committed map[digest]uint32
	pending   map[digest]chan struct{}
	ring      []refRingSlot
	head      int
	size      int
}

type refRingSlot struct {
	d  digest
	at int64
	o  origin
	p  payloadPrint
}

func newRefDedupWindow(cfg DedupConfig, now func() time.Time, onEvict func()) *refDedupWindow {
	d := &refDedupWindow{window: cfg.Window, now: now, onEvict: onEvict}
	per := cfg.MaxEntries / dedupShards
	for i := range d.shards {
		d.shards[i].committed = make(map[digest]uint32)
		d.shards[i].pending = make(map[digest]chan struct{})
		d.shards[i].ring = make([]refRingSlot, per)
	}
	return d
}

func (d *refDedupWindow) shard(dg digest) *refDedupShard {
	return &d.shards[dg[0]%dedupShards]
}

func (d *refDedupWindow) claim(dg digest, p payloadPrint) claim {
	s := d.shard(dg)
	now := d.now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now, int64(d.window))
	if done, ok := s.pending[dg]; ok {
		if done == nil {
			done = make(chan struct{})
			s.pending[dg] = done
		}
		return claim{wait: done}
	}
	if i, ok := s.committed[dg]; ok {
		if slot := &s.ring[i]; now-slot.at < int64(d.window) {
			if slot.p != p {
				return claim{conflict: true, accepted: slot.p}
			}
			return claim{duplicate: true, origin: slot.o}
		}
	}
	s.pending[dg] = nil
	return claim{owner: true}
}

func (d *refDedupWindow) settle(dg digest, accepted bool, o origin, p payloadPrint) {
	s := d.shard(dg)
	now := d.now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	done, ok := s.pending[dg]
	if !ok {
		return
	}
	if done != nil {
		close(done)
	}
	delete(s.pending, dg)
	if !accepted || len(s.ring) == 0 {
		return
	}
	if s.size == len(s.ring) {
		s.forgetOldest()
		if d.onEvict != nil {
			d.onEvict()
		}
	}
	i := (s.head + s.size) % len(s.ring)
	s.committed[dg] = uint32(i)
	s.ring[i] = refRingSlot{d: dg, at: now, o: o, p: p}
	s.size++
}

func (s *refDedupShard) expire(now, window int64) {
	for s.size > 0 && now-s.ring[s.head].at >= window {
		s.forgetOldest()
	}
}

func (s *refDedupShard) forgetOldest() {
	d := s.ring[s.head].d
	if i, ok := s.committed[d]; ok && int(i) == s.head {
		delete(s.committed, d)
	}
	s.head = (s.head + 1) % len(s.ring)
	s.size--
}

func (d *refDedupWindow) len() int {
	n := 0
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.Lock()
		n += len(s.committed) + len(s.pending)
		s.mu.Unlock()
	}
	return n
}
