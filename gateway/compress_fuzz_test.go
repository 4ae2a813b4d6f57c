package gateway

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// FuzzDecompressingReader checks the bounded reader against the plain
// decoders (compress/gzip; klauspost's zstd with the same window bounds):
// its output is a prefix of theirs and at most limit+1 bytes, and it
// errors exactly when theirs is longer than limit or they error. A zstd
// frame it refuses that a decoder with a wider window takes must be
// refused for its window.
func FuzzDecompressingReader(f *testing.F) {
	gz := func(parts ...[]byte) []byte {
		var buf bytes.Buffer
		for _, p := range parts {
			w := gzip.NewWriter(&buf)
			_, _ = w.Write(p)
			_ = w.Close()
		}
		return buf.Bytes()
	}
	enc, _ := zstd.NewWriter(nil)
	zs := func(p []byte) []byte { return enc.EncodeAll(p, nil) }
	text := []byte(`{"events":[{"id":"e-1","type":"examples.logs.v1.LogLine","payload":{}}]}`)
	for _, s := range []struct {
		zstd  bool
		limit uint16
		body  []byte
	}{
		{false, 1000, gz(text)},
		{false, 10, gz(text)},
		{false, 1000, gz(text, text)},
		{false, 1000, append(gz(text), "garbage"...)},
		{false, 1000, gz(text)[:20]},
		{false, 60000, gzipBomb(1 << 20)},
		{false, 100, nil},
		{true, 1000, zs(text)},
		{true, 10, zs(text)},
		{true, 1000, zs(text)[:10]},
		{true, 1000, append(zs(text), 0, 1, 2)},
		{true, 60000, zstdBomb(15, 64, false)},
		{true, 60000, zstdBomb(0, 0, true)},
		{true, 60000, zstdBomb(20, 4, false)},
	} {
		f.Add(s.zstd, s.limit, uint8(0), s.body)
		f.Add(s.zstd, s.limit, uint8(3), s.body)
	}
	f.Fuzz(func(t *testing.T, isZstd bool, limit16 uint16, chunk uint8, body []byte) {
		limit := int(limit16)
		d := newBodyDecoders(limit)
		coding := codingGzip
		var plain []byte
		var plainErr error
		if isZstd {
			coding = codingZstd
			plain, plainErr = zstdAll(body, d.zstdOptions...)
		} else if zr, err := gzip.NewReader(bytes.NewReader(body)); err != nil {
			plainErr = err
		} else {
			plain, plainErr = io.ReadAll(zr)
		}

		r := d.reader(coding, bytes.NewReader(body))
		defer r.Close()
		var got []byte
		var err error
		if chunk == 0 {
			got, err = io.ReadAll(r)
		} else { // reads of a few bytes at a time
			buf := make([]byte, int(chunk%8)+1)
			for {
				n, rerr := r.Read(buf)
				got = append(got, buf[:n]...)
				if rerr == io.EOF {
					break
				}
				if rerr != nil {
					err = rerr
					break
				}
			}
		}

		if len(got) > limit+1 {
			t.Fatalf("produced %d bytes, limit %d", len(got), limit)
		}
		if !bytes.HasPrefix(plain, got) {
			t.Fatalf("output is not a prefix of the plain decoder's (%d and %d bytes)", len(got), len(plain))
		}
		wantErr := plainErr != nil || len(plain) > limit
		if (err != nil) != wantErr {
			t.Fatalf("error %v; plain decoder: %d bytes, error %v; limit %d", err, len(plain), plainErr, limit)
		}
		if err == nil && !bytes.Equal(got, plain) {
			t.Fatalf("output of %d bytes, plain decoder's %d", len(got), len(plain))
		}
		if plainErr == nil && len(plain) > limit && !errors.Is(err, errDecompressedTooLarge) {
			t.Fatalf("error %v for %d bytes over the limit of %d", err, len(plain), limit)
		}
		var corrupt *corruptBodyError
		if err != nil && !errors.Is(err, errDecompressedTooLarge) && !errors.As(err, &corrupt) {
			t.Fatalf("untyped error %v", err)
		}
		if isZstd && err != nil && !errors.Is(err, errZstdWindow) {
			wide, wideErr := zstdAll(body, zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderMaxWindow(1<<20), zstd.WithDecoderMaxMemory(1<<20))
			if wideErr == nil && len(wide) <= limit {
				t.Fatalf("error %v for a frame a wider window decodes to %d bytes", err, len(wide))
			}
		}
	})
}

