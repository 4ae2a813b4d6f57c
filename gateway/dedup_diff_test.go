package gateway

import (
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"
)

// dedupPair runs one stream of claims, settles and clock moves through
// dedupWindow and through refDedupWindow, the map it replaced, and fails
// at the first answer, eviction count, size or woken waiter on which they
// differ.
type dedupPair struct {
	t              testing.TB
	now            time.Time
	d              *dedupWindow
	ref            *refDedupWindow
	evicted, refEv int
	// waits pairs the channels the two handed back for one claim.
	waits [][2]<-chan struct{}
	ops   int
}

func newDedupPair(t testing.TB, cfg DedupConfig) *dedupPair {
	p := &dedupPair{t: t, now: time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)}
	clock := func() time.Time { return p.now }
	p.d = newDedupWindow(cfg, clock, func() { p.evicted++ })
	p.ref = newRefDedupWindow(cfg, clock, func() { p.refEv++ })
	return p
}

func (p *dedupPair) claim(dg digest, print payloadPrint) {
	p.t.Helper()
	p.ops++
	got, want := p.d.claim(dg, print), p.ref.claim(dg, print)
	if got.duplicate != want.duplicate || got.conflict != want.conflict || got.accepted != want.accepted ||
		got.origin != want.origin || got.owner != want.owner || (got.wait == nil) != (want.wait == nil) {
		p.t.Fatalf("op %d: claim(%x, %d) = %+v, the map answered %+v", p.ops, dg, print, got, want)
	}
	if got.wait != nil {
		p.waits = append(p.waits, [2]<-chan struct{}{got.wait, want.wait})
	}
	p.check()
}

func (p *dedupPair) settle(dg digest, accepted bool, o origin, print payloadPrint) {
	p.t.Helper()
	p.ops++
	p.d.settle(dg, accepted, o, print)
	p.ref.settle(dg, accepted, o, print)
	p.check()
}

func (p *dedupPair) check() {
	p.t.Helper()
	if p.evicted != p.refEv {
		p.t.Fatalf("op %d: %d evictions, the map made %d", p.ops, p.evicted, p.refEv)
	}
	if got, want := p.d.len(), p.ref.len(); got != want {
		p.t.Fatalf("op %d: len %d, the map's %d", p.ops, got, want)
	}
	for _, w := range p.waits {
		if closed(w[0]) != closed(w[1]) {
			p.t.Fatalf("op %d: a waiter woken %v, the map's %v", p.ops, closed(w[0]), closed(w[1]))
		}
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// crowdedDigest is the digest of small id n made to crowd the index: its
// shard is one of two and its home slot one of a few, so probe runs are
// long, wrap around the table's end and are cut by forgetting.
func crowdedDigest(n byte) digest {
	return digest{uint32(n & 1), uint32(n>>1) & 15, uint32(n), 0x5eed}
}

// runDedupOps drives p by ops, a byte stream: each operation takes an
// opcode byte and an argument byte. Ids come from ids.
func runDedupOps(p *dedupPair, window time.Duration, ops []byte, ids func(byte) digest) {
	for i := 0; i+1 < len(ops); i += 2 {
		op, arg := ops[i], ops[i+1]
		dg, print := ids(arg), payloadPrint(op>>4&1)
		o := origin{where: uint64(i), offset: int64(arg)}
		switch op % 8 {
		case 0, 1:
			p.claim(dg, print)
		case 2, 3:
			p.settle(dg, true, o, print)
		case 4:
			p.settle(dg, false, origin{}, 0)
		case 5: // claim and accept at once, to fill the ring
			p.claim(dg, print)
			p.settle(dg, true, o, print)
		case 6: // time passes: up to about a window
			p.now = p.now.Add(window * time.Duration(arg) / 200)
		case 7: // the clock is set back, a little or by more than a window
			p.now = p.now.Add(-window * time.Duration(arg%64) / 32)
		}
	}
}

// TestDedupMatchesReference holds the window to the map it replaced for
// random streams of claims, settles and clock moves: ids crowded into two
// shards and a few home slots of a small index, and ids digested as the
// gateway digests them in a larger one.
func TestDedupMatchesReference(t *testing.T) {
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 33))
		window := time.Second
		cfg := DedupConfig{Window: window, MaxEntries: dedupShards * (1 + int(seed%5))}
		ops := make([]byte, 40_000)
		for i := range ops {
			ops[i] = byte(rng.Uint32())
		}
		runDedupOps(newDedupPair(t, cfg), window, ops, crowdedDigest)

		p := newDedupPair(t, DedupConfig{Window: window, MaxEntries: dedupShards * 64})
		real := make([]digest, 256)
		for i := range real {
			real[i] = p.d.digest(dedupKey{"src", string(rune('a'+i%26)) + string(rune(i))})
		}
		runDedupOps(p, window, ops, func(n byte) digest { return real[n] })
	}
}

