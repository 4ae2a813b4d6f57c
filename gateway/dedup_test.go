package gateway

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/buffer"
)

func TestDedupWindow(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	evicted := 0
	d := newDedupWindow(DedupConfig{Window: time.Minute, MaxEntries: dedupShards * 2}, clock, func() { evicted++ })
	k := dedupKey{"src", "id-1"}

	if c := d.claim(d.digest(k), 0); !c.owner {
		t.Fatalf("first claim: %+v", c)
	}
	wait := d.claim(d.digest(k), 0)
	if wait.wait == nil {
		t.Fatalf("claim while in flight: %+v", wait)
	}
	d.settle(d.digest(k), false, origin{}, 0) // the publish failed: forgotten
	select {
	case <-wait.wait:
	default:
		t.Fatal("waiters not woken by settle")
	}
	if c := d.claim(d.digest(k), 0); !c.owner {
		t.Fatalf("claim after a failed publish: %+v", c)
	}
	at := kafkaOrigin(2, 7, 1<<40)
	d.settle(d.digest(k), true, at, 5)
	if c := d.claim(d.digest(k), 5); !c.duplicate || c.origin != at {
		t.Fatalf("claim after accept: %+v, want a duplicate of %+v", c, at)
	}
	// Another payload under the id: a conflict naming the accepted one,
	// which the window still remembers.
	if c := d.claim(d.digest(k), 6); !c.conflict || c.accepted != 5 || c.duplicate || c.owner {
		t.Fatalf("claim of another payload: %+v, want a conflict with 5", c)
	}
	if c := d.claim(d.digest(k), 5); !c.duplicate {
		t.Fatalf("claim after a conflict: %+v, want a duplicate", c)
	}
	if c := d.claim(d.digest(dedupKey{"other", "id-1"}), 0); !c.owner {
		t.Fatalf("another source's id: %+v", c)
	}
	now = now.Add(time.Minute)
	if c := d.claim(d.digest(k), 0); !c.owner {
		t.Fatalf("claim after the window: %+v", c)
	}
	if evicted != 0 {
		t.Fatalf("%d evictions under the bound", evicted)
	}
}

// TestDedupBound: however many ids are accepted, the window remembers at
// most MaxEntries, forgetting the oldest first and counting each.
func TestDedupBound(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	evicted := 0
	const maxEntries = dedupShards * 4
	d := newDedupWindow(DedupConfig{Window: time.Hour, MaxEntries: maxEntries}, func() time.Time { return now }, func() { evicted++ })
	const n = maxEntries * 10
	for i := range n {
		k := dedupKey{"s", fmt.Sprint(i)}
		if c := d.claim(d.digest(k), 0); !c.owner {
			t.Fatalf("id %d: %+v", i, c)
		}
		d.settle(d.digest(k), true, spoolOrigin(buffer.Position{Segment: 1, Offset: int64(i)}), 0)
		now = now.Add(time.Millisecond)
	}
	if got := d.len(); got > maxEntries {
		t.Fatalf("%d ids remembered, bound %d", got, maxEntries)
	}
	if evicted != n-d.len() {
		t.Fatalf("%d evictions counted, %d ids forgotten", evicted, n-d.len())
	}
	// The newest id of each shard is still a duplicate, of where it went.
	if c := d.claim(d.digest(dedupKey{"s", fmt.Sprint(n - 1)}), 0); !c.duplicate || c.origin != spoolOrigin(buffer.Position{Segment: 1, Offset: n - 1}) {
		t.Fatalf("newest id: %+v", c)
	}
}

// TestDedupExpiryFreesMemory: ids past the window are dropped as the
// window moves, not only when the bound is hit.
func TestDedupExpiryFreesMemory(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := newDedupWindow(DedupConfig{Window: time.Second, MaxEntries: dedupShards * 100}, func() time.Time { return now }, nil)
	for i := range 1000 {
		k := dedupKey{"s", fmt.Sprint(i)}
		d.claim(d.digest(k), 0)
		d.settle(d.digest(k), true, origin{}, 0)
	}
	now = now.Add(2 * time.Second)
	for i := range 1000 {
		d.claim(d.digest(dedupKey{"t", fmt.Sprint(i)}), 0) // touches every shard
	}
	if got := d.len(); got != 1000 {
		t.Fatalf("%d entries, want only the 1000 pending ones", got)
	}
}
