-- The audit table of an SQLite sink at schema version 3, as releases
-- before trace_id created it; %[1]s is its quoted name. The tables of
-- version 2 (sqlite-v2-tables.sql) come first.
CREATE TABLE %[1]s (
	source          TEXT NOT NULL,
	event_id        TEXT NOT NULL,
	sequence        INTEGER NOT NULL,
	action          TEXT NOT NULL,
	decided_at      TEXT NOT NULL,
	topic           TEXT NOT NULL,
	kafka_partition INTEGER NOT NULL,
	kafka_offset    INTEGER NOT NULL,
	event_type      TEXT NOT NULL,
	consumer_group  TEXT NOT NULL,
	sink            TEXT NOT NULL,
	error_class     TEXT NOT NULL,
	error           TEXT NOT NULL,
	attempt         INTEGER NOT NULL,
	dlq_retries     INTEGER NOT NULL,
	retryable       INTEGER NOT NULL,
	detail          TEXT NOT NULL,
	replay_id       TEXT NOT NULL,
	replay_actor    TEXT NOT NULL,
	PRIMARY KEY (source, event_id, sequence),
	UNIQUE (source, event_id, action, topic, kafka_partition, kafka_offset, attempt, dlq_retries, replay_id)
)
