package sink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/internal/clip"
	"github.com/sluicehq/sluice/internal/utctime"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite is the embedded sink: one database file in WAL mode, written by
// one connection, one transaction per batch.
type SQLite struct {
	table, conflicts, audit string // quoted
	now                     func() time.Time

	// w is the single writer connection; r serves the read helpers, which
	// WAL lets run beside a write.
	w, r *sql.DB

	insert, stored, record, auditInsert, auditRows string

	mu     sync.RWMutex // guards closed against Close during Write
	closed bool
}

var (
	_ Sink         = (*SQLite)(nil)
	_ audit.Writer = (*SQLite)(nil)
	_ audit.Reader = (*SQLite)(nil)
)

// SQLiteSchemaVersion is the newest version of the table layout; OpenSQLite
// creates a missing table at it and refuses any other. Version 1 is the
// layout of the binaries that recorded no version: event_id alone the
// primary key, no payload_fingerprint, no conflicts table. Version 2 has
// no audit table; version 3 no trace_id in it.
const SQLiteSchemaVersion = 4

// sqliteTable and sqliteConflictsTable create the tables of the newest
// version; %[1]s is the quoted name. Times are text in utctime.Layout (UTC,
// nine fractional digits) so they sort.
const (
	sqliteTable = `CREATE TABLE %[1]s (
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
)`
	sqliteConflictsTable = `CREATE TABLE IF NOT EXISTS %[1]s (
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
)`
	// sqliteAuditTable is the audit table, <table>_audit: one row per
	// decision about an event (audit.Row), keyed by (source, event_id,
	// sequence), which is also the index an event's trail is read by. The
	// unique key is what makes two rows one decision.
	sqliteAuditTable = `CREATE TABLE IF NOT EXISTS %[1]s (
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
	trace_id        TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (source, event_id, sequence),
	UNIQUE (` + auditDecisionKey + `)
)`
	// sqliteMigrationsTable records which versions of which sink table
	// the file holds, as sluice_sink_migrations does in PostgreSQL.
	sqliteMigrationsTable = `CREATE TABLE IF NOT EXISTS sluice_sink_migrations (
	table_name TEXT NOT NULL,
	version    INTEGER NOT NULL,
	applied_at TEXT NOT NULL,
	PRIMARY KEY (table_name, version)
)`
)

// v1Columns are the columns of a version 1 table, rowColumns those of the
// newest, in the order Row is scanned.
const (
	v1Columns = `event_id, event_type, source, partition_key, occurred_at, ingested_at,
	schema_fingerprint, payload, value, topic, kafka_partition, kafka_offset, written_at`
	rowColumns = v1Columns + `, payload_fingerprint`
	// conflictColumns are the columns of a conflicts table, in the order
	// ConflictRecord is scanned.
	conflictColumns = `event_id, event_type, source, partition_key, occurred_at, ingested_at,
	schema_fingerprint, payload, value, topic, kafka_partition, kafka_offset, first_seen_at,
	payload_fingerprint, stored_fingerprint`
)

// sqliteMigrations[v-2] brings a table from version v-1 to v, inside the
// transaction of MigrateSQLite.
var sqliteMigrations = [SQLiteSchemaVersion - 1]func(ctx context.Context, tx *sql.Tx, table string, now time.Time) error{
	migrateSQLiteV2,
	migrateSQLiteV3,
	migrateSQLiteV4,
}

// openSQLiteWriter opens the writer connection of cfg's file.
func openSQLiteWriter(cfg SQLiteConfig) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", cfg.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+cfg.Synchronous+")")
	// IMMEDIATE takes the write lock at BEGIN, so a busy file fails (or
	// waits busy_timeout) before any row is written rather than at COMMIT.
	q.Set("_txlock", "immediate")
	w, err := sql.Open("sqlite", cfg.Path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sink: sqlite: open %s: %w", cfg.Path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	return w, nil
}

// openSQLiteReader opens the read-only connections of cfg's file.
func openSQLiteReader(cfg SQLiteConfig) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", cfg.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "query_only(1)")
	r, err := sql.Open("sqlite", cfg.Path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sink: sqlite: open %s for reading: %w", cfg.Path, err)
	}
	r.SetMaxOpenConns(4)
	return r, nil
}

