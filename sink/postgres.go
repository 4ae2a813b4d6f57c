package sink

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/audit"
)

// Postgres is the PostgreSQL sink: a pgx pool and one transaction per
// batch, holding one INSERT ... SELECT FROM unnest(...) statement for the
// events, a second one, recording conflicts, for a batch holding
// identities the table already held, and one for their audit rows. A
// transaction first takes the advisory locks of its identities, in key
// order; rows are inserted in identity order (and batch order within an
// identity, so the first of a duplicate wins), and conflicts in
// (identity, fingerprint) order, so that concurrent batches sharing
// identities take their locks in the same order and cannot deadlock one
// another.
//
// The unnest statement measured on par with or faster than a pgx.Batch of
// one INSERT per event (BenchmarkIntegrationPostgresInsert) from 10 to
// 1000 events a batch (up to 2.5 times at 100), slower only for a batch of
// one. A batch of new events takes three round trips besides BEGIN and
// COMMIT. The audit rows cost: against the layout without them (version
// 2), in one run on a loopback server, BenchmarkIntegrationPostgresWrite
// measured 54% of the throughput at 100 events a batch (43 µs an event
// against 23) and about half at one event a batch (0.6 to 0.9 ms a batch
// against 0.3 to 0.5), and BenchmarkSQLiteWrite 36% at 100 events a batch
// with synchronous=normal and 45% with full: a second row, with two
// indexes, in the event's own transaction.
type Postgres struct {
	pool                    *pgxpool.Pool
	table, conflicts, audit string // quoted
	timeout                 time.Duration
	now                     func() time.Time
	insert, record, stored  string
	auditInsert, auditRows  string

	mu     sync.RWMutex // guards closed against Close during Write
	closed bool
}

var (
	_ Sink         = (*Postgres)(nil)
	_ audit.Writer = (*Postgres)(nil)
	_ audit.Reader = (*Postgres)(nil)
)

// PostgresSchemaVersion is the newest version of the table layout Migrate
// creates; OpenPostgres refuses a table at any other.
const PostgresSchemaVersion = 4

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

	// Version 2 keys the table by (source, event_id), adds
	// payload_fingerprint (for the rows already held, the digest of their
	// stored value) and the conflicts table. It rewrites the table under
	// an exclusive lock.
	`ALTER TABLE %[1]s ADD COLUMN IF NOT EXISTS payload_fingerprint text;
UPDATE %[1]s SET payload_fingerprint = 'sha256:' || encode(sha256(value), 'hex') WHERE payload_fingerprint IS NULL;
ALTER TABLE %[1]s ALTER COLUMN payload_fingerprint SET NOT NULL;
DO $$
DECLARE
	pk_name text;
	pk_def  text;
BEGIN
	SELECT conname, pg_get_constraintdef(oid) INTO pk_name, pk_def
	FROM pg_constraint WHERE conrelid = '%[1]s'::regclass AND contype = 'p';
	IF pk_def IS DISTINCT FROM 'PRIMARY KEY (source, event_id)' THEN
		IF pk_name IS NOT NULL THEN
			EXECUTE format('ALTER TABLE %%s DROP CONSTRAINT %%I', '%[1]s'::regclass, pk_name);
		END IF;
		ALTER TABLE %[1]s ADD CONSTRAINT "%[2]s_pkey" PRIMARY KEY (source, event_id);
	END IF;
END $$;
CREATE TABLE IF NOT EXISTS "%[2]s_conflicts" (
	source              text NOT NULL,
	event_id            text NOT NULL,
	payload_fingerprint text NOT NULL,
	stored_fingerprint  text NOT NULL,
	event_type          text NOT NULL,
	partition_key       text NOT NULL,
	occurred_at         timestamptz NOT NULL,
	ingested_at         timestamptz NOT NULL,
	schema_fingerprint  text NOT NULL,
	payload             jsonb,
	value               bytea NOT NULL,
	topic               text NOT NULL,
	kafka_partition     integer NOT NULL,
	kafka_offset        bigint NOT NULL,
	first_seen_at       timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (source, event_id, payload_fingerprint)
);`,

	// Version 3 adds the audit table: one row per decision about an event
	// (audit.Row). Its primary key is also the index an event's trail is
	// read by, in sequence order; the unique key is what makes two rows
	// one decision. The events already held get no rows.
	`CREATE TABLE IF NOT EXISTS "%[2]s_audit" (
	source          text NOT NULL,
	event_id        text NOT NULL,
	sequence        bigint NOT NULL,
	action          text NOT NULL,
	decided_at      timestamptz NOT NULL,
	topic           text NOT NULL,
	kafka_partition integer NOT NULL,
	kafka_offset    bigint NOT NULL,
	event_type      text NOT NULL,
	consumer_group  text NOT NULL,
	sink            text NOT NULL,
	error_class     text NOT NULL,
	error           text NOT NULL,
	attempt         integer NOT NULL,
	dlq_retries     integer NOT NULL,
	retryable       boolean NOT NULL,
	detail          text NOT NULL,
	replay_id       text NOT NULL,
	replay_actor    text NOT NULL,
	PRIMARY KEY (source, event_id, sequence),
	UNIQUE (` + auditDecisionKey + `)
);`,

	// Version 4 adds the audit rows' trace_id: the trace id of the
	// record decided about, '' for the rows already held. A column with a
	// constant default is added without rewriting the table.
	`ALTER TABLE "%[2]s_audit" ADD COLUMN IF NOT EXISTS trace_id text NOT NULL DEFAULT '';`,
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

