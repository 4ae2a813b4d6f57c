package tracing

import (
	"context"
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"
)

// The W3C Trace Context headers, as HTTP, gRPC metadata and Kafka record
// headers carry them.
const (
	HeaderTraceparent = "traceparent"
	HeaderTracestate  = "tracestate"
)

// Bounds on what a caller's trace context may add to a record. A
// traceparent is exactly TraceparentLen bytes; a tracestate longer than
// MaxTracestateBytes or with more than MaxTracestateMembers members is
// dropped whole (W3C Trace Context allows a vendor to drop it; the
// traceparent is kept).
const (
	TraceparentLen       = 55
	MaxTracestateBytes   = 512
	MaxTracestateMembers = 32
)

// ParseTraceparent reads a W3C traceparent of version 00 or a later one
// (version ff is invalid): lowercase hex, both ids not all zero. ok is
// false for anything else, which the caller drops and starts afresh, as
// the spec asks.
func ParseTraceparent(v string) (trace.SpanContextConfig, bool) {
	var cfg trace.SpanContextConfig
	if len(v) != TraceparentLen || v[2] != '-' || v[35] != '-' || v[52] != '-' || v[:2] == "ff" {
		return cfg, false
	}
	for _, f := range [...]string{v[0:2], v[3:35], v[36:52], v[53:55]} {
		if !lowerHex(f) {
			return cfg, false
		}
	}
	_, _ = hex.Decode(cfg.TraceID[:], []byte(v[3:35]))
	_, _ = hex.Decode(cfg.SpanID[:], []byte(v[36:52]))
	var flags [1]byte
	_, _ = hex.Decode(flags[:], []byte(v[53:55]))
	cfg.TraceFlags = trace.TraceFlags(flags[0]) & trace.FlagsSampled
	cfg.Remote = true
	if !cfg.TraceID.IsValid() || !cfg.SpanID.IsValid() {
		return trace.SpanContextConfig{}, false
	}
	return cfg, true
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// FromHeaders returns ctx carrying the remote span context of a caller's
// traceparent tp and tracestate ts, as a new span's parent. A traceparent
// that does not parse leaves ctx as it is (the span that follows is a new
// root); a tracestate over the bounds or that does not parse is dropped.
func FromHeaders(ctx context.Context, tp, ts string) context.Context {
	cfg, ok := ParseTraceparent(tp)
	if !ok {
		return ctx
	}
	if state, ok := parseTracestate(ts); ok {
		cfg.TraceState = state
	}
	return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(cfg))
}

// parseTracestate is ts within the bounds, parsed; ok is false for an
// empty, oversized or malformed one.
func parseTracestate(ts string) (trace.TraceState, bool) {
	if ts == "" || len(ts) > MaxTracestateBytes {
		return trace.TraceState{}, false
	}
	state, err := trace.ParseTraceState(ts)
	if err != nil || state.Len() > MaxTracestateMembers {
		return trace.TraceState{}, false
	}
	return state, true
}

// Headers are sc's traceparent (version 00) and tracestate, for a
// record's headers; both empty when sc is not valid.
func Headers(sc trace.SpanContext) (tp, ts string) {
	if !sc.IsValid() {
		return "", ""
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	b := make([]byte, 0, TraceparentLen)
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, sid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, []byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
	return string(b), sc.TraceState().String()
}

// TraceIDOf is the trace id of traceparent tp in hex, or "" when tp does
// not parse: what the audit trail and `sluice trace` show.
func TraceIDOf(tp string) string {
	cfg, ok := ParseTraceparent(tp)
	if !ok {
		return ""
	}
	return cfg.TraceID.String()
}