// OpenSQLite opens (creating when missing) the database file and its
// tables. A missing table is created at SQLiteSchemaVersion; a table at an
// older version is refused until MigrateSQLite (sluice sink migrate)
// brings it up, and one at a newer version is refused.
func OpenSQLite(ctx context.Context, cfg SQLiteConfig, opts ...Option) (*SQLite, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	o := buildOptions(opts)
	w, err := openSQLiteWriter(cfg)
	if err != nil {
		return nil, err
	}
	if err := prepareSQLite(ctx, w, cfg, o.now()); err != nil {
		w.Close()
		return nil, err
	}

	r, err := openSQLiteReader(cfg)
	if err != nil {
		w.Close()
		return nil, err
	}

	table, conflicts, audit := quoteIdent(cfg.Table), quoteIdent(cfg.Table+conflictsSuffix), quoteIdent(cfg.Table+auditSuffix)
	return &SQLite{
		table:     table,
		conflicts: conflicts,
		audit:     audit,
		now:       o.now,
		w:         w,
		r:         r,
		insert: fmt.Sprintf(`INSERT INTO %s (%s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (source, event_id) DO NOTHING`, table, rowColumns),
		stored: fmt.Sprintf(`SELECT payload_fingerprint FROM %s WHERE source = ? AND event_id = ?`, table),
		record: fmt.Sprintf(`INSERT INTO %s (%s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (source, event_id, payload_fingerprint) DO NOTHING`, conflicts, conflictColumns),
		// The writer is the file's only one (IMMEDIATE transactions, in
		// this process and any other), so max + 1 is the next sequence.
		auditInsert: fmt.Sprintf(`INSERT INTO %[1]s (%[2]s)
			SELECT ?1, ?2, coalesce(max(sequence), 0) + 1, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19
			FROM %[1]s WHERE source = ?1 AND event_id = ?2
			ON CONFLICT (%[3]s) DO NOTHING`, audit, auditColumns, auditDecisionKey),
		auditRows: sqliteAuditRowsQuery(audit),
	}, nil
}

// prepareSQLite creates cfg's table at the newest version when it is
// missing and checks its version otherwise.
func prepareSQLite(ctx context.Context, w *sql.DB, cfg SQLiteConfig, now time.Time) error {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sink: sqlite: open %s: %w", cfg.Path, err)
	}
	defer tx.Rollback() // no-op after Commit
	v, err := sqliteVersion(ctx, tx, cfg.Table)
	if err != nil {
		return fmt.Errorf("sink: sqlite: %s: %w", cfg.Path, err)
	}
	switch {
	case v == 0:
		if err := createSQLite(ctx, tx, cfg.Table, now); err != nil {
			return fmt.Errorf("sink: sqlite: create table %s in %s: %w", cfg.Table, cfg.Path, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("sink: sqlite: create table %s in %s: %w", cfg.Table, cfg.Path, err)
		}
		return nil
	case v < SQLiteSchemaVersion:
		return fmt.Errorf("sink: sqlite: table %s in %s is at schema version %d, this binary needs %d: run sluice sink migrate",
			cfg.Table, cfg.Path, v, SQLiteSchemaVersion)
	case v > SQLiteSchemaVersion:
		return fmt.Errorf("sink: sqlite: table %s in %s is at schema version %d, newer than this binary's %d",
			cfg.Table, cfg.Path, v, SQLiteSchemaVersion)
	}
	return nil
}

// MigrateSQLite brings cfg's table to SQLiteSchemaVersion (creating it
// when missing) in one transaction, and records the version in the file's
// sluice_sink_migrations table. Running it again is a no-op; a table a
// newer binary migrated is refused. Stop the consumers writing to the file
// first: a migration rebuilds the table.
func MigrateSQLite(ctx context.Context, cfg SQLiteConfig) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	w, err := openSQLiteWriter(cfg)
	if err != nil {
		return err
	}
	defer w.Close()
	now := time.Now()
	err = func() error {
		tx, err := w.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() // no-op after Commit
		applied, err := sqliteVersion(ctx, tx, cfg.Table)
		if err != nil {
			return err
		}
		switch {
		case applied == 0:
			if err := createSQLite(ctx, tx, cfg.Table, now); err != nil {
				return err
			}
			applied = SQLiteSchemaVersion
		case applied > SQLiteSchemaVersion:
			return fmt.Errorf("table %s is at schema version %d, newer than this binary's %d", cfg.Table, applied, SQLiteSchemaVersion)
		}
		for v := applied + 1; v <= SQLiteSchemaVersion; v++ {
			if err := sqliteMigrations[v-2](ctx, tx, cfg.Table, now); err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			if err := recordSQLiteVersion(ctx, tx, cfg.Table, v, now); err != nil {
				return fmt.Errorf("record version %d: %w", v, err)
			}
		}
		return tx.Commit()
	}()
	if err != nil {
		return fmt.Errorf("sink: sqlite: migrate %s in %s: %w", cfg.Table, cfg.Path, err)
	}
	return nil
}

