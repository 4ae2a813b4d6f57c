// Package sink is where the consumer tier writes events: one small
// interface, Sink, and three implementations of it, SQLite (the embedded
// default), PostgreSQL and HTTP.
//
// # Usage
//
//	cfg := sink.DefaultConfig() // kind: sqlite
//	// or cfg.Kind = "postgres"; cfg.Postgres.DSN = ...
//	if err := cfg.Validate(); err != nil { ... } // "sink: <field>: <why>"
//	s, err := sink.Open(ctx, cfg)
//	...
//	err = s.Write(ctx, batch)
//	class, retryAfter := sink.Classify(err) // Transient or Permanent
//	...
//	s.Close()
//
// For PostgreSQL, create the table first with Migrate (sluice sink migrate);
// OpenPostgres refuses a missing table.
//
// # Contract
//
//   - Idempotent by event id. Writing an event a second time, in the same
//     batch or a later one, leaves the sink as the first write left it: the
//     first write of an id wins and later ones are no-ops (INSERT ... ON
//     CONFLICT (event_id) DO NOTHING; for HTTP, the Idempotency-Key header,
//     which the receiver must honour). Redelivery from Kafka, retries and
//     DLQ replays are therefore harmless.
//   - Write returns nil only when every event of the batch is durable in
//     the sink; the consumer may then commit their offsets. An error applies
//     to the whole batch.
//   - Every error from Write is a *Error saying Transient or Permanent
//     (Classify reads it). Each sink decides in one function per boundary:
//     classifySQLite, postgresClass/classifyPostgres and
//     HTTP.classifyResponse. Permanent means the same input will always
//     fail: the consumer dead-letters it at once. Anything unknown is
//     Transient. A failure that every event would meet alike (a missing
//     table, a missing grant, a wrong password, a redirecting URL) is the
//     sink's, not the event's, and is Transient, so that the breaker opens
//     instead of the DLQ filling.
//   - A batch holding an event no sink can store (empty id, id over 512
//     bytes or with control characters, text that is not UTF-8 or holds
//     NUL, a JSON rendering that is not JSON) is refused whole, before
//     anything is written, with a Permanent error wrapping ErrInvalidEvent
//     and naming the event's index.
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
// constraint, type and size errors Permanent. Reads (Count, Get, Recent,
// for sluice dev and tests) use separate connections and run beside a
// write.
//
// # PostgreSQL
//
// A pgx pool (PostgresConfig.MaxConns). A batch is one statement, INSERT
// ... SELECT FROM unnest($1::text[], ...) ON CONFLICT (event_id) DO NOTHING,
// so it is stored whole or not at all, in one round trip. Against a
// pgx.Batch of one INSERT per event (BenchmarkIntegrationPostgresInsert) it
// measured on par or faster from 10 to 1000 events per batch (up to 2.5
// times at 100), and slower only for a batch of one. Each Write
// is bounded by PostgresConfig.WriteTimeout. Errors are classified by
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
// sluice_sink_migrations, and refuses a table a newer binary migrated.
// PostgresDDL prints the same statements.
//
// # HTTP
//
// One POST per event, in batch order, stopping at the first failure (the
// events before it were delivered; a retry sends them again under the same
// key). Headers: Idempotency-Key (the event id), Content-Type:
// application/json, and HTTPConfig.Headers and HeadersFromEnv. Body:
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
// followed (they keep the POST); others are answered Transient.
//
// # Table layout
//
// The same columns in SQLite and PostgreSQL:
//
//	event_id            TEXT primary key    | text primary key
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
//
// The table name is configurable, a plain lowercase identifier, always
// quoted. written_at comes from the clock given with WithClock.
package sink
