package buffer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// fixture is a spool of two segments, built once per test: records 0-9
// (1000 bytes each) in the first, 10-19 (32-41 bytes) in the second, the
// last of them padded; records 0-2 acknowledged.
type fixture struct {
	dir     string
	records [][]byte
	pos     []Position
	acked   int
}

func (fx fixture) segPath(dir string, i int) string {
	return filepath.Join(dir, segmentName(fx.pos[i].Segment))
}

func (fx fixture) size(t *testing.T, i int) int64 {
	fi, err := os.Stat(fx.segPath(fx.dir, i))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func buildFixture(t *testing.T) fixture {
	t.Helper()
	fx := fixture{dir: t.TempDir(), acked: 3}
	for i := range 20 {
		n := 1000
		if i >= 10 {
			n = 22 + i
		}
		fx.records = append(fx.records, payload(i, n))
	}
	cfg := testConfig(fx.dir)
	cfg.Fsync = FsyncNever
	ctx := waitCtx(t)

	s := openSpool(t, cfg)
	for _, r := range fx.records[:10] {
		appendOne(t, s, r)
	}
	es, err := s.Next(ctx, fx.acked)
	if err != nil || len(es) != fx.acked {
		t.Fatalf("Next = %d, %v", len(es), err)
	}
	if err := s.Ack(es[fx.acked-1].Pos); err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		fx.pos = append(fx.pos, e.Pos)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openSpool(t, cfg) // starts the second segment
	for _, r := range fx.records[10:] {
		appendOne(t, s, r)
	}
	for _, e := range readPending(t, s) {
		fx.pos = append(fx.pos, e.Pos)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(fx.pos) != 20 || fx.pos[9].Segment == fx.pos[10].Segment {
		t.Fatalf("fixture layout: %v", fx.pos)
	}
	if frameSize(len(fx.records[19])) == frameHeaderSize+int64(len(fx.records[19])) {
		t.Fatal("fixture: the last record must have padding")
	}
	return fx
}

// corruption is one way a spool directory gets damaged and what recovery
// must make of it.
type corruption struct {
	name    string
	corrupt func(t *testing.T, dir string)
	// survive are the records Next must return after Open, in order.
	survive []int
	// quarantinedRecords and quarantinedBytes are what recovery must count
	// as moved to quarantine/; truncatedBytes what it must count as a torn
	// tail.
	quarantinedRecords, quarantinedBytes, truncatedBytes int64
	// damaged: Inspect must report damage.
	damaged bool
}

func span(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func modifyFile(t *testing.T, path string, fn func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, fn(b), 0o640); err != nil {
		t.Fatal(err)
	}
}

func corruptions(t *testing.T, fx fixture) []corruption {
	last := 19
	lastEnd := fx.pos[last].Offset + frameSize(len(fx.records[last]))
	size1, size2 := fx.size(t, 0), fx.size(t, 10)
	if lastEnd != size2 {
		t.Fatalf("fixture: record 19 ends at %d, segment is %d bytes", lastEnd, size2)
	}

	var cs []corruption

	// Truncate at every byte offset of the last record, its padding
	// included: a torn tail, cut back to record 18.
	for cut := fx.pos[last].Offset; cut < lastEnd; cut++ {
		cs = append(cs, corruption{
			name: fmt.Sprintf("truncate_last_record_at_%d", cut),
			corrupt: func(t *testing.T, dir string) {
				if err := os.Truncate(fx.segPath(dir, last), cut); err != nil {
					t.Fatal(err)
				}
			},
			survive:        span(fx.acked, last),
			truncatedBytes: cut - fx.pos[last].Offset,
			damaged:        cut > fx.pos[last].Offset,
		})
	}

	// A zeroed 512-byte sector inside record k's payload, in the first
	// segment: records k-9 are quarantined, the rest of the spool is kept.
	k, sector := -1, int64(0)
	for i := 4; i < 9 && k < 0; i++ {
		start := fx.pos[i].Offset + frameHeaderSize
		sector = (start + 511) / 512 * 512
		if sector+512 <= start+int64(len(fx.records[i])) {
			k = i
		}
	}
	if k < 0 {
		t.Fatal("fixture: no sector lies inside a record")
	}
	cs = append(cs, corruption{
		name: "zero_sector_in_middle_of_segment",
		corrupt: func(t *testing.T, dir string) {
			modifyFile(t, fx.segPath(dir, k), func(b []byte) []byte {
				clear(b[sector : sector+512])
				return b
			})
		},
		survive:            append(span(fx.acked, k), span(10, 20)...),
		quarantinedRecords: int64(10 - k),
		quarantinedBytes:   size1 - fx.pos[k].Offset,
		damaged:            true,
	})

	// A flipped bit in the payload of record 15, in the middle of the last
	// segment: valid records follow, so it is not a torn tail.
	cs = append(cs, corruption{
		name: "flip_bit_in_middle_record_payload",
		corrupt: func(t *testing.T, dir string) {
			modifyFile(t, fx.segPath(dir, 15), func(b []byte) []byte {
				b[fx.pos[15].Offset+frameHeaderSize+3] ^= 0x10
				return b
			})
		},
		survive:            span(fx.acked, 15),
		quarantinedRecords: 5,
		quarantinedBytes:   size2 - fx.pos[15].Offset,
		damaged:            true,
	})

	// A flipped bit in the length of record 5: its boundary is lost, so
	// recovery resynchronizes on record 6.
	cs = append(cs, corruption{
		name: "flip_bit_in_middle_record_length",
		corrupt: func(t *testing.T, dir string) {
			modifyFile(t, fx.segPath(dir, 5), func(b []byte) []byte {
				b[fx.pos[5].Offset+1] ^= 0x04
				return b
			})
		},
		survive:            append(span(fx.acked, 5), span(10, 20)...),
		quarantinedRecords: 5,
		quarantinedBytes:   size1 - fx.pos[5].Offset,
		damaged:            true,
	})

	// No cursor: nothing is acknowledged, every record is replayed.
	cs = append(cs, corruption{
		name: "delete_cursor",
		corrupt: func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, cursorName)); err != nil {
				t.Fatal(err)
			}
		},
		survive: span(0, 20),
	})

	// A corrupt cursor is treated as missing.
	cs = append(cs, corruption{
		name: "corrupt_cursor",
		corrupt: func(t *testing.T, dir string) {
			modifyFile(t, filepath.Join(dir, cursorName), func(b []byte) []byte {
				b[9] ^= 0x01
				return b
			})
		},
		survive: span(0, 20),
	})

	// A stray temp file of the cursor, as a crash during a cursor write
	// leaves it; it names a later position and must not be used.
	cs = append(cs, corruption{
		name: "stray_cursor_temp_file",
		corrupt: func(t *testing.T, dir string) {
			tmp := filepath.Join(dir, cursorName+tempExt)
			if err := os.WriteFile(tmp, encodeCursor(fx.pos[last]), 0o640); err != nil {
				t.Fatal(err)
			}
		},
		survive: span(fx.acked, 20),
	})

	// A garbage header on the last segment: the whole segment is
	// quarantined, and its ten frames, which all verify, are counted.
	cs = append(cs, corruption{
		name: "garbage_segment_header",
		corrupt: func(t *testing.T, dir string) {
			modifyFile(t, fx.segPath(dir, 10), func(b []byte) []byte {
				copy(b, strings.Repeat("garbage!", 3))
				return b
			})
		},
		survive:            span(fx.acked, 10),
		quarantinedRecords: 10,
		quarantinedBytes:   size2,
		damaged:            true,
	})

	// Zeros after the last record, as a filesystem leaves an extended but
	// unwritten tail after a crash.
	cs = append(cs, corruption{
		name: "zero_tail",
		corrupt: func(t *testing.T, dir string) {
			modifyFile(t, fx.segPath(dir, last), func(b []byte) []byte {
				return append(b, make([]byte, 4096)...)
			})
		},
		survive:        span(fx.acked, 20),
		truncatedBytes: 4096,
		damaged:        true,
	})
	return cs
}

