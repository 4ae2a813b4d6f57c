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
	_ "google.golang.org/grpc/encoding/gzip" // registers the "gzip" compressor, for answers and clients
	"google.golang.org/grpc/mem"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/clip"
)

// Compression: request bodies and messages in gzip or zstd, and answers
// compressed when the caller asks.
//
// Both transports decode through a decompressingReader, which produces at
// most limit+1 bytes (Limits.MaxRequestBytes) and then errors, so a
// compression bomb is refused having inflated no more than the limit: REST
// a body, gRPC a message in the server codec. grpc-go would decompress a
// message itself, before the codec, and answer what does not decompress
// with a bare INTERNAL; so the server's decompressors for gzip and zstd
// hand the codec the message as it came, behind a one-byte mark of its
// coding (see the marks below), and the codec decodes it bounded, typing
// what fails as REST does.

// contentCoding is a request body's Content-Encoding, or an answer's.
type contentCoding uint8

const (
	codingIdentity contentCoding = iota
	codingGzip
	codingZstd
)

// The marks: a compressed gRPC message reaches the server codec undecoded,
// after the mark of its coding. No protobuf message starts with either (a
// tag of wire type 7, which does not exist), so the one that a plain
// message could begin with is one the codec would refuse anyway; and the
// codec takes a mark only for the call's own grpc-encoding.
const (
	markGzip byte = 0x07 // field 0, wire type 7
	markZstd byte = 0x0f // field 1, wire type 7
)

// mark is the coding's mark; 0 for identity.
func (c contentCoding) mark() byte {
	switch c {
	case codingGzip:
		return markGzip
	case codingZstd:
		return markZstd
	}
	return 0
}

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
		return 0, refuse(fmt.Sprintf("Content-Encoding %s is not accepted", strconv.Quote(clip.String(name, maxQuotedCoding))))
	}
	return c, nil
}

// maxQuotedCoding bounds, in bytes, a Content-Encoding quoted in a
// refusal: a longer one keeps its first 32 bytes (fewer, to end on a rune)
// and clip's marker.
const maxQuotedCoding = 32 + len(clip.Marker)

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

// bodyDecoders decodes REST bodies, or gRPC messages, of at most limit
// decoded bytes, with pooled decoders.
type bodyDecoders struct {
	limit int64
	// window is the largest zstd window a frame may ask for.
	window int64
	// what a refusal calls what did not decode: "body" or "message".
	what string
	gzip sync.Pool // *gzip.Reader
	zstd sync.Pool // *zstd.Decoder
	// zstdOptions bound what a frame header may make the decoder allocate.
	zstdOptions []zstd.DOption
}

// zstdWindowCap is the largest zstd window a REST body may ask for: RFC
// 9659's bound for the zstd content coding, which encoders must not pass.
const zstdWindowCap = 8 << 20

// newBodyDecoders decodes REST bodies; newMessageDecoders gRPC messages,
// with zstd windows of at most window.
func newBodyDecoders(limit int) *bodyDecoders {
	return newDecoders(limit, zstdWindowFor(limit), "body")
}
func newMessageDecoders(limit int, window int64) *bodyDecoders {
	return newDecoders(limit, window, "message")
}

func newDecoders(limit int, window int64, what string) *bodyDecoders {
	d := &bodyDecoders{limit: int64(limit), window: window, what: what}
	// The decoder allocates its window when a frame starts, from the
	// frame's header (a single-segment frame's window is its content
	// size). Both are held to window, so a header cannot make the
	// decoder allocate more: for a REST body or a Publish message
	// zstdWindowFor's, zstdWindowCap (which every conforming encoder
	// stays within) or the limit when that is larger; servePublish and
	// the gRPC handlers charge a zstd body or message that window besides
	// its decoded bytes, which the reader stops at the limit.
	d.zstdOptions = []zstd.DOption{
		zstd.WithDecoderConcurrency(1), // decodes in the caller's goroutine, so a pooled decoder owns none
		zstd.WithDecoderMaxMemory(uint64(d.zstdWindow())),
		zstd.WithDecoderMaxWindow(uint64(d.zstdWindow())),
		zstd.WithDecoderLowmem(true),
	}
	return d
}

// zstdWindow is the largest window a body's zstd frame may ask for.
func (d *bodyDecoders) zstdWindow() int64 { return d.window }

