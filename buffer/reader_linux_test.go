package buffer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openSegments lists the segment files of dir the process holds open, a
// deleted one named with its "(deleted)" mark.
func openSegments(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	var out []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+"/") && strings.Contains(target, ".seg") {
			out = append(out, filepath.Base(target))
		}
	}
	return out
}

// TestNextKeepsItsSegmentOpen: Next reads on from the file it opened (no
// open and close per call); the file is closed when Next waits, and when
// Ack deletes its segment, whose space is then freed at once.
func TestNextKeepsItsSegmentOpen(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.SegmentBytes = 4 << 10
	s := openSpool(t, cfg)
	for i := range 40 {
		appendOne(t, s, payload(i, 256))
	}
	ctx := context.Background()
	first, err := s.Next(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	seg := first[0].Pos.Segment
	if open := openSegments(t, dir); len(open) != 2 || !strings.Contains(strings.Join(open, " "), segmentName(seg)) {
		// The writer's segment and the reader's.
		t.Fatalf("after Next, open segment files %v, want the writer's and %s", open, segmentName(seg))
	}
	// Read the rest of the first segment, and no further.
	var last Entry
	for {
		s.mu.Lock()
		_, pos, _ := s.locate(s.readPos)
		s.mu.Unlock()
		if pos.Segment != seg {
			break
		}
		e, err := s.Next(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		last = e[0]
	}
	if err := s.Ack(last.Pos); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, segmentName(seg))); !os.IsNotExist(err) {
		t.Fatalf("segment %s acknowledged whole but not deleted: %v", segmentName(seg), err)
	}
	for _, f := range openSegments(t, dir) {
		if strings.Contains(f, segmentName(seg)) || strings.Contains(f, "deleted") {
			t.Fatalf("segment %s deleted by Ack but still open: %v", segmentName(seg), openSegments(t, dir))
		}
	}
	// Drain the rest; a Next that waits holds no segment open.
	for !s.Empty() {
		e, err := s.Next(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Ack(e[len(e)-1].Pos); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Next(wctx, 1); err == nil {
		t.Fatal("Next on an empty spool with a canceled context returned records")
	}
	if open := openSegments(t, dir); len(open) != 1 {
		t.Fatalf("after a Next that waited, open segment files %v, want the writer's alone", open)
	}
}
