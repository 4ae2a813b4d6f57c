package buffer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// mountTiny mounts a 1 MiB tmpfs for the test, or skips it.
func mountTiny(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs (needs CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// A spool on a full filesystem: appends fail with reason "enospc", nothing
// corrupt is left, every acknowledged append survives a reopen, and
// acknowledging frees space for appends again.
//
// With 64 KiB segments the disk fills while a segment is being started or
// written; with one segment for all, always part way through a write.
func TestENOSPC(t *testing.T) {
	for _, segmentBytes := range []int64{64 << 10, 1 << 30} {
		t.Run(fmt.Sprintf("segment=%dKiB", segmentBytes>>10), func(t *testing.T) {
			testENOSPC(t, segmentBytes)
		})
	}
}

func testENOSPC(t *testing.T, segmentBytes int64) {
	mnt := mountTiny(t)
	dir := filepath.Join(mnt, "spool")
	cfg := testConfig(dir) // MinFreeBytes 0: the real ENOSPC path
	cfg.SegmentBytes = segmentBytes
	reg := prometheus.NewRegistry()
	s, err := Open(cfg, WithRegisterer(reg), WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}

	var ok [][]byte
	var fe *FullError
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatal("1 MiB filesystem never filled")
		}
		rec := payload(i, 3000+i%1000) // appends of uneven sizes: partial writes
		_, err := s.Append(context.Background(), rec)
		if err == nil {
			ok = append(ok, rec)
			continue
		}
		if !errors.As(err, &fe) || fe.Reason != ReasonENOSPC {
			t.Fatalf("append %d on a full filesystem = %v, want FullError enospc", i, err)
		}
		break
	}
	// Still full: smaller appends may fit the last page, then fail too.
	for i := range 20 {
		rec := payload(10000+i, 500)
		if _, err := s.Append(context.Background(), rec); err == nil {
			ok = append(ok, rec)
		} else if !errors.As(err, &fe) || fe.Reason != ReasonENOSPC {
			t.Fatalf("append on a full filesystem = %v", err)
		}
	}
	if got := metricValue(t, reg, "sluice_spool_appends_total", "result", "full"); got == 0 {
		t.Fatal("no full appends counted")
	}
	t.Logf("%d appends fit", len(ok))
	if err := s.Close(); err != nil {
		t.Fatalf("Close on a full filesystem: %v", err)
	}

	rep, err := Inspect(dir)
	if err != nil || len(rep.Corruption) != 0 || len(rep.StrayTempFiles) != 0 || rep.PendingRecords != int64(len(ok)) {
		t.Fatalf("after ENOSPC, Inspect = %v:\n%s", err, rep)
	}

	s, err = Open(cfg, WithLogger(testLogger(t)))
	if err != nil {
		t.Fatalf("reopen on a full filesystem: %v", err)
	}
	defer s.Close()
	got := readPending(t, s)
	if len(got) != len(ok) {
		t.Fatalf("%d records after reopen, %d appends returned nil", len(got), len(ok))
	}
	for i := range got {
		if string(got[i].Data) != string(ok[i]) {
			t.Fatalf("record %d differs after reopen", i)
		}
	}
	// Acknowledging deletes segments before the cursor is written, so it
	// works on a full disk, and frees space.
	if err := s.Ack(got[len(got)-1].Pos); err != nil {
		t.Fatalf("Ack on a full filesystem: %v", err)
	}
	for i := range 50 {
		appendOne(t, s, payload(20000+i, 3000))
	}
	if st := s.Stats(); st.Records != 50 {
		t.Fatalf("stats = %+v", st)
	}
}
