package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestPostgresClass(t *testing.T) {
	for _, tc := range []struct {
		code string
		name string
		want Class
	}{
		{"08000", "connection_exception", Transient},
		{"08006", "connection_failure", Transient},
		{"08001", "sqlclient_unable_to_establish_sqlconnection", Transient},
		{"40001", "serialization_failure", Transient},
		{"40P01", "deadlock_detected", Transient},
		{"53300", "too_many_connections", Transient},
		{"53100", "disk_full", Transient},
		{"53200", "out_of_memory", Transient},
		{"57P01", "admin_shutdown", Transient},
		{"57P02", "crash_shutdown", Transient},
		{"57P03", "cannot_connect_now", Transient},
		{"57014", "query_canceled", Transient},
		{"55P03", "lock_not_available", Transient},
		{"58030", "io_error", Transient},
		{"XX000", "internal_error", Transient},
		{"28P01", "invalid_password", Transient},
		{"3D000", "invalid_catalog_name", Transient},
		{"42P01", "undefined_table", Transient},
		{"42501", "insufficient_privilege", Transient},
		{"22001", "string_data_right_truncation", Permanent},
		{"22P02", "invalid_text_representation", Permanent},
		{"22P05", "untranslatable_character", Permanent},
		{"22021", "character_not_in_repertoire", Permanent},
		{"23502", "not_null_violation", Permanent},
		{"23505", "unique_violation", Permanent},
		{"23514", "check_violation", Permanent},
		{"42703", "undefined_column", Permanent},
		{"42804", "datatype_mismatch", Permanent},
		{"0A000", "feature_not_supported", Permanent},
		{"54000", "program_limit_exceeded", Permanent},
		{"21000", "cardinality_violation", Permanent},
		{"", "no code", Transient},
		{"22", "truncated code", Transient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := postgresClass(tc.code); got != tc.want {
				t.Errorf("postgresClass(%q) = %v, want %v", tc.code, got, tc.want)
			}
			err := classifyPostgres(fmt.Errorf("exec: %w", &pgconn.PgError{Code: tc.code, Message: "m"}))
			wantClass(t, err, tc.want)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != tc.code {
				t.Errorf("classified error %v lost the *pgconn.PgError", err)
			}
		})
	}
	for _, err := range []error{context.DeadlineExceeded, context.Canceled, io.ErrUnexpectedEOF, errors.New("conn closed")} {
		wantClass(t, classifyPostgres(err), Transient)
	}
}

func TestPostgresDDL(t *testing.T) {
	ddl, err := postgresDDL("events")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`CREATE TABLE IF NOT EXISTS "events"`, "event_id           text PRIMARY KEY", "payload            jsonb",
		`"events_type_occurred_at_idx"`, "-- version 1", "sluice_sink_migrations",
		"-- version 2", "ADD COLUMN IF NOT EXISTS payload_fingerprint", "PRIMARY KEY (source, event_id)",
		`CREATE TABLE IF NOT EXISTS "events_conflicts"`, "PRIMARY KEY (source, event_id, payload_fingerprint)",
		"VALUES ('events', 1) ON CONFLICT DO NOTHING;", "VALUES ('events', 2) ON CONFLICT DO NOTHING;",
		"-- version 3", `CREATE TABLE IF NOT EXISTS "events_audit"`, "PRIMARY KEY (source, event_id, sequence)",
		"UNIQUE (source, event_id, action, topic, kafka_partition, kafka_offset, attempt, dlq_retries, replay_id)",
		"VALUES ('events', 3) ON CONFLICT DO NOTHING;",
		"-- version 4", `ALTER TABLE "events_audit" ADD COLUMN IF NOT EXISTS trace_id text NOT NULL DEFAULT ''`,
		"VALUES ('events', 4) ON CONFLICT DO NOTHING;"} {
		if !strings.Contains(ddl, want) {
			t.Errorf("DDL lacks %q:\n%s", want, ddl)
		}
	}
	if _, err := postgresDDL(`events"; DROP TABLE x; --`); err == nil {
		t.Fatal("postgresDDL accepted a table name that is not an identifier")
	}
}

func TestIntegrationPostgresMigrate(t *testing.T) {
	dsn := postgresDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	table := testTableName(t)
	t.Cleanup(func() { dropTestTable(t, dsn, table) })

	cfg := NewDefaultConfig().Postgres
	cfg.DSN, cfg.Table = dsn, table
	if _, err := OpenPostgres(ctx, cfg); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("OpenPostgres before Migrate: err = %v, want the table to be missing", err)
	}
	for i := range 2 {
		if err := Migrate(ctx, dsn, table); err != nil {
			t.Fatalf("Migrate #%d: %v", i+1, err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var versions, indexes int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM sluice_sink_migrations WHERE table_name = $1", table).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	if versions != PostgresSchemaVersion {
		t.Errorf("recorded versions = %d, want %d", versions, PostgresSchemaVersion)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_indexes WHERE tablename = $1", table).Scan(&indexes); err != nil {
		t.Fatal(err)
	}
	if indexes != 4 { // the primary key and three more
		t.Errorf("indexes on %s = %d, want 4", table, indexes)
	}

	if _, err := OpenPostgres(ctx, cfg); err != nil {
		t.Fatalf("OpenPostgres after Migrate: %v", err)
	}

	// A table migrated by a newer binary is refused.
	if _, err := conn.Exec(ctx, "INSERT INTO sluice_sink_migrations (table_name, version) VALUES ($1, $2)", table, PostgresSchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, dsn, table); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Migrate over a newer schema: err = %v", err)
	}
	if _, err := OpenPostgres(ctx, cfg); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("OpenPostgres over a newer schema: err = %v", err)
	}
}

