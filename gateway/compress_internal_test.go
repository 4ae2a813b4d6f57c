package gateway

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
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

// TestServerCodecMarks: the server codec decompresses a message only when
// it carries the mark of its call's own grpc-encoding, which a compressed
// message gets on its way there; a plain message in a compressed call
// (grpc-go sends an empty one so) is read as it is, and a mark that is
// not the call's is no protobuf, so MALFORMED. Health and reflection
// requests are decompressed the same way.
func TestServerCodecMarks(t *testing.T) {
	msg, err := proto.Marshal(&ingestv1.PublishRequest{Events: []*ingestv1.Event{{Id: "e-1", Type: "examples.logs.v1.LogLine"}}})
	if err != nil {
		t.Fatal(err)
	}
	gz := gzipped(msg)
	mark := func(m byte, b []byte) []byte { return append([]byte{m}, b...) }
	codec := newServerCodec(LimitsConfig{MaxRequestBytes: 1 << 10, MaxEventsPerRequest: 10}).(serverCodec)
	for _, c := range []struct {
		name   string
		call   contentCoding
		msg    []byte
		reason ingestv1.Reason // 0: decodes to msg's one event; -1: to no events
	}{
		{"plain", codingIdentity, msg, 0},
		{"gzip", codingGzip, mark(markGzip, gz), 0},
		{"zstd", codingZstd, mark(markZstd, zstded(msg)), 0},
		{"plain in a gzip call", codingGzip, msg, 0},
		{"empty in a gzip call", codingGzip, nil, -1},
		{"gzip's mark in a plain call", codingIdentity, mark(markGzip, gz), ingestv1.Reason_MALFORMED},
		{"zstd's mark in a gzip call", codingGzip, mark(markZstd, zstded(msg)), ingestv1.Reason_MALFORMED},
		{"gzip with nothing after the mark", codingGzip, []byte{markGzip}, ingestv1.Reason_MALFORMED},
		{"gzip over the limit as it came", codingGzip, mark(markGzip, make([]byte, 1<<10+1)), ingestv1.Reason_BATCH_TOO_LARGE},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := wireRequest{coding: c.call}
			if err := codec.Unmarshal(splitMessage(c.msg, 1), &w); err != nil {
				t.Fatal(err)
			}
			switch {
			case c.reason == -1:
				if w.failure != nil || len(w.batch.events) != 0 {
					t.Fatalf("%v, %v; want no events", w.failure, w.batch)
				}
			case c.reason == 0:
				if w.failure != nil || len(w.batch.events) != 1 || w.batch.events[0].GetId() != "e-1" {
					t.Fatalf("%v, %v; want the event", w.failure, w.batch)
				}
			case w.failure == nil || w.failure.Reason != c.reason:
				t.Fatalf("%v, want %v", w.failure, c.reason)
			}
		})
	}

	req, err := proto.Marshal(&healthpb.HealthCheckRequest{Service: "sluice.ingest.v1.IngestService"})
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{req, mark(markGzip, gzipped(req)), mark(markZstd, zstded(req))} {
		var got healthpb.HealthCheckRequest
		if err := codec.Unmarshal(splitMessage(data, 1), &got); err != nil || got.GetService() != "sluice.ingest.v1.IngestService" {
			t.Fatalf("a health request: %v, %v", &got, err)
		}
	}
	// What a decoder without the bounds takes.
	long, err := proto.Marshal(&healthpb.HealthCheckRequest{Service: strings.Repeat("s", otherMessageBytes)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zstdAll(rawZstdFrame(17, req)); err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{
		mark(markGzip, req),                   // no gzip
		mark(markZstd, rawZstdFrame(17, req)), // a window of 128 KiB
		mark(markGzip, gzipped(long)),         // past the bound decoded
	} {
		var got healthpb.HealthCheckRequest
		if err := codec.Unmarshal(splitMessage(data, 0), &got); err == nil {
			t.Fatalf("a marked health request of %d bytes was decoded", len(data))
		}
	}
}

// rawZstdFrame is b in a zstd frame that declares a window of
// 2^windowLog bytes and no content size, in one raw block.
func rawZstdFrame(windowLog uint, b []byte) []byte {
	f := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, byte(windowLog-10) << 3}
	h := uint32(len(b))<<3 | 1 // raw, last
	f = append(f, byte(h), byte(h>>8), byte(h>>16))
	return append(f, b...)
}

// zstded is b in one zstd frame.
func zstded(b []byte) []byte {
	e := zstdEncoder()
	defer zstdEncoders.Put(e)
	return e.EncodeAll(b, nil)
}

// gzipped is b in one gzip member.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}
