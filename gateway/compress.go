package gateway

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/gzip" // registers the "gzip" compressor

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// Compression: request bodies and messages in gzip or zstd, and answers
// compressed when the caller asks.
//
// REST decodes a body through a decompressingReader, which produces at most
// limit+1 bytes (Limits.MaxRequestBytes) and then errors, so a compression
// bomb is refused having inflated no more than the limit. gRPC decodes a
// message with the registered compressors ("gzip" from grpc-go, "zstd"
// below); grpc-go reads at most MaxRecvMsgSize+1 bytes of their output.

// contentCoding is a request body's Content-Encoding, or an answer's.
type contentCoding uint8

const (
	codingIdentity contentCoding = iota
	codingGzip
	codingZstd
)

func (c contentCoding) String() string {
	switch c {
	case codingGzip:
		return "gzip"
	case codingZstd:
		return "zstd"
	}
	return "identity"
}

// acceptedEncodings is the Accept-Encoding sent with a refused
// Content-Encoding (RFC 9110, section 12.5.3).
const acceptedEncodings = "gzip, zstd"

// codingNamed is the coding of one name, case-insensitive; x-gzip is gzip
// (RFC 9110, section 8.4.1.3).
func codingNamed(name string) (contentCoding, bool) {
	switch strings.ToLower(name) {
	case "identity":
		return codingIdentity, true
	case "gzip", "x-gzip":
		return codingGzip, true
	case "zstd":
		return codingZstd, true
	}
	return 0, false
}

// requestCoding is the coding of a request body from its Content-Encoding
// header lines. None, or identity, is identity. A list of more than one
// coding is refused as an unknown one is: no client needs to stack them,
// and each would be one more decoder between the wire and the limit.
func requestCoding(h http.Header) (contentCoding, *Failure) {
	var name string
	n := 0
	for _, line := range h.Values("Content-Encoding") {
		for part := range strings.SplitSeq(line, ",") {
			if part = strings.TrimSpace(part); part != "" {
				name = part
				n++
			}
		}
	}
	if n == 0 {
		return codingIdentity, nil
	}
	refuse := func(why string) *Failure {
		return &Failure{Reason: ingestv1.Reason_MALFORMED,
			Message: why + ": the accepted Content-Encodings are gzip, zstd and identity, one of them"}
	}
	if n > 1 {
		return 0, refuse(fmt.Sprintf("Content-Encoding lists %d codings", n))
	}
	c, ok := codingNamed(name)
	if !ok {
		return 0, refuse(fmt.Sprintf("Content-Encoding %s is not accepted", strconv.Quote(clipName(name))))
	}
	return c, nil
}