func TestRecovery(t *testing.T) {
	fx := buildFixture(t)
	for _, c := range corruptions(t, fx) {
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t, fx.dir)
			c.corrupt(t, dir)

			rep, err := Inspect(dir)
			if err != nil {
				t.Fatalf("Inspect: %v", err)
			}
			if got := len(rep.Corruption) > 0; got != c.damaged {
				t.Fatalf("Inspect found damage = %v, want %v:\n%s", got, c.damaged, rep)
			}

			reg := prometheus.NewRegistry()
			s := openSpool(t, testConfig(dir), WithRegisterer(reg))

			var want []string
			for _, i := range c.survive {
				want = append(want, string(fx.records[i]))
			}
			got := readPending(t, s)
			if !slices.Equal(contents(got), want) {
				t.Fatalf("records after recovery:\n got %s\nwant %s", short(contents(got)), short(want))
			}
			for i, e := range got {
				if e.Pos != fx.pos[c.survive[i]] {
					t.Errorf("record %d at %v, was at %v", c.survive[i], e.Pos, fx.pos[c.survive[i]])
				}
			}

			for name, want := range map[string]int64{
				"sluice_spool_quarantined_records_total": c.quarantinedRecords,
				"sluice_spool_quarantined_bytes_total":   c.quarantinedBytes,
				"sluice_spool_truncated_bytes_total":     c.truncatedBytes,
			} {
				if got := metricValue(t, reg, name); got != float64(want) {
					t.Errorf("%s = %v, want %d", name, got, want)
				}
			}
			st := s.Stats()
			if st.QuarantinedRecords != c.quarantinedRecords || st.QuarantinedBytes != c.quarantinedBytes {
				t.Errorf("Stats quarantined = %d records, %d bytes; want %d, %d",
					st.QuarantinedRecords, st.QuarantinedBytes, c.quarantinedRecords, c.quarantinedBytes)
			}
			quarantined, _ := os.ReadDir(filepath.Join(dir, quarantineDir))
			if got, want := len(quarantined), btoi(c.quarantinedBytes > 0); got != want {
				t.Errorf("%d files in quarantine/, want %d", got, want)
			}
			if tmps, _ := filepath.Glob(filepath.Join(dir, "*"+tempExt)); len(tmps) > 0 {
				t.Errorf("temp files left after Open: %v", tmps)
			}

			// The spool keeps working: append, read, acknowledge.
			after := []byte("appended after recovery")
			appendOne(t, s, after)
			es, err := s.Next(waitCtx(t), 10)
			if err != nil || len(es) != 1 || string(es[0].Data) != string(after) {
				t.Fatalf("Next after recovery = %q, %v", contents(es), err)
			}
			if err := s.Ack(es[0].Pos); err != nil {
				t.Fatalf("Ack: %v", err)
			}
			if !s.Empty() {
				t.Fatalf("not empty after acknowledging everything: %+v", s.Stats())
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			// Recovery left a clean spool.
			rep, err = Inspect(dir)
			if err != nil || len(rep.Corruption) != 0 || rep.PendingRecords != 0 || len(rep.StrayTempFiles) != 0 {
				t.Fatalf("after recovery and ack, Inspect = %v:\n%s", err, rep)
			}
			s = openSpool(t, testConfig(dir))
			if !s.Empty() {
				t.Fatalf("reopened spool not empty: %+v", s.Stats())
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// short abbreviates record contents for failure messages.
func short(rs []string) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r[:min(len(r), 11)]
	}
	return fmt.Sprint(out)
}

// A cursor in a segment that a crash left deleted (Ack deletes before it
// writes the cursor) must not make new records look acknowledged.
func TestRecoveryCursorPastDeletedSegments(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	s := openSpool(t, cfg)
	appendOne(t, s, []byte("a"))
	es := readPending(t, s)
	if err := s.Ack(es[0].Pos); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The cursor says segment 7; no segment is left.
	if err := writeFileAtomic(filepath.Join(dir, cursorName), encodeCursor(Position{7, 4096})); err != nil {
		t.Fatal(err)
	}
	s = openSpool(t, cfg)
	appendOne(t, s, []byte("b"))
	got := readPending(t, s)
	if len(got) != 1 || string(got[0].Data) != "b" || got[0].Pos.Segment <= 7 {
		t.Fatalf("after reopen = %v", got)
	}
}

// A segment of a newer format version is not damage: Open refuses to
// quarantine it.
func TestRecoveryRefusesNewerVersion(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, testConfig(dir))
	appendOne(t, s, []byte("a"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, segmentName(1))
	modifyFile(t, path, func(b []byte) []byte {
		hdr := encodeSegmentHeader(1)
		hdr[4] = 9
		copy(b, hdr)
		// Re-checksum so that the header verifies.
		binary.LittleEndian.PutUint32(b[16:20], crc32.Checksum(b[:16], crc32.MakeTable(crc32.Castagnoli)))
		return b
	})
	_, err := Open(testConfig(dir))
	var ce *CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, errVersion) {
		t.Fatalf("Open = %v, want a version error", err)
	}
	if _, err := Inspect(dir); !errors.Is(err, errVersion) {
		t.Fatalf("Inspect = %v, want a version error", err)
	}
}

