package gateway

import (
	"hash/maphash"
	"sync"
	"time"
)

const dedupShards = 64

// dedupBytesPerEntry is what the window keeps per accepted id at most: a
// 48-byte ring entry and two to four 8-byte index slots (the index has a
// power-of-two number of slots, between two and four per ring entry).
// TestDedupBytesPerEntry checks it from the sizes of both for shard sizes
// of every kind; TestDedupMemoryPerID weighs it with SLUICE_MEMORY_TESTS=1.
const dedupBytesPerEntry = 80

// maxDedupShardEntries is the most ids one shard remembers: its index
// holds 32-bit ring positions (plus one: zero is an empty slot).
const maxDedupShardEntries = 1<<32 - 2

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
// of two words: one fixed-size ring entry of 48 bytes holds the digest,
// the commit time, the origin and the payload's print, and an index of
// 8-byte slots finds an entry from its digest (dedupBytesPerEntry
// bounds both), in tables without pointers, which the garbage collector
// does not scan. Two ids share a digest with a probability near 2^-128
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
	// index finds a committed id's entry in ring (dedupIndex).
	index dedupIndex
	// pending holds the ids being published, each with the channel closed
	// when that attempt ends: nil until another claim of the id waits.
	// It holds at most the ids in flight.
	pending map[digest]chan struct{}
	// ring holds committed ids in commit order, so the oldest is forgotten
	// first; it never grows past its capacity. A committed id's entry holds
	// that id until it is forgotten.
	ring       []ringEntry
	head, size int
}

// ringEntry is one committed id: 48 bytes.
type ringEntry struct {
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
		d.shards[i].pending = make(map[digest]chan struct{})
		d.shards[i].ring = make([]ringEntry, per)
		d.shards[i].index = newDedupIndex(per)
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
	if len(s.pending) > 0 {
		if done, ok := s.pending[dg]; ok {
			if done == nil {
				// The first to wait makes the channel: most claims see none.
				done = make(chan struct{})
				s.pending[dg] = done
			}
			return claim{wait: done}
		}
	}
	if at, ok := s.index.find(dg, s.ring); ok {
		// A clock set back may leave an entry older than the window
		// behind the ring's head; it is not a duplicate.
		if e := &s.ring[s.index.slots[at].pos-1]; now-e.at < int64(d.window) {
			if e.p != p {
				return claim{conflict: true, accepted: e.p}
			}
			return claim{duplicate: true, origin: e.o}
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
	i := s.head + s.size
	if i >= len(s.ring) {
		i -= len(s.ring)
	}
	s.ring[i] = ringEntry{d: dg, at: now, o: o, p: p}
	s.index.set(dg, uint32(i), s.ring)
	s.size++
}

// expire forgets committed ids older than the window.
func (s *dedupShard) expire(now, window int64) {
	for s.size > 0 && now-s.ring[s.head].at >= window {
		s.forgetOldest()
	}
}

// forgetOldest drops the ring's oldest entry, and its index slot unless
// the id was committed again since (a clock set back lets an id expire
// for claim while its entry is still in the ring): then the slot names
// the newer entry, which stays.
func (s *dedupShard) forgetOldest() {
	if at, ok := s.index.find(s.ring[s.head].d, s.ring); ok && int(s.index.slots[at].pos-1) == s.head {
		s.index.remove(at)
	}
	s.head++
	if s.head == len(s.ring) {
		s.head = 0
	}
	s.size--
}

// len is the number of ids remembered or in flight.
func (d *dedupWindow) len() int {
	n := 0
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.Lock()
		n += s.index.n + len(s.pending)
		s.mu.Unlock()
	}
	return n
}

// dedupIndex finds a committed id's ring entry from its digest: open
// addressing with linear probing over a power-of-two table of at least
// twice as many slots as the ring has entries, so it is at most half full
// and a probe sequence stays short. Forgetting an id shifts the slots
// after it back (backward-shift deletion) instead of leaving a
// tombstone: every id stays reachable from its home slot without a gap,
// and a table that forgets and remembers forever never fills with
// tombstones.
type dedupIndex struct {
	slots []indexSlot
	mask  uint64
	n     int // slots in use
}

// indexSlot is 8 bytes: the digest's second word, which places the slot
// (its home is h & mask, the first word having chosen the shard) and
// rules out most other ids without reading the ring, and the ring
// position plus one; zero is an empty slot.
type indexSlot struct {
	h   uint32
	pos uint32
}

func newDedupIndex(entries int) dedupIndex {
	n := 2
	for n < 2*entries {
		n <<= 1
	}
	return dedupIndex{slots: make([]indexSlot, n), mask: uint64(n - 1)}
}

// find returns the slot of dg's entry in ring.
func (x *dedupIndex) find(dg digest, ring []ringEntry) (uint64, bool) {
	for i := uint64(dg[1]) & x.mask; ; i = (i + 1) & x.mask {
		sl := x.slots[i]
		if sl.pos == 0 {
			return 0, false
		}
		if sl.h == dg[1] && ring[sl.pos-1].d == dg {
			return i, true
		}
	}
}

// set makes dg's slot name ring position at, taking the first empty slot
// of dg's probe sequence when dg has none.
func (x *dedupIndex) set(dg digest, at uint32, ring []ringEntry) {
	for i := uint64(dg[1]) & x.mask; ; i = (i + 1) & x.mask {
		sl := &x.slots[i]
		if sl.pos == 0 {
			*sl = indexSlot{h: dg[1], pos: at + 1}
			x.n++
			return
		}
		if sl.h == dg[1] && ring[sl.pos-1].d == dg {
			sl.pos = at + 1
			return
		}
	}
}

// remove empties slot i, then moves back each later slot of the run that
// its home allows into the gap, so no lookup stops early at it.
func (x *dedupIndex) remove(i uint64) {
	x.n--
	for j := i; ; {
		j = (j + 1) & x.mask
		sl := x.slots[j]
		if sl.pos == 0 {
			break
		}
		// sl may fill the gap at i unless its home lies cyclically in
		// (i, j]: then i is before where its probe sequence starts.
		if home := uint64(sl.h) & x.mask; (j-home)&x.mask >= (j-i)&x.mask {
			x.slots[i] = sl
			i = j
		}
	}
	x.slots[i] = indexSlot{}
}