// v1Insert stores events the way a version 1 binary did.
const v1Insert = `INSERT INTO %s (` + v1Columns + `)
SELECT id, ty, src, pk, occ, ing, fp, p::jsonb, v, tp, kp, ko, $13::timestamptz
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[],
	$7::text[], $8::text[], $9::bytea[], $10::text[], $11::int4[], $12::int8[])
	WITH ORDINALITY AS u(id, ty, src, pk, occ, ing, fp, p, v, tp, kp, ko, ord)
ORDER BY id, ord
ON CONFLICT (event_id) DO NOTHING`

// TestIntegrationPostgresMigrateV1: a version 1 table holding rows, as
// binaries before the (source, event id) key left it, is refused by
// OpenPostgres and brought to version 2 by Migrate, its rows kept and
// fingerprinted; Migrate runs again, and version 2 applied but not
// recorded runs again, without harm.
func TestIntegrationPostgresMigrateV1(t *testing.T) {
	dsn := postgresDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	table := testTableName(t)
	t.Cleanup(func() { dropTestTable(t, dsn, table) })
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	// The version 1 table, made as a version 1 Migrate made it.
	if _, err := conn.Exec(ctx, migrationsTable+";\n"+fmt.Sprintf(postgresMigrations[0], quoteIdent(table), table)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO sluice_sink_migrations (table_name, version) VALUES ($1, 1)", table); err != nil {
		t.Fatal(err)
	}
	old := testEvents(0, 6)
	var cols pgColumns
	for i := range old {
		cols.add(&old[i], i)
	}
	written := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	args := append(cols.args(false, written)[:12:12], written)
	if _, err := conn.Exec(ctx, fmt.Sprintf(v1Insert, quoteIdent(table)), args...); err != nil {
		t.Fatal(err)
	}

	cfg := NewDefaultConfig().Postgres
	cfg.DSN, cfg.Table = dsn, table
	refusedThenMigrated(t, 1,
		func() error { _, err := OpenPostgres(ctx, cfg); return err },
		func() error { return Migrate(ctx, dsn, table) })
	// Versions 2 to 4 applied but not recorded (an interrupted run, or a
	// hand-applied DDL) run again cleanly.
	if _, err := conn.Exec(ctx, "DELETE FROM sluice_sink_migrations WHERE table_name = $1 AND version >= 2", table); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, dsn, table); err != nil {
		t.Fatalf("Migrate over unrecorded versions 2 to 4: %v", err)
	}

	var pk string
	if err := conn.QueryRow(ctx, "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'",
		quoteIdent(table)).Scan(&pk); err != nil {
		t.Fatal(err)
	}
	if pk != "PRIMARY KEY (source, event_id)" {
		t.Errorf("primary key = %s", pk)
	}
	var versions []int
	rows, err := conn.Query(ctx, "SELECT version FROM sluice_sink_migrations WHERE table_name = $1 ORDER BY version", table)
	if err != nil {
		t.Fatal(err)
	}
	if versions, err = pgx.CollectRows(rows, pgx.RowTo[int]); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(versions) != "[1 2 3 4]" {
		t.Errorf("recorded versions = %v, want [1 2 3 4]", versions)
	}

	p, err := OpenPostgres(ctx, cfg)
	if err != nil {
		t.Fatalf("OpenPostgres after Migrate: %v", err)
	}
	defer p.Close()
	if n, err := p.Count(ctx); err != nil || n != int64(len(old)) {
		t.Fatalf("Count after Migrate = %d, %v; want %d", n, err, len(old))
	}
	for _, e := range old {
		row, err := p.Get(ctx, e.Source, e.ID)
		if err != nil {
			t.Fatalf("Get(%q, %q): %v", e.Source, e.ID, err)
		}
		// The backfilled fingerprint is the digest of the stored value,
		// here the one testEvent computes in Go.
		checkRow(t, stores{value: true, precision: time.Microsecond}, e, row, written)
	}
	// The old rows take part in identity like new ones: a redelivery is a
	// duplicate, another payload a conflict, another source another event.
	writeClean(t, p, old[:2])
	other := old[0]
	other.Source = "tenant-b"
	writeClean(t, p, []Event{other})
	changed := withPayload(old[1], "changed")
	conflicts, err := p.Write(ctx, []Event{changed})
	wantClass(t, err, 0)
	if want := []Conflict{{0, old[1].PayloadFingerprint}}; !slices.Equal(conflicts, want) {
		t.Fatalf("conflicts = %v, want %v", conflicts, want)
	}
	if n, err := p.Count(ctx); err != nil || n != int64(len(old))+1 {
		t.Fatalf("Count = %d, %v; want %d", n, err, len(old)+1)
	}
}

