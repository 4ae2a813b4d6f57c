package buffer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// verifyingFrames counts the offsets of seg where a frame verifies,
// checked independently of the package's decoder: 8-byte aligned offsets
// after the header, length and complement, a frame that fits, and the
// CRC-32C. Nothing a reader returns can be more than this.
func verifyingFrames(seg []byte) map[int64][]byte {
	table := crc32.MakeTable(crc32.Castagnoli)
	found := make(map[int64][]byte)
	for off := 24; off+20 <= len(seg); off += 8 {
		n := binary.LittleEndian.Uint32(seg[off:])
		if binary.LittleEndian.Uint32(seg[off+4:]) != ^n || uint64(off)+20+uint64(n) > uint64(len(seg)) {
			continue
		}
		end := off + 20 + int(n)
		if (end+7)&^7 > len(seg) {
			continue
		}
		crc := crc32.Update(crc32.Checksum(seg[off:off+16], table), table, seg[off+20:end])
		if crc == binary.LittleEndian.Uint32(seg[off+16:]) {
			found[int64(off)] = seg[off+20 : end]
		}
	}
	return found
}

func validSegment(records ...string) []byte {
	seg := encodeSegmentHeader(1)
	for i, r := range records {
		seg = appendFrame(seg, []byte(r), int64(i))
	}
	return seg
}

// FuzzReader takes arbitrary bytes as the only segment of a spool: Inspect
// and Open never panic or hang, and never return a record that is not a
// frame that verifies. Each input goes through a real directory, so the
// fuzzer is bound by fsync: TMPDIR=/dev/shm runs it about 30 times faster.
func FuzzReader(f *testing.F) {
	valid := validSegment("alpha", "", "a somewhat longer record", "z")
	f.Add(valid)
	f.Add(valid[:len(valid)-3])
	f.Add(valid[:segmentHeaderSize])
	f.Add(valid[:10])
	f.Add([]byte{})
	flipped := bytes.Clone(valid)
	flipped[segmentHeaderSize+1] ^= 4
	f.Add(flipped)
	f.Add(append(bytes.Clone(valid), make([]byte, 512)...))
	f.Add(append(validSegment("x"), valid[segmentHeaderSize:]...))

	f.Fuzz(func(t *testing.T, seg []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, segmentName(1)), seg, 0o640); err != nil {
			t.Fatal(err)
		}
		frames := verifyingFrames(seg)

		rep, err := Inspect(dir)
		if err != nil {
			if errors.Is(err, errVersion) {
				return // a header that verifies with another version
			}
			t.Fatalf("Inspect: %v", err)
		}
		if rep.PendingRecords > int64(len(frames)) {
			t.Fatalf("Inspect: %d records, %d frames verify", rep.PendingRecords, len(frames))
		}

		cfg := testConfig(dir)
		cfg.Fsync = FsyncNever
		s, err := Open(cfg, WithLogger(discardLogger))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer s.Close()
		want := int(s.Stats().Records)
		if want > len(frames) || int64(want) != rep.PendingRecords {
			t.Fatalf("Open: %d records, Inspect %d, %d frames verify", want, rep.PendingRecords, len(frames))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var got []Entry
		for len(got) < want {
			es, err := s.Next(ctx, 3)
			if err != nil {
				t.Fatalf("Next after %d of %d: %v", len(got), want, err)
			}
			got = append(got, es...)
		}
		for _, e := range got {
			data, ok := frames[e.Pos.Offset]
			if e.Pos.Segment != 1 || !ok || !bytes.Equal(data, e.Data) {
				t.Fatalf("Next returned %q at %v, not a frame that verifies", e.Data, e.Pos)
			}
		}
	})
}

// FuzzCursor: decoding never panics, and what decodes round-trips.
func FuzzCursor(f *testing.F) {
	f.Add(encodeCursor(Position{1, 24}))
	f.Add(encodeCursor(Position{1 << 60, 1 << 40}))
	f.Add([]byte("SLCU"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeCursor(b)
		if err != nil {
			return
		}
		if q, err := decodeCursor(encodeCursor(p)); err != nil || q != p {
			t.Fatalf("cursor %v decodes back as %v, %v", p, q, err)
		}
	})
}
