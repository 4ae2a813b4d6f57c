// Package faultsuite is sluice's end-to-end fault suite: the sluice binary
// (gateway and consumer as processes of their own) between real Apache
// Kafka and real PostgreSQL, under load, while faults are injected, with a
// ledger that accounts for every event.
//
// The suite is one test, TestIntegrationFaults, run when both
// SLUICE_KAFKA_BROKERS and SLUICE_POSTGRES_DSN are set and the broker and
// the server are the ones scripts/kafka.sh and scripts/postgres.sh manage
// (the suite stops and starts them). .ci/run does that.
// SLUICE_FAULTS_ONLY=name,name runs only those scenarios.
//
// Every scenario sends events with unique ids through REST and gRPC and
// records each identity (source and id, as the dedup window and the sinks
// key events) by its answer: acknowledged (ACCEPTED or DUPLICATE),
// rejected (a typed, non-retryable reason), or unanswered. Callers retry
// what the gateway asks them to retry (BUFFER_FULL, UNAVAILABLE,
// RATE_LIMITED, a dropped connection) with the same ids, as a client
// should. After the scenario the checker reads the sink table, the DLQ and
// the parked topics, then the sink's audit table and sluice.audit (where
// the consumer records the rows the table did not take), and reconciles:
//
//   - every acknowledged id is in the sink, the DLQ or the parked topic;
//     one that is in none is lost;
//   - no id is in the sink twice;
//   - no id the gateway rejected is anywhere;
//   - the audit trail holds every decision that put each acknowledged id
//     where it is: an id in the sink has exactly one written row without
//     detail (the write that stored it); each DLQ record of an id, in the
//     sink or not, has a dead_lettered row, and each parked record a
//     parked row, with its envelope's class, attempts, DLQ retries,
//     retryable, parked reason, group and sink, located at the record
//     decided on (the envelope's source record; for a record a drain
//     parked, the DLQ record drained). One that has not is an audit
//     mismatch.
//
// The consumer records a dead_lettered or parked row once its record is
// durable, so the checker waits for missing rows as it waits for lost
// ids, within the same bound. A record dead-lettered while the audit
// table (the sink's database) was away has its row in sluice.audit.
//
// An id in the sink counts as in the sink even when a DLQ record of it is
// still in the DLQ topic (it was retried from there); an id in both the DLQ
// and the parked topic counts as parked. The conflicts column counts the
// rows of the sink's conflicts table for the scenario: identities that
// arrived again with another payload, kept aside while the first stays.
// The conflicts-refused column counts copies of an acknowledged identity
// with another payload that the gateway refused IDEMPOTENCY_CONFLICT:
// refusals of a copy, counted as rejected, while the identity stays
// acknowledged with its first payload.
//
// The scenarios: steady load; gateway SIGKILLs, while it publishes and
// while its drainer empties the spool, with webhook deliveries in flight;
// Kafka and PostgreSQL stopped for 30 s; a consumer killed and one
// joining; two sources sending the same ids (both land; the same
// source's ids again after a restart are conflicts); a source sending ids
// it was answered for seconds ago again with other payloads, and ids twice in one request with two payloads
// (each changed copy refused, none published); poison events, small and
// near max_event_bytes (too large for the DLQ topic: parked with their
// envelope); the spool's disk filling (a tmpfs) during a Kafka outage,
// with cursor writes failing as the drain starts; a burst over the
// spool's cap, webhooks answered 503 in it.
//
// # Webhooks
//
// The gateway the suite runs has a third source, faults-hooks, with a
// Standard Webhooks block: its secret (whsec_ and 32 random bytes) in a
// file of the suite's temp dir, its deliveries in the spec's payload
// shape, {"type": "log.line", "timestamp": ..., "data": <a LogLine>},
// mapped by the source's type table to examples.logs.v1.LogLine, with
// occurred_at from /timestamp, the partition key from /data/service and
// the payload /data, onto the suite's one topic. The loads of steady,
// gateway-sigkill and burst-over-spool-cap run webhook senders beside
// the workers. A sender behaves as a provider: it signs each attempt with
// the Standard Webhooks library (not sluice's code) at the time it is sent;
// it retries on a 5xx, a timeout or a connection error, with the same
// webhook-id and the same body, after Retry-After or a backoff that starts
// above a second (so a retry carries a later webhook-timestamp and a fresh
// signature); any other answer is final. One delivery in fifty breaks the
// contract (422) and one in fifty is signed with another secret (401).
// The ledger records each delivery under (faults-hooks, webhook-id), so
// the checker holds acknowledged webhooks to the same accounting as
// pushed events: lost 0, dup-in-sink 0, audit-mismatch 0, no refused one
// anywhere. Beside it, for each such scenario:
//
//   - every answer says what its status says: a 2xx acknowledges, a 5xx
//     is retryable, a 4xx is not, each in the gateway's typed body;
//   - every record of the scenario's deliveries in the topic, each copy
//     (one published again after a SIGKILL, one the spool kept), verifies
//     again with the library from its sluice-webhook-body and
//     sluice-webhook-header-* headers alone, under its own webhook-id;
//     there is a record of every acknowledged delivery and none of a
//     forged one;
//   - gateway-sigkill: the senders met the kills (attempts without an
//     answer, deliveries acknowledged on a retry), each retry signed
//     again; burst-over-spool-cap: a sender was answered 503 and retried
//     until the spool took the delivery.
//
// A line per such scenario follows the table: deliveries, acknowledged
// (on a retry, DUPLICATE), refused 401 and 422, attempts, retries,
// answers by status, and records verified again.
//
// # Clients
//
// Five scenarios (client_test.go) have sluice's Go client, package
// client, as their load instead: a few clients over gRPC, each with
// callers that hand events over with Send (one at a time, the result to a
// callback) or Publish (a batch, waiting for the results), one in fifty
// breaking its contract. The events have no id: the client gives each one
// (UUIDv7), and the ledger records it from the result, so the checker
// selects the scenario's rows by those ids rather than by the run's
// prefix. They send as sources of their own, faults-client and
// faults-client-limited (a bucket of 100 events filled at 300 a second).
// Every event handed over must have exactly one final result, and:
//
//   - a success (ACCEPTED or DUPLICATE) is in the sink exactly once;
//   - a permanent rejection (*client.RejectionError) is nowhere, and is
//     the contract-breaking event's, SCHEMA_VIOLATION with its
//     violations; no good event is refused, no broken one succeeds;
//   - an undelivered event (*client.UndeliveredError) is one that was
//     handed over and neither succeeded nor was refused. It may be in the
//     sink, once: its request can reach the gateway and the answer be lost
//     when Close's deadline cancels it. It is never there twice;
//   - no attempt of an event begins before the retry_after the answer to
//     its previous attempt asked for, as a unary interceptor on the
//     clients' connections sees the requests and answers (not as the
//     client reports itself); Metrics.Request counts what it sees.
//
// client-kafka-stopped stops Kafka under a gateway whose spool holds
// 1 MiB: successes with durability LOCAL_DISK, then BUFFER_FULL, retried;
// everything lands once Kafka is back. client-rate-limited runs four
// clients of one caller each, publishing 50 events at a time against the
// limited source: RATE_LIMITED is retried, and the requests stay within
// (C+1)·A for C callers and A admitted requests (the derivation is in the
// scenario). client-gateway-sigkill SIGKILLs the gateway twice: requests
// go unanswered, events are sent again under their ids (Attempts > 1) and
// land once. client-mixed-batch publishes batches with one event in seven
// broken, each refused on its first attempt. client-close-during-outage
// stops the gateway and closes every client with a second's deadline:
// Close returns an *UndeliveredError naming exactly the undelivered
// events, which are what was handed over less the successes and the
// rejections; nothing else is undelivered in any client scenario.
//
// A line per client scenario follows: events handed over, succeeded
// (accepted/duplicate), rejected, undelivered (of them in the sink),
// handed-over ids in the sink, successes lost, ids twice in the sink,
// results with Attempts > 1, events retried by reason (Metrics.Retry),
// requests (Metrics.Request), LOCAL_DISK successes, and events the client
// did not take (Send or Publish after Close began).
package faultsuite
