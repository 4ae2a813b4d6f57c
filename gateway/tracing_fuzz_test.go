package gateway

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/tracing"
)

// FuzzBoundedTracestate: with tracing off the gateway passes on a
// caller's tracestate exactly when tracing.FromHeaders (what it parents
// its spans on with tracing on) would keep it, and then as it came.
func FuzzBoundedTracestate(f *testing.F) {
	for _, s := range []string{"", "vendor=abc", "a=1,b=2", "a=1,a=2", "A=1", "a=" + strings.Repeat("b", tracing.MaxTracestateBytes),
		strings.Repeat("k=v,", tracing.MaxTracestateMembers+1), "tenant@vendor=x", "a= b", ",,a=1"} {
		f.Add(s)
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	f.Fuzz(func(t *testing.T, ts string) {
		got := boundedTracestate(ts)
		if got != "" && got != ts {
			t.Fatalf("boundedTracestate(%q) = %q: neither dropped nor as it came", ts, got)
		}
		kept := trace.SpanContextFromContext(tracing.FromHeaders(context.Background(), tp, ts)).TraceState().Len() > 0
		if (got != "") != kept {
			t.Fatalf("boundedTracestate(%q) = %q, FromHeaders keeps it: %v", ts, got, kept)
		}
		if len(got) > tracing.MaxTracestateBytes {
			t.Fatalf("%d bytes passed on", len(got))
		}
	})
}