// sqliteVersion returns the schema version of table: 0 when the file has
// no such table, 1 when it has one but no version recorded for it (it was
// created before versions were), else the newest recorded.
func sqliteVersion(ctx context.Context, tx *sql.Tx, table string) (int, error) {
	var tables int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
		table).Scan(&tables); err != nil {
		return 0, fmt.Errorf("look up table %s: %w", table, err)
	}
	if tables == 0 {
		return 0, nil
	}
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'sluice_sink_migrations'").
		Scan(&tables); err != nil {
		return 0, fmt.Errorf("look up sluice_sink_migrations: %w", err)
	}
	if tables == 0 {
		return 1, nil
	}
	var v int
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(version), 1) FROM sluice_sink_migrations WHERE table_name = ?",
		table).Scan(&v); err != nil {
		return 0, fmt.Errorf("read applied version: %w", err)
	}
	return v, nil
}

// createSQLite creates table and its conflicts table at the newest version
// and records it.
func createSQLite(ctx context.Context, tx *sql.Tx, table string, now time.Time) error {
	for _, ddl := range []string{
		fmt.Sprintf(sqliteTable, quoteIdent(table)),
		fmt.Sprintf(sqliteConflictsTable, quoteIdent(table+conflictsSuffix)),
		fmt.Sprintf(sqliteAuditTable, quoteIdent(table+auditSuffix)),
	} {
		if _, err := tx.ExecContext(ctx, ddl); err != nil {
			return err
		}
	}
	return recordSQLiteVersion(ctx, tx, table, SQLiteSchemaVersion, now)
}

func recordSQLiteVersion(ctx context.Context, tx *sql.Tx, table string, v int, now time.Time) error {
	if _, err := tx.ExecContext(ctx, sqliteMigrationsTable); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO sluice_sink_migrations (table_name, version, applied_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
		table, v, utctime.Format(now))
	return err
}

// migrateSQLiteV2 keys table by (source, event_id) and adds
// payload_fingerprint, Fingerprint(value) for the rows it holds, and the
// conflicts table. SQLite cannot change a primary key in place, so the
// table is rebuilt: create the new one, copy the rows (rowids kept, so
// Recent's order is too), drop the old one, rename.
func migrateSQLiteV2(ctx context.Context, tx *sql.Tx, table string, _ time.Time) error {
	old, next := quoteIdent(table), quoteIdent(table+"_v2_migration")
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(sqliteTable, next)); err != nil {
		return fmt.Errorf("create %s: %w", next, err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (rowid, %s) SELECT rowid, %s, '' FROM %s ORDER BY rowid",
		next, rowColumns, v1Columns, old)); err != nil {
		return fmt.Errorf("copy rows: %w", err)
	}
	// The digest is computed here, a bounded chunk of rows at a time.
	const chunk = 256
	type fingerprinted struct {
		rowid int64
		fp    string
	}
	for after := int64(math.MinInt64); ; {
		rs, err := tx.QueryContext(ctx, fmt.Sprintf("SELECT rowid, value FROM %s WHERE rowid > ? ORDER BY rowid LIMIT %d", next, chunk), after)
		if err != nil {
			return fmt.Errorf("read values: %w", err)
		}
		var rows []fingerprinted
		for rs.Next() {
			var (
				f     fingerprinted
				value []byte
			)
			if err := rs.Scan(&f.rowid, &value); err != nil {
				rs.Close()
				return fmt.Errorf("read values: %w", err)
			}
			f.fp = Fingerprint(value)
			rows = append(rows, f)
		}
		if err := errors.Join(rs.Err(), rs.Close()); err != nil {
			return fmt.Errorf("read values: %w", err)
		}
		for _, f := range rows {
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET payload_fingerprint = ? WHERE rowid = ?", next), f.fp, f.rowid); err != nil {
				return fmt.Errorf("set payload_fingerprint: %w", err)
			}
		}
		if len(rows) < chunk {
			break
		}
		after = rows[len(rows)-1].rowid
	}
	for _, stmt := range []string{
		"DROP TABLE " + old,
		fmt.Sprintf("ALTER TABLE %s RENAME TO %s", next, old),
		fmt.Sprintf(sqliteConflictsTable, quoteIdent(table+conflictsSuffix)),
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// migrateSQLiteV3 creates the audit table. The events already held get
// no rows: their decisions were not recorded.
func migrateSQLiteV3(ctx context.Context, tx *sql.Tx, table string, _ time.Time) error {
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(sqliteAuditTable, quoteIdent(table+auditSuffix))); err != nil {
		return fmt.Errorf("create %s: %w", quoteIdent(table+auditSuffix), err)
	}
	return nil
}

