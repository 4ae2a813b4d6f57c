package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Postgres is the PostgreSQL sink: a pgx pool, one INSERT ... SELECT FROM
// unnest(...) statement per batch. Rows are inserted in event-id order (and
// batch order within an id, so the first of a duplicate wins), so that
// concurrent batches sharing ids take their row locks in the same order and
// cannot deadlock one another.
type Postgres struct {
	pool    *pgxpool.Pool
	table   string
	timeout time.Duration
	now     func() time.Time
	insert  string

	mu     sync.RWMutex // guards closed against Close during Write
	closed bool
}

var _ Sink = (*Postgres)(nil)

// PostgresSchemaVersion is the newest version of the table layout Migrate
// creates.
const PostgresSchemaVersion = 1

// postgresMigrations[v-1] brings a table from version v-1 to v; %[1]s is
// the quoted table name, %[2]s the bare one (for index names). Each
// statement is idempotent on its own, so a migration interrupted before it
// was recorded runs again cleanly.
var postgresMigrations = [PostgresSchemaVersion]string{
	`CREATE TABLE IF NOT EXISTS %[1]s (
	event_id           text PRIMARY KEY,
	event_type         text NOT NULL,
	source             text NOT NULL,
	partition_key      text NOT NULL,
	occurred_at        timestamptz NOT NULL,
	ingested_at        timestamptz NOT NULL,
	schema_fingerprint text NOT NULL,
	payload            jsonb,
	value              bytea NOT NULL,
	topic              text NOT NULL,
	kafka_partition    integer NOT NULL,
	kafka_offset       bigint NOT NULL,
	written_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS "%[2]s_type_occurred_at_idx" ON %[1]s (event_type, occurred_at);
CREATE INDEX IF NOT EXISTS "%[2]s_source_ingested_at_idx" ON %[1]s (source, ingested_at);
CREATE INDEX IF NOT EXISTS "%[2]s_kafka_idx" ON %[1]s (topic, kafka_partition, kafka_offset);`,
}

// migrationsTable records which versions of which sink table are applied.
const migrationsTable = `CREATE TABLE IF NOT EXISTS sluice_sink_migrations (
	table_name text NOT NULL,
	version    integer NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (table_name, version)
)`

// migrateLockKey is the advisory lock that serializes concurrent Migrate
// calls (two CREATE TABLE IF NOT EXISTS can otherwise race).
const migrateLockKey = 0x736c7569636531 // "sluice1"

// PostgresDDL returns every statement Migrate runs for table, in order, for
// an operator who applies the schema by hand.
func PostgresDDL(table string) (string, error) {
	if !validIdentifier(table) {
		return "", bad("postgres.table", "must be a lowercase identifier ([a-z_][a-z0-9_]*, at most 63 bytes), got %q", table)
	}
	var b strings.Builder
	b.WriteString(migrationsTable + ";\n")
	for v, m := range postgresMigrations {
		fmt.Fprintf(&b, "-- version %d\n%s\n", v+1, fmt.Sprintf(m, quoteIdent(table), table))
	}
	return b.String(), nil
}

// Migrate creates table and its indexes, or brings them to
// PostgresSchemaVersion, in one transaction. Running it again, or from
// several processes at once, is safe. ctx bounds it, connecting included.
func Migrate(ctx context.Context, dsn, table string) error {
	if !validIdentifier(table) {
		return bad("postgres.table", "must be a lowercase identifier ([a-z_][a-z0-9_]*, at most 63 bytes), got %q", table)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return bad("postgres.dsn", "cannot be parsed: %v", redactDSNError(err))
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("sink: postgres: migrate: connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		conn.Close(closeCtx)
	}()

	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrateLockKey)); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if _, err := tx.Exec(ctx, migrationsTable); err != nil {
			return fmt.Errorf("create sluice_sink_migrations: %w", err)
		}
		var applied int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM sluice_sink_migrations WHERE table_name = $1",
			table).Scan(&applied); err != nil {
			return fmt.Errorf("read applied version: %w", err)
		}
		if applied > PostgresSchemaVersion {
			return fmt.Errorf("table %s is at schema version %d, newer than this binary's %d", table, applied, PostgresSchemaVersion)
		}
		for v := applied + 1; v <= PostgresSchemaVersion; v++ {
			// No arguments: the simple protocol runs the several statements.
			if _, err := tx.Exec(ctx, fmt.Sprintf(postgresMigrations[v-1], quoteIdent(table), table)); err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO sluice_sink_migrations (table_name, version) VALUES ($1, $2)", table, v); err != nil {
				return fmt.Errorf("record version %d: %w", v, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sink: postgres: migrate %s: %w", table, err)
	}
	return nil
}

