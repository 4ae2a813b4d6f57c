package gateway

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// gzipBomb is about a kilobyte of gzip that inflates to n zero bytes.
func gzipBomb(n int) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zeros := make([]byte, 64<<10)
	for n > 0 {
		k := min(n, len(zeros))
		_, _ = w.Write(zeros[:k])
		n -= k
	}
	_ = w.Close()
	return buf.Bytes()
}

// zstdBomb is a zstd frame whose header claims 4 GiB of content, with a
// window of 2^windowLog bytes, and then blocks RLE blocks of that many
// bytes (at most 128 KiB each), four bytes a block: a kilobyte of them
// decodes to megabytes. With singleSegment the window is the claimed
// content size, and there are no blocks.
func zstdBomb(windowLog uint, blocks int, singleSegment bool) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd}
	if singleSegment {
		b = append(b, 0xe0) // 8-byte content size, single segment
	} else {
		b = append(b, 0xc0, byte(windowLog-10)<<3) // 8-byte content size; window descriptor
	}
	b = binary.LittleEndian.AppendUint64(b, 1<<32)
	size := min(1<<windowLog, 128<<10)
	for i := range blocks {
		h := uint32(size)<<3 | 1<<1 // RLE
		if i == blocks-1 {
			h |= 1 // last block
		}
		b = append(b, byte(h), byte(h>>8), byte(h>>16), 'x')
	}
	return b
}

// countingWriter counts what is written to it and keeps nothing.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// TestDecompressingReaderStopsAtTheLimit: a compression bomb is refused
// having produced at most limit+1 decoded bytes, whatever its size once
// inflated; a zstd frame that asks for a window past the limit is refused
// before it produces any.
func TestDecompressingReaderStopsAtTheLimit(t *testing.T) {
	const limit = 64 << 10
	for _, c := range []struct {
		name   string
		coding contentCoding
		body   []byte
		want   error
		most   int64 // decoded bytes at most
	}{
		{"gzip of 1 MiB", codingGzip, gzipBomb(1 << 20), errDecompressedTooLarge, limit + 1},
		{"zstd claiming 4 GiB, RLE blocks", codingZstd, zstdBomb(16, 256, false), errDecompressedTooLarge, limit + 1},
		{"zstd single segment of 4 GiB", codingZstd, zstdBomb(0, 0, true), errZstdWindow, 0},
		{"zstd window of 16 MiB", codingZstd, zstdBomb(24, 64, false), errZstdWindow, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if len(c.body) > 1100 {
				t.Fatalf("the bomb is %d bytes, want about a kilobyte", len(c.body))
			}
			d := newBodyDecoders(limit)
			r := d.reader(c.coding, bytes.NewReader(c.body))
			var out countingWriter
			_, err := io.Copy(&out, r)
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if out.n > c.most {
				t.Errorf("produced %d decoded bytes, want at most %d", out.n, c.most)
			}
			if f := d.failure(err); f == nil || f.Reason.String() != "DECOMPRESSED_TOO_LARGE" {
				t.Errorf("refusal %v, want DECOMPRESSED_TOO_LARGE", f)
			}
		})
	}
}

// TestAnswerCoding: the coding of an answer from Accept-Encoding.
func TestAnswerCoding(t *testing.T) {
	for _, c := range []struct {
		accept []string
		want   contentCoding
	}{
		{nil, codingIdentity},
		{[]string{""}, codingIdentity},
		{[]string{"gzip"}, codingGzip},
		{[]string{"GZip"}, codingGzip},
		{[]string{"x-gzip"}, codingGzip},
		{[]string{"zstd"}, codingZstd},
		{[]string{"gzip, zstd"}, codingGzip},
		{[]string{"zstd, gzip"}, codingGzip},
		{[]string{"gzip;q=0.5, zstd"}, codingZstd},
		{[]string{"gzip;q=0, zstd;q=0"}, codingIdentity},
		{[]string{"gzip;q=0"}, codingIdentity},
		{[]string{"identity"}, codingIdentity},
		{[]string{"identity, gzip;q=0.5"}, codingIdentity},
		{[]string{"*"}, codingGzip},
		{[]string{"*;q=0"}, codingIdentity},
		{[]string{"*, gzip;q=0"}, codingZstd},
		{[]string{"br, deflate"}, codingIdentity},
		{[]string{"gzip;q=nope"}, codingIdentity},
		{[]string{"gzip;q=2"}, codingIdentity},
		{[]string{"br", "zstd;q=0.1"}, codingZstd},
		{[]string{"gzip ; Q=0.9 , zstd;q=0.8"}, codingGzip},
	} {
		if got := answerCoding(c.accept); got != c.want {
			t.Errorf("Accept-Encoding %q: %s, want %s", c.accept, got, c.want)
		}
	}
}
