package tracing

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/record"
)

const testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestHeaderNamesAgreeWithRecord(t *testing.T) {
	if HeaderTraceparent != record.HeaderTraceparent || HeaderTracestate != record.HeaderTracestate {
		t.Fatalf("tracing's header names %q, %q differ from record's %q, %q",
			HeaderTraceparent, HeaderTracestate, record.HeaderTraceparent, record.HeaderTracestate)
	}
}

func TestFromRecord(t *testing.T) {
	for _, c := range []struct {
		name    string
		headers []kgo.RecordHeader
		trace   string // "" when no context
		state   string
	}{
		{"none", nil, "", ""},
		{"traceparent", []kgo.RecordHeader{{Key: "traceparent", Value: []byte(testTraceparent)}}, "4bf92f3577b34da6a3ce929d0e0e4736", ""},
		{"both", []kgo.RecordHeader{
			{Key: "sluice-event-id", Value: []byte("e")},
			{Key: "traceparent", Value: []byte(testTraceparent)},
			{Key: "tracestate", Value: []byte("rojo=00f067aa0ba902b7")},
		}, "4bf92f3577b34da6a3ce929d0e0e4736", "rojo=00f067aa0ba902b7"},
		{"malformed", []kgo.RecordHeader{{Key: "traceparent", Value: []byte("00-zz")}}, "", ""},
		{"tracestate alone", []kgo.RecordHeader{{Key: "tracestate", Value: []byte("a=b")}}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := trace.SpanContextFromContext(FromRecord(context.Background(), c.headers))
			if got := ""; sc.IsValid() {
				got = sc.TraceID().String()
				if got != c.trace {
					t.Errorf("trace id %s, want %q", got, c.trace)
				}
			} else if c.trace != "" {
				t.Fatalf("no span context, want trace %s", c.trace)
			}
			if got := sc.TraceState().String(); got != c.state {
				t.Errorf("tracestate %q, want %q", got, c.state)
			}
		})
	}
}

// TestObserveExemplar: a sampled span's trace id becomes the exemplar; an
// unsampled one, or none, gives a plain observation.
func TestObserveExemplar(t *testing.T) {
	sampled := FromHeaders(context.Background(), testTraceparent, "")
	unsampled := FromHeaders(context.Background(), testTraceparent[:53]+"00", "")
	for _, c := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"sampled", sampled, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"unsampled", unsampled, ""},
		{"none", context.Background(), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x", Buckets: []float64{1}})
			Observe(c.ctx, h, 0.5)
			var m dto.Metric
			if err := h.Write(&m); err != nil {
				t.Fatal(err)
			}
			if n := m.GetHistogram().GetSampleCount(); n != 1 {
				t.Fatalf("%d observations, want 1", n)
			}
			got := ""
			if ex := m.GetHistogram().GetBucket()[0].GetExemplar(); ex != nil {
				for _, l := range ex.GetLabel() {
					if l.GetName() == "trace_id" {
						got = l.GetValue()
					}
				}
			}
			if got != c.want {
				t.Errorf("exemplar trace_id %q, want %q", got, c.want)
			}
		})
	}
}
