package gateway

import (
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestDedupMemoryPerID bounds what the window keeps of each accepted id,
// ids of a typical length (24 bytes) at the window's bound: the sizing of
// dedup.max_entries against gateway.memory_limit rests on it.
func TestDedupMemoryPerID(t *testing.T) {
	const n = 256_000
	now := time.Now()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "lg0123456789ab-" + strconv.Itoa(1_000_000+i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	evicted := 0
	d := newDedupWindow(DedupConfig{Window: time.Hour, MaxEntries: n}, func() time.Time { return now }, func() { evicted++ })
	for _, id := range ids {
		k := dedupKey{"bench", id}
		if !d.claim(d.digest(k)).owner {
			t.Fatalf("%s: not new", id)
		}
		d.settle(d.digest(k), true)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perID := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%.1f bytes per id remembered", perID)
	if perID > dedupBytesPerEntry {
		t.Errorf("the window keeps %.1f bytes per id, more than the %d the config check assumes", perID, dedupBytesPerEntry)
	}
	// A shard holds its share of the bound, so a fuller shard forgets a
	// few ids early; each is counted.
	if got := d.len(); got+evicted != n || evicted > n/50 {
		t.Errorf("len %d + evicted %d, want %d with few evicted", got, evicted, n)
	}
	runtime.KeepAlive(ids)
}
