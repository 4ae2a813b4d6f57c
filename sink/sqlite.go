package sink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite is the embedded sink: one database file in WAL mode, written by
// one connection, one transaction per batch.
type SQLite struct {
	table string
	now   func() time.Time

	// w is the single writer connection; r serves the read helpers, which
	// WAL lets run beside a write.
	w, r *sql.DB

	insert string

	mu     sync.RWMutex // guards closed against Close during Write
	closed bool
}

var _ Sink = (*SQLite)(nil)

// sqliteSchema creates the table; %[1]s is the quoted table name. Times are
// text in timeLayout (UTC, nine fractional digits) so they sort.
const sqliteSchema = `CREATE TABLE IF NOT EXISTS %[1]s (
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
)`

const rowColumns = `event_id, event_type, source, partition_key, occurred_at, ingested_at,
	schema_fingerprint, payload, value, topic, kafka_partition, kafka_offset, written_at`

// OpenSQLite opens (creating when missing) the database file and its table.
func OpenSQLite(ctx context.Context, cfg SQLiteConfig, opts ...Option) (*SQLite, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	o := buildOptions(opts)

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

	table := quoteIdent(cfg.Table)
	if _, err := w.ExecContext(ctx, fmt.Sprintf(sqliteSchema, table)); err != nil {
		w.Close()
		return nil, fmt.Errorf("sink: sqlite: create table %s in %s: %w", cfg.Table, cfg.Path, err)
	}

	rq := url.Values{}
	rq.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", cfg.BusyTimeout.Milliseconds()))
	rq.Add("_pragma", "query_only(1)")
	r, err := sql.Open("sqlite", cfg.Path+"?"+rq.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sink: sqlite: open %s for reading: %w", cfg.Path, err)
	}
	r.SetMaxOpenConns(4)

	return &SQLite{
		table: table,
		now:   o.now,
		w:     w,
		r:     r,
		insert: fmt.Sprintf(`INSERT INTO %s (%s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(event_id) DO NOTHING`, table, rowColumns),
	}, nil
}

// Name returns "sqlite".
func (s *SQLite) Name() string { return KindSQLite }

// Write inserts batch in one transaction; events whose id is already
// stored, in the table or earlier in batch, are left as they are. It
// returns nil once the transaction is committed (synced per
// SQLiteConfig.Synchronous).
func (s *SQLite) Write(ctx context.Context, batch []Event) error {
	if err := checkBatch(batch); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return TransientError(ErrClosed, 0)
	}
	if len(batch) == 0 {
		return nil
	}
	if err := s.write(ctx, batch); err != nil {
		return classifySQLite(err)
	}
	return nil
}

func (s *SQLite) write(ctx context.Context, batch []Event) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // no-op after Commit
	stmt, err := tx.PrepareContext(ctx, s.insert)
	if err != nil {
		return err
	}
	defer stmt.Close()
	written := formatTime(s.now())
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
		if _, err := stmt.ExecContext(ctx,
			e.ID, e.Type, e.Source, string(e.Key),
			formatTime(e.OccurredAt), formatTime(e.IngestedAt), e.SchemaFingerprint,
			payload, value, e.Topic, e.Partition, e.Offset, written,
		); err != nil {
			return fmt.Errorf("event %d (id %q): %w", i, truncate(e.ID, 64), err)
		}
	}
	return tx.Commit()
}

// classifySQLite is the SQLite boundary's one decision on retrying. Locks,
// I/O and a full disk may clear; a constraint other than the event-id
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

// Get returns the row of event id, or ErrNotFound.
func (s *SQLite) Get(ctx context.Context, id string) (Row, error) {
	rows, err := s.query(ctx, "SELECT "+rowColumns+" FROM "+s.table+" WHERE event_id = ?", id)
	if err != nil {
		return Row{}, err
	}
	if len(rows) == 0 {
		return Row{}, ErrNotFound
	}
	return rows[0], nil
}

// maxRecent bounds Recent's answer.
const maxRecent = 1000

// Recent returns up to n (at most 1000) rows, the most recently inserted
// first.
func (s *SQLite) Recent(ctx context.Context, n int) ([]Row, error) {
	n = min(max(n, 0), maxRecent)
	return s.query(ctx, "SELECT "+rowColumns+" FROM "+s.table+" ORDER BY rowid DESC LIMIT ?", n)
}

func (s *SQLite) query(ctx context.Context, query string, args ...any) ([]Row, error) {
	rs, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sink: sqlite: query: %w", err)
	}
	defer rs.Close()
	var out []Row
	for rs.Next() {
		var (
			row                         Row
			occurred, ingested, written string
			payload                     sql.NullString
		)
		if err := rs.Scan(&row.EventID, &row.EventType, &row.Source, &row.PartitionKey,
			&occurred, &ingested, &row.SchemaFingerprint, &payload, &row.Value,
			&row.Topic, &row.KafkaPartition, &row.KafkaOffset, &written); err != nil {
			return nil, fmt.Errorf("sink: sqlite: scan: %w", err)
		}
		if payload.Valid {
			row.Payload = []byte(payload.String)
		}
		for _, f := range [...]struct {
			dst *time.Time
			src string
		}{{&row.OccurredAt, occurred}, {&row.IngestedAt, ingested}, {&row.WrittenAt, written}} {
			t, err := time.Parse(timeLayout, f.src)
			if err != nil {
				return nil, fmt.Errorf("sink: sqlite: row %q: %w", row.EventID, err)
			}
			*f.dst = t
		}
		out = append(out, row)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("sink: sqlite: query: %w", err)
	}
	return out, nil
}
