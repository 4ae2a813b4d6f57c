package buffer

import (
	"errors"
	"testing"
)

// TestHealth: a spool is healthy until it is at its cap or its disk floor,
// healthy again once acknowledged records free room, and ErrClosed once
// closed.
func TestHealth(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(dir)
	cfg.MaxBytes = 4 * 512
	s := openSpool(t, cfg)
	if err := s.Health(); err != nil {
		t.Fatalf("empty spool: %v", err)
	}
	// Four full segments: 4*(24+4*120) = 2016 bytes, no room to start a
	// fifth.
	for i := range 16 {
		appendOne(t, s, payload(i, 100))
	}
	var fe *FullError
	if err := s.Health(); !errors.As(err, &fe) || !errors.Is(err, ErrFull) || fe.Reason != ReasonCap {
		t.Fatalf("at the cap: %v, want FullError cap", err)
	}
	got := readPending(t, s)
	if err := s.Ack(got[len(got)-1].Pos); err != nil {
		t.Fatal(err)
	}
	if err := s.Health(); err != nil {
		t.Fatalf("after the records were acknowledged: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Health(); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: %v, want ErrClosed", err)
	}

	floor := smallConfig(t.TempDir())
	floor.MinFreeBytes = 1 << 62
	if err := openSpool(t, floor).Health(); !errors.As(err, &fe) || fe.Reason != ReasonDiskFloor {
		t.Fatalf("below the disk floor: %v, want FullError disk_floor", err)
	}
}