// postgresDDL returns every statement Migrate runs for table, in order,
// each version's followed by the row that records it, for an operator who
// applies the schema by hand.
func postgresDDL(table string) (string, error) {
	if !validIdentifier(table) {
		return "", bad("postgres.table", "must be a lowercase identifier ([a-z_][a-z0-9_]*, at most %d bytes), got %q", maxTableNameLen, table)
	}
	var b strings.Builder
	b.WriteString(migrationsTable + ";\n")
	for v, m := range postgresMigrations {
		fmt.Fprintf(&b, "-- version %d\n%s\n", v+1, fmt.Sprintf(m, quoteIdent(table), table))
		// table is an identifier (validIdentifier), safe in a literal.
		fmt.Fprintf(&b, "INSERT INTO sluice_sink_migrations (table_name, version) VALUES ('%s', %d) ON CONFLICT DO NOTHING;\n", table, v+1)
	}
	return b.String(), nil
}

// Migrate creates table, its indexes and its conflicts table, or brings
// them to PostgresSchemaVersion, in one transaction. Running it again, or
// from several processes at once, is safe. ctx bounds it, connecting
// included. Stop the consumers of an older version first: they cannot
// write to a table of a newer one.
func Migrate(ctx context.Context, dsn, table string) error {
	if !validIdentifier(table) {
		return bad("postgres.table", "must be a lowercase identifier ([a-z_][a-z0-9_]*, at most %d bytes), got %q", maxTableNameLen, table)
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
	// The sink's statements are few, prepared once per connection, and
	// their plans do not depend on the arrays bound: an index probe per
	// element. Planning them again for every batch (PostgreSQL's custom
	// plans) cost more than running them at small batches:
	// BenchmarkIntegrationPostgresWrite at one event per batch measured
	// 1.1 to 1.3 ms a batch with custom plans, 0.6 to 0.9 with generic
	// ones, in one run. A DSN that sets plan_cache_mode keeps its own.
	if _, set := pc.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		pc.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
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

// OpenPostgres connects to the database and checks that the table exists
// at PostgresSchemaVersion.
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
	table, conflicts, audit := quoteIdent(cfg.Table), quoteIdent(cfg.Table+conflictsSuffix), quoteIdent(cfg.Table+auditSuffix)
	if err := checkPostgresVersion(checkCtx, pool, cfg.Table); err != nil {
		pool.Close()
		return nil, err
	}
	return &Postgres{
		pool:      pool,
		table:     table,
		conflicts: conflicts,
		audit:     audit,
		timeout:   cfg.WriteTimeout,
		now:       o.now,
		insert: fmt.Sprintf(`INSERT INTO %s (%s)
SELECT id, ty, src, pk, occ, ing, sfp, p::jsonb, v, tp, kp, ko, $14::timestamptz, pfp
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[],
	$7::text[], $8::text[], $9::bytea[], $10::text[], $11::int4[], $12::int8[], $13::text[])
	WITH ORDINALITY AS u(id, ty, src, pk, occ, ing, sfp, p, v, tp, kp, ko, pfp, ord)
ORDER BY src, id, ord
ON CONFLICT (source, event_id) DO NOTHING
RETURNING source, event_id`, table, rowColumns),
		// The join reads the table in a snapshot taken after the insert
		// returned, so it sees the rows of concurrent writes that the
		// insert waited for.
		record: fmt.Sprintf(`INSERT INTO %s (%s)
SELECT DISTINCT ON (b.src, b.id, b.pfp)
	b.id, b.ty, b.src, b.pk, b.occ, b.ing, b.sfp, b.p::jsonb, b.v, b.tp, b.kp, b.ko, $15::timestamptz, b.pfp,
	t.payload_fingerprint
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[],
	$7::text[], $8::text[], $9::bytea[], $10::text[], $11::int4[], $12::int8[], $13::text[], $14::int4[])
	AS b(id, ty, src, pk, occ, ing, sfp, p, v, tp, kp, ko, pfp, ix)
JOIN %s AS t ON t.source = b.src AND t.event_id = b.id
WHERE t.payload_fingerprint <> b.pfp
ORDER BY b.src, b.id, b.pfp, b.ix
ON CONFLICT (source, event_id, payload_fingerprint) DO NOTHING
RETURNING source, event_id, payload_fingerprint, stored_fingerprint`, conflicts, conflictColumns, table),
		stored: fmt.Sprintf(`SELECT u.ix, t.payload_fingerprint
FROM unnest($1::text[], $2::text[], $3::int4[]) AS u(src, id, ix)
JOIN %s AS t ON t.source = u.src AND t.event_id = u.id`, table),
		// Every writer of an identity holds its lock (lockIdentities), so
		// max + 1 is the next sequence; rows the table holds already are
		// left out before they are numbered, so sequences stay dense. The
		// rows held are looked up by a LATERAL ... LIMIT 1, one index probe
		// per row: a NOT EXISTS there is pulled up into an anti join, and
		// on an audit table whose statistics are behind (a young or fast
		// growing one) the planner merged it with the whole table, a
		// write's cost growing with the table.
		auditInsert: fmt.Sprintf(`INSERT INTO %[1]s (%[2]s)
SELECT b.src, b.id,
	coalesce((SELECT max(a.sequence) FROM %[1]s AS a WHERE a.source = b.src AND a.event_id = b.id), 0)
		+ row_number() OVER (PARTITION BY b.src, b.id ORDER BY b.ord),
	b.act, b.dat, b.tp, b.kp, b.ko, b.ty, b.grp, b.snk, b.cls, b.err, b.att, b.dr, b.rt, b.det, b.rid, b.ra, b.tid
FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::int4[], $7::int8[], $8::text[],
	$9::text[], $10::text[], $11::text[], $12::text[], $13::int4[], $14::int4[], $15::bool[], $16::text[], $17::text[], $18::text[],
	$19::text[])
	WITH ORDINALITY AS b(src, id, act, dat, tp, kp, ko, ty, grp, snk, cls, err, att, dr, rt, det, rid, ra, tid, ord)
LEFT JOIN LATERAL (SELECT true AS held FROM %[1]s AS a
	WHERE (a.source, a.event_id, a.action, a.topic, a.kafka_partition, a.kafka_offset, a.attempt, a.dlq_retries, a.replay_id)
		= (b.src, b.id, b.act, b.tp, b.kp, b.ko, b.att, b.dr, b.rid)
	LIMIT 1) AS h ON true
WHERE h.held IS NULL
ORDER BY b.src, b.id, b.ord
ON CONFLICT (%[3]s) DO NOTHING`, audit, auditColumns, auditDecisionKey),
		auditRows: fmt.Sprintf(`SELECT %s FROM %s WHERE source = $1 AND event_id = $2 ORDER BY sequence`, auditColumns, audit),
	}, nil
}

// checkPostgresVersion fails unless table exists at PostgresSchemaVersion.
func checkPostgresVersion(ctx context.Context, pool *pgxpool.Pool, table string) error {
	var exists, recorded bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL, to_regclass('sluice_sink_migrations') IS NOT NULL",
		quoteIdent(table)).Scan(&exists, &recorded); err != nil {
		return fmt.Errorf("sink: postgres: connect: %w", err)
	}
	if !exists {
		return fmt.Errorf("sink: postgres: table %s does not exist: run sluice sink migrate", table)
	}
	applied := 0
	if recorded {
		if err := pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM sluice_sink_migrations WHERE table_name = $1",
			table).Scan(&applied); err != nil {
			return fmt.Errorf("sink: postgres: read schema version of %s: %w", table, err)
		}
	}
	switch {
	case applied < PostgresSchemaVersion:
		return fmt.Errorf("sink: postgres: table %s is at schema version %d, this binary needs %d: run sluice sink migrate",
			table, applied, PostgresSchemaVersion)
	case applied > PostgresSchemaVersion:
		return fmt.Errorf("sink: postgres: table %s is at schema version %d, newer than this binary's %d",
			table, applied, PostgresSchemaVersion)
	}
	return nil
}