func parsePostgresConfig(c PostgresConfig) (*pgxpool.Config, error) {
	pc, err := pgxpool.ParseConfig(c.DSN)
	if err != nil {
		return nil, err
	}
	pc.MaxConns = c.MaxConns
	pc.MinConns = 0
	pc.ConnConfig.ConnectTimeout = c.ConnectTimeout
	return pc, nil
}

// redactDSNError keeps a connection string, and so its password, out of an
// error message.
func redactDSNError(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return errors.New("malformed connection string")
	}
	return err
}

// OpenPostgres connects to the database and checks that the table exists.
func OpenPostgres(ctx context.Context, cfg PostgresConfig, opts ...Option) (*Postgres, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	o := buildOptions(opts)
	pc, err := parsePostgresConfig(cfg)
	if err != nil {
		return nil, bad("postgres.dsn", "cannot be parsed: %v", redactDSNError(err))
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("sink: postgres: %w", err)
	}
	checkCtx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	table := quoteIdent(cfg.Table)
	var exists bool
	if err := pool.QueryRow(checkCtx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil {
		pool.Close()
		return nil, fmt.Errorf("sink: postgres: connect: %w", err)
	}
	if !exists {
		pool.Close()
		return nil, fmt.Errorf("sink: postgres: table %s does not exist: run sluice sink migrate", cfg.Table)
	}
	return &Postgres{
		pool:    pool,
		table:   table,
		timeout: cfg.WriteTimeout,
		now:     o.now,
		insert: fmt.Sprintf(`INSERT INTO %s (%s)
SELECT id, ty, src, pk, occ, ing, fp, p::jsonb, v, tp, kp, ko, $13::timestamptz
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[],
	$7::text[], $8::text[], $9::bytea[], $10::text[], $11::int4[], $12::int8[])
	WITH ORDINALITY AS u(id, ty, src, pk, occ, ing, fp, p, v, tp, kp, ko, ord)
ORDER BY id, ord
ON CONFLICT (event_id) DO NOTHING`, table, rowColumns),
	}, nil
}

// Name returns "postgres".
func (p *Postgres) Name() string { return KindPostgres }

// Write inserts batch with one statement; events whose id is already
// stored, in the table or earlier in batch, are left as they are. It
// returns nil once the statement's implicit transaction is committed.
// Times are stored with PostgreSQL's microsecond precision.
func (p *Postgres) Write(ctx context.Context, batch []Event) error {
	if err := checkBatch(batch); err != nil {
		return err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return TransientError(ErrClosed, 0)
	}
	if len(batch) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if _, err := p.pool.Exec(ctx, p.insert, columnsOf(batch, p.now())...); err != nil {
		return classifyPostgres(err)
	}
	return nil
}

// columnsOf turns batch into the thirteen arguments of the unnest insert.
func columnsOf(batch []Event, written time.Time) []any {
	n := len(batch)
	var (
		ids, types, sources, keys, fps, topics = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		occurred, ingested                     = make([]time.Time, n), make([]time.Time, n)
		payloads                               = make([]*string, n)
		values                                 = make([][]byte, n)
		partitions                             = make([]int32, n)
		offsets                                = make([]int64, n)
	)
	for i := range batch {
		e := &batch[i]
		ids[i], types[i], sources[i], keys[i] = e.ID, e.Type, e.Source, string(e.Key)
		occurred[i], ingested[i], fps[i] = e.OccurredAt, e.IngestedAt, e.SchemaFingerprint
		if len(e.JSON) > 0 {
			s := string(e.JSON)
			payloads[i] = &s
		}
		values[i] = e.Value
		if values[i] == nil {
			values[i] = []byte{} // NULL would break NOT NULL
		}
		topics[i], partitions[i], offsets[i] = e.Topic, e.Partition, e.Offset
	}
	return []any{ids, types, sources, keys, occurred, ingested, fps, payloads, values, topics, partitions, offsets, written}
}

// postgresPermanentClasses are the SQLSTATE classes that the same input
// will always meet again: data exceptions (22), integrity constraints (23;
// the event-id conflict never gets here, ON CONFLICT absorbs it), syntax or
// access rules (42), feature not supported (0A), cardinality (21), check
// option (44) and program limits such as an oversized row (54).
var postgresPermanentClasses = [...]string{"0A", "21", "22", "23", "42", "44", "54"}

// postgresSinkFaults are codes inside a permanent class that say the sink is
// misconfigured, not that the event is bad: every event would fail alike,
// so they must open the breaker, not fill the DLQ.
var postgresSinkFaults = [...]string{
	"42P01", // undefined_table: the table was dropped or never migrated
	"42501", // insufficient_privilege: a grant is missing
}

// postgresClass decides, for the PostgreSQL boundary, what SQLSTATE code
// means. Everything not known to be permanent is transient: connection
// exceptions (08), transaction rollbacks such as serialization failures and
// deadlocks (40), insufficient resources such as too_many_connections (53),
// operator intervention such as admin_shutdown, cannot_connect_now and
// query_canceled (57), system errors (58), lock timeouts (55P03), internal
// errors (XX) and authentication (28, a misconfigured sink).
func postgresClass(code string) Class {
	for _, c := range postgresSinkFaults {
		if code == c {
			return Transient
		}
	}
	if len(code) == 5 {
		for _, c := range postgresPermanentClasses {
			if code[:2] == c {
				return Permanent
			}
		}
	}
	return Transient
}

// classifyPostgres wraps err from pgx in the sink's *Error. An error without
// an SQLSTATE (a dropped connection, a dial failure, a deadline) is
// transient.
func classifyPostgres(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		err = fmt.Errorf("postgres: SQLSTATE %s: %w", pe.Code, err)
		if postgresClass(pe.Code) == Permanent {
			return PermanentError(err)
		}
		return TransientError(err, 0)
	}
	return TransientError(fmt.Errorf("postgres: %w", err), 0)
}

