// Package hostile is a memory test of the sluice gateway under hostile
// load: the sluice binary runs as a process of its own (`sluice gateway`,
// with `sluice kfake` as its Kafka) and the test process attacks it over
// loopback, measuring the gateway from outside, as an operator would.
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
// SLUICE_HOSTILE_BINARY, so the same load can be run against another
// build for a before-and-after comparison. SLUICE_HOSTILE_LIMITS is a YAML
// flow mapping merged into gateway.limits ("{stream_idle_timeout: 3s}");
// unset, the config sets no limits, so a binary of any version accepts it.
// SLUICE_HOSTILE_GATEWAY is the same for the gateway block itself
// ("{publish_timeout: 2s}").
//
// The gateway's config: loopback listeners on free ports, the admin
// listener with pprof, memory_limit 512 MiB, one source with an API key
// that may publish every type without a rate limit, the example
// contracts, the kfake broker and a spool in the test's directory.
//
// # The loads
//
// All at once, each bounded by count, by a 20 s deadline per call and by
// a hold per stream, and all by one time budget (see loads.go for the
// counts); together about 60-90 s on two cores. Every message is built
// once and sent as it is by every caller (Wire), so the client holds one
// copy of each.
//
//   - Giant-count gRPC: unary Publish messages of 4,000,000 and 2,000,000
//     empty events (0a 00 repeated: 8 and 4 MB), 8 callers.
//   - Giant-count REST: bodies of the most {} events that fit in 4 MiB,
//     8 callers.
//   - Violation bombs: one valid LogLine event with 300,000 attribute
//     keys that break the key pattern, as REST (~3.8 MB) and gRPC
//     (~3.6 MB), 4 callers: one rule violation per key.
//   - Never-read streams: 80 PublishStream streams over 2 connections,
//     on fixed 64 KiB windows, each sending ~3.6 MB batches of 500 valid
//     LogLines as fast as flow control lets it, never reading an answer,
//     held 20 s after the last batch that went out. The batch's ids
//     repeat, so after the first the gateway answers DUPLICATE: what it
//     holds is decoded batches and answers nobody reads, not Kafka's
//     backlog.
//   - Idle streams: 200 PublishStream streams over 4 connections that
//     send nothing, held up to 30 s.
//   - An unauthenticated flood: 50,000 unary calls of bytes that do not
//     decode, without an API key and with a wrong one in turn, 32 at a
//     time.
//
// # What is measured
//
//   - Peak RSS: VmHWM of /proc/PID/status at the end (the most the
//     process ever had resident), and VmRSS sampled every 50 ms.
//   - Heap: go_memstats_heap_alloc_bytes from the admin /metrics, sampled
//     every 250 ms during the load (the peak heap), and the live heap
//     before and after the load, each read after two forced GCs
//     (/debug/pprof/heap?gc=1); go_goroutines at the same times.
//   - Answers, per load, by what they said: typed or not, and for
//     streams how each ended.
//
// An answer is typed when the caller can act on it: a gRPC response, or a
// status with a google.rpc.ErrorInfo of domain "ingest.sluice"; a REST
// status other than a 5xx (503 excepted) whose JSON body names a reason,
// as a whole-request refusal ("reason") or per event (results'
// rejection.reason). Anything else is untyped: a transport error or
// reset, a bare status (the RESOURCE_EXHAUSTED gRPC gives a message over
// its receive limit, a DEADLINE_EXCEEDED), a 5xx, a body without a reason,
// no answer by the caller's deadline, a stream ended OK without a
// reason. A stream the server has not ended when the client lets go of
// it is open: neither.
//
// # What is asserted
//
// With t.Errorf, after the whole table is logged:
//
//   - peak RSS (VmHWM) <= memory_limit;
//   - the live heap after the load <= the live heap before + 32 MiB,
//     waited for up to 30 s (a fixed slack: the heap before is small and
//     mostly start-up structures, so a ratio of it would say little);
//   - goroutines after the load <= before + 20, waited for up to 30 s;
//   - no untyped answer in any load;
//   - when SLUICE_HOSTILE_LIMITS sets stream_idle_timeout, the server
//     ended every stream of the never-read and idle loads as idle
//     (sluice_streams_idle_closed_total), and no idle stream was left
//     open: each heard its end, typed. A never-read stream may not hear
//     it: its client, on fixed 64 KiB windows, reads none of the answers
//     queued in front of the final status, and HTTP/2 flow control keeps
//     them all there (without stream_idle_timeout, this is logged and
//     not held against the server);
//   - the gateway still runs at the end.
//
// Nothing asserts a duration: waits are conditions polled with a
// deadline, and durations are only logged.
//
// # The webhook flood
//
// TestHostileLoadWebhookFlood runs a gateway of its own, configured as
// above and with two webhook sources at their default bounds
// (max_body_bytes 1 MiB, read_timeout 10s, preauth_memory_bytes 8 MiB),
// each secret in a file: "stripe" (scheme stripe) and "shop" (scheme
// standard). It measures the claim, that 200 concurrent unsigned
// 1 MiB bodies leave pushed traffic on the same gateway unaffected and
// the gateway's RSS within memory_limit, in two phases:
//
//   - alone (15 s): the well-behaved traffic (Push) by itself: two
//     callers of POST /v1/events and two of gRPC Publish with the API
//     key, one OrderPlaced of a new id a call; a sender of Standard
//     Webhooks deliveries to "shop", signed by the Standard Webhooks
//     library; and a sender of Stripe deliveries to "stripe", signed by
//     stripe-go. Each caller makes a call every 20 ms.
//   - under the flood (30 s): the same, beside the webhook flood
//     (WebhookFlood): 200 senders, each with one unsigned delivery of
//     1 MiB (Content-Length 1 MiB) to /v1/webhooks/stripe in flight at a
//     time, on a connection of its own, without a Stripe-Signature and
//     with one that does not verify, in turn. 100 send their bodies
//     whole, as fast as the connection takes them: read, verified and
//     refused when the source's pool has room. 100 send theirs 64 KiB
//     every 125 ms (about 2 s a body): an admitted one holds its share
//     of the pool while it trickles in.
//
// Each phase's peak RSS is its own VmHWM (reset at its start through
// /proc/PID/clear_refs), with VmRSS and the heap sampled as above and the
// CPU time the gateway and the test's clients used. Each well-behaved
// caller's calls are counted, with their latencies' quantiles and rate,
// and each flood delivery's answer by what it said.
//
// Asserted, with t.Errorf: every well-behaved call that must be is
// answered ACCEPTED, alone and under the flood (the Stripe sender shares
// the flooded source's pool, so its answers are reported only); every
// flood delivery is answered by its deadline, typed, 401
// UNAUTHENTICATED or 503 UNAVAILABLE with Retry-After, and nothing
// else; the flood did what it says (whole and slow bodies were read,
// verified and refused, others refused unread); peak RSS <=
// memory_limit in every phase; the heap and goroutines come back as
// above; the gateway still runs. The latencies are logged, never
// asserted: the test's clients share the machine with the gateway, and
// under the flood they take more of it than the gateway does.
//
// # What it does not do
//
// The client's own memory is not measured, and kfake is not a real
// Kafka: accepted events cost what kfake costs. Nothing leaves loopback.
// The figures are of one machine; the bounds are what hold everywhere.
package hostile
