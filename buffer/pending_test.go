package buffer

import (
	"slices"
	"testing"
)

// TestPending: Pending sees every record not acknowledged, across
// segments and a reopen, at the positions Next gives them, and leaves
// Next where it was.
func TestPending(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.SegmentBytes = 4 << 10
	s := openSpool(t, cfg)
	for i := range 50 {
		appendOne(t, s, payload(i, 300))
	}
	es, err := s.Next(waitCtx(t), 10)
	if err != nil || len(es) != 10 {
		t.Fatalf("Next: %d entries, %v", len(es), err)
	}
	if err := s.Ack(es[9].Pos); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openSpool(t, cfg)
	var seen []Entry
	if err := s.Pending(func(e Entry) error { seen = append(seen, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if s.Stats().Segments < 3 {
		t.Fatalf("the records take %d segments; the test wants several", s.Stats().Segments)
	}
	rest := readPending(t, s)
	if len(seen) != 40 || !slices.Equal(contents(seen), contents(rest)) {
		t.Fatalf("Pending saw %d records %q..., Next gives %d", len(seen), contents(seen)[:min(2, len(seen))], len(rest))
	}
	for i := range seen {
		if seen[i].Pos != rest[i].Pos {
			t.Fatalf("record %d: Pending at %v, Next at %v", i, seen[i].Pos, rest[i].Pos)
		}
	}
	if string(seen[0].Data) != string(payload(10, 300)) {
		t.Fatalf("Pending starts at %q, want the first record not acknowledged", seen[0].Data[:12])
	}
}
