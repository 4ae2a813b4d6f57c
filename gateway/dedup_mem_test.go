package gateway

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// memoryTestsEnv turns on the tests that weigh the live heap. The heap is
// the process's: what other goroutines hold while it is weighed (a
// previous test's servers winding down, on a loaded machine) counts too,
// so those tests stay out of the default suite.
const memoryTestsEnv = "SLUICE_MEMORY_TESTS"

// TestDedupMemoryPerID fills the window to its bound with ids of a
// typical length (24 bytes): each shard holds its share of the bound, so
// a fuller shard forgets a few ids early, and each is counted. With
// SLUICE_MEMORY_TESTS=1 it also bounds what the window keeps of each id:
// the sizing of dedup.max_entries against gateway.memory_limit
// (dedupBytesPerEntry) rests on it.
//
//	SLUICE_MEMORY_TESTS=1 go test -count=1 -run TestDedupMemoryPerID -v ./gateway
func TestDedupMemoryPerID(t *testing.T) {
	weigh := os.Getenv(memoryTestsEnv) == "1"
	const n = 256_000
	now := time.Now()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "lg0123456789ab-" + strconv.Itoa(1_000_000+i)
	}
	var before, after runtime.MemStats
	if weigh {
		runtime.GC()
		runtime.ReadMemStats(&before)
	}
	evicted := 0
	d := newDedupWindow(DedupConfig{Window: time.Hour, MaxEntries: n}, func() time.Time { return now }, func() { evicted++ })
	for i, id := range ids {
		k := dedupKey{"bench", id}
		if !d.claim(d.digest(k), 0).owner {
			t.Fatalf("%s: not new", id)
		}
		d.settle(d.digest(k), true, kafkaOrigin(0, int32(i%3), int64(i)), 0)
	}
	if weigh {
		runtime.GC()
		runtime.ReadMemStats(&after)
		perID := float64(after.HeapAlloc-before.HeapAlloc) / n
		t.Logf("%.1f bytes per id remembered", perID)
		if perID > dedupBytesPerEntry {
			t.Errorf("the window keeps %.1f bytes per id, more than the %d the config check assumes", perID, dedupBytesPerEntry)
		}
	} else {
		t.Logf("the bytes kept per id are weighed with %s=1", memoryTestsEnv)
	}
	if got := d.len(); got+evicted != n || evicted > n/50 {
		t.Errorf("len %d + evicted %d, want %d with few evicted", got, evicted, n)
	}
	runtime.KeepAlive(ids)
}
