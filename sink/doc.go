// Package sink is where the consumer tier writes events: one small
// interface, Sink, and three implementations of it, SQLite (the embedded
// default), PostgreSQL and HTTP.
//
// # Usage
//
//	cfg := sink.NewDefaultConfig() // kind: sqlite
//	// or cfg.Kind = "postgres"; cfg.Postgres.DSN = ...
//	if err := cfg.Validate(); err != nil { ... } // "sink: <field>: <why>"
//	s, err := sink.Open(ctx, cfg)
//	...
//	conflicts, err := s.Write(ctx, batch)
//	class, retryAfter := sink.Classify(err) // Transient or Permanent
//	for _, c := range conflicts { ... batch[c.Index], c.StoredFingerprint ... }
//	err = s.(audit.Writer).Audit(ctx, rows)             // the table sinks: decisions without a write
//	rows, err := s.(audit.Reader).AuditRows(ctx, source, id) // an event's trail, in sequence order
//	...
//	s.Close()
//
// For PostgreSQL, create the table first with Migrate (sluice sink
// migrate); OpenPostgres refuses a missing table. Both table sinks refuse
// a table at another schema version than theirs; Migrate and MigrateSQLite
// (sluice sink migrate, --sqlite PATH for a file) bring an older one up.
//
// # Contract
//
//   - Idempotent by identity, (Source, ID): the same pair as the gateway's
//     dedup window. Writing an event a second time, in the same batch or a
//     later one, leaves the sink as the first write left it: the first
//     write of an identity wins and later ones are no-ops (INSERT ... ON
//     CONFLICT (source, event_id) DO NOTHING; for HTTP, the Idempotency-Key
//     header, which the receiver must honour). Redelivery from Kafka,
//     retries and DLQ replays are therefore harmless. Two sources may use
//     the same id: they are two events.
//   - Every event carries a payload fingerprint, Fingerprint of its
//     message's deterministic protobuf encoding (the consumer computes it
//     in Decode), so that two encodings of one message, fields or map
//     entries in another order, are the same payload. An identity written
//     again with the same fingerprint is a duplicate. With another one it
//     is a conflict: the first payload is kept, the copy is recorded (the
//     table sinks' conflicts table, below), and Write reports it as a
//     Conflict, by index in the batch with the fingerprint kept. The table
//     sinks report a copy once, when they first record it: a redelivered
//     conflicting event is a duplicate of its record. The caller counts and
//     logs them; nothing is dropped in silence.
//   - Write returns nil only when every event of the batch is durable in
//     the sink; the consumer may then commit their offsets. An error applies
//     to the whole batch and comes with no conflicts. A conflict whose
//     record was committed but whose Write failed after (an answer lost
//     with its connection) stays recorded and is not reported again.
//   - Every error from Write is a *Error saying Transient or Permanent
//     (Classify reads it). Each sink decides in one function per boundary:
//     classifySQLite, postgresClass/classifyPostgres and
//     HTTP.classifyResponse. Permanent means the same input will always
//     fail: the consumer dead-letters it at once. Anything unknown is
//     Transient. A failure that every event would meet alike (a missing
//     table, a missing grant, a wrong password, a redirecting URL) is the
//     sink's, not the event's, and is Transient, so that the breaker opens
//     instead of the DLQ filling.
//   - A batch holding an event no sink can store (an empty id or source, an
//     id or source over 512 bytes or with control characters, a payload
//     fingerprint not of Fingerprint's form, other text that is not UTF-8
//     or holds NUL, a JSON rendering that is not JSON) is refused whole,
//     before anything is written, with a Permanent error wrapping
//     ErrInvalidEvent and naming the event's index.
//   - The table sinks keep an audit trail (Audit trail, below): every
//     event Write stores, or finds stored, gets its written row in the
//     transaction of its event row, so neither exists without the other.
//   - After Close, Write fails with a Transient error wrapping ErrClosed.
//     Close waits for Writes in flight.
//   - The sinks keep no metrics and start no goroutines of their own (the
//     pgx pool's are stopped by Close); the consumer measures latency and
//     errors by class.
//
// # SQLite
//
// One database file in WAL mode, busy_timeout set, one writer connection;
// a batch is one IMMEDIATE transaction, so it is stored whole or not at all.
// synchronous=FULL by default: the WAL is synced at every commit, so an
// acknowledged batch survives a process crash, a kernel crash and a power
// loss. The consumer commits Kafka offsets once Write returns, so an
// acknowledged write lost later would be an event lost; NORMAL (syncing
// only at checkpoints) survives a process crash but not a power loss, and
// is offered for development. Busy, I/O and full-disk errors are Transient;
// constraint, type and size errors Permanent. An event not inserted is
// looked up and, with another fingerprint, inserted into the conflicts
// table in the same transaction. Reads (Count, Get, Recent, Conflicts, for
// sluice dev and tests) use separate connections and run beside a write.
//
// OpenSQLite creates a missing table, its conflicts table and its audit
// table at SQLiteSchemaVersion (3) and records the version in the file's
// sluice_sink_migrations table (table_name, version, applied_at); it
// refuses a table at another version. Version 1 is the layout of releases
// that recorded none: event_id alone the primary key, no
// payload_fingerprint. MigrateSQLite brings it to version 2 in one
// transaction: SQLite cannot change a primary key in place, so the table
// is rebuilt (created anew, rows copied with their rowids, dropped,
// renamed), each row's payload_fingerprint the digest of its stored value.
// Version 3 adds the audit table; the rows already held get no audit rows.
//
// # PostgreSQL
//
// A pgx pool (PostgresConfig.MaxConns). A batch is one transaction, so it
// is stored whole or not at all, its audit rows with it. It first takes
// the advisory lock of each identity of the batch (pg_advisory_xact_lock
// of a class of its own and a 32-bit hash of the identity, in key order),
// which every writer of audit rows holds (Audit trail, below). The events
// are one statement, INSERT ... SELECT FROM unnest($1::text[], ...) ON
// CONFLICT (source, event_id) DO NOTHING RETURNING source, event_id.
// Against a pgx.Batch of one INSERT per event
// (BenchmarkIntegrationPostgresInsert) it measured on par or faster from 10
// to 1000 events per batch (up to 2.5 times at 100), and slower only for a
// batch of one. When the insert skipped events (their identity was held),
// a second statement, over those events only, joins them to the table and
// inserts the ones with another fingerprint into the conflicts table, ON
// CONFLICT DO NOTHING RETURNING what it recorded, and a third reads the
// fingerprints held, to tell a duplicate's written row from a conflict's.
// The conflicts statement is one of its own because its snapshot must be
// taken after the insert returned: an insert that met a row of a
// concurrent, uncommitted write waited for that write and skipped its
// event, and only a later snapshot sees the row to compare with. Last,
// one statement inserts the batch's written rows. A batch takes three
// round trips besides BEGIN and COMMIT when every event is new. The audit
// rows are not free. Against the layout without them (schema version 2,
// one statement), in one run on a loopback server,
// BenchmarkIntegrationPostgresWrite measured 54% of the throughput at 100
// events per batch (43 µs an event against 23) and about half of it at
// one event per batch (0.6 to 0.9 ms a batch against 0.3 to 0.5, with
// generic plans: see parsePostgresConfig); BenchmarkSQLiteWrite 36% of it
// at 100 events per batch with synchronous=normal and 45% with full. That is the price of a second row, with two indexes, in the
// event's own transaction; a consumer under load writes batches of
// hundreds.
// Locks are taken
// in key order, rows are inserted in (source, event_id) order and conflict
// records in (source, event_id, payload_fingerprint) order, so concurrent
// batches cannot deadlock. Each Write is bounded by
// PostgresConfig.WriteTimeout. Errors are classified by
// SQLSTATE class, never by message: 22 (data), 23 (integrity), 42 (syntax
// and access rules, except undefined_table and insufficient_privilege), 0A,
// 21, 44 and 54 are Permanent; connection exceptions (08), rollbacks such
// as serialization failures and deadlocks (40), insufficient resources
// (53), operator intervention (57), system errors (58), internal errors
// (XX), errors with no SQLSTATE (dial failures, dropped connections,
// deadlines) and everything else are Transient. Times are stored with
// PostgreSQL's microsecond precision.
//
// Migrate creates the table and its indexes (on (event_type, occurred_at),
// (source, ingested_at) and (topic, kafka_partition, kafka_offset)) under an
// advisory lock, records the applied version per table in
// sluice_sink_migrations (table_name, version, applied_at), and refuses a
// table a newer binary migrated. Version 2 adds payload_fingerprint (for
// the rows already held 'sha256:' || encode(sha256(value), 'hex'): the
// digest of the stored bytes, equal to the canonical fingerprint for
// values the gateway encoded, as it encodes them deterministically),
// replaces the primary key on event_id by (source, event_id) and creates
// the conflicts table. It rewrites the table under an exclusive lock.
// Version 3 creates the audit table; the rows already held get no audit
// rows.
// Every statement is idempotent, so a version applied but not recorded
// runs again cleanly. PostgresDDL prints the same statements, each
// version's followed by the row recording it. Upgrading: stop the
// consumers of the older release (they cannot write to a version 2 table),
// run sluice sink migrate, start the new ones (they refuse a table at an
// older version).
//
// # HTTP
//
// One POST per event, in batch order, stopping at the first failure (the
// events before it were delivered; a retry sends them again under the same
// key). Headers: Idempotency-Key: IdempotencyKey(source, id), that is
// url.PathEscape(source) + "/" + url.PathEscape(id) (distinct identities,
// distinct keys); Sluice-Payload-Fingerprint: the event's payload
// fingerprint; Content-Type: application/json; and HTTPConfig.Headers and
// HeadersFromEnv (which may not set these). Body:
//
//	{"id": ..., "type": ..., "source": ..., "occurred_at": ..., "ingested_at": ...,
//	 "partition_key": ..., "schema_fingerprint": ..., "payload": <the event's JSON or null>}
//
// with times in RFC 3339, UTC, nine fractional digits. Each request is
// bounded by HTTPConfig.RequestTimeout. 2xx is success; 408, 429, 5xx,
// network errors and timeouts are Transient, with the receiver's
// Retry-After (delta-seconds or HTTP-date, capped by MaxRetryAfter) as
// Error.RetryAfter; other 4xx are Permanent, with the status and up to 512
// bytes of the body in a *StatusError. Up to 64 KiB of every response is
// read so the connection is reused. Only 307 and 308 redirects are
// followed (they keep the POST), and only on the origin of HTTPConfig.URL
// (scheme, host and port: https → http is another origin), with any
// client: a redirect elsewhere is refused before anything, headers or
// event, is sent there (outbound.ErrOffOrigin). Other redirects, and
// refused ones, are Transient: the endpoint is misconfigured, not the
// events, so the breaker opens and nothing is dead-lettered. Errors name
// the URL with its query values redacted (?token=REDACTED), since
// net/http's embed it.
//
// The HTTP sink cannot see the receiver's store, so conflicts are found
// only with its help: a receiver that answers 2xx with a
// Sluice-Payload-Fingerprint header holding the fingerprint it keeps under
// the key tells the sink of a conflict when that differs from the one
// sent, and Write reports it (StoredFingerprint: the header's value). The
// receiver keeps the record, and every delivery of the copy is reported
// again. A receiver that does not echo the header gets no conflict
// detection: a second payload under a key is then whatever the receiver
// makes of it. 409 and 422 are refusals (Permanent), whatever they carry.
//
// # Table layout
//
// The same columns in SQLite and PostgreSQL, schema version 2, primary
// key (source, event_id):
//
//	event_id            TEXT                | text
//	event_type          TEXT                | text
//	source              TEXT                | text
//	partition_key       TEXT                | text
//	occurred_at         TEXT (RFC 3339 UTC, nine fractional digits, sorts) | timestamptz
//	ingested_at         TEXT (same)         | timestamptz
//	schema_fingerprint  TEXT                | text
//	payload             TEXT, JSON or NULL  | jsonb or NULL
//	value               BLOB, protobuf      | bytea, protobuf
//	topic               TEXT                | text
//	kafka_partition     INTEGER             | integer
//	kafka_offset        INTEGER             | bigint
//	written_at          TEXT (as above)     | timestamptz
//	payload_fingerprint TEXT                | text ("sha256:" and 64 hex digits)
//
// The conflicts table, <table>_conflicts, holds one row per conflicting
// copy, primary key (source, event_id, payload_fingerprint), so a copy
// delivered again is not recorded again:
//
//	source, event_id     the identity
//	payload_fingerprint  the copy's fingerprint
//	stored_fingerprint   the fingerprint of the row kept in <table>
//	event_type, partition_key, occurred_at, ingested_at, schema_fingerprint,
//	payload, value, topic, kafka_partition, kafka_offset
//	                     the copy, as in <table>
//	first_seen_at        when the sink first saw the copy (the sink's clock)
//
// To count conflicts per source: SELECT source, count(*) FROM
// <table>_conflicts GROUP BY source.
//
// The table name is configurable, a plain lowercase identifier of at most
// 53 bytes (room for _conflicts within PostgreSQL's 63), always quoted.
// written_at, first_seen_at and the decided_at of written rows come from
// the clock given with WithClock.
//
// # Audit trail
//
// The audit table, <table>_audit, schema version 3, holds the decisions
// the consumer tier made about each event (audit.Row), the same columns in
// SQLite and PostgreSQL:
//
//	source, event_id   TEXT | text             the identity
//	sequence           INTEGER | bigint        1, 2, ... per identity
//	action             TEXT | text             written, dead_lettered, retried, parked, replayed
//	decided_at         TEXT (as above) | timestamptz
//	topic, kafka_partition, kafka_offset       the record decided on (audit.Row)
//	event_type, consumer_group, sink           TEXT | text
//	error_class, error TEXT | text             the failure's ("" for none)
//	attempt, dlq_retries INTEGER | integer
//	retryable          INTEGER 0/1 | boolean
//	detail             TEXT | text             parked reason, duplicate, conflict, ...
//	replay_id, replay_actor TEXT | text        the replay's ("" for none)
//	PRIMARY KEY (source, event_id, sequence)
//	UNIQUE (source, event_id, action, topic, kafka_partition, kafka_offset,
//	        attempt, dlq_retries, replay_id)
//
// The primary key is the index an event's trail is read by (AuditRows:
// WHERE source = ? AND event_id = ? ORDER BY sequence). Every text column
// is NOT NULL, empty for none.
//
// Write inserts a written row for every event of the batch in the
// transaction of its event row: detail empty for the event it stored,
// duplicate for one whose identity it held with the same payload (another
// record of the same event: a client's retry, a spool replay, a DLQ
// replay), conflict for a copy with another payload (the copy is in the
// conflicts table). Audit inserts the other decisions, in a transaction
// of its own; an invalid row (an identity Write would refuse, an unknown
// action, text that is not UTF-8 or holds NUL) refuses the whole call,
// Permanent, wrapping ErrInvalidAuditRow. Error and detail are kept as
// valid UTF-8 without NUL, at most 4096 bytes.
//
// A sequence is max(sequence) + 1 of its identity, taken in the
// transaction that inserts the row. The SQLite file has one writer at a
// time (IMMEDIATE transactions, across processes too: sluice dlq replay
// audits into the file the consumer writes); in PostgreSQL every
// transaction that inserts audit rows first holds its identities'
// advisory locks. Sequences are dense and give the order the rows were
// recorded in.
//
// Idempotency: the unique key is a decision about one Kafka record. A row
// the table holds already is not inserted again (ON CONFLICT ... DO
// NOTHING; PostgreSQL leaves such rows out before numbering, so no
// sequence is skipped), so a record decided on again after a crash,
// before its offset was committed, adds nothing: a redelivered record
// whose written row exists, a dead letter produced again with the same
// attempts, a drained record retried again. A decision repeated with
// another attempt count, DLQ retry or replay is another row. Rows of one
// call that repeat one another are stored once.
//
// Events stored before version 3 have no audit rows.
package sink
