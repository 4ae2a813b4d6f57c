// Package tracing is sluice's OpenTelemetry tracing: the tracing config
// block every role reads, the tracer provider it builds (off by default:
// a no-op provider, and then nothing is exported and nothing costs), and
// the bounded W3C Trace Context handling of a caller's traceparent and
// tracestate on their way into records.
package tracing