// clipName keeps a quoted header value in a refusal short.
func clipName(s string) string {
	const n = 32
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// errDecompressedTooLarge is a compressed body that decodes to more than
// its limit; errZstdWindow one whose zstd frame asks for a window (or, in
// a single segment, a content size) larger than a body of the limit needs.
var (
	errDecompressedTooLarge = errors.New("gateway: decompressed body over the limit")
	errZstdWindow           = fmt.Errorf("%w: zstd window over the limit", errDecompressedTooLarge)
)

// corruptBodyError is a compressed body that does not decode: a bad
// header, a bad checksum, a stream cut short, or bytes after its end.
type corruptBodyError struct {
	Coding contentCoding
	// Offset is how many decoded bytes came before the error.
	Offset int64
	Err    error
}

func (e *corruptBodyError) Error() string {
	return fmt.Sprintf("gateway: %s body does not decode after %d bytes: %v", e.Coding, e.Offset, e.Err)
}

func (e *corruptBodyError) Unwrap() error { return e.Err }

// wireReader is the compressed bytes as the transport gives them. It keeps
// the transport's own error (errBodyTooLarge, a read timeout), which a
// decoder may replace with one of its own, and is cut from the transport
// when the body is done, so a pooled decoder does not keep it.
type wireReader struct {
	r   io.Reader
	err error
}

func (w *wireReader) Read(p []byte) (int, error) {
	if w.r == nil {
		return 0, io.ErrClosedPipe
	}
	n, err := w.r.Read(p)
	if err != nil && err != io.EOF && w.err == nil {
		w.err = err
	}
	return n, err
}

// bodyDecoders decodes REST bodies of at most limit decoded bytes, with
// pooled decoders.
type bodyDecoders struct {
	limit int64
	gzip  sync.Pool // *gzip.Reader
	zstd  sync.Pool // *zstd.Decoder
	// zstdOptions bound what a frame header may make the decoder allocate.
	zstdOptions []zstd.DOption
}

// zstdWindowCap is the largest zstd window a REST body may ask for: RFC
// 9659's bound for the zstd content coding, which encoders must not pass.
const zstdWindowCap = 8 << 20

func newBodyDecoders(limit int) *bodyDecoders {
	d := &bodyDecoders{limit: int64(limit)}
	// The decoder allocates its window when a frame starts, from the
	// frame's header (a single-segment frame's window is its content
	// size). Both are held to zstdWindowCap, which every conforming
	// encoder stays within, or to the limit when that is larger, so a
	// header cannot make the decoder allocate more; servePublish charges
	// a zstd body that window besides its decoded bytes, which the reader
	// stops at the limit.
	d.zstdOptions = []zstd.DOption{
		zstd.WithDecoderConcurrency(1), // decodes in the caller's goroutine, so a pooled decoder owns none
		zstd.WithDecoderMaxMemory(uint64(d.zstdWindow())),
		zstd.WithDecoderMaxWindow(uint64(d.zstdWindow())),
		zstd.WithDecoderLowmem(true),
	}
	return d
}

// zstdWindow is the largest window a body's zstd frame may ask for.
func (d *bodyDecoders) zstdWindow() int64 { return max(zstdWindowCap, d.limit+1) }

// reader decodes body in coding; identity is body as it is. Close hands
// its decoder back.
func (d *bodyDecoders) reader(coding contentCoding, body io.Reader) io.ReadCloser {
	if coding == codingIdentity {
		return io.NopCloser(body)
	}
	return &decompressingReader{decoders: d, coding: coding, wire: &wireReader{r: body}, limit: d.limit}
}

// decompressingReader produces the decoded bytes of a compressed body: at
// most limit+1 of them, then errDecompressedTooLarge. A body that does not
// decode is a *corruptBodyError; the transport's own errors come through
// as they are. Every error is final.
type decompressingReader struct {
	decoders *bodyDecoders
	coding   contentCoding
	wire     *wireReader
	limit    int64
	n        int64 // decoded bytes produced
	gz       *gzip.Reader
	zd       *zstd.Decoder
	err      error
}

func (d *decompressingReader) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	if d.gz == nil && d.zd == nil {
		if err := d.open(); err != nil {
			return 0, d.fail(err)
		}
	}
	if rest := d.limit + 1 - d.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	var n int
	var err error
	if d.gz != nil {
		n, err = d.gz.Read(p)
	} else {
		n, err = d.zd.Read(p)
	}
	d.n += int64(n)
	switch {
	case d.n > d.limit:
		return n, d.fail(errDecompressedTooLarge)
	case err == io.EOF:
		d.err = io.EOF
		d.Close()
		return n, io.EOF
	case err != nil:
		return n, d.fail(err)
	}
	return n, nil
}

// open starts the decoder; gzip reads the member's header here.
func (d *decompressingReader) open() error {
	switch d.coding {
	case codingGzip:
		gz, _ := d.decoders.gzip.Get().(*gzip.Reader)
		if gz == nil {
			gz = new(gzip.Reader)
		}
		if err := gz.Reset(d.wire); err != nil {
			d.decoders.gzip.Put(gz)
			return err
		}
		d.gz = gz
	case codingZstd:
		zd, _ := d.decoders.zstd.Get().(*zstd.Decoder)
		if zd == nil {
			var err error
			if zd, err = zstd.NewReader(nil, d.decoders.zstdOptions...); err != nil {
				return err
			}
		}
		if err := zd.Reset(d.wire); err != nil {
			d.decoders.zstd.Put(zd)
			return err
		}
		d.zd = zd
	}
	return nil
}

// fail makes err final, in the form readBody branches on, and frees the
// decoder.
func (d *decompressingReader) fail(err error) error {
	switch {
	case d.wire.err != nil:
		err = d.wire.err
	case errors.Is(err, errDecompressedTooLarge):
	case errors.Is(err, zstd.ErrWindowSizeExceeded), errors.Is(err, zstd.ErrDecoderSizeExceeded):
		err = errZstdWindow
	default:
		if err == io.EOF { // gzip: no header at all
			err = io.ErrUnexpectedEOF
		}
		err = &corruptBodyError{Coding: d.coding, Offset: d.n, Err: err}
	}
	d.err = err
	d.Close()
	return err
}

