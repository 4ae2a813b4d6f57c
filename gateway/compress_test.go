package gateway_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	grpcgzip "google.golang.org/grpc/encoding/gzip"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// answerEncodings records the grpc-encoding of the answers a client gets.
type answerEncodings struct {
	mu    sync.Mutex
	names []string
}

func (a *answerEncodings) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return ctx
}
func (a *answerEncodings) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (a *answerEncodings) HandleConn(context.Context, stats.ConnStats) {}
func (a *answerEncodings) HandleRPC(_ context.Context, s stats.RPCStats) {
	if h, ok := s.(*stats.InHeader); ok && h.Client {
		a.mu.Lock()
		a.names = append(a.names, h.Compression)
		a.mu.Unlock()
	}
}

func (a *answerEncodings) last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.names) == 0 {
		return ""
	}
	return a.names[len(a.names)-1]
}

// zstdAnswers decodes zstd answers for a client in the gateway's process,
// where the registered "zstd" decompresses only into the form the
// gateway's server codec reads (compress.go). It is grpc-go's older,
// per-connection decompressor API, which a client prefers for its
// encoding.
type zstdAnswers struct{}

func (zstdAnswers) Type() string { return "zstd" }
func (zstdAnswers) Do(r io.Reader) ([]byte, error) {
	d, err := zstd.NewReader(r)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return io.ReadAll(d)
}