// migrateSQLiteV4 adds the audit table's trace_id, empty for the rows it
// holds. SQLite has no ADD COLUMN IF NOT EXISTS: the column is added
// when the table does not have it (a version 3 table, or an audit table
// version 3 created from this binary's DDL).
func migrateSQLiteV4(ctx context.Context, tx *sql.Tx, table string, _ time.Time) error {
	auditTable := quoteIdent(table + auditSuffix)
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM pragma_table_info(?) WHERE name = 'trace_id'", table+auditSuffix).Scan(&n); err != nil {
		return fmt.Errorf("read the columns of %s: %w", auditTable, err)
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "ALTER TABLE "+auditTable+" ADD COLUMN trace_id TEXT NOT NULL DEFAULT ''"); err != nil {
		return fmt.Errorf("add trace_id to %s: %w", auditTable, err)
	}
	return nil
}

// Name returns "sqlite".
func (s *SQLite) Name() string { return KindSQLite }

// Write inserts batch in one transaction; events whose identity is
// already stored, in the table or earlier in batch, are left as they are,
// and those among them with another payload fingerprint are recorded in
// the conflicts table. Every event gets its written row in the audit
// table in the same transaction (audit.DetailDuplicate or
// audit.DetailConflict when it stored nothing new), unless the table holds
// that record's written row already. It returns nil once the transaction
// is committed (synced per SQLiteConfig.Synchronous), with the conflicts
// it recorded.
func (s *SQLite) Write(ctx context.Context, batch []Event) ([]Conflict, error) {
	if err := checkBatch(batch); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, TransientError(ErrClosed, 0)
	}
	if len(batch) == 0 {
		return nil, nil
	}
	conflicts, err := s.write(ctx, batch)
	if err != nil {
		return nil, classifySQLite(err)
	}
	return conflicts, nil
}

