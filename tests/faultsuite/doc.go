// Package faultsuite is sluice's end-to-end fault suite: the sluice binary
// (gateway and consumer as processes of their own) between real Apache
// Kafka and real PostgreSQL, under load, while faults are injected, with a
// ledger that accounts for every event.
//
// # Running it
//
// The single-broker suite is one test, TestIntegrationFaults, run when both
// SLUICE_KAFKA_BROKERS and SLUICE_POSTGRES_DSN are set and the broker and
// the server are the ones scripts/kafka.sh and scripts/postgres.sh manage
// (the suite stops and starts them). .ci/run does that:
//
//	go test -count=1 -timeout 40m -run Integration -v ./tests/faultsuite
//
// SLUICE_FAULTS_ONLY=name,name runs only those scenarios, and
// SLUICE_FAULTS_SKIP=name,name leaves those out: the only way to turn a
// scenario off (CI runs them all).
//
// TestIntegrationClusterFaults (cluster_test.go) runs the cluster
// scenarios when SLUICE_KAFKA_CLUSTER=1 and SLUICE_KAFKA_BROKERS names the
// three nodes of `scripts/kafka.sh cluster up`. The suite drives the nodes
// with kafka.sh's node, leader, controller and cluster commands, in its
// own environment, so it must run with the SLUICE_KAFKA_CLUSTER_PORT and
// SLUICE_RUN that cluster up had (node 1's port is taken from
// SLUICE_KAFKA_BROKERS when SLUICE_KAFKA_CLUSTER_PORT is not set); it
// checks that kafka.sh's nodes are the brokers it was given. Run it alone
// (-run TestIntegrationClusterFaults): TestIntegrationFaults stops and
// starts the single broker, not the cluster's nodes.
//
//	export $(bash scripts/kafka.sh cluster up | tail -1) $(bash scripts/postgres.sh up | tail -1)
//	SLUICE_KAFKA_CLUSTER=1 go test -count=1 -timeout 40m -run TestIntegrationClusterFaults -v ./tests/faultsuite
//
// # The scenarios
//
// Steady load; gateway SIGKILLs while it publishes and while its drainer
// empties the spool; Kafka and PostgreSQL stopped for 30 s; a consumer
// killed and one joining; two sources sending the same ids; ids sent again
// with other payloads; poison events, small and too large for the DLQ
// topic (parked); the spool's disk (a tmpfs) filling during a Kafka
// outage; a burst over the spool's cap. Three of them run webhook senders
// beside the workers (webhook_test.go), and five have sluice's Go client
// as their load (client_test.go).
//
// Two are noisy neighbours (noisy_test.go), each on a gateway of its own
// with two sources, A and B, and their per-source limits and shares:
//
//   - noisy-neighbour: A at ten times its events/s, in batches of 100
//     over 8 streams and 16 callers of unary calls (twice its max_streams
//     and max_requests), beside B's steady 200 events/s, in phases of
//     500 ms of B alone and B beside A. B is refused nothing, and its p99
//     beside A is within 1.5 times its p99 alone, both measured in the
//     same run (two rounds of phases, pooled into one verdict), with the
//     consumer tier stopped while B is timed so that its work on the same
//     two cores is not in the measure; it drains everything after;
//     A is refused RATE_LIMITED, with a retry_after and a message naming
//     it, streams over its max_streams as a whole, and has at most its
//     quota acknowledged. A drops what is refused, as a flood would.
//   - noisy-neighbour-kafka-outage: Kafka stopped while A, without a rate,
//     floods: A's backlog fills its share of the spool (its guarantee and
//     the shared remainder) and A is refused BUFFER_FULL, while B is still
//     acknowledged LOCAL_DISK and never refused BUFFER_FULL; both sources
//     hold spool bytes (sluice_source_spool_bytes); once Kafka is back
//     everything acknowledged is in the sink.
//
// On the three-node cluster (cluster_test.go), every topic of the suite
// replicated three times with min.insync.replicas 2 and unclean leader
// election off, five scenarios break the cluster itself:
//
//   - leader-sigkill: the node leading the most of the load's records is
//     SIGKILLed; its partitions must get other leaders, and it starts
//     again 20 s later;
//   - broker-pause: that node is stopped with SIGSTOP for 15 s, past its
//     session timeout (9 s) and the replica lag bound (10 s), so that it
//     is fenced and its partitions led by others, then resumed: a zombie
//     broker;
//   - two-brokers-down: two of the three nodes stopped (SIGTERM) for 20 s:
//     no controller quorum, no second in-sync replica, no producer id. The
//     gateway must spool and answer LOCAL_DISK, and once they are back
//     drain its spool, with per-key order kept in the topic and the sink;
//   - rolling-restart-brokers: each node in turn stopped with SIGTERM and
//     started again under load, the next once every partition is in
//     sync, as an operator's upgrade does;
//   - controller-loss: the active controller (the quorum's leader)
//     SIGKILLed; another node must take over, and it starts again 20 s
//     later.
//
// Each fault returns the cluster whole, every node running and every
// partition in sync, even when it stops half-way, and prints a line after
// the table of what it did and saw and how long each step took. Each must
// end with unanswered 0 besides the ledger's and the topic checker's
// counts, and the gateway's producer must have judged no failed record
// permanent (sluice_produce_errors_total{class="permanent"}): a broker's
// fault is never the record's.
//
// Two more on the cluster have one of sluice's own processes as their
// fault (procs_test.go), and print a line of their own after the table:
//
//   - gateway-rolling-restart: two gateways, the same config but their
//     listeners and spools (both spool-first, so each always holds a
//     spool), behind the Go client given both, each through a TCP
//     endpoint standing for its Service endpoint. Under load, each in
//     turn is taken out of the endpoints and sent SIGTERM at once, as a
//     StatefulSet's rollout does: it drains its spool into Kafka
//     (admission.shutdown_drain) before it exits, and is started again
//     on its spool. Each exits 0 with nothing left in
//     its spool on disk (read with buffer.Inspect), the other answers
//     requests while it is away, and the clients use it again once it is
//     back; every event has one final result, none undelivered.
//   - zombie-consumer: three consumers; the one owning the most of the
//     topic's partitions is SIGSTOPped past its session timeout (45 s,
//     franz-go's default: the consumer sets none) until the group holds
//     its partitions without it, then resumed. It must log them lost, the
//     group's committed offsets, sampled every 50 ms, must never go back
//     (a commit for a partition it lost would), and no sink row of its
//     partitions held when it woke may be replaced (row version and write
//     time): what it writes on waking is absorbed by the sink's
//     ON CONFLICT DO NOTHING. Its line counts its refused commits, the
//     records it wrote from the pause to the loss and the written rows the
//     audit table holds as duplicates.
//
// Every scenario sends events with unique ids and records each identity
// (source and id) by its answer: acknowledged (ACCEPTED or DUPLICATE),
// rejected (a typed, non-retryable reason) or unanswered. Callers retry
// what the gateway asks them to (BUFFER_FULL, UNAVAILABLE, RATE_LIMITED,
// a dropped connection) with the same ids, as a client should.
//
// # What it proves
//
// After each scenario the checker reads the sink table, the DLQ and the
// parked topics, the sink's audit table and sluice.audit, and reconciles:
//
//   - lost 0: every acknowledged id is in the sink, the DLQ or the parked
//     topic;
//   - dup-in-sink 0: no id is in the sink twice;
//   - no id the gateway rejected is anywhere;
//   - audit-mismatch 0: an id in the sink has exactly one written row
//     without detail, and each DLQ or parked record of an id has its
//     dead_lettered or parked row, with its envelope's class, attempts,
//     retries, reason, group and sink, at the record decided on. The
//     checker waits for a missing row as for a lost id, within the same
//     bound;
//   - then the topic checker (topiccheck.go) reads the topic back with a
//     consumer of its own, from the scenario's start, per partition as
//     Jepsen's Kafka checker does. lost-offset 0: every Kafka position an
//     acknowledgement named (an ACCEPTED event's, a DUPLICATE's
//     original's) holds that event, and every acknowledged event has a
//     record (a LOCAL_DISK acknowledgement names no offset: its record
//     comes with the drain). out-of-order 0: when a caller had A's
//     acknowledgement before it first sent B, with the same key, A's
//     first record under that key comes before B's (no record under
//     another key), and the sink did not write B before
//     A (by its rows' write times; an event that went through the DLQ is
//     written after later ones by design and is left out). The load's
//     callers stamp their sends and every acknowledgement on one logical
//     clock; webhook, client and noisy-neighbour senders stamp only
//     acknowledgements, so their events are judged only as the earlier
//     of a pair. dup-in-topic counts the records beyond an event's first
//     (a retry after a lost answer, a spool replayed after a crash),
//     which the sink absorbs (dup-in-sink 0).
//
// The table also counts conflicts (identities that came again with another
// payload, kept aside in the sink's conflicts table) and copies refused
// IDEMPOTENCY_CONFLICT.
//
// Webhook senders behave as providers: each attempt signed with the
// Standard Webhooks library at the time it is sent, retried on a 5xx, a
// timeout or a dropped connection with the same webhook-id and body. Their
// deliveries are held to the same accounting, and besides: every answer
// says what its status says (2xx acknowledges, 5xx is retryable, 4xx is
// not); every record of a delivery in the topic verifies again with the
// library from its headers alone, there is one for every acknowledged
// delivery and none for a forged one; the SIGKILL and burst scenarios'
// senders met the faults and retried through them.
//
// The client scenarios let the client give ids. Every event handed over
// has exactly one final result: a success is in the sink exactly once; a
// rejection (*client.RejectionError) is nowhere and is a contract-breaking
// event's; an undelivered event (*client.UndeliveredError) is in the sink
// at most once. No attempt begins before the retry_after its previous
// answer asked for, as an interceptor on the connection sees it. Close
// during an outage names exactly the undelivered events.
//
// A line per scenario follows the table: what the topic checker read, per
// partition, and its counts; then a line per webhook and client scenario,
// a line per cluster fault, and how long each scenario took.
//
// # What it does not do
//
// It does not assert durations (the noisy neighbour's check is a ratio
// of two latencies measured in the same round), and it does not run
// under `go test ./...` without the environment above: it needs brokers
// and a database it may stop.
package faultsuite