// Close closes the pool, waiting for connections in use to be released.
// Writes after Close fail with ErrClosed.
func (p *Postgres) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		p.pool.Close()
	}
	return nil
}

// Count returns the number of rows in the table.
func (p *Postgres) Count(ctx context.Context) (int64, error) {
	var n int64
	if err := p.pool.QueryRow(ctx, "SELECT count(*) FROM "+p.table).Scan(&n); err != nil {
		return 0, fmt.Errorf("sink: postgres: count: %w", err)
	}
	return n, nil
}

// Get returns the row of event id, or ErrNotFound.
func (p *Postgres) Get(ctx context.Context, id string) (Row, error) {
	var r Row
	err := p.pool.QueryRow(ctx, "SELECT "+rowColumns+" FROM "+p.table+" WHERE event_id = $1", id).Scan(
		&r.EventID, &r.EventType, &r.Source, &r.PartitionKey, &r.OccurredAt, &r.IngestedAt,
		&r.SchemaFingerprint, &r.Payload, &r.Value, &r.Topic, &r.KafkaPartition, &r.KafkaOffset, &r.WrittenAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Row{}, ErrNotFound
	}
	if err != nil {
		return Row{}, fmt.Errorf("sink: postgres: get: %w", err)
	}
	r.OccurredAt, r.IngestedAt, r.WrittenAt = r.OccurredAt.UTC(), r.IngestedAt.UTC(), r.WrittenAt.UTC()
	return r, nil
}
