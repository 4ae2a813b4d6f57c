package client

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`)

// TestUUIDv7: the version and variant bits, the time in the first 48
// bits, the order of ids made one after another (in one millisecond, and
// with a clock that steps back), and the gateway's id pattern.
func TestUUIDv7(t *testing.T) {
	now := time.UnixMilli(1_790_000_000_123)
	clock := func() time.Time { return now }
	g := newUUIDv7(clock)
	var prev string
	seen := map[string]bool{}
	for i := range 10_000 { // past the 12-bit counter, in one millisecond
		if i == 6000 {
			now = now.Add(-time.Second) // the clock steps back
		}
		id := g.next()
		if len(id) != 36 || !idPattern.MatchString(id) || strings.ToLower(id) != id {
			t.Fatalf("%q: want 36 lowercase characters matching the gateway's id pattern", id)
		}
		if id[14] != '7' {
			t.Fatalf("%q: version %c, want 7", id, id[14])
		}
		if v := id[19]; v != '8' && v != '9' && v != 'a' && v != 'b' {
			t.Fatalf("%q: variant nibble %c, want 10xx", id, v)
		}
		if id <= prev {
			t.Fatalf("%q after %q: want ascending", id, prev)
		}
		if seen[id] {
			t.Fatalf("%q twice", id)
		}
		seen[id], prev = true, id
		if i == 0 {
			// The first id carries the clock's millisecond in its first
			// 48 bits.
			ms, err := strconv.ParseInt(id[0:8]+id[9:13], 16, 64)
			if err != nil || ms != now.UnixMilli() {
				t.Fatalf("%q carries %d (%v), want %d", id, ms, err, now.UnixMilli())
			}
		}
	}
}

// TestUUIDv7Random: ids of two generators at the same instant differ.
func TestUUIDv7Random(t *testing.T) {
	clock := func() time.Time { return time.UnixMilli(1) }
	if a, b := newUUIDv7(clock).next(), newUUIDv7(clock).next(); a == b {
		t.Errorf("two generators made %q", a)
	}
}
