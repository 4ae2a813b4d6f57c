// Package loadgen is sluice's load generator: it sends events to a gateway
// over gRPC Publish, gRPC PublishStream or REST, or through sluice's Go
// client (package client), or produces the same records straight to Kafka
// (direct, the floor of an event's cost), and reports what came back. It
// also serves the transport baselines a gateway's figures are divided by (a plain net/http handler, a gRPC
// IngestService that accepts at once).
//
// # Load
//
// A closed loop runs Concurrency workers, each sending its next request as
// soon as its last one is answered. An open loop sends Rate requests per
// second on a fixed schedule, at most Concurrency in flight, and measures
// each request's latency from when it was due, not from when it was sent:
// a slow answer that delays the requests behind it shows in their latency
// (no coordinated omission). Every run is bounded by time (Duration: no
// request is sent after it, so a run ends by Duration+Timeout) and
// optionally by count (Requests, Events); each request by Timeout. When
// an open loop falls so far behind that requests due before the end were
// never sent, the report counts them (Unsent) instead of dropping them.
//
// # The client target
//
// The client target measures what an application using the official
// client gets: one client shared by the workers, configured to match the
// other gRPC targets, each request a client.Publish of its events,
// answered when every event has its final result. A rejection is REJECTED with its reason, as from the gateway; an event
// the client gave up on (*client.UndeliveredError: its retries ran out,
// or would outlast Timeout) is a failure of one event, client:UNDELIVERED.
// The report's Client block counts the gateway requests the client made
// and the events it retried and gave up on, by reason.
//
// What it blurs: a request is the caller's Publish, not a gateway
// request. The client merges the events of concurrent Publish calls into
// its batches and splits one Publish over several, so requests/s counts
// Publish calls, and a request's latency includes the client's linger
// (a batch not yet full waits up to Linger for more events), its queueing
// behind MaxInFlight, and every retry and its backoff or retry_after. A
// retryable refusal the client absorbed shows only in the Client block,
// not in Rejected or Failures. A Publish cut off by Timeout is a timeout
// even when some of its events were acknowledged; those are not in the
// ledger.
//
// # What is guaranteed
//
//   - Event ids are unique: RunID-<n>, n counting from 0 in send order.
//   - A request is either answered (per-event results, or a typed
//     whole-request refusal) or counted without an answer: a timeout (its
//     deadline passed), interrupted (the run was stopped) or an error. A
//     timeout is never counted as a success.
//   - The ledger lists exactly the acknowledged events (ACCEPTED or
//     DUPLICATE), one id per line, and is flushed before Run returns,
//     also when the run is interrupted.
//   - Latency percentiles come from a log-linear Histogram of fixed size,
//     each within RelativeError of the true value; Max is exact.
//
// # What it does not do
//
// It does not retry, except inside the client target's client: a refused
// request is counted, not resent. It does not check what reached Kafka; a
// fault suite reconciles the ledger with the topic for that.
package loadgen
