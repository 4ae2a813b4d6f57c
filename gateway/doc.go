// Package gateway is sluice's front door: the sluice.ingest.v1
// IngestService over gRPC (Publish, PublishStream) and, through
// grpc-gateway, over REST (POST /v1/events), plus signed webhooks and
// CloudEvents. Service judges events; Server serves it on its listeners.
//
// # What happens to a request
//
//  1. The caller's source is found from its API key (x-api-key, or
//     Authorization: Bearer; stored as SHA-256 digests only) or, without
//     one, from a verified client certificate, before its body or message
//     is read. A caller that is no source is UNAUTHENTICATED and holds
//     nothing an authenticated one needs. A key, when sent, decides alone.
//  2. It takes a place among its source's requests (max_requests) and is
//     charged to its source's share of the memory budget before it is
//     read; an uncompressed REST body of known length is charged to the
//     source's bytes/s bucket then too. It is bounded by MaxRequestBytes
//     on the wire and decompressed.
//  3. The envelope is decoded strictly: what breaks the structure refuses
//     the request, what is wrong inside one event refuses that event.
//  4. The source's buckets are charged: one token per event, and, unless
//     taken in 2, one per byte.
//  5. Each event on its own: envelope rules, the source's allowed types, a
//     loaded contract, the payload size, the occurred_at skew window, then
//     decode and protovalidate against the contract (package contract).
//  6. The dedup window (see Identity).
//  7. The rest go to admission in request order, so one key keeps its
//     order, and each is answered ACCEPTED only once it is durable.
//
// # Identity
//
// (source, id) names one event. Sent again with the same payload (the
// same canonical binary, contract.Canonical) it is DUPLICATE, a success,
// with the position its original was answered with; with another payload
// it is refused IDEMPOTENCY_CONFLICT, with both fingerprints, counted and
// logged. A repeat within one request is caught here, with dedup off too;
// one within the dedup window by the window; one past it, after a
// restart, or on another replica by the sinks, which keep the first.
// While one attempt of an id is being published, others wait for its
// outcome: concurrent retries make one record, and no caller hears
// DUPLICATE for an event that then fails.
//
// # Sources are tenants
//
// Each budget a request holds a place in (request memory, the receiving
// places of gRPC Publish calls, the stream slots) is split among the
// configured sources (tenancy.go, internal/share): Limits.ReservedShare of
// it as guarantees by each source's share, the rest lent to any source
// that has used its own and given back as its holders finish. A source
// waits and is refused on its own account: over its share while room is
// left (others' guarantees) it is RATE_LIMITED, naming itself and the
// budget; UNAVAILABLE stays for a budget that is full. A source's
// events/s and bytes/s, max_requests and max_streams are its own, so one
// source over any of them is refused RATE_LIMITED with retry_after and
// the others' answers do not change. SetReplicas divides the rates among
// the gateways that share the traffic.
//
// # Guarantees
//
//   - Every event gets a result at its index: ACCEPTED with its durability
//     (KAFKA: acknowledged with acks=all; LOCAL_DISK: written to the local
//     spool, package buffer) and its position (Kafka topic, partition and
//     offset, or the answering gateway's spool position), DUPLICATE with
//     the original's position, or REJECTED with a reason from the one
//     Reason enum, its retryable flag, retry_after where one applies, and
//     field violations where a rule failed. gRPC and REST carry the same
//     results. Nothing answered ACCEPTED exists only in memory.
//   - Bad input is a typed refusal (MALFORMED: INVALID_ARGUMENT, 400),
//     never a panic, a bare INTERNAL or a 5xx. Whole-request refusals carry
//     ErrorInfo and RetryInfo on gRPC, the same fields as JSON with the
//     reason's HTTP status and Retry-After on REST. A gRPC request whose
//     every event was refused for one pressure reason is refused whole,
//     UNAVAILABLE, so retry policies see it. A REST batch is 200 when every
//     event succeeded, 207 when some did, and otherwise the status its
//     events' reasons share, or 422 when they differ.
//   - Nothing waits unbounded: an event waits until PublishTimeout or
//     shortly before the caller's deadline, then is UNAVAILABLE,
//     retryable; a full spool answers BUFFER_FULL with the spool's
//     estimate of the wait.
//   - Everything held is bounded: requests by RequestMemoryBytes (half for
//     requests, half for stream batches, so neither starves the other),
//     checking by CheckingEvents, each stream's batches in flight by
//     StreamWindow and StreamWindowBytes (a full window stops reading, and
//     HTTP/2 flow control slows the sender), streams and calls by
//     MaxStreams and UnauthenticatedStreams, the dedup window by
//     MaxEntries, answers' violations by MaxViolationsPerEvent and
//     MaxViolationsPerResponse. A PublishStream that makes no progress for
//     StreamIdleTimeout is ended UNAVAILABLE.
//   - Server.Shutdown stops accepting, ends each PublishStream once its
//     batches in flight are answered (UNAVAILABLE with a retry delay; a
//     batch not yet read has no answer and is sent again), and waits for
//     every goroutine it started.
//   - A listener with a TLS block serves TLS 1.2 or newer, its files
//     reloaded on change for new connections (package tlsfiles); only a
//     verified client certificate chain identifies a source.
//   - With HTTP.OpenAPI, GET /openapi.json and GET /docs (package
//     gateway/openapi) describe what this gateway takes, never narrower.
//
// # What survives a crash
//
// What was answered ACCEPTED, as its durability says: Kafka's, or the
// spool's (package buffer), which the drainer publishes after a restart.
// The dedup window, the rate buckets and requests in flight are memory
// and are lost; an event whose caller heard no answer is sent again and
// may become a second record, which the sinks absorb by event id.
//
// # What it does not do
//
//   - The dedup window is per process: replicas may publish an id again;
//     the sinks' upsert by event id makes the effect happen once.
//   - Without a spool, events are refused UNAVAILABLE while Kafka is down.
//   - Answers gRPC or net/http give themselves carry no ErrorInfo: a
//     message over twice MaxRequestBytes, one past ReceiveTimeout, a unary
//     call without one message, headers over their bound, a request line
//     net/http cannot parse.
//   - Metrics and probes are not on the API listeners: internal/admin
//     serves them on a listener of its own.
package gateway