// Close hands the decoder back to its pool and cuts it from the body.
func (d *decompressingReader) Close() error {
	d.wire.r = nil
	if d.gz != nil {
		d.decoders.gzip.Put(d.gz)
		d.gz = nil
	}
	if d.zd != nil {
		_ = d.zd.Reset(nil)
		d.decoders.zstd.Put(d.zd)
		d.zd = nil
	}
	if d.err == nil {
		d.err = io.ErrClosedPipe
	}
	return nil
}

// failure is the refusal of a body whose reading failed with err in its
// decoder; nil when err is not the decoder's.
func (d *bodyDecoders) failure(err error) *Failure {
	var corrupt *corruptBodyError
	switch {
	case errors.Is(err, errZstdWindow):
		return &Failure{Reason: ingestv1.Reason_DECOMPRESSED_TOO_LARGE, Message: fmt.Sprintf(
			"the zstd frame asks for a window over %d bytes (RFC 9659 holds the zstd content coding to 8 MiB): encode with a smaller window", d.zstdWindow())}
	case errors.Is(err, errDecompressedTooLarge):
		return &Failure{Reason: ingestv1.Reason_DECOMPRESSED_TOO_LARGE,
			Message: fmt.Sprintf("the body decompresses to more than the limit of %d bytes", d.limit)}
	case errors.As(err, &corrupt):
		return &Failure{Reason: ingestv1.Reason_MALFORMED,
			Message: fmt.Sprintf("the %s body does not decode (after %d bytes): %v", corrupt.Coding, corrupt.Offset, corrupt.Err)}
	}
	return nil
}

// Answers.

// minCompressBytes is the smallest answer that is sent compressed: below
// it, the coding's header and checksum would save little or nothing.
const minCompressBytes = 1 << 10

// answerCoding is the coding of an answer to a request with these
// Accept-Encoding header lines (RFC 9110, section 12.5.3): the acceptable
// coding of the highest weight, gzip before zstd before identity on a tie;
// "*" stands for any coding the list does not name. Identity is the answer
// when nothing is acceptable, even where identity is refused (q=0): the
// RFC allows it, and a typed answer is of more use than a 406.
func answerCoding(lines []string) contentCoding {
	if len(lines) == 0 {
		return codingIdentity
	}
	var q [3]float64 // by contentCoding; -1: not named
	q[codingIdentity], q[codingGzip], q[codingZstd] = -1, -1, -1
	star := -1.0
	for _, line := range lines {
		for part := range strings.SplitSeq(line, ",") {
			name, params, _ := strings.Cut(part, ";")
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			weight, ok := qValue(params)
			if !ok {
				continue
			}
			if name == "*" {
				star = weight
			} else if c, known := codingNamed(name); known {
				q[c] = weight
			}
		}
	}
	for c := range q {
		if q[c] < 0 {
			switch {
			case star >= 0:
				q[c] = star
			case contentCoding(c) == codingIdentity:
				q[c] = 0.001 // acceptable unless refused (RFC 9110, section 12.5.3)
			default:
				q[c] = 0
			}
		}
	}
	best, found := codingIdentity, false
	for _, c := range []contentCoding{codingGzip, codingZstd, codingIdentity} { // the order of ties
		if q[c] > 0 && (!found || q[c] > q[best]) {
			best, found = c, true
		}
	}
	return best
}

// qValue is the weight in a coding's parameters: 1 without one; false
// when it does not parse.
func qValue(params string) (float64, bool) {
	for p := range strings.SplitSeq(params, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < 0 || f > 1 {
			return 0, false
		}
		return f, true
	}
	return 1, true
}

// answerWriter is a REST answer's writer that knows the coding the caller
// accepts; writeBody uses it.
type answerWriter struct {
	http.ResponseWriter
	coding contentCoding
}

// encodeAnswers lets answers to r be compressed when r asks for it. Vary
// goes with every answer to a request that sent Accept-Encoding; others
// are answered as before.
func encodeAnswers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lines := r.Header.Values("Accept-Encoding")
		if len(lines) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Add("Vary", "Accept-Encoding")
		next.ServeHTTP(&answerWriter{ResponseWriter: w, coding: answerCoding(lines)}, r)
	})
}

