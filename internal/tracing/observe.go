package tracing

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"
)

// Observe records v in obs, with the trace id of ctx's span as an
// exemplar when that span is sampled, so that a latency bucket links to a
// trace that passed through it. Unsampled, it is a plain Observe: no
// allocation.
func Observe(ctx context.Context, obs prometheus.Observer, v float64) {
	sc := trace.SpanContextFromContext(ctx)
	if sc.IsSampled() {
		if eo, ok := obs.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(v, prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	obs.Observe(v)
}

// FromRecord is FromHeaders with the traceparent and tracestate headers of
// a record (the last of each, as Kafka clients read a repeated header).
func FromRecord(ctx context.Context, headers []kgo.RecordHeader) context.Context {
	var tp, ts []byte
	for i := range headers {
		switch headers[i].Key {
		case HeaderTraceparent:
			tp = headers[i].Value
		case HeaderTracestate:
			ts = headers[i].Value
		}
	}
	if len(tp) != TraceparentLen {
		return ctx
	}
	return FromHeaders(ctx, string(tp), string(ts))
}
