package gateway

import (
	"hash/maphash"
	"sync"
	"time"
)

const dedupShards = 64

// dedupWindow remembers the (source, event id) pairs accepted within a
// window. An id is claimed while it is being published, so a concurrent
// retry of the same event waits for the first attempt's outcome instead of
// publishing a second copy or answering DUPLICATE for an event that may
// still fail. Memory is bounded: each shard remembers at most its share of
// MaxEntries committed ids, forgetting the oldest first; ids being published
// are bounded by the requests in flight.
type dedupWindow struct {
	window  time.Duration
	now     func() time.Time
	seed    maphash.Seed
	shards  [dedupShards]dedupShard
	onEvict func()
}

type dedupKey struct{ source, id string }

type dedupShard struct {
	mu      sync.Mutex
	entries map[dedupKey]*dedupEntry
	// ring holds committed keys in commit order, so the oldest is forgotten
	// first; it never grows past its capacity.
	ring       []ringSlot
	head, size int
}

type ringSlot struct {
	key dedupKey
	at  time.Time
}

type dedupEntry struct {
	committed bool
	at        time.Time     // commit time, when committed
	done      chan struct{} // closed when a pending claim ends
}

// claim is the answer to claim: exactly one of the fields is meaningful.
type claim struct {
	duplicate bool
	owner     bool            // the caller must publish and then settle
	wait      <-chan struct{} // another publish of the id is in flight
}

func newDedupWindow(cfg DedupConfig, now func() time.Time, onEvict func()) *dedupWindow {
	d := &dedupWindow{window: cfg.Window, now: now, seed: maphash.MakeSeed(), onEvict: onEvict}
	per := cfg.MaxEntries / dedupShards
	for i := range d.shards {
		d.shards[i].entries = make(map[dedupKey]*dedupEntry)
		d.shards[i].ring = make([]ringSlot, per)
	}
	return d
}

func (d *dedupWindow) shard(k dedupKey) *dedupShard {
	var h maphash.Hash
	h.SetSeed(d.seed)
	h.WriteString(k.source)
	h.WriteByte(0)
	h.WriteString(k.id)
	return &d.shards[h.Sum64()%dedupShards]
}

// claim answers whether the key was accepted within the window, makes the
// caller its owner, or hands back a channel to wait on.
func (d *dedupWindow) claim(k dedupKey) claim {
	s := d.shard(k)
	now := d.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now, d.window)
	if e, ok := s.entries[k]; ok {
		if !e.committed {
			return claim{wait: e.done}
		}
		if now.Sub(e.at) < d.window {
			return claim{duplicate: true}
		}
	}
	s.entries[k] = &dedupEntry{done: make(chan struct{})}
	return claim{owner: true}
}

// settle ends the caller's claim: accepted ids are remembered for the
// window, failed ones are forgotten so a retry publishes again.
func (d *dedupWindow) settle(k dedupKey, accepted bool) {
	s := d.shard(k)
	now := d.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[k]
	if !ok || e.committed {
		return
	}
	close(e.done)
	if !accepted || len(s.ring) == 0 {
		delete(s.entries, k)
		return
	}
	e.committed, e.at, e.done = true, now, nil
	if s.size == len(s.ring) {
		s.forgetOldest()
		if d.onEvict != nil {
			d.onEvict()
		}
	}
	s.ring[(s.head+s.size)%len(s.ring)] = ringSlot{key: k, at: now}
	s.size++
}

// expire forgets committed ids older than the window.
func (s *dedupShard) expire(now time.Time, window time.Duration) {
	for s.size > 0 && now.Sub(s.ring[s.head].at) >= window {
		s.forgetOldest()
	}
}

func (s *dedupShard) forgetOldest() {
	slot := s.ring[s.head]
	// The key may have been claimed again after it expired; only forget
	// the entry this slot recorded.
	if e, ok := s.entries[slot.key]; ok && e.committed && e.at.Equal(slot.at) {
		delete(s.entries, slot.key)
	}
	s.ring[s.head] = ringSlot{}
	s.head = (s.head + 1) % len(s.ring)
	s.size--
}

// len is the number of ids remembered or in flight.
func (d *dedupWindow) len() int {
	n := 0
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.Lock()
		n += len(s.entries)
		s.mu.Unlock()
	}
	return n
}