// zstdWindowFor is the largest zstd window of a REST body or Publish
// message of at most limit decoded bytes.
func zstdWindowFor(limit int) int64 { return max(zstdWindowCap, int64(limit)+1) }

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
	if err == nil {
		return nil
	}
	var corrupt *corruptBodyError
	switch {
	case errors.Is(err, errZstdWindow):
		return &Failure{Reason: ingestv1.Reason_DECOMPRESSED_TOO_LARGE, Message: fmt.Sprintf(
			"the zstd frame asks for a window over %d bytes (RFC 9659 holds the zstd content coding to 8 MiB): encode with a smaller window", d.zstdWindow())}
	case errors.Is(err, errDecompressedTooLarge):
		return &Failure{Reason: ingestv1.Reason_DECOMPRESSED_TOO_LARGE,
			Message: fmt.Sprintf("the %s decompresses to more than the limit of %d bytes", d.what, d.limit)}
	case errors.As(err, &corrupt):
		return &Failure{Reason: ingestv1.Reason_MALFORMED,
			Message: fmt.Sprintf("the %s %s does not decode (after %d bytes): %v", corrupt.Coding, d.what, corrupt.Offset, corrupt.Err)}
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

// gRPC's compressors.
//
// The server decompresses a message in its codec, not in grpc-go: a
// decompressor given to grpc-go can only fail with an error that grpc-go
// answers as a bare INTERNAL itself, and cannot know the server's limits.
// grpc-go takes a server's decompressor for one encoding only
// (grpc.RPCDecompressor, gzipMarker); the other, zstd, is the one
// registered for the process by name, which grpc-go has none of.
// Compressors are registered per process, for clients too, so "gzip"
// stays grpc-go's own: a gRPC client in the process (an exporter that
// sends gzip, say) reads gzip answers as ever. The "zstd" registered here
// compresses for real (the server's zstd answers) but decompresses only
// into the marked form, which only the gateway's server codec reads: a
// client in the same process cannot read zstd answers with it (sluice
// runs none; a test gives its client a decompressor of its own).

func init() {
	encoding.RegisterCompressor(zstdCompressor{})
}

// gzipMarker is the gRPC server's decompressor of gzip messages: it hands
// the codec the message as it came, after markGzip. It copies what grpc-go
// has already read, whose length the server's MaxRecvMsgSize bounds.
type gzipMarker struct{}

func (gzipMarker) Type() string { return "gzip" }

func (gzipMarker) Do(r io.Reader) ([]byte, error) {
	if m, ok := r.(interface{ Remaining() int }); ok { // grpc-go's *mem.Reader: one copy, sized
		out := make([]byte, 1+m.Remaining())
		out[0] = markGzip
		if _, err := io.ReadFull(r, out[1:]); err != nil {
			return nil, err
		}
		return out, nil
	}
	rest, err := io.ReadAll(r)
	return append([]byte{markGzip}, rest...), err
}

// markedReader is r after mark.
type markedReader struct {
	mark   byte
	marked bool
	r      io.Reader
}

func (m *markedReader) Read(p []byte) (int, error) {
	if m.marked || len(p) == 0 {
		return m.r.Read(p)
	}
	p[0], m.marked = m.mark, true
	n, err := m.r.Read(p[1:])
	return n + 1, err
}

// zstdCompressor is the "zstd" encoding.Compressor. Encoders are pooled,
// each used by one message at a time, in the caller's goroutine
// (concurrency 1), so a pooled one owns no goroutine. It decompresses
// into the marked form (markZstd and the message as it came), which the
// server codec decodes.
type zstdCompressor struct{}

var zstdEncoders sync.Pool // *zstd.Encoder

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
	return &markedReader{mark: markZstd, r: r}, nil
}

// callCoding is the coding a gRPC call's messages may come in, from its
// grpc-encoding: gzip or zstd (the names as grpc-go matches them,
// exactly), identity otherwise. grpc-go gives the handler its transport
// stream, which knows the encoding; without it the call counts as plain.
func callCoding(ctx context.Context) contentCoding {
	s, ok := grpc.ServerTransportStreamFromContext(ctx).(interface{ RecvCompress() string })
	if !ok {
		return codingIdentity
	}
	switch s.RecvCompress() {
	case "gzip":
		return codingGzip
	case "zstd":
		return codingZstd
	}
	return codingIdentity
}

// markedCoding is the coding of a received message by its first byte:
// gzip or zstd when it is that coding's mark, identity otherwise.
func markedCoding(data mem.BufferSlice) contentCoding {
	for _, b := range data {
		d := b.ReadOnlyData()
		if len(d) == 0 {
			continue
		}
		switch d[0] {
		case markGzip:
			return codingGzip
		case markZstd:
			return codingZstd
		}
		return codingIdentity
	}
	return codingIdentity
}

// markedMessage reads a marked message's bytes, past its mark, from the
// buffers gRPC read it into (which gRPC frees once the codec returns).
type markedMessage struct{ parts [][]byte }

func newMarkedMessage(data mem.BufferSlice) *markedMessage {
	m := &markedMessage{parts: make([][]byte, 0, len(data))}
	for _, b := range data {
		if d := b.ReadOnlyData(); len(d) > 0 {
			m.parts = append(m.parts, d)
		}
	}
	m.parts[0] = m.parts[0][1:] // markedCoding found the mark there
	return m
}

// Len is the bytes left.
func (m *markedMessage) Len() int {
	n := 0
	for _, p := range m.parts {
		n += len(p)
	}
	return n
}

func (m *markedMessage) Read(p []byte) (int, error) {
	for len(m.parts) > 0 && len(m.parts[0]) == 0 {
		m.parts = m.parts[1:]
	}
	if len(m.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, m.parts[0])
	m.parts[0] = m.parts[0][n:]
	return n, nil
}