// zstdAll decodes body as a stream, as the gateway does.
func zstdAll(body []byte, opts ...zstd.DOption) ([]byte, error) {
	zr, err := zstd.NewReader(bytes.NewReader(body), opts...)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return io.ReadAll(zr)
}

// splitMessage cuts msg into buffers as gRPC may have read it: at cut,
// and in pieces of at most 16 KiB after.
func splitMessage(msg []byte, cut int) mem.BufferSlice {
	var data mem.BufferSlice
	if cut > 0 && cut < len(msg) {
		data = append(data, mem.SliceBuffer(msg[:cut]))
		msg = msg[cut:]
	}
	for len(msg) > 0 {
		n := min(len(msg), 16<<10)
		data = append(data, mem.SliceBuffer(msg[:n]))
		msg = msg[n:]
	}
	return data
}

// FuzzGRPCDecompress holds the gRPC server codec's decompression to
// REST's, which share the decoders: a message that came compressed, cut
// into buffers as gRPC may read it, is refused for the reason the same
// bytes as a REST body are (BATCH_TOO_LARGE over the limit as they came,
// then DECOMPRESSED_TOO_LARGE or MALFORMED), and, when REST decodes them,
// is what decodeWireBatch makes of REST's decoded bytes.
func FuzzGRPCDecompress(f *testing.F) {
	enc, _ := zstd.NewWriter(nil)
	msg, _ := proto.Marshal(&ingestv1.PublishRequest{Events: []*ingestv1.Event{{Id: "e-1", Type: "examples.logs.v1.LogLine",
		OccurredAt: timestamppb.New(time.Unix(1700000000, 0)), Payload: &ingestv1.Event_Json{Json: `{}`}}}})
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(b)
		_ = w.Close()
		return buf.Bytes()
	}
	for _, s := range []struct {
		zstd bool
		body []byte
	}{
		{false, gz(msg)},
		{false, gz(msg)[:10]},
		{false, append(gz(msg), 0x0a, 0)},
		{false, gzipBomb(1 << 20)},
		{false, msg},
		{false, nil},
		{true, enc.EncodeAll(msg, nil)},
		{true, enc.EncodeAll(msg, nil)[:8]},
		{true, zstdBomb(16, 64, false)},
		{true, zstdBomb(0, 0, true)},
		{true, zstdBomb(24, 4, false)},
		{true, msg},
	} {
		f.Add(s.zstd, uint16(60000), uint16(0), s.body)
		f.Add(s.zstd, uint16(40), uint16(3), s.body)
	}
	f.Fuzz(func(t *testing.T, isZstd bool, limit16, cut uint16, body []byte) {
		limit := int(limit16)
		coding := codingGzip
		if isZstd {
			coding = codingZstd
		}
		var restMsg []byte
		var rest *Failure
		if len(body) > limit { // limitBody's, from the length
			rest = &Failure{Reason: ingestv1.Reason_BATCH_TOO_LARGE}
		} else {
			d := newBodyDecoders(limit)
			restMsg, rest = readBody(d.reader(coding, bytes.NewReader(body)), limit, false, d.failure)
		}

		codec := newServerCodec(LimitsConfig{MaxRequestBytes: limit, MaxEventsPerRequest: 10}).(serverCodec)
		w := wireRequest{coding: coding}
		if err := codec.Unmarshal(splitMessage(append([]byte{coding.mark()}, body...), int(cut)), &w); err != nil {
			t.Fatalf("Unmarshal: %v", err)
		}
		if rest != nil {
			if w.failure == nil || w.failure.Reason != rest.Reason {
				t.Fatalf("gRPC %v, REST %v", w.failure, rest)
			}
			return
		}
		wantBatch, want := decodeWireBatch(restMsg, false, codec.limits)
		switch {
		case (want == nil) != (w.failure == nil) || want != nil && want.Reason != w.failure.Reason:
			t.Fatalf("gRPC %v, REST's bytes %v", w.failure, want)
		case want != nil:
		case w.batch.size != wantBatch.size || len(w.batch.events) != len(wantBatch.events):
			t.Fatalf("gRPC batch of %d bytes and %d events, REST's %d and %d", w.batch.size, len(w.batch.events), wantBatch.size, len(wantBatch.events))
		}
		if want == nil {
			for i := range wantBatch.events {
				if !proto.Equal(w.batch.events[i], wantBatch.events[i]) {
					t.Fatalf("event %d: gRPC %v, REST's bytes %v", i, w.batch.events[i], wantBatch.events[i])
				}
			}
		}
	})
}