func (s *SQLite) write(ctx context.Context, batch []Event) ([]Conflict, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() // no-op after Commit
	stmt, err := tx.PrepareContext(ctx, s.insert)
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	audit, err := tx.PrepareContext(ctx, s.auditInsert)
	if err != nil {
		return nil, err
	}
	defer audit.Close()
	now := s.now()
	written := utctime.Format(now)
	var conflicts []Conflict
	for i := range batch {
		e := &batch[i]
		var payload any // NULL when the event has no JSON
		if len(e.JSON) > 0 {
			payload = string(e.JSON)
		}
		value := e.Value
		if value == nil {
			value = []byte{}
		}
		res, err := stmt.ExecContext(ctx,
			e.ID, e.Type, e.Source, string(e.Key),
			utctime.Format(e.OccurredAt), utctime.Format(e.IngestedAt), e.SchemaFingerprint,
			payload, value, e.Topic, e.Partition, e.Offset, written, e.PayloadFingerprint,
		)
		if err != nil {
			return nil, fmt.Errorf("event %d (source %q, id %q): %w", i, clip.String(e.Source, 64), clip.String(e.ID, 64), err)
		}
		inserted, err := res.RowsAffected()
		if err != nil {
			return nil, err
		}
		detail, err := s.writtenDetail(ctx, tx, i, e, inserted == 1, payload, value, written, &conflicts)
		if err != nil {
			return nil, err
		}
		row := WrittenRow(e, KindSQLite, now, detail)
		if _, err := audit.ExecContext(ctx, sqliteAuditArgs(&row, written)...); err != nil {
			return nil, fmt.Errorf("event %d (source %q, id %q): audit row: %w", i, clip.String(e.Source, 64), clip.String(e.ID, 64), err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return conflicts, nil
}

// writtenDetail returns the detail of the written row of batch[i], e: "" when its
// insert stored it, else audit.DetailDuplicate, or audit.DetailConflict
// once the copy is in the conflicts table (appended to conflicts when
// this write recorded it).
func (s *SQLite) writtenDetail(ctx context.Context, tx *sql.Tx, i int, e *Event, inserted bool, payload any, value []byte, written string, conflicts *[]Conflict) (string, error) {
	if inserted {
		return "", nil
	}
	// The identity was held: a duplicate, or a conflict to record.
	var stored string
	if err := tx.QueryRowContext(ctx, s.stored, e.Source, e.ID).Scan(&stored); err != nil {
		return "", fmt.Errorf("event %d (source %q, id %q): read stored fingerprint: %w", i, clip.String(e.Source, 64), clip.String(e.ID, 64), err)
	}
	if stored == e.PayloadFingerprint {
		return audit.DetailDuplicate, nil
	}
	res, err := tx.ExecContext(ctx, s.record,
		e.ID, e.Type, e.Source, string(e.Key),
		utctime.Format(e.OccurredAt), utctime.Format(e.IngestedAt), e.SchemaFingerprint,
		payload, value, e.Topic, e.Partition, e.Offset, written, e.PayloadFingerprint, stored,
	)
	if err != nil {
		return "", fmt.Errorf("event %d (source %q, id %q): record conflict: %w", i, clip.String(e.Source, 64), clip.String(e.ID, 64), err)
	}
	recorded, err := res.RowsAffected()
	if err != nil {
		return "", err
	}
	if recorded == 1 { // else an earlier write recorded this copy
		*conflicts = append(*conflicts, Conflict{Index: i, StoredFingerprint: stored})
	}
	return audit.DetailConflict, nil
}

// sqliteAuditArgs are the arguments of auditInsert for r, decided at at
// (utctime.Format of r.At).
func sqliteAuditArgs(r *audit.Row, at string) []any {
	return []any{r.Source, r.EventID, string(r.Action), at, r.Topic, r.Partition, r.Offset, r.EventType,
		r.Group, r.Sink, r.Class, r.Error, r.Attempt, r.DLQRetries, r.Retryable, r.Detail, r.ReplayID, r.Actor, r.TraceID}
}

// Audit records rows in one transaction, each after the rows the table
// holds for its event; a row the table holds already (the same decision
// about the same record) is not recorded again. A row with no At is
// stamped with the sink's clock.
func (s *SQLite) Audit(ctx context.Context, rows []audit.Row) error {
	rows, err := prepareAudit(rows, s.now())
	if err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return TransientError(ErrClosed, 0)
	}
	if len(rows) == 0 {
		return nil
	}
	err = func() error {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() // no-op after Commit
		stmt, err := tx.PrepareContext(ctx, s.auditInsert)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for i := range rows {
			r := &rows[i]
			if _, err := stmt.ExecContext(ctx, sqliteAuditArgs(r, utctime.Format(r.At))...); err != nil {
				return fmt.Errorf("audit row %d (source %q, id %q): %w", i, clip.String(r.Source, 64), clip.String(r.EventID, 64), err)
			}
		}
		return tx.Commit()
	}()
	if err != nil {
		return classifySQLite(err)
	}
	return nil
}

// AuditRows returns the audit rows of identity (source, id), in sequence
// order; none for an identity with no decision recorded.
func (s *SQLite) AuditRows(ctx context.Context, source, id string) ([]audit.Row, error) {
	return sqliteAuditRows(ctx, s.r, s.auditRows, source, id)
}

func sqliteAuditRows(ctx context.Context, db *sql.DB, query, source, id string) ([]audit.Row, error) {
	rs, err := db.QueryContext(ctx, query, source, id)
	if err != nil {
		return nil, fmt.Errorf("sink: sqlite: audit rows: %w", err)
	}
	defer rs.Close()
	var out []audit.Row
	for rs.Next() {
		var (
			r      audit.Row
			action string
			at     string
		)
		if err := rs.Scan(&r.Source, &r.EventID, &r.Sequence, &action, &at, &r.Topic, &r.Partition, &r.Offset,
			&r.EventType, &r.Group, &r.Sink, &r.Class, &r.Error, &r.Attempt, &r.DLQRetries, &r.Retryable,
			&r.Detail, &r.ReplayID, &r.Actor, &r.TraceID); err != nil {
			return nil, fmt.Errorf("sink: sqlite: audit rows: %w", err)
		}
		r.Action = audit.Action(action)
		if r.At, err = time.Parse(utctime.Layout, at); err != nil {
			return nil, fmt.Errorf("sink: sqlite: audit row %q/%q #%d: %w", r.Source, r.EventID, r.Sequence, err)
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("sink: sqlite: audit rows: %w", err)
	}
	return out, nil
}

// SQLiteAuditReader reads the audit table of an SQLite sink's file
// without writing to it, so that a reader beside the consumer that writes
// the file (sluice trace) neither waits for its write lock nor creates
// anything.
type SQLiteAuditReader struct {
	r     *sql.DB
	query string
}

var _ audit.Reader = (*SQLiteAuditReader)(nil)

// OpenSQLiteAuditReader opens the existing file of cfg for reading its
// audit table. A file that is not there, or whose table is not at
// SQLiteSchemaVersion, is an error.
func OpenSQLiteAuditReader(ctx context.Context, cfg SQLiteConfig) (*SQLiteAuditReader, error) {
	r, err := openSQLiteExisting(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &SQLiteAuditReader{r: r, query: sqliteAuditRowsQuery(quoteIdent(cfg.Table + auditSuffix))}, nil
}

// openSQLiteExisting opens cfg's file for reading only: it creates no file
// and writes nothing. A file that is not there (an error naming its path
// that wraps fs.ErrNotExist), or whose table is not at
// SQLiteSchemaVersion, is an error.
func openSQLiteExisting(ctx context.Context, cfg SQLiteConfig) (*sql.DB, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(cfg.Path); err != nil {
		return nil, fmt.Errorf("sink: sqlite: %w", err)
	}
	r, err := openSQLiteReader(cfg)
	if err != nil {
		return nil, err
	}
	err = func() error {
		tx, err := r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback() // read only
		v, err := sqliteVersion(ctx, tx, cfg.Table)
		switch {
		case err != nil:
			return err
		case v == 0:
			return fmt.Errorf("no table %s", cfg.Table)
		case v < SQLiteSchemaVersion:
			return fmt.Errorf("table %s is at schema version %d, this binary reads %d: run sluice sink migrate", cfg.Table, v, SQLiteSchemaVersion)
		case v > SQLiteSchemaVersion:
			return fmt.Errorf("table %s is at schema version %d, newer than this binary's %d", cfg.Table, v, SQLiteSchemaVersion)
		}
		return nil
	}()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("sink: sqlite: %s: %w", cfg.Path, err)
	}
	return r, nil
}

// AuditRows returns the audit rows of identity (source, id), in sequence
// order.
func (a *SQLiteAuditReader) AuditRows(ctx context.Context, source, id string) ([]audit.Row, error) {
	return sqliteAuditRows(ctx, a.r, a.query, source, id)
}

// Close closes the file.
func (a *SQLiteAuditReader) Close() error { return a.r.Close() }

func sqliteAuditRowsQuery(audit string) string {
	return fmt.Sprintf(`SELECT %s FROM %s WHERE source = ? AND event_id = ? ORDER BY sequence`, auditColumns, audit)
}

// classifySQLite is the SQLite boundary's one decision on retrying. Locks,
// I/O and a full disk may clear; a constraint other than the identity
// conflict (which ON CONFLICT absorbs) or an oversized value will not.
func classifySQLite(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		// Context ends, a closed database, driver failures: unknown, so
		// transient.
		return TransientError(fmt.Errorf("sqlite: %w", err), 0)
	}
	switch se.Code() & 0xff { // primary result code
	case sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_MISMATCH, sqlite3.SQLITE_RANGE:
		return PermanentError(fmt.Errorf("sqlite: %w", err))
	}
	return TransientError(fmt.Errorf("sqlite: %w", err), 0)
}

// Close closes the database. Writes after Close fail with ErrClosed.
func (s *SQLite) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return errors.Join(s.r.Close(), s.w.Close())
}

// Count returns the number of rows in the table.
func (s *SQLite) Count(ctx context.Context) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM "+s.table).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sink: sqlite: count: %w", err)
	}
	return n, nil
}

