// Package sink is where the consumer tier writes events: one small
// interface, Sink, and three implementations of it, SQLite (the embedded
// default), PostgreSQL and HTTP.
//
//	cfg := sink.NewDefaultConfig() // kind: sqlite
//	if err := cfg.Validate(); err != nil { ... } // "sink: <field>: <why>"
//	s, err := sink.Open(ctx, cfg)
//	conflicts, err := s.Write(ctx, batch)
//	class, retryAfter := sink.Classify(err) // Transient or Permanent
//	s.Close()
//
// # Contract
//
//   - Idempotent by identity, (Source, ID), the gateway's dedup key: the
//     first write of an identity wins and later ones are no-ops (ON
//     CONFLICT (source, event_id) DO NOTHING; for HTTP, the
//     Idempotency-Key header, which the receiver must honour). Redelivery,
//     retries and DLQ replays are harmless. Two sources may use one id.
//   - Every event carries a payload fingerprint (Fingerprint of its
//     deterministic protobuf encoding). An identity written again with the
//     same fingerprint is a duplicate; with another it is a conflict: the
//     first payload is kept, the copy is recorded (the table sinks'
//     <table>_conflicts, once per copy) and Write reports it as a Conflict.
//     Nothing is dropped in silence.
//   - Write returns nil only when every event of the batch is durable; the
//     consumer may then commit their offsets. An error applies to the whole
//     batch and comes with no conflicts.
//   - Every error from Write is a *Error, Transient or Permanent (Classify
//     reads it), decided in one function per sink. Permanent means the same
//     input will always fail: the consumer dead-letters it. Anything
//     unknown is Transient, and so is a failure every event would meet
//     alike (a missing table or grant, a wrong password, a redirecting
//     URL), so that the breaker opens instead of the DLQ filling.
//   - A batch holding an event no sink can store (an empty or over-512-byte
//     id or source, control characters, a malformed fingerprint, text that
//     is not UTF-8 or holds NUL, a rendering that is not JSON) is refused
//     whole, before anything is written: Permanent, wrapping
//     ErrInvalidEvent and naming the index.
//   - The table sinks keep an audit trail, <table>_audit (audit.Writer,
//     audit.Reader): every event Write stores or finds stored gets its
//     written row in its event row's transaction, so neither exists
//     without the other. A decision about one Kafka record is stored once,
//     so a record decided on again after a crash adds nothing; per
//     identity, sequences are dense and give the order of the decisions.
//   - After Close, Write fails Transient, wrapping ErrClosed. Close waits
//     for Writes in flight. The sinks keep no metrics and start no
//     goroutines of their own.
//
// # What survives a crash
//
// A batch is one transaction in SQLite and PostgreSQL: stored whole, with
// its conflicts and audit rows, or not at all. SQLite runs in WAL mode
// with synchronous=FULL by default, so an acknowledged batch survives a
// process crash and a power loss; NORMAL survives only a process crash
// and is offered for development. The HTTP sink sends one POST per event,
// in order, stopping at the first failure; a retry sends the delivered
// ones again under the same key.
//
// # Schema
//
// Both table sinks record their schema version per table in
// sluice_sink_migrations and refuse a table at another version than
// theirs (SQLiteSchemaVersion, PostgresSchemaVersion). OpenSQLite creates
// a missing table; PostgreSQL tables are created by Migrate (sluice sink
// migrate), and MigrateSQLite brings
// an older file up. Every migration statement is idempotent. Upgrading
// PostgreSQL: stop the older consumers, run sluice sink migrate, start
// the new ones. Events stored before version 3 have no audit rows; audit
// rows stored before version 4 have an empty trace id.
//
// # HTTP
//
// Idempotency-Key is IdempotencyKey(source, id). 2xx is success; 408,
// 429, 5xx, network errors and timeouts are Transient, with the
// receiver's Retry-After (capped by MaxRetryAfter); other 4xx are
// Permanent (*StatusError). Only 307 and 308 redirects on the URL's own
// origin are followed. A receiver finds conflicts for the sink by
// answering 2xx with the Sluice-Payload-Fingerprint it keeps; one that
// does not echo it gets no conflict detection. Errors name the URL with
// its query values redacted.
package sink
