package gateway

import (
	"hash/maphash"
	"sync"
	"time"
)

const dedupShards = 64

// dedupBytesPerEntry is what the window keeps per accepted id at most: a
// 24-byte ring slot and a 24-byte map slot in a table between 7/16 and 7/8
// full (TestDedupMemoryPerID measures it with SLUICE_MEMORY_TESTS=1).
const dedupBytesPerEntry = 96

// dedupWindow remembers the (source, event id) pairs accepted within a
// window. An id is claimed while it is being published, so a concurrent
// retry of the same event waits for the first attempt's outcome instead of
// publishing a second copy or answering DUPLICATE for an event that may
// still fail. Memory is bounded: each shard remembers at most its share of
// MaxEntries committed ids, forgetting the oldest first; ids being published
// are bounded by the requests in flight.
//
// A committed id is remembered by a 128-bit digest of (source, id) under
// seeds drawn at start, not by its text: about 55 bytes an id instead of
// the id's length plus a few hundred, and tables without pointers, which
// the garbage collector does not scan. Two ids share a digest with a
// probability near 2^-128 per pair (under 10^-26 for a full window of a
// million ids); such a pair would answer DUPLICATE for the second.
type dedupWindow struct {
	window  time.Duration
	now     func() time.Time
	seeds   [2]maphash.Seed
	shards  [dedupShards]dedupShard
	onEvict func()
}

type dedupKey struct{ source, id string }

// digest is what the window keeps of a dedupKey.
type digest struct{ hi, lo uint64 }

type dedupShard struct {
	mu sync.Mutex
	// committed maps an accepted id to its commit time (Unix ns).
	committed map[digest]int64
	// pending holds the ids being published, each with the channel closed
	// when that attempt ends: nil until another claim of the id waits.
	pending map[digest]chan struct{}
	// ring holds committed ids in commit order, so the oldest is forgotten
	// first; it never grows past its capacity.
	ring       []ringSlot
	head, size int
}

type ringSlot struct {
	d  digest
	at int64
}

// claim is the answer to claim: exactly one of the fields is meaningful.
type claim struct {
	duplicate bool
	owner     bool            // the caller must publish and then settle
	wait      <-chan struct{} // another publish of the id is in flight
}

func newDedupWindow(cfg DedupConfig, now func() time.Time, onEvict func()) *dedupWindow {
	d := &dedupWindow{window: cfg.Window, now: now, seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, onEvict: onEvict}
	per := cfg.MaxEntries / dedupShards
	for i := range d.shards {
		d.shards[i].committed = make(map[digest]int64)
		d.shards[i].pending = make(map[digest]chan struct{})
		d.shards[i].ring = make([]ringSlot, per)
	}
	return d
}

func (d *dedupWindow) digest(k dedupKey) digest {
	return digest{hi: maphash.Comparable(d.seeds[0], k), lo: maphash.Comparable(d.seeds[1], k)}
}

func (d *dedupWindow) shard(dg digest) *dedupShard {
	return &d.shards[dg.hi%dedupShards]
}

// claim answers whether the id was accepted within the window, makes the
// caller its owner, or hands back a channel to wait on. dg is the id's
// digest, taken once per event.
func (d *dedupWindow) claim(dg digest) claim {
	s := d.shard(dg)
	now := d.now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now, int64(d.window))
	if done, ok := s.pending[dg]; ok {
		if done == nil {
			// The first to wait makes the channel: most claims see none.
			done = make(chan struct{})
			s.pending[dg] = done
		}
		return claim{wait: done}
	}
	if at, ok := s.committed[dg]; ok && now-at < int64(d.window) {
		return claim{duplicate: true}
	}
	s.pending[dg] = nil
	return claim{owner: true}
}

// settle ends the caller's claim: accepted ids are remembered for the
// window, failed ones are forgotten so a retry publishes again.
func (d *dedupWindow) settle(dg digest, accepted bool) {
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
	s.committed[dg] = now
	s.ring[(s.head+s.size)%len(s.ring)] = ringSlot{d: dg, at: now}
	s.size++
}

// expire forgets committed ids older than the window.
func (s *dedupShard) expire(now, window int64) {
	for s.size > 0 && now-s.ring[s.head].at >= window {
		s.forgetOldest()
	}
}

func (s *dedupShard) forgetOldest() {
	slot := s.ring[s.head]
	// The id may have been committed again after it expired; only forget
	// the commit this slot recorded.
	if at, ok := s.committed[slot.d]; ok && at == slot.at {
		delete(s.committed, slot.d)
	}
	s.head = (s.head + 1) % len(s.ring)
	s.size--
}

// len is the number of ids remembered or in flight.
func (d *dedupWindow) len() int {
	n := 0
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.Lock()
		n += len(s.committed) + len(s.pending)
		s.mu.Unlock()
	}
	return n
}