func TestOpenLocksDirectory(t *testing.T) {
	dir := t.TempDir()
	openSpool(t, testConfig(dir))
	if _, err := Open(testConfig(dir)); !errors.Is(err, errLocked) {
		t.Fatalf("second Open = %v, want errLocked", err)
	}
}

func TestInspectReport(t *testing.T) {
	fx := buildFixture(t)
	dir := copyDir(t, fx.dir)
	modifyFile(t, fx.segPath(dir, 5), func(b []byte) []byte {
		b[fx.pos[5].Offset+frameHeaderSize] ^= 1
		return b
	})
	if err := os.WriteFile(filepath.Join(dir, cursorName+tempExt), []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	rep, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cursor == nil || *rep.Cursor != fx.pos[fx.acked-1] {
		t.Errorf("cursor = %v, want %v", rep.Cursor, fx.pos[fx.acked-1])
	}
	// Records 3 and 4 before the damage, 10-19 in the second segment.
	var wantBytes int64
	for _, i := range append(span(3, 5), span(10, 20)...) {
		wantBytes += frameSize(len(fx.records[i]))
	}
	if rep.PendingRecords != 12 || rep.PendingBytes != wantBytes {
		t.Errorf("pending = %d records, %d bytes; want 12, %d", rep.PendingRecords, rep.PendingBytes, wantBytes)
	}
	if len(rep.Segments) != 2 || rep.Segments[0].Records != 5 || rep.Segments[0].Repair != "quarantine" ||
		rep.Segments[0].LostRecords != 5 || rep.Segments[1].Records != 10 || rep.Segments[1].Damage != nil {
		t.Errorf("segments = %+v", rep.Segments)
	}
	if len(rep.Corruption) != 1 || rep.Corruption[0].Offset != fx.pos[5].Offset || !errors.Is(&rep.Corruption[0], errChecksum) {
		t.Errorf("corruption = %v", rep.Corruption)
	}
	if !slices.Equal(rep.StrayTempFiles, []string{cursorName + tempExt}) {
		t.Errorf("stray = %v", rep.StrayTempFiles)
	}
	text := rep.String()
	t.Log("\n" + text)
	for _, want := range []string{segmentName(fx.pos[0].Segment), "quarantine", "cursor:", "pending:      12 records", "cursor.tmp"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	// Inspect changed nothing.
	if _, err := os.Stat(filepath.Join(dir, cursorName+tempExt)); err != nil {
		t.Errorf("Inspect removed the temp file: %v", err)
	}
	if again, _ := Inspect(dir); again.String() != text {
		t.Errorf("second Inspect differs")
	}
}

// TestQuarantineDurableBeforeTruncate checks, for every corruption that
// quarantines a segment, that the damaged records are durable somewhere at
// each step: a copy is synced, renamed and its directory synced before the
// original is truncated; a moved segment's new directory entry is synced.
// A crash between any two steps then leaves the operator's copy whole.
func TestQuarantineDurableBeforeTruncate(t *testing.T) {
	fx := buildFixture(t)
	for _, c := range corruptions(t, fx) {
		if c.quarantinedBytes == 0 {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t, fx.dir)
			c.corrupt(t, dir)
			qdir := filepath.Join(dir, quarantineDir)
			var steps []string
			s := openSpool(t, testConfig(dir), withDurableSteps(func(op, path string) {
				steps = append(steps, op+" "+path)
			}))
			_ = s.Close()
			at := func(step string) int {
				t.Helper()
				i := slices.Index(steps, step)
				if i < 0 {
					t.Fatalf("no step %q; steps:\n%s", step, strings.Join(steps, "\n"))
				}
				return i
			}
			before := func(a, b string) {
				t.Helper()
				if at(a) >= at(b) {
					t.Errorf("%q came after %q; steps:\n%s", a, b, strings.Join(steps, "\n"))
				}
			}
			copies, _ := os.ReadDir(qdir)
			if len(copies) != 1 {
				t.Fatalf("%d files in quarantine/, want 1", len(copies))
			}
			name := copies[0].Name()
			dst := filepath.Join(qdir, name)
			src := filepath.Join(dir, name)
			if slices.Contains(steps, "truncate "+src) {
				// Copied: every step of the copy comes before the cut.
				before("sync "+dst+tempExt, "rename "+dst)
				before("rename "+dst, "syncdir "+qdir)
				before("syncdir "+qdir, "truncate "+src)
				return
			}
			// Moved: the new entry is synced, then the old directory.
			before("rename "+dst, "syncdir "+qdir)
			if !slices.Contains(steps[at("syncdir "+qdir):], "syncdir "+dir) {
				t.Errorf("the spool directory was not synced after the move; steps:\n%s", strings.Join(steps, "\n"))
			}
		})
	}
}