// FuzzDedupMatchesReference is TestDedupMatchesReference's stream from the
// fuzzer: the first byte sizes the ring (1 to 8 ids a shard), the rest are
// operations on crowded ids.
func FuzzDedupMatchesReference(f *testing.F) {
	f.Add([]byte{0, 5, 1, 5, 3, 5, 5, 0, 2, 2, 1, 6, 200, 0, 1})
	f.Add([]byte{1, 5, 0, 5, 2, 5, 4, 5, 6, 5, 8, 5, 10, 4, 2, 0, 2, 5, 16, 7, 40, 0, 0})
	seed := []byte{3}
	for i := range 120 {
		seed = append(seed, 5, byte(i*7))
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		window := time.Second
		p := newDedupPair(t, DedupConfig{Window: window, MaxEntries: dedupShards * (1 + int(data[0]%8))})
		runDedupOps(p, window, data[1:], crowdedDigest)
	})
}

// TestDedupIndexRemoveKeepsRuns: forgetting an id in the middle of a
// probe run, and one whose run wraps past the table's end, leaves every
// other id of the run found. Emptying the slot alone would cut the run.
func TestDedupIndexRemoveKeepsRuns(t *testing.T) {
	ring := make([]ringEntry, 4)
	x := newDedupIndex(len(ring)) // 8 slots
	// Homes 6, 6, 7, 6: slots 6, 7, 0, 1, wrapping.
	dgs := []digest{{0, 6, 1}, {0, 6, 2}, {0, 7, 3}, {0, 14, 4}}
	for i, dg := range dgs {
		ring[i].d = dg
		x.set(dg, uint32(i), ring)
	}
	for _, gone := range []int{0, 2} {
		at, ok := x.find(dgs[gone], ring)
		if !ok {
			t.Fatalf("%x not found before it is forgotten", dgs[gone])
		}
		x.remove(at)
		if _, ok := x.find(dgs[gone], ring); ok {
			t.Fatalf("%x found after it was forgotten", dgs[gone])
		}
		for i, dg := range dgs {
			if i == 0 || i == gone {
				continue
			}
			if at, ok := x.find(dg, ring); !ok || x.slots[at].pos != uint32(i)+1 {
				t.Fatalf("after forgetting %x: %x found %v at %d", dgs[gone], dg, ok, at)
			}
		}
	}
	if x.n != 2 {
		t.Fatalf("%d slots in use, want 2", x.n)
	}
}

// TestDedupBytesPerEntry: the ring's entry and the index's slots per
// entry stay within dedupBytesPerEntry, the figure the memory_limit check
// sizes dedup.max_entries by, for shards of every size class (just over
// and at a power of two, which bound the index's slots per entry).
func TestDedupBytesPerEntry(t *testing.T) {
	if got := unsafe.Sizeof(ringEntry{}); got != 48 {
		t.Errorf("a ring entry is %d bytes, want 48", got)
	}
	if got := unsafe.Sizeof(indexSlot{}); got != 8 {
		t.Errorf("an index slot is %d bytes, want 8", got)
	}
	for _, per := range []int{1, 2, 3, 4, 5, 9, 17, 1000, 1024, 1025, 15625, 1 << 16, 1<<16 + 1} {
		x := newDedupIndex(per)
		bytes := float64(per)*float64(unsafe.Sizeof(ringEntry{})) + float64(len(x.slots))*float64(unsafe.Sizeof(indexSlot{}))
		if bytes/float64(per) > dedupBytesPerEntry {
			t.Errorf("%d ids a shard: %.1f bytes an id, more than %d", per, bytes/float64(per), dedupBytesPerEntry)
		}
		if len(x.slots) < 2*per || len(x.slots)&(len(x.slots)-1) != 0 {
			t.Errorf("%d ids a shard: %d index slots, want a power of two at least twice as many", per, len(x.slots))
		}
	}
}