// compressingClient is a gRPC client of h that records its answers'
// encodings.
func compressingClient(t *testing.T, h *harness) (ingestv1.IngestServiceClient, *answerEncodings) {
	t.Helper()
	rec := &answerEncodings{}
	conn, err := grpc.NewClient(h.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithStatsHandler(rec),
		grpc.WithDecompressor(zstdAnswers{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return ingestv1.NewIngestServiceClient(conn), rec
}

// TestCompressedGRPCPublish: gzip and zstd clients publish end to end, and
// the answer comes back in the request's compressor.
func TestCompressedGRPCPublish(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	client, rec := compressingClient(t, h)
	var ids []string
	for _, name := range []string{grpcgzip.Name, "zstd"} {
		t.Run(name, func(t *testing.T) {
			id := "grpc-" + name
			ids = append(ids, id)
			ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 15*time.Second)
			defer cancel()
			e := ev{ID: id, Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
			resp, err := client.Publish(ctx, &ingestv1.PublishRequest{Events: []*ingestv1.Event{e.proto()}}, grpc.UseCompressor(name))
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.GetResults()[0].GetOutcome(); got != ingestv1.Outcome_ACCEPTED {
				t.Fatalf("outcome %v: %v", got, resp)
			}
			if got := rec.last(); got != name {
				t.Errorf("answer's grpc-encoding %q, want %q", got, name)
			}

			// A PublishStream in the same coding: two batches, two answers.
			st, err := client.PublishStream(ctx, grpc.UseCompressor(name))
			if err != nil {
				t.Fatal(err)
			}
			for b := range uint64(2) {
				e.ID = fmt.Sprintf("grpc-stream-%s-%d", name, b)
				ids = append(ids, e.ID)
				if err := st.Send(&ingestv1.PublishStreamRequest{BatchId: b, Events: []*ingestv1.Event{e.proto()}}); err != nil {
					t.Fatal(err)
				}
				out, err := st.Recv()
				if err != nil {
					t.Fatal(err)
				}
				if out.GetBatchId() != b || out.GetResults()[0].GetOutcome() != ingestv1.Outcome_ACCEPTED {
					t.Fatalf("stream answer %v", out)
				}
			}
			if err := st.CloseSend(); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Recv(); !errors.Is(err, io.EOF) {
				t.Fatalf("stream's end: %v", err)
			}
		})
	}
	if recs := h.consumeIDs(h.topics[typeLog], ids); len(recs) < len(ids) {
		t.Errorf("%d records in Kafka, want %d", len(recs), len(ids))
	}
}

// TestCompressedGRPCTooLarge: a compressed message over max_request_bytes
// once decompressed is DECOMPRESSED_TOO_LARGE with ErrorInfo, however far
// past the limit it would inflate; one over it as it came is
// BATCH_TOO_LARGE, as a plain one is, up to twice the limit; past that the
// transport refuses it unread with its own RESOURCE_EXHAUSTED.
func TestCompressedGRPCTooLarge(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	client, _ := compressingClient(t, h)
	limit := h.cfg.Limits.MaxRequestBytes
	noise := func(n int) []byte { // does not compress
		b := make([]byte, n)
		_, _ = rand.NewChaCha8([32]byte{1}).Read(b)
		return b
	}
	for _, c := range []struct {
		name       string
		compressor string
		payload    []byte
		code       codes.Code
		reason     string // of ErrorInfo; "" for none
	}{
		{"gzip, 1.5x", grpcgzip.Name, make([]byte, limit*3/2), codes.InvalidArgument, "DECOMPRESSED_TOO_LARGE"},
		{"zstd, 1.5x", "zstd", make([]byte, limit*3/2), codes.InvalidArgument, "DECOMPRESSED_TOO_LARGE"},
		{"gzip, 16x", grpcgzip.Name, make([]byte, limit*16), codes.InvalidArgument, "DECOMPRESSED_TOO_LARGE"},
		{"zstd, 16x", "zstd", make([]byte, limit*16), codes.InvalidArgument, "DECOMPRESSED_TOO_LARGE"},
		{"gzip, 1.5x as it came", grpcgzip.Name, noise(limit * 3 / 2), codes.InvalidArgument, "BATCH_TOO_LARGE"},
		{"zstd, 1.5x as it came", "zstd", noise(limit * 3 / 2), codes.InvalidArgument, "BATCH_TOO_LARGE"},
		{"gzip, 3x as it came", grpcgzip.Name, noise(limit * 3), codes.ResourceExhausted, ""},
		{"plain, 1.5x", "", make([]byte, limit*3/2), codes.InvalidArgument, "BATCH_TOO_LARGE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 15*time.Second)
			defer cancel()
			e := ev{ID: "big", Type: typeLog, At: h.clock.Now(), Binary: c.payload}
			var opts []grpc.CallOption
			if c.compressor != "" {
				opts = append(opts, grpc.UseCompressor(c.compressor))
			}
			_, err := client.Publish(ctx, &ingestv1.PublishRequest{Events: []*ingestv1.Event{e.proto()}}, opts...)
			if status.Code(err) != c.code {
				t.Fatalf("%v, want %v", err, c.code)
			}
			info := errorInfo(err)
			switch {
			case c.reason == "" && info != nil:
				t.Errorf("ErrorInfo %v, want none", info)
			case c.reason != "" && info.GetReason() != c.reason:
				t.Errorf("ErrorInfo %v, want reason %s", info, c.reason)
			}
		})
	}
}

// rawClient does not ask for compressed answers or decode them itself.
var rawClient = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// postEncoded posts body with Content-Encoding (none when empty) and
// Accept-Encoding (none when empty), and returns the answer undecoded.
func postEncoded(t *testing.T, h *harness, contentEncoding []string, acceptEncoding string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+h.srv.HTTPAddr()+"/v1/events", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", keyAll)
	for _, ce := range contentEncoding {
		req.Header.Add("Content-Encoding", ce)
	}
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	resp, err := rawClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, out
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

func zstded(b []byte) []byte {
	enc, _ := zstd.NewWriter(nil)
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

// zstdStreamed is b as a streaming encoder writes it, with the window it
// declares.
func zstdStreamed(b []byte, window int) []byte {
	var buf bytes.Buffer
	enc, _ := zstd.NewWriter(&buf, zstd.WithWindowSize(window))
	_, _ = enc.Write(b)
	_ = enc.Close()
	return buf.Bytes()
}

// decodeAnswer undoes an answer's Content-Encoding.
func decodeAnswer(t *testing.T, resp *http.Response, body []byte) []byte {
	t.Helper()
	switch ce := resp.Header.Get("Content-Encoding"); ce {
	case "":
		return body
	case "gzip":
		r, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return out
	case "zstd":
		r, err := zstd.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		out, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return out
	default:
		t.Fatalf("Content-Encoding %q", ce)
		return nil
	}
}

// TestCompressedRESTPublish: gzip and zstd bodies (names in any case)
// publish, and the answer is compressed in what Accept-Encoding asks for,
// and plain, with the same bytes as before, when it asks for nothing.
func TestCompressedRESTPublish(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	// Ten events with long ids make an answer of more than a kilobyte,
	// worth compressing.
	batch := func(prefix string) []byte {
		var events []ev
		for i := range 10 {
			events = append(events, ev{ID: fmt.Sprintf("%s-%02d-%s", prefix, i, strings.Repeat("x", 80)), Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON})
		}
		return restBody(events...)
	}
	for i, c := range []struct {
		name            string
		contentEncoding []string
		encode          func([]byte) []byte
		accept          string
		answer          string // Content-Encoding of the answer
	}{
		{"gzip body", []string{"gzip"}, gzipped, "", ""},
		{"GZIP body, gzip answer", []string{"GZIP"}, gzipped, "gzip", "gzip"},
		{"x-gzip body, zstd answer", []string{"x-gzip"}, gzipped, "zstd", "zstd"},
		{"zstd body", []string{"zstd"}, zstded, "", ""},
		{"Zstd body, gzip answer", []string{"Zstd"}, zstded, "gzip, zstd", "gzip"},
		{"streamed zstd body", []string{"zstd"}, func(b []byte) []byte { return zstdStreamed(b, 1<<16) }, "", ""},
		// RFC 9659's bound, which a decoder must take whatever the limit.
		{"streamed zstd body, 8 MiB window", []string{"zstd"}, func(b []byte) []byte { return zstdStreamed(b, 8<<20) }, "", ""},
		{"identity body, zstd answer", []string{"identity"}, func(b []byte) []byte { return b }, "gzip;q=0, zstd", "zstd"},
		{"plain body, identity answer", nil, func(b []byte) []byte { return b }, "identity", ""},
		{"plain body, any answer", nil, func(b []byte) []byte { return b }, "*", "gzip"},
		{"plain body, nothing refused", nil, func(b []byte) []byte { return b }, "gzip;q=0, zstd;q=0", ""},
	} {
		prefix := fmt.Sprintf("rest-%d", i)
		t.Run(c.name, func(t *testing.T) {
			resp, body := postEncoded(t, h, c.contentEncoding, c.accept, c.encode(batch(prefix)))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if got := resp.Header.Get("Content-Encoding"); got != c.answer {
				t.Errorf("answer's Content-Encoding %q, want %q (%d bytes)", got, c.answer, len(body))
			}
			if got, want := resp.Header.Get("Vary"), map[bool]string{true: "Accept-Encoding"}[c.accept != ""]; got != want {
				t.Errorf("Vary %q, want %q", got, want)
			}
			var answer ingestv1.PublishResponse
			if err := protojson.Unmarshal(decodeAnswer(t, resp, body), &answer); err != nil {
				t.Fatalf("answer %q: %v", body, err)
			}
			if n := len(answer.GetResults()); n != 10 {
				t.Fatalf("%d results, want 10", n)
			}
			for _, r := range answer.GetResults() {
				if r.GetOutcome() != ingestv1.Outcome_ACCEPTED {
					t.Fatalf("result %v", r)
				}
			}
		})
	}

	t.Run("small answers are plain", func(t *testing.T) {
		resp, body := postEncoded(t, h, nil, "gzip", []byte(`{"events":[]}`))
		if resp.Header.Get("Content-Encoding") != "" || resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusOK {
			t.Errorf("status %d, Content-Encoding %q: %s", resp.StatusCode, resp.Header.Get("Content-Encoding"), body)
		}
	})
}

// TestCompressedRESTBombs: a body of about a kilobyte that inflates past
// max_request_bytes is 413 DECOMPRESSED_TOO_LARGE (that it is not inflated
// whole is TestDecompressingReaderStopsAtTheLimit's).
func TestCompressedRESTBombs(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	limit := h.cfg.Limits.MaxRequestBytes
	for _, c := range []struct {
		name, coding string
		body         []byte
	}{
		{"gzip", "gzip", gateway.GzipBomb(16 * limit)},
		{"zstd claiming 4 GiB", "zstd", gateway.ZstdBomb(16, 256, false)},
		{"zstd single segment of 4 GiB", "zstd", gateway.ZstdBomb(0, 0, true)},
		{"zstd window of 1 MiB, inflating past the limit", "zstd", gateway.ZstdBomb(20, 4, false)},
		{"zstd window of 16 MiB", "zstd", gateway.ZstdBomb(24, 64, false)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if len(c.body) > 1100 {
				t.Fatalf("bomb of %d bytes", len(c.body))
			}
			resp, body := postEncoded(t, h, []string{c.coding}, "", c.body)
			wantRefusal(t, resp, body, http.StatusRequestEntityTooLarge, ingestv1.Reason_DECOMPRESSED_TOO_LARGE)
		})
	}
}

func wantRefusal(t *testing.T, resp *http.Response, body []byte, code int, reason ingestv1.Reason) *ingestv1.ErrorBody {
	t.Helper()
	if resp.StatusCode != code {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, code, body)
	}
	var eb ingestv1.ErrorBody
	if err := protojson.Unmarshal(body, &eb); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	if eb.GetReason() != reason || eb.GetRetryable() || eb.GetMessage() == "" {
		t.Fatalf("body %s, want %s, not retryable, with a message", body, reason)
	}
	return &eb
}

// TestCompressedRESTRefusals: codings other than one of gzip, zstd and
// identity are MALFORMED with Accept-Encoding, unread; streams that do not
// decode are MALFORMED.
func TestCompressedRESTRefusals(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	text := restBody(ev{ID: "never", Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON})
	flip := func(b []byte, i int) []byte {
		b = bytes.Clone(b)
		b[(len(b)+i)%len(b)] ^= 0xff
		return b
	}
	for _, c := range []struct {
		name            string
		contentEncoding []string
		body            []byte
		unknown         bool // refused for its coding, unread
	}{
		{"unknown coding", []string{"br"}, text, true},
		{"deflate", []string{"deflate"}, text, true},
		{"two codings", []string{"gzip, zstd"}, gzipped(text), true},
		{"gzip and identity", []string{"gzip, identity"}, gzipped(text), true},
		{"two header lines", []string{"gzip", "gzip"}, gzipped(gzipped(text)), true},
		{"gzip: not gzip", []string{"gzip"}, text, false},
		{"gzip: empty", []string{"gzip"}, nil, false},
		{"gzip: bad checksum", []string{"gzip"}, flip(gzipped(text), -8), false},
		{"gzip: bad length", []string{"gzip"}, flip(gzipped(text), -1), false},
		{"gzip: corrupt data", []string{"gzip"}, flip(gzipped(text), 12), false},
		{"gzip: truncated", []string{"gzip"}, gzipped(text)[:len(gzipped(text))-5], false},
		{"gzip: trailing garbage", []string{"gzip"}, append(gzipped(text), "{}"...), false},
		{"zstd: not zstd", []string{"zstd"}, text, false},
		{"zstd: bad checksum", []string{"zstd"}, flip(zstded(text), -1), false},
		{"zstd: truncated", []string{"zstd"}, zstded(text)[:len(zstded(text))-5], false},
		{"zstd: trailing garbage", []string{"zstd"}, append(zstded(text), "{}"...), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := postEncoded(t, h, c.contentEncoding, "", c.body)
			eb := wantRefusal(t, resp, body, http.StatusBadRequest, ingestv1.Reason_MALFORMED)
			if !c.unknown {
				return
			}
			if got := resp.Header.Get("Accept-Encoding"); got != "gzip, zstd" {
				t.Errorf("Accept-Encoding %q, want %q", got, "gzip, zstd")
			}
			if !strings.Contains(eb.GetMessage(), "gzip, zstd and identity") {
				t.Errorf("message %q does not name the accepted encodings", eb.GetMessage())
			}
			if !resp.Close {
				t.Error("the connection is kept, so the body was read or drained")
			}
		})
	}
}

// wireCompressor is a client's compressor (grpc-go's older API, set per
// connection) that sends body, flagged compressed under its name, in place
// of every message: how a test puts bytes that do not decompress on the
// wire.
type wireCompressor struct {
	name string
	body []byte
}

func (c wireCompressor) Do(w io.Writer, _ []byte) error { _, err := w.Write(c.body); return err }
func (c wireCompressor) Type() string                   { return c.name }

// TestCompressedGRPCCorrupt: a Publish message flagged gzip or zstd that
// does not decompress is MALFORMED, and one whose zstd frame asks for a
// window over the limit, or that inflates past the limit however far, is
// DECOMPRESSED_TOO_LARGE: INVALID_ARGUMENT with ErrorInfo, as REST says
// it (TestCompressedRESTRefusals, TestCompressedRESTBombs), never gRPC's
// own INTERNAL or RESOURCE_EXHAUSTED.
func TestCompressedGRPCCorrupt(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	limit := h.cfg.Limits.MaxRequestBytes
	e := ev{ID: "never", Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
	text, err := proto.Marshal(&ingestv1.PublishRequest{Events: []*ingestv1.Event{e.proto()}})
	if err != nil {
		t.Fatal(err)
	}
	flip := func(b []byte, i int) []byte {
		b = bytes.Clone(b)
		b[(len(b)+i)%len(b)] ^= 0xff
		return b
	}
	for _, c := range []struct {
		name, coding string
		body         []byte
		reason       ingestv1.Reason
	}{
		{"gzip: not gzip", "gzip", text, ingestv1.Reason_MALFORMED},
		{"gzip: bad checksum", "gzip", flip(gzipped(text), -8), ingestv1.Reason_MALFORMED},
		{"gzip: corrupt data", "gzip", flip(gzipped(text), 12), ingestv1.Reason_MALFORMED},
		{"gzip: truncated", "gzip", gzipped(text)[:len(gzipped(text))-5], ingestv1.Reason_MALFORMED},
		{"gzip: trailing garbage", "gzip", append(gzipped(text), 0x0a, 0x00), ingestv1.Reason_MALFORMED},
		{"zstd: not zstd", "zstd", text, ingestv1.Reason_MALFORMED},
		{"zstd: bad checksum", "zstd", flip(zstded(text), -1), ingestv1.Reason_MALFORMED},
		{"zstd: truncated", "zstd", zstded(text)[:len(zstded(text))-5], ingestv1.Reason_MALFORMED},
		{"zstd: trailing garbage", "zstd", append(zstded(text), 0x0a, 0x00), ingestv1.Reason_MALFORMED},
		{"gzip bomb", "gzip", gateway.GzipBomb(16 * limit), ingestv1.Reason_DECOMPRESSED_TOO_LARGE},
		{"zstd claiming 4 GiB", "zstd", gateway.ZstdBomb(16, 256, false), ingestv1.Reason_DECOMPRESSED_TOO_LARGE},
		{"zstd single segment of 4 GiB", "zstd", gateway.ZstdBomb(0, 0, true), ingestv1.Reason_DECOMPRESSED_TOO_LARGE},
		{"zstd window of 16 MiB", "zstd", gateway.ZstdBomb(24, 64, false), ingestv1.Reason_DECOMPRESSED_TOO_LARGE},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := grpc.NewClient(h.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithCompressor(wireCompressor{name: c.coding, body: c.body}))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 15*time.Second)
			defer cancel()
			_, err = ingestv1.NewIngestServiceClient(conn).Publish(ctx, &ingestv1.PublishRequest{Events: []*ingestv1.Event{e.proto()}})
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("%v, want INVALID_ARGUMENT", err)
			}
			if info := errorInfo(err); info.GetReason() != c.reason.String() || info.GetDomain() != gateway.ErrorDomain || info.GetMetadata()["retryable"] != "false" {
				t.Fatalf("ErrorInfo %v, want reason %s, not retryable", info, c.reason)
			}

			// A PublishStream batch so is refused the same way, ending
			// the stream.
			st, err := ingestv1.NewIngestServiceClient(conn).PublishStream(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Send(&ingestv1.PublishStreamRequest{BatchId: 1, Events: []*ingestv1.Event{e.proto()}}); err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			_, err = st.Recv()
			if status.Code(err) != codes.InvalidArgument || errorInfo(err).GetReason() != c.reason.String() {
				t.Fatalf("stream: %v, want INVALID_ARGUMENT %s", err, c.reason)
			}
		})
	}
}