// writeBody writes an answer's status and body, compressed when the
// caller accepts a coding and the body is worth it.
func writeBody(w http.ResponseWriter, code int, body []byte) {
	aw, ok := w.(*answerWriter)
	if !ok || aw.coding == codingIdentity || len(body) < minCompressBytes {
		w.WriteHeader(code)
		_, _ = w.Write(body)
		return
	}
	aw.Header().Set("Content-Encoding", aw.coding.String())
	aw.Header().Del("Content-Length")
	aw.WriteHeader(code)
	switch aw.coding {
	case codingGzip:
		gz, _ := gzipWriters.Get().(*gzip.Writer)
		if gz == nil {
			gz, _ = gzip.NewWriterLevel(aw.ResponseWriter, gzip.BestSpeed)
		} else {
			gz.Reset(aw.ResponseWriter)
		}
		_, _ = gz.Write(body)
		_ = gz.Close()
		gz.Reset(io.Discard)
		gzipWriters.Put(gz)
	case codingZstd:
		e := zstdEncoder()
		_, _ = aw.ResponseWriter.Write(e.EncodeAll(body, nil))
		zstdEncoders.Put(e)
	}
}

var gzipWriters sync.Pool // *gzip.Writer, BestSpeed

// gRPC's zstd compressor.

func init() {
	encoding.RegisterCompressor(zstdCompressor{})
}

// grpcZstdWindow bounds the window, and a single-segment frame's content,
// of a zstd gRPC message: RFC 8878's recommended bound, which covers every
// message of the default limits. grpc-go's compressors are registered per
// process, not per server, so this cannot follow one server's limits; a
// frame past it is refused (gRPC answers INTERNAL) before its window is
// allocated.
const grpcZstdWindow = 8 << 20

// zstdCompressor is the "zstd" encoding.Compressor. Encoders and decoders
// are pooled, each used by one message at a time, in the caller's
// goroutine (concurrency 1), so a pooled one owns no goroutine.
type zstdCompressor struct{}

var (
	zstdEncoders sync.Pool // *zstd.Encoder
	zstdDecoders sync.Pool // *zstd.Decoder
)

func (zstdCompressor) Name() string { return "zstd" }

// zstdEncoder takes a pooled encoder. Its window is 1 MiB: gRPC messages
// and answers are small, and a small window keeps a pooled encoder small.
func zstdEncoder() *zstd.Encoder {
	if e, ok := zstdEncoders.Get().(*zstd.Encoder); ok {
		return e
	}
	e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20), zstd.WithLowerEncoderMem(true))
	if err != nil {
		panic(err) // the options are constants
	}
	return e
}

func (zstdCompressor) Compress(w io.Writer) (io.WriteCloser, error) {
	e := zstdEncoder()
	e.Reset(w)
	return &pooledEncoder{e: e}, nil
}

// pooledEncoder goes back to the pool when it is closed.
type pooledEncoder struct{ e *zstd.Encoder }

func (p *pooledEncoder) Write(b []byte) (int, error) {
	if p.e == nil {
		return 0, io.ErrClosedPipe
	}
	return p.e.Write(b)
}

func (p *pooledEncoder) Close() error {
	if p.e == nil {
		return nil
	}
	err := p.e.Close()
	p.e.Reset(nil)
	zstdEncoders.Put(p.e)
	p.e = nil
	return err
}

func (zstdCompressor) Decompress(r io.Reader) (io.Reader, error) {
	d, _ := zstdDecoders.Get().(*zstd.Decoder)
	if d == nil {
		var err error
		d, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(grpcZstdWindow), zstd.WithDecoderMaxWindow(grpcZstdWindow), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, err
		}
	}
	if err := d.Reset(r); err != nil {
		zstdDecoders.Put(d)
		return nil, err
	}
	return &pooledDecoder{d: d}, nil
}

// pooledDecoder goes back to the pool at its end, or when grpc-go closes
// it (it closes a decompressor's reader that is an io.Closer).
type pooledDecoder struct{ d *zstd.Decoder }

func (p *pooledDecoder) Read(b []byte) (int, error) {
	if p.d == nil {
		return 0, io.EOF
	}
	n, err := p.d.Read(b)
	if err == io.EOF {
		p.Close()
	}
	return n, err
}

func (p *pooledDecoder) Close() error {
	if p.d != nil {
		_ = p.d.Reset(nil)
		zstdDecoders.Put(p.d)
		p.d = nil
	}
	return nil
}

// callCompressed reports whether a gRPC call's messages come compressed
// (grpc-encoding other than identity), so a message over the limit is told
// DECOMPRESSED_TOO_LARGE. grpc-go gives the handler its transport stream,
// which knows the encoding; without it the call counts as plain.
func callCompressed(ctx context.Context) bool {
	s, ok := grpc.ServerTransportStreamFromContext(ctx).(interface{ RecvCompress() string })
	if !ok {
		return false
	}
	c := s.RecvCompress()
	return c != "" && c != encoding.Identity
}