// Get returns the row of identity (source, id), or errNotFound.
func (s *SQLite) Get(ctx context.Context, source, id string) (Row, error) {
	rows, err := s.query(ctx, "SELECT "+rowColumns+" FROM "+s.table+" WHERE source = ? AND event_id = ?", source, id)
	if err != nil {
		return Row{}, err
	}
	if len(rows) == 0 {
		return Row{}, errNotFound
	}
	return rows[0], nil
}

// maxRecent bounds the answers of Recent and Conflicts.
const maxRecent = 1000

// Recent returns up to n (at most 1000) rows, the most recently inserted
// first.
func (s *SQLite) Recent(ctx context.Context, n int) ([]Row, error) {
	return sqliteRecent(ctx, s.r, s.table, n)
}

func sqliteRecent(ctx context.Context, db *sql.DB, table string, n int) ([]Row, error) {
	n = min(max(n, 0), maxRecent)
	return sqliteRows(ctx, db, "SELECT "+rowColumns+" FROM "+table+" ORDER BY rowid DESC LIMIT ?", n)
}

// SQLiteReader reads the rows of an SQLite sink's existing file without
// writing to it: a reader beside the consumer that writes the file
// (sluice sink recent) neither waits for its write lock nor creates,
// migrates or changes anything, and a path with no file is an error, not
// a new empty sink.
type SQLiteReader struct {
	r     *sql.DB
	table string // quoted
}

