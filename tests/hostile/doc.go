// Package hostile is a memory test of the sluice gateway under hostile
// load: the sluice binary runs as a process of its own (`sluice gateway`,
// with `sluice kfake` as its Kafka) and the test process attacks it over
// loopback, measuring it from outside, as an operator would.
//
// # Running it
//
// TestHostileLoad and TestHostileLoadWebhookFlood run only with
// SLUICE_HOSTILE=1, so `go test ./...` stays fast; -run TestHostileLoad
// runs both:
//
//	SLUICE_HOSTILE=1 go test -count=1 -v -run TestHostileLoad -timeout 15m ./tests/hostile
//
// It builds cmd/sluice from this tree, or runs the binary named by
// SLUICE_HOSTILE_BINARY, for a before-and-after comparison.
// SLUICE_HOSTILE_LIMITS is a YAML flow mapping merged into gateway.limits
// ("{stream_idle_timeout: 3s}"), SLUICE_HOSTILE_GATEWAY the same for the
// gateway block ("{publish_timeout: 2s}"). The gateway runs with
// memory_limit 512 MiB, the admin listener with pprof, one source allowed
// every type without a rate limit, the example contracts and kfake.
//
// # What it proves
//
// TestHostileLoad runs every load at once, each bounded by count, by a
// deadline per call and by a hold per stream (loads.go): giant-count gRPC
// and REST batches, violation bombs of 300,000 bad attribute keys,
// PublishStreams that never read their answers, streams that send
// nothing, and an unauthenticated flood of bytes that do not decode. It
// asserts, after logging the whole table:
//
//   - peak RSS (VmHWM) <= memory_limit;
//   - the live heap after the load <= the live heap before + 32 MiB, and
//     goroutines <= before + 20, each waited for up to 30 s;
//   - every answer is typed (answer.go: a response, an ErrorInfo of
//     domain ingest.sluice, or a REST refusal naming a reason);
//   - with stream_idle_timeout set, the server ended every never-read and
//     idle stream as idle, and no idle stream was left open;
//   - the gateway still runs at the end.
//
// TestHostileLoadWebhookFlood measures well-behaved traffic (REST and
// gRPC with an API key, Standard Webhooks and Stripe deliveries signed by
// their own libraries) alone, then beside 200 concurrent unsigned 1 MiB
// deliveries to a Stripe source, half sent whole, half trickled. It
// asserts: every well-behaved call that must be is ACCEPTED in both
// phases; every flood delivery is answered by its deadline, 401 or 503
// with Retry-After and nothing else; peak RSS <= memory_limit in every
// phase; the heap and goroutines come back; the gateway still runs.
//
// Nothing asserts a duration: waits are conditions polled with a
// deadline; latencies and rates are only logged.
//
// # What it does not do
//
// The client's own memory is not measured, and kfake is not a real
// Kafka: accepted events cost what kfake costs. Nothing leaves loopback.
// The figures are of one machine; the bounds are what hold everywhere.
package hostile