// TestIntegrationPostgresDDLByHand: what postgresDDL prints, applied by
// hand, makes a table OpenPostgres accepts and Migrate leaves alone.
func TestIntegrationPostgresDDLByHand(t *testing.T) {
	dsn := postgresDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	table := testTableName(t)
	t.Cleanup(func() { dropTestTable(t, dsn, table) })
	ddl, err := postgresDDL(table)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, ddl); err != nil {
		t.Fatalf("applying postgresDDL: %v", err)
	}
	if err := Migrate(ctx, dsn, table); err != nil {
		t.Fatal(err)
	}
	cfg := NewDefaultConfig().Postgres
	cfg.DSN, cfg.Table = dsn, table
	p, err := OpenPostgres(ctx, cfg)
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
	}
	p.Close()
}

// TestIntegrationPostgresConflictBehindALock: a write whose identity is
// being inserted by a transaction not yet committed waits for it, and
// records the conflict once that transaction commits; a snapshot taken
// before the commit would miss it.
func TestIntegrationPostgresConflictBehindALock(t *testing.T) {
	dsn := postgresDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := openTestPostgres(t, dsn, newTestClock())
	first := testEvent(1)
	second := withPayload(first, "second")

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var cols pgColumns
	cols.add(&first, 0)
	if _, err := tx.Exec(ctx, p.insert, cols.args(false, time.Now())...); err != nil {
		t.Fatal(err)
	}

	type result struct {
		conflicts []Conflict
		err       error
	}
	done := make(chan result, 1)
	go func() {
		c, err := p.Write(ctx, []Event{second})
		done <- result{c, err}
	}()
	waitUntil(t, 20*time.Second, "the write to wait for the open transaction's row lock", func() bool {
		var waiting int
		if err := p.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO ' || $1 || '%'`, p.table).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		return waiting > 0
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	wantClass(t, r.err, 0)
	if want := []Conflict{{0, first.PayloadFingerprint}}; !slices.Equal(r.conflicts, want) {
		t.Fatalf("conflicts = %v, want %v", r.conflicts, want)
	}
	checkRecords(t, p, stores{value: true, precision: time.Microsecond}, []Event{second}, first.PayloadFingerprint, newTestClock().Now())
}

func TestIntegrationPostgresErrors(t *testing.T) {
	dsn := postgresDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := openTestPostgres(t, dsn, newTestClock())

	// Valid JSON that jsonb refuses (22P05): the event, every time.
	batch := testEvents(0, 3)
	batch[1].JSON = []byte(`{"text":"nul \u0000 here"}`)
	err := writeErr(ctx, p, batch)
	wantClass(t, err, Permanent)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code[:2] != "22" {
		t.Fatalf("err = %v, want a data exception", err)
	}
	if n, err := p.Count(ctx); err != nil || n != 0 {
		t.Fatalf("Count after refused batch = %d, %v; want 0 (one statement)", n, err)
	}

	canceled, cancelNow := context.WithCancel(ctx)
	cancelNow()
	wantClass(t, writeErr(canceled, p, testEvents(0, 3)), Transient)

	// The table gone under the sink is the sink's fault: transient.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP TABLE "+p.table); err != nil {
		t.Fatal(err)
	}
	err = writeErr(ctx, p, testEvents(0, 3))
	wantClass(t, err, Transient)
	if !errors.As(err, &pe) || pe.Code != "42P01" {
		t.Fatalf("err = %v, want undefined_table", err)
	}
}

func TestPostgresUnreachable(t *testing.T) {
	cfg := NewDefaultConfig().Postgres
	cfg.DSN = "postgres://sluice:sluice@127.0.0.1:1/sluice_test?sslmode=disable"
	cfg.ConnectTimeout = 2 * time.Second
	if _, err := OpenPostgres(context.Background(), cfg); err == nil {
		t.Fatal("OpenPostgres on a closed port succeeded")
	}
}

// The sink's connections plan its statements once (generic plans), unless
// the DSN says otherwise.
func TestIntegrationPostgresGenericPlans(t *testing.T) {
	dsn := postgresDSN(t)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	for d, want := range map[string]string{dsn: "force_generic_plan", dsn + sep + "plan_cache_mode=auto": "auto"} {
		p := openTestPostgres(t, d, newTestClock())
		var got string
		if err := p.pool.QueryRow(context.Background(), "SHOW plan_cache_mode").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("plan_cache_mode %q, want %q", got, want)
		}
	}
}
