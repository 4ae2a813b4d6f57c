package loadgen

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// TestOTLPSinkCountsSpans: the SDK's own OTLP/HTTP exporter, plain and
// gzipped, sends to the sink, which counts every span and answers 200.
func TestOTLPSinkCountsSpans(t *testing.T) {
	for _, compression := range []otlptracehttp.Compression{otlptracehttp.NoCompression, otlptracehttp.GzipCompression} {
		sink := &OTLPSink{}
		srv := httptest.NewServer(sink)
		exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"),
			otlptracehttp.WithInsecure(), otlptracehttp.WithCompression(compression))
		if err != nil {
			t.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
		tr := tp.Tracer("test")
		for range 3 {
			ctx, parent := tr.Start(context.Background(), "parent")
			_, child := tr.Start(ctx, "child")
			child.End()
			parent.End()
		}
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Fatalf("compression %v: export: %v", compression, err)
		}
		resp, err := http.Get(srv.URL + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		var st OTLPStats
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if st.Spans != 6 || st.Requests < 1 || st.Refused != 0 {
			t.Errorf("compression %v: %+v, want 6 spans, no refusal", compression, st)
		}
	}
}

func TestOTLPSinkRefuses(t *testing.T) {
	sink := &OTLPSink{}
	for _, tc := range []struct{ ct, body string }{
		{"application/json", "{}"},
		{"application/x-protobuf", "\x0a\x05ab"}, // a length past the end
	} {
		req := httptest.NewRequest(http.MethodPost, "/v1/traces", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", tc.ct)
		rec := httptest.NewRecorder()
		sink.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s %q: %d, want 400", tc.ct, tc.body, rec.Code)
		}
	}
	if st := sink.Stats(); st.Spans != 0 || st.Refused != 2 {
		t.Errorf("%+v, want 2 refused, no span", st)
	}
}

func TestServeOTLPStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		_, err := ServeOTLP(ctx, "127.0.0.1:0", func(a net.Addr) { addrc <- a })
		done <- err
	}()
	addr := <-addrc
	resp, err := http.Get("http://" + addr.String() + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// FuzzCountSpans: any body is counted or refused, never a panic, and a
// count is never more than the body's bytes.
func FuzzCountSpans(f *testing.F) {
	span := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), []byte{0x0a, 0x01, 0x00})
	scope := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), append(span, span...))
	f.Add(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), scope))
	f.Add([]byte{0x0a, 0x05, 0x12})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := CountSpans(b)
		if err == nil && n > len(b) {
			t.Fatalf("%d spans in %d bytes", n, len(b))
		}
	})
}