// Name returns "postgres".
func (p *Postgres) Name() string { return KindPostgres }

// Write writes batch in one transaction: it takes the identities' audit
// locks (lockIdentities), inserts batch with one statement, leaving as
// they are the events whose identity is already stored, in the table or
// earlier in batch; when there are such events a second statement records
// those with another payload fingerprint in the conflicts table; then one
// statement inserts every event's written row in the audit table
// (audit.DetailDuplicate or audit.DetailConflict when it stored nothing
// new), but for a record whose written row the table holds already. It
// returns nil once the transaction is committed, with the conflicts it
// recorded. Times are stored with PostgreSQL's microsecond precision.
func (p *Postgres) Write(ctx context.Context, batch []Event) ([]Conflict, error) {
	if err := checkBatch(batch); err != nil {
		return nil, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, TransientError(ErrClosed, 0)
	}
	if len(batch) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	written := p.now()
	var conflicts []Conflict
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		ids := make([]identity, len(batch))
		for i := range batch {
			ids[i] = identity{batch[i].Source, batch[i].ID}
		}
		if err := lockIdentities(ctx, tx, ids); err != nil {
			return err
		}
		details, err := p.insertEvents(ctx, tx, batch, written, &conflicts)
		if err != nil {
			return err
		}
		rows := make([]audit.Row, len(batch))
		for i := range batch {
			rows[i] = WrittenRow(&batch[i], KindPostgres, written, details[i])
		}
		rows, err = prepareAudit(rows, written)
		if err != nil {
			return err
		}
		return p.insertAudit(ctx, tx, rows)
	})
	if err != nil {
		return nil, classifyPostgres(err)
	}
	return conflicts, nil
}

