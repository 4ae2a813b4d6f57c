-- An SQLite sink table and its conflicts table at schema version 2, as
-- releases before the audit table created them; %[1]s is the quoted table
-- name, %[2]s that of its conflicts table. The version is recorded apart.
CREATE TABLE %[1]s (
	event_id            TEXT NOT NULL,
	event_type          TEXT NOT NULL,
	source              TEXT NOT NULL,
	partition_key       TEXT NOT NULL,
	occurred_at         TEXT NOT NULL,
	ingested_at         TEXT NOT NULL,
	schema_fingerprint  TEXT NOT NULL,
	payload             TEXT,
	value               BLOB NOT NULL,
	topic               TEXT NOT NULL,
	kafka_partition     INTEGER NOT NULL,
	kafka_offset        INTEGER NOT NULL,
	written_at          TEXT NOT NULL,
	payload_fingerprint TEXT NOT NULL,
	PRIMARY KEY (source, event_id)
);
CREATE TABLE IF NOT EXISTS %[2]s (
	source              TEXT NOT NULL,
	event_id            TEXT NOT NULL,
	payload_fingerprint TEXT NOT NULL,
	stored_fingerprint  TEXT NOT NULL,
	event_type          TEXT NOT NULL,
	partition_key       TEXT NOT NULL,
	occurred_at         TEXT NOT NULL,
	ingested_at         TEXT NOT NULL,
	schema_fingerprint  TEXT NOT NULL,
	payload             TEXT,
	value               BLOB NOT NULL,
	topic               TEXT NOT NULL,
	kafka_partition     INTEGER NOT NULL,
	kafka_offset        INTEGER NOT NULL,
	first_seen_at       TEXT NOT NULL,
	PRIMARY KEY (source, event_id, payload_fingerprint)
);
