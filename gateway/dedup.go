package gateway

import (
	"hash/maphash"
	"sync"
	"time"
)

const dedupShards = 64

// dedupBytesPerEntry is what the window keeps per accepted id at most: a
// 48-byte ring slot and a 20-byte map slot in a table between 7/16 and 7/8
// full (TestDedupMemoryPerID measures it with SLUICE_MEMORY_TESTS=1: 92.8
// bytes).
const dedupBytesPerEntry = 96

// maxDedupShardEntries is the most ids one shard remembers: its map holds
// 32-bit indexes into its ring.
const maxDedupShardEntries = 1<<32 - 1

// dedupWindow remembers the (source, event id) pairs accepted within a
// window, with where each was made durable and its payload's fingerprint.
// A claim of a remembered id with the same fingerprint is a duplicate; with
// another, a conflict: the id was accepted with another payload. An id is
// claimed while it is
// being published, so a concurrent retry of the same event waits for the
// first attempt's outcome instead of publishing a second copy or
// answering DUPLICATE for an event that may still fail. Memory is bounded:
// each shard remembers at most its share of MaxEntries committed ids,
// forgetting the oldest first; ids being published are bounded by the
// requests in flight.
//
// A committed id is remembered by a 128-bit digest of (source, id) under
// seeds drawn at start, not by its text, and where it went as an origin
// of two words: at most about 95 bytes an id (dedupBytesPerEntry) instead
// of the id's length plus a few hundred, and tables without pointers,
// which the garbage collector does not scan. Two ids share a digest with a probability near 2^-128
// per pair (under 10^-26 for a full window of a million ids); such a pair
// would answer DUPLICATE for the second. A payload is remembered by the
// first 64 bits of its fingerprint (payloadPrint): two payloads of one id
// that share them, with a probability near 2^-64, would answer DUPLICATE
// for the second, which the sink then records as a conflict.
type dedupWindow struct {
	window  time.Duration
	now     func() time.Time
	seeds   [2]maphash.Seed
	shards  [dedupShards]dedupShard
	onEvict func()
}

type dedupKey struct{ source, id string }

// digest is what the window keeps of a dedupKey: 128 bits in four 32-bit
// words, so that a map slot of a digest and a uint32 is 20 bytes (two
// 64-bit words would align it to 24).
type digest [4]uint32

// origin is where an accepted id's record was made durable, as the window
// keeps it: two words without pointers (position.go makes and reads
// them). The zero origin is none known.
type origin struct {
	where  uint64
	offset int64
}

type dedupShard struct {
	mu sync.Mutex
	// committed maps an accepted id to its slot in ring.
	committed map[digest]uint32
	// pending holds the ids being published, each with the channel closed
	// when that attempt ends: nil until another claim of the id waits.
	pending map[digest]chan struct{}
	// ring holds committed ids in commit order, so the oldest is forgotten
	// first; it never grows past its capacity. A committed id's slot holds
	// that id until it is forgotten.
	ring       []ringSlot
	head, size int
}

type ringSlot struct {
	d  digest
	at int64 // commit time, Unix ns
	o  origin
	p  payloadPrint
}

// payloadPrint is what the window keeps of a payload's fingerprint: its
// first 64 bits.
type payloadPrint uint64

// claim is the answer to claim: one of duplicate, conflict, owner and
// wait is set.
type claim struct {
	duplicate bool
	// conflict: the id was accepted with the payload accepted names, not
	// the one claimed.
	conflict bool
	accepted payloadPrint
	origin   origin          // with duplicate: where the accepted one went
	owner    bool            // the caller must publish and then settle
	wait     <-chan struct{} // another publish of the id is in flight
}

func newDedupWindow(cfg DedupConfig, now func() time.Time, onEvict func()) *dedupWindow {
	d := &dedupWindow{window: cfg.Window, now: now, seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, onEvict: onEvict}
	per := cfg.MaxEntries / dedupShards
	for i := range d.shards {
		d.shards[i].committed = make(map[digest]uint32)
		d.shards[i].pending = make(map[digest]chan struct{})
		d.shards[i].ring = make([]ringSlot, per)
	}
	return d
}

func (d *dedupWindow) digest(k dedupKey) digest {
	hi, lo := maphash.Comparable(d.seeds[0], k), maphash.Comparable(d.seeds[1], k)
	return digest{uint32(hi), uint32(hi >> 32), uint32(lo), uint32(lo >> 32)}
}

func (d *dedupWindow) shard(dg digest) *dedupShard {
	return &d.shards[dg[0]%dedupShards]
}

// claim answers whether the id was accepted within the window, with
// payload p (a duplicate) or another one (a conflict), makes the caller
// its owner, or hands back a channel to wait on. dg is the id's digest,
// taken once per event.
func (d *dedupWindow) claim(dg digest, p payloadPrint) claim {
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

// settle ends the caller's claim: accepted ids are remembered for the
// window with their origin and payload p, failed ones are forgotten so a
// retry publishes again.
func (d *dedupWindow) settle(dg digest, accepted bool, o origin, p payloadPrint) {
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
	s.ring[i] = ringSlot{d: dg, at: now, o: o, p: p}
	s.size++
}

// expire forgets committed ids older than the window.
func (s *dedupShard) expire(now, window int64) {
	for s.size > 0 && now-s.ring[s.head].at >= window {
		s.forgetOldest()
	}
}

func (s *dedupShard) forgetOldest() {
	d := s.ring[s.head].d
	// The id may have been committed again after it expired; only forget
	// the commit this slot recorded.
	if i, ok := s.committed[d]; ok && int(i) == s.head {
		delete(s.committed, d)
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
