package gateway

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkDedup prices the dedup window per event on the gateway's path:
// claim (and, for a new id, settle as accepted).
//   - new: every id is new, the window full at its bound (1M ids), so each
//     commit also forgets the oldest id; it includes making the id string.
//   - duplicate: every id was accepted before: one lookup.
//   - parallel_new: new ids from every CPU at once, across the shards.
func BenchmarkDedup(b *testing.B) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	cfg := DedupConfig{Window: 10 * time.Minute, MaxEntries: 1_000_000}
	const warm = 1_000_000
	ids := make([]string, warm)
	for i := range ids {
		ids[i] = "lg0123456789ab-" + strconv.Itoa(i)
	}
	full := func() *dedupWindow {
		d := newDedupWindow(cfg, clock, func() {})
		for i, id := range ids {
			k := dedupKey{"bench", id}
			d.claim(d.digest(k), 0)
			d.settle(d.digest(k), true, kafkaOrigin(0, int32(i%3), int64(i)), 0)
		}
		return d
	}

	b.Run("new", func(b *testing.B) {
		d := full()
		fresh := make([]string, 1<<16)
		for i := range fresh {
			// The dash ends the first number, so no two (i, round) pairs
			// make one id ("new-1" and round 10 would be "new-11" and 0).
			fresh[i] = "lg0123456789ab-new-" + strconv.Itoa(i) + "-"
		}
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			k := dedupKey{"bench", fresh[i&(1<<16-1)] + strconv.Itoa(i>>16)}
			if c := d.claim(d.digest(k), 0); !c.owner {
				b.Fatalf("new id %v: %+v", k, c)
			}
			d.settle(d.digest(k), true, kafkaOrigin(0, int32(i%3), int64(i)), 0)
		}
	})
	b.Run("duplicate", func(b *testing.B) {
		d := full()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			if c := d.claim(d.digest(dedupKey{"bench", ids[(warm-1)-i%(warm/2)]}), 0); !c.duplicate {
				b.Fatalf("accepted id not a duplicate: %+v", c)
			}
		}
	})
	b.Run("parallel_new", func(b *testing.B) {
		d := newDedupWindow(cfg, clock, func() {})
		var next atomic.Int64
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				k := dedupKey{"bench", "p-" + strconv.FormatInt(next.Add(1), 10)}
				if c := d.claim(d.digest(k), 0); !c.owner {
					b.Errorf("new id %v: %+v", k, c)
					return
				}
				d.settle(d.digest(k), true, kafkaOrigin(0, 0, 1), 0)
			}
		})
	})
}

// BenchmarkDedupAgainstMap prices the window against the map it replaced
// (refDedupWindow), in one binary, on digests taken once up front, with
// a window of 256Ki ids: its new and duplicate cases as BenchmarkDedup's,
// the window full, so each new id also forgets the oldest. Read the ratio
// of index to map in one run (or their instructions under cachegrind:
// the machine's noise is the same for both).
func BenchmarkDedupAgainstMap(b *testing.B) {
	type window interface {
		claim(digest, payloadPrint) claim
		settle(digest, bool, origin, payloadPrint)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	const size = 256 << 10
	cfg := DedupConfig{Window: 10 * time.Minute, MaxEntries: size}
	digester := newDedupWindow(cfg, clock, nil)
	warm := make([]digest, size)
	for i := range warm {
		warm[i] = digester.digest(dedupKey{"bench", "lg0123456789ab-" + strconv.Itoa(i)})
	}
	fresh := make([]digest, 1<<18)
	for i := range fresh {
		fresh[i] = digester.digest(dedupKey{"bench", "lg0123456789ab-new-" + strconv.Itoa(i)})
	}
	for _, impl := range []string{"map", "index"} {
		full := func() window {
			var w window = newDedupWindow(cfg, clock, func() {})
			if impl == "map" {
				w = newRefDedupWindow(cfg, clock, func() {})
			}
			for i, dg := range warm {
				w.claim(dg, 0)
				w.settle(dg, true, kafkaOrigin(0, int32(i%3), int64(i)), 0)
			}
			return w
		}
		b.Run(impl+"/new", func(b *testing.B) {
			w := full()
			for i := 0; b.Loop(); i++ {
				dg := fresh[i&(1<<18-1)]
				if i>>18 > 0 {
					dg[2] += uint32(i >> 18) // another id, in the same shard and home
				}
				if c := w.claim(dg, 0); !c.owner {
					b.Fatalf("new id %x: %+v", dg, c)
				}
				w.settle(dg, true, kafkaOrigin(0, int32(i%3), int64(i)), 0)
			}
		})
		b.Run(impl+"/duplicate", func(b *testing.B) {
			w := full()
			for i := 0; b.Loop(); i++ {
				if c := w.claim(warm[(size-1)-i%(size/2)], 0); !c.duplicate {
					b.Fatalf("accepted id not a duplicate: %+v", c)
				}
			}
		})
	}
}
