package gateway

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"

	"github.com/klauspost/compress/zstd"
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