// insertEvents inserts batch in tx, records its conflicting copies and
// returns the detail of each event's written row: "" for the events it
// inserted, else audit.DetailDuplicate or audit.DetailConflict.
func (p *Postgres) insertEvents(ctx context.Context, tx pgx.Tx, batch []Event, written time.Time, conflicts *[]Conflict) ([]string, error) {
	details := make([]string, len(batch))
	var all pgColumns
	for i := range batch {
		all.add(&batch[i], i)
	}
	rows, err := tx.Query(ctx, p.insert, all.args(false, written)...)
	if err != nil {
		return nil, err
	}
	inserted := map[identity]bool{}
	var id identity
	if _, err := pgx.ForEachRow(rows, []any{&id.source, &id.id}, func() error {
		inserted[id] = true
		return nil
	}); err != nil {
		return nil, err
	}
	if len(inserted) == len(batch) {
		return details, nil
	}
	// Every event not inserted met a row of its identity: the first of
	// its identity in batch, or one stored before.
	var held pgColumns
	for i := range batch {
		e := &batch[i]
		k := identity{e.Source, e.ID}
		if inserted[k] {
			delete(inserted, k) // this one was; later ones of k were not
			continue
		}
		held.add(e, i)
	}
	if *conflicts, err = p.recordConflicts(ctx, tx, batch, &held, written); err != nil {
		return nil, err
	}
	rows, err = tx.Query(ctx, p.stored, held.sources, held.ids, held.index)
	if err != nil {
		return nil, err
	}
	var (
		ix     int32
		stored string
	)
	if _, err := pgx.ForEachRow(rows, []any{&ix, &stored}, func() error {
		details[ix] = audit.DetailConflict
		if stored == batch[ix].PayloadFingerprint {
			details[ix] = audit.DetailDuplicate
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return details, nil
}

// auditLockClass is the first key of the advisory locks of identities
// (pg_advisory_xact_lock(int4, int4)), a key space apart from Migrate's
// single bigint key.
const auditLockClass = 0x61756474 // "audt"

// lockIdentities takes, in tx, the advisory lock of each identity of ids,
// held until tx ends: whoever writes audit rows of an identity holds its
// lock, so that the next sequence is max + 1. An identity's lock is a
// 32-bit hash of it, so two may share one; locks are taken in key order,
// one statement, so that transactions cannot deadlock on them.
func lockIdentities(ctx context.Context, tx pgx.Tx, ids []identity) error {
	keys := make([]int32, 0, len(ids))
	for _, id := range ids {
		h := fnv.New32a()
		h.Write([]byte(id.source))
		h.Write([]byte{0})
		h.Write([]byte(id.id))
		keys = append(keys, int32(h.Sum32()))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	_, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, k) FROM unnest($2::int4[]) AS k", int32(auditLockClass), keys)
	return err
}

// insertAudit inserts rows, prepared by prepareAudit, into the audit
// table in tx, which holds their identities' locks.
func (p *Postgres) insertAudit(ctx context.Context, tx pgx.Tx, rows []audit.Row) error {
	if len(rows) == 0 {
		return nil
	}
	var (
		srcs, ids, acts, topics, types, groups, sinks, classes, errs, details, replays, actors, traces []string
		ats                                                                                            []time.Time
		parts, attempts, retries                                                                       []int32
		offsets                                                                                        []int64
		retryable                                                                                      []bool
	)
	for i := range rows {
		r := &rows[i]
		srcs, ids, acts = append(srcs, r.Source), append(ids, r.EventID), append(acts, string(r.Action))
		ats, topics = append(ats, r.At), append(topics, r.Topic)
		parts, offsets, types = append(parts, r.Partition), append(offsets, r.Offset), append(types, r.EventType)
		groups, sinks, classes, errs = append(groups, r.Group), append(sinks, r.Sink), append(classes, r.Class), append(errs, r.Error)
		attempts, retries = append(attempts, int32(r.Attempt)), append(retries, int32(r.DLQRetries))
		retryable, details = append(retryable, r.Retryable), append(details, r.Detail)
		replays, actors, traces = append(replays, r.ReplayID), append(actors, r.Actor), append(traces, r.TraceID)
	}
	_, err := tx.Exec(ctx, p.auditInsert, srcs, ids, acts, ats, topics, parts, offsets, types,
		groups, sinks, classes, errs, attempts, retries, retryable, details, replays, actors, traces)
	return err
}

// Audit records rows in one transaction that holds their identities'
// locks, each after the rows the table holds for its event; a row the
// table holds already (the same decision about the same record) is not
// recorded again. A row with no At is stamped with the sink's clock.
// Each call is bounded by PostgresConfig.WriteTimeout.
func (p *Postgres) Audit(ctx context.Context, rows []audit.Row) error {
	rows, err := prepareAudit(rows, p.now())
	if err != nil {
		return err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return TransientError(ErrClosed, 0)
	}
	if len(rows) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	err = pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		ids := make([]identity, len(rows))
		for i := range rows {
			ids[i] = identity{rows[i].Source, rows[i].EventID}
		}
		if err := lockIdentities(ctx, tx, ids); err != nil {
			return err
		}
		return p.insertAudit(ctx, tx, rows)
	})
	if err != nil {
		return classifyPostgres(err)
	}
	return nil
}

// AuditRows returns the audit rows of identity (source, id), in sequence
// order; none for an identity with no decision recorded.
func (p *Postgres) AuditRows(ctx context.Context, source, id string) ([]audit.Row, error) {
	rows, err := p.pool.Query(ctx, p.auditRows, source, id)
	if err != nil {
		return nil, fmt.Errorf("sink: postgres: audit rows: %w", err)
	}
	var (
		out    []audit.Row
		r      audit.Row
		action string
	)
	if _, err := pgx.ForEachRow(rows, []any{&r.Source, &r.EventID, &r.Sequence, &action, &r.At, &r.Topic, &r.Partition, &r.Offset,
		&r.EventType, &r.Group, &r.Sink, &r.Class, &r.Error, &r.Attempt, &r.DLQRetries, &r.Retryable,
		&r.Detail, &r.ReplayID, &r.Actor, &r.TraceID}, func() error {
		r.Action, r.At = audit.Action(action), r.At.UTC()
		out = append(out, r)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("sink: postgres: audit rows: %w", err)
	}
	return out, nil
}

// identity is an event's key in the sinks.
type identity struct{ source, id string }

// recordConflicts runs the conflicts statement over held in tx and returns a
// Conflict, at the first index of its copy in batch, for each copy it
// newly recorded.
func (p *Postgres) recordConflicts(ctx context.Context, tx pgx.Tx, batch []Event, held *pgColumns, written time.Time) ([]Conflict, error) {
	rows, err := tx.Query(ctx, p.record, held.args(true, written)...)
	if err != nil {
		return nil, err
	}
	type copyKey struct{ source, id, fingerprint string }
	recorded := map[copyKey]string{} // the stored fingerprint of each new record
	var k copyKey
	var stored string
	if _, err := pgx.ForEachRow(rows, []any{&k.source, &k.id, &k.fingerprint, &stored}, func() error {
		recorded[k] = stored
		return nil
	}); err != nil {
		return nil, err
	}
	var conflicts []Conflict
	for _, i := range held.index { // in batch order
		e := &batch[i]
		k := copyKey{e.Source, e.ID, e.PayloadFingerprint}
		if stored, ok := recorded[k]; ok {
			conflicts = append(conflicts, Conflict{Index: int(i), StoredFingerprint: stored})
			delete(recorded, k) // reported at the first index of the copy
		}
	}
	return conflicts, nil
}

// pgColumns holds events as the arrays the unnest statements take.
type pgColumns struct {
	ids, types, sources, keys, schemaFPs, topics, payloadFPs []string
	occurred, ingested                                       []time.Time
	payloads                                                 []*string
	values                                                   [][]byte
	partitions                                               []int32
	offsets                                                  []int64
	index                                                    []int32 // in the batch
}

func (c *pgColumns) add(e *Event, i int) {
	c.ids, c.types, c.sources = append(c.ids, e.ID), append(c.types, e.Type), append(c.sources, e.Source)
	c.keys, c.schemaFPs = append(c.keys, string(e.Key)), append(c.schemaFPs, e.SchemaFingerprint)
	c.occurred, c.ingested = append(c.occurred, e.OccurredAt), append(c.ingested, e.IngestedAt)
	var payload *string
	if len(e.JSON) > 0 {
		s := string(e.JSON)
		payload = &s
	}
	c.payloads = append(c.payloads, payload)
	value := e.Value
	if value == nil {
		value = []byte{} // NULL would break NOT NULL
	}
	c.values = append(c.values, value)
	c.topics, c.partitions, c.offsets = append(c.topics, e.Topic), append(c.partitions, e.Partition), append(c.offsets, e.Offset)
	c.payloadFPs = append(c.payloadFPs, e.PayloadFingerprint)
	c.index = append(c.index, int32(i))
}

// args returns the arguments of the insert (thirteen arrays and the write
// time) or, withIndex, of the conflicts statement (fourteen arrays, the
// last the batch indexes, and the write time).
func (c *pgColumns) args(withIndex bool, written time.Time) []any {
	a := []any{c.ids, c.types, c.sources, c.keys, c.occurred, c.ingested, c.schemaFPs, c.payloads,
		c.values, c.topics, c.partitions, c.offsets, c.payloadFPs}
	if withIndex {
		a = append(a, c.index)
	}
	return append(a, written)
}

// postgresPermanentClasses are the SQLSTATE classes that the same input
// will always meet again: data exceptions (22), integrity constraints (23;
// the identity conflict never gets here, ON CONFLICT absorbs it), syntax or
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

// Get returns the row of identity (source, id), or errNotFound.
func (p *Postgres) Get(ctx context.Context, source, id string) (Row, error) {
	var r Row
	err := p.pool.QueryRow(ctx, "SELECT "+rowColumns+" FROM "+p.table+" WHERE source = $1 AND event_id = $2",
		source, id).Scan(rowTargets(&r)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return Row{}, errNotFound
	}
	if err != nil {
		return Row{}, fmt.Errorf("sink: postgres: get: %w", err)
	}
	r.OccurredAt, r.IngestedAt, r.WrittenAt = r.OccurredAt.UTC(), r.IngestedAt.UTC(), r.WrittenAt.UTC()
	return r, nil
}

// Conflicts returns up to n (at most 1000) records of the conflicts
// table, the most recently recorded first.
func (p *Postgres) Conflicts(ctx context.Context, n int) ([]ConflictRecord, error) {
	n = min(max(n, 0), maxRecent)
	rows, err := p.pool.Query(ctx, "SELECT "+conflictColumns+" FROM "+p.conflicts+
		" ORDER BY first_seen_at DESC, source, event_id, payload_fingerprint LIMIT $1", n)
	if err != nil {
		return nil, fmt.Errorf("sink: postgres: conflicts: %w", err)
	}
	var (
		out []ConflictRecord
		c   ConflictRecord
	)
	if _, err := pgx.ForEachRow(rows, append(rowTargets(&c.Row), &c.StoredFingerprint), func() error {
		c.OccurredAt, c.IngestedAt, c.WrittenAt = c.OccurredAt.UTC(), c.IngestedAt.UTC(), c.WrittenAt.UTC()
		out = append(out, c)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("sink: postgres: conflicts: %w", err)
	}
	return out, nil
}

// rowTargets are the scan targets of rowColumns (and the first columns of
// conflictColumns) in r.
func rowTargets(r *Row) []any {
	return []any{&r.EventID, &r.EventType, &r.Source, &r.PartitionKey, &r.OccurredAt, &r.IngestedAt,
		&r.SchemaFingerprint, &r.Payload, &r.Value, &r.Topic, &r.KafkaPartition, &r.KafkaOffset, &r.WrittenAt,
		&r.PayloadFingerprint}
}