// TestCompressedGRPCHealth: health requests in gzip and zstd are answered,
// in the same coding.
func TestCompressedGRPCHealth(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	rec := &answerEncodings{}
	conn, err := grpc.NewClient(h.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithStatsHandler(rec),
		grpc.WithDecompressor(zstdAnswers{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, name := range []string{grpcgzip.Name, "zstd"} {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		out, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: ingestv1.IngestService_ServiceDesc.ServiceName}, grpc.UseCompressor(name))
		cancel()
		if err != nil || out.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("%s: %v, %v", name, out, err)
		}
		if got := rec.last(); got != name {
			t.Errorf("%s: answer's grpc-encoding %q", name, got)
		}
	}
}

// TestCompressedZstdWindowCharged: a zstd request is charged its decoder's
// window besides a request of max_request_bytes, on gRPC as on REST: with
// room for one plain request of that size and no more, a gzip request is
// served on both, and a zstd one is refused UNAVAILABLE on both, unread.
func TestCompressedZstdWindowCharged(t *testing.T) {
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) {
		c.Limits.RequestMemoryBytes = 2 * (2*int64(c.Limits.MaxRequestBytes) + 64<<10) // each half: one requestCost(max_request_bytes)
		// The budget as a whole, not the sources' shares of it.
		c.Limits.ReservedShare = 0
		c.Limits.MaxQueueWait = 50 * time.Millisecond
	}})
	client, _ := compressingClient(t, h)
	for i, coding := range []string{"gzip", "zstd"} {
		e := ev{ID: fmt.Sprintf("w-%d", i), Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
		ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 15*time.Second)
		_, grpcErr := client.Publish(ctx, &ingestv1.PublishRequest{Events: []*ingestv1.Event{e.proto()}}, grpc.UseCompressor(coding))
		cancel()
		body := gzipped(restBody(e))
		if coding == "zstd" {
			body = zstded(restBody(e))
		}
		resp, out := postEncoded(t, h, []string{coding}, "", body)
		if coding == "gzip" {
			if grpcErr != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("gzip: gRPC %v, REST %d %s", grpcErr, resp.StatusCode, out)
			}
			continue
		}
		if status.Code(grpcErr) != codes.Unavailable || errorInfo(grpcErr).GetReason() != ingestv1.Reason_UNAVAILABLE.String() {
			t.Errorf("zstd over gRPC: %v, want UNAVAILABLE", grpcErr)
		}
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("zstd over REST: %d %s, want 503", resp.StatusCode, out)
		}
	}
	if got := counterValue(t, h.reg, "sluice_request_memory_refusals_total", nil); got != 2 {
		t.Errorf("sluice_request_memory_refusals_total %v, want 2", got)
	}
}
