-- An SQLite sink table as releases before the (source, event id) key
-- created it, with no version recorded; %[1]s is the quoted table name.
CREATE TABLE IF NOT EXISTS %[1]s (
	event_id           TEXT PRIMARY KEY NOT NULL,
	event_type         TEXT NOT NULL,
	source             TEXT NOT NULL,
	partition_key      TEXT NOT NULL,
	occurred_at        TEXT NOT NULL,
	ingested_at        TEXT NOT NULL,
	schema_fingerprint TEXT NOT NULL,
	payload            TEXT,
	value              BLOB NOT NULL,
	topic              TEXT NOT NULL,
	kafka_partition    INTEGER NOT NULL,
	kafka_offset       INTEGER NOT NULL,
	written_at         TEXT NOT NULL
)