// OpenSQLiteReader opens the existing file of cfg for reading its table.
// A file that is not there (the error wraps fs.ErrNotExist and names the
// path), or whose table is not at SQLiteSchemaVersion, is an error.
func OpenSQLiteReader(ctx context.Context, cfg SQLiteConfig) (*SQLiteReader, error) {
	r, err := openSQLiteExisting(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &SQLiteReader{r: r, table: quoteIdent(cfg.Table)}, nil
}

// Recent is SQLite.Recent of the file.
func (r *SQLiteReader) Recent(ctx context.Context, n int) ([]Row, error) {
	return sqliteRecent(ctx, r.r, r.table, n)
}

// Close closes the file.
func (r *SQLiteReader) Close() error { return r.r.Close() }

// Conflicts returns up to n (at most 1000) records of the conflicts
// table, the most recently recorded first.
func (s *SQLite) Conflicts(ctx context.Context, n int) ([]ConflictRecord, error) {
	n = min(max(n, 0), maxRecent)
	rs, err := s.r.QueryContext(ctx, "SELECT "+conflictColumns+" FROM "+s.conflicts+" ORDER BY rowid DESC LIMIT ?", n)
	if err != nil {
		return nil, fmt.Errorf("sink: sqlite: query: %w", err)
	}
	defer rs.Close()
	var out []ConflictRecord
	for rs.Next() {
		var c ConflictRecord
		if err := scanSQLiteRow(rs, &c.Row, &c.StoredFingerprint); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("sink: sqlite: query: %w", err)
	}
	return out, nil
}

func (s *SQLite) query(ctx context.Context, query string, args ...any) ([]Row, error) {
	return sqliteRows(ctx, s.r, query, args...)
}

func sqliteRows(ctx context.Context, db *sql.DB, query string, args ...any) ([]Row, error) {
	rs, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sink: sqlite: query: %w", err)
	}
	defer rs.Close()
	var out []Row
	for rs.Next() {
		var row Row
		if err := scanSQLiteRow(rs, &row); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("sink: sqlite: query: %w", err)
	}
	return out, nil
}

// scanSQLiteRow scans the columns of rowColumns (or of conflictColumns,
// with extra the stored fingerprint) into row.
func scanSQLiteRow(rs *sql.Rows, row *Row, extra ...any) error {
	var (
		occurred, ingested, written string
		payload                     sql.NullString
	)
	dst := append([]any{&row.EventID, &row.EventType, &row.Source, &row.PartitionKey,
		&occurred, &ingested, &row.SchemaFingerprint, &payload, &row.Value,
		&row.Topic, &row.KafkaPartition, &row.KafkaOffset, &written, &row.PayloadFingerprint}, extra...)
	if err := rs.Scan(dst...); err != nil {
		return fmt.Errorf("sink: sqlite: scan: %w", err)
	}
	if payload.Valid {
		row.Payload = []byte(payload.String)
	}
	for _, f := range [...]struct {
		dst *time.Time
		src string
	}{{&row.OccurredAt, occurred}, {&row.IngestedAt, ingested}, {&row.WrittenAt, written}} {
		t, err := time.Parse(utctime.Layout, f.src)
		if err != nil {
			return fmt.Errorf("sink: sqlite: row %q/%q: %w", row.Source, row.EventID, err)
		}
		*f.dst = t
	}
	return nil
}
