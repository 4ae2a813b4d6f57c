// Package tracing is sluice's end-to-end tracing test: a gateway and a
// consumer, processes built from ./cmd/sluice, export their spans over
// OTLP/gRPC to a real Jaeger (v2, built by .ci/steps/jaeger.sh), between a
// real Apache Kafka and a real PostgreSQL. One event sent with a sampled
// traceparent must come out of Jaeger as one trace: the gateway's server
// span under the caller's span, then send, process and sink write; its
// audit row and `sluice trace` carry the trace id.
//
// # Running it
//
// TestIntegrationTracing runs when SLUICE_JAEGER_BIN, SLUICE_KAFKA_BROKERS
// and SLUICE_POSTGRES_DSN are all set, and skips otherwise. .ci/run does:
//
//	SLUICE_JAEGER_BIN=$(bash .ci/steps/jaeger.sh | tail -n 1) \
//	  go test -count=1 -run Integration -v ./tests/tracing
//
// with the broker and the server of scripts/kafka.sh up and
// scripts/postgres.sh up in its environment. Jaeger takes
// testdata/jaeger.yaml, every endpoint on a free loopback port.
//
// `-args -write-trace-doc` writes the trace it fetched, as text, into
// docs/tracing.md between its trace markers.
package tracing
