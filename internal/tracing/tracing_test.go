package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func TestValidate(t *testing.T) {
	on := func(f func(*Config)) Config {
		c := NewDefaultConfig()
		c.Enabled = true
		c.Exporter.Endpoint = "collector:4317"
		if f != nil {
			f(&c)
		}
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" is valid
	}{
		{"off is not checked further", Config{Exporter: ExporterConfig{Protocol: "smoke"}}, ""},
		{"grpc", on(nil), ""},
		{"no endpoint", on(func(c *Config) { c.Exporter.Endpoint = "" }), "tracing.exporter.endpoint: must be set"},
		{"protocol", on(func(c *Config) { c.Exporter.Protocol = "udp" }), "tracing.exporter.protocol"},
		{"ratio over 1", on(func(c *Config) { c.Sampler.Ratio = 1.5 }), "tracing.sampler.ratio"},
		{"ratio under 0", on(func(c *Config) { c.Sampler.Ratio = -0.1 }), "tracing.sampler.ratio"},
		{"timeout", on(func(c *Config) { c.Exporter.Timeout = 0 }), "tracing.exporter.timeout"},
		{"insecure with tls", on(func(c *Config) { c.Exporter.Insecure = true; c.Exporter.TLS.Enabled = true }), "tracing.exporter.insecure"},
		{"http needs a URL", on(func(c *Config) { c.Exporter.Protocol = "http" }), "is not an http(s) URL"},
		{"plaintext http needs insecure", on(func(c *Config) {
			c.Exporter.Protocol, c.Exporter.Endpoint = "http", "http://collector:4318"
		}), "set insecure: true"},
		{"https with insecure", on(func(c *Config) {
			c.Exporter.Protocol, c.Exporter.Endpoint, c.Exporter.Insecure = "http", "https://collector:4318", true
		}), "is https but insecure is set"},
		{"http", on(func(c *Config) {
			c.Exporter.Protocol, c.Exporter.Endpoint, c.Exporter.Insecure = "http", "http://collector:4318", true
		}), ""},
		{"empty resource key", on(func(c *Config) { c.Resource = map[string]string{"": "x"} }), "tracing.resource"},
		{"no queue", on(func(c *Config) { c.Batch.MaxQueue = 0 }), "tracing.batch.max_queue"},
		{"export over queue", on(func(c *Config) { c.Batch.MaxExport = c.Batch.MaxQueue + 1 }), "tracing.batch.max_export"},
		{"no export", on(func(c *Config) { c.Batch.MaxExport = 0 }), "tracing.batch.max_export"},
		{"no delay", on(func(c *Config) { c.Batch.ScheduleDelay = 0 }), "tracing.batch.schedule_delay"},
		{"tls file missing", on(func(c *Config) { c.Exporter.TLS.CAFile = "/nonexistent/ca.pem" }), "tracing.exporter.tls.ca_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

const sampledParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestFromHeaders(t *testing.T) {
	for _, tc := range []struct {
		name, tp, ts string
		valid        bool
		state        string
	}{
		{"sampled", sampledParent, "", true, ""},
		{"with tracestate", sampledParent, "vendor=abc,other=1", true, "vendor=abc,other=1"},
		{"unsampled", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "", true, ""},
		{"a later version", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", true, ""},
		{"version ff", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", false, ""},
		{"uppercase", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "", false, ""},
		{"zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "", false, ""},
		{"zero span id", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "", false, ""},
		{"short", sampledParent[:54], "", false, ""},
		{"trailing", sampledParent + "-", "", false, ""},
		{"tracestate too long", sampledParent, "v=" + strings.Repeat("a", MaxTracestateBytes), true, ""},
		{"tracestate too many members", sampledParent, manyMembers(MaxTracestateMembers + 1), true, ""},
		{"tracestate malformed", sampledParent, "not a tracestate", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := trace.SpanContextFromContext(FromHeaders(context.Background(), tc.tp, tc.ts))
			if sc.IsValid() != tc.valid {
				t.Fatalf("valid %v, want %v", sc.IsValid(), tc.valid)
			}
			if !tc.valid {
				return
			}
			if !sc.IsRemote() || sc.TraceID().String() != tc.tp[3:35] || sc.SpanID().String() != tc.tp[36:52] {
				t.Fatalf("span context %v from %q", sc, tc.tp)
			}
			if got := sc.TraceState().String(); got != tc.state {
				t.Fatalf("tracestate %q, want %q", got, tc.state)
			}
			tp, _ := Headers(sc)
			if want := "00" + tc.tp[2:]; tp != want {
				t.Fatalf("Headers: %q, want %q", tp, want)
			}
		})
	}
	if got := TraceIDOf(sampledParent); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("TraceIDOf: %q", got)
	}
	if got := TraceIDOf("garbage"); got != "" {
		t.Fatalf("TraceIDOf(garbage): %q", got)
	}
	if tp, ts := Headers(trace.SpanContext{}); tp != "" || ts != "" {
		t.Fatalf("Headers of no span context: %q %q", tp, ts)
	}
}

func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("k")
		b.WriteByte(byte('a' + i%26))
		b.WriteByte(byte('a' + i/26))
		b.WriteString("=v")
	}
	return b.String()
}

// FuzzFromHeaders: any input is taken without a panic; what is kept is
// within the bounds, and a traceparent kept comes out as it went in
// (version 00, flags reduced to sampled).
func FuzzFromHeaders(f *testing.F) {
	f.Add(sampledParent, "vendor=abc")
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff", "")
	f.Add("ff-"+sampledParent[3:], manyMembers(40))
	f.Fuzz(func(t *testing.T, tp, ts string) {
		sc := trace.SpanContextFromContext(FromHeaders(context.Background(), tp, ts))
		if !sc.IsValid() {
			if TraceIDOf(tp) != "" {
				t.Fatalf("TraceIDOf(%q) is set, yet FromHeaders took nothing", tp)
			}
			return
		}
		out, state := Headers(sc)
		if len(out) != TraceparentLen || out[3:53] != tp[3:53] {
			t.Fatalf("Headers: %q from %q", out, tp)
		}
		if len(state) > MaxTracestateBytes || sc.TraceState().Len() > MaxTracestateMembers {
			t.Fatalf("tracestate kept past the bounds: %d bytes, %d members", len(state), sc.TraceState().Len())
		}
		if TraceIDOf(tp) != sc.TraceID().String() {
			t.Fatalf("TraceIDOf(%q) = %q, span context %v", tp, TraceIDOf(tp), sc.TraceID())
		}
	})
}

// TestExportOverHTTP: an enabled provider sends sampled spans, parented
// on a caller's traceparent, to an OTLP/HTTP endpoint (a loopback server
// that decodes the request), with the resource it was given, in exports
// of the batch block's size even where the OTEL_BSP_* environment says
// otherwise.
func TestExportOverHTTP(t *testing.T) {
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "512")
	var mu sync.Mutex
	var got []*collectortrace.ExportTraceServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &collectortrace.ExportTraceServiceRequest{}
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil)
	}))
	defer srv.Close()

	cfg := NewDefaultConfig()
	cfg.Enabled = true
	cfg.Exporter.Protocol, cfg.Exporter.Endpoint, cfg.Exporter.Insecure = "http", srv.URL, true
	cfg.Resource = map[string]string{"deployment.environment": "test"}
	cfg.Sampler.Ratio = 0 // only the caller's sampled flag keeps a trace
	cfg.Batch.MaxExport = 1
	p, err := New(context.Background(), cfg, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	tracer := p.TracerProvider().Tracer("test")
	for range 3 {
		_, kept := tracer.Start(FromHeaders(context.Background(), sampledParent, ""), "kept")
		kept.End()
	}
	_, dropped := tracer.Start(context.Background(), "dropped")
	dropped.End()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	var names []string
	for _, req := range got {
		inRequest := 0
		for _, rs := range req.ResourceSpans {
			res := map[string]string{}
			for _, kv := range rs.Resource.Attributes {
				res[kv.Key] = kv.Value.GetStringValue()
			}
			if res["service.name"] != "sluice-gateway" || res["deployment.environment"] != "test" {
				t.Errorf("resource %v", res)
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					names = append(names, sp.Name)
					inRequest++
					if sp.Name == "kept" && (trace.TraceID(sp.TraceId).String() != sampledParent[3:35] || trace.SpanID(sp.ParentSpanId).String() != sampledParent[36:52]) {
						t.Errorf("span kept: trace %x parent %x, want the caller's", sp.TraceId, sp.ParentSpanId)
					}
				}
			}
		}
		if inRequest > cfg.Batch.MaxExport {
			t.Errorf("an export of %d spans, over batch.max_export %d", inRequest, cfg.Batch.MaxExport)
		}
	}
	if strings.Join(names, " ") != "kept kept kept" {
		t.Fatalf("exported spans %v, want [kept kept kept]", names)
	}
}

func TestOffIsNoop(t *testing.T) {
	p, err := New(context.Background(), NewDefaultConfig(), "consumer")
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.TracerProvider().Tracer("test").Start(FromHeaders(context.Background(), sampledParent, ""), "x")
	if span.IsRecording() {
		t.Fatal("a span records with tracing off")
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
