package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	ddl, err := PostgresDDL("events")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`CREATE TABLE IF NOT EXISTS "events"`, "event_id           text PRIMARY KEY", "payload            jsonb",
		`"events_type_occurred_at_idx"`, "-- version 1", "sluice_sink_migrations"} {
		if !strings.Contains(ddl, want) {
			t.Errorf("DDL lacks %q:\n%s", want, ddl)
		}
	}
	if _, err := PostgresDDL(`events"; DROP TABLE x; --`); err == nil {
		t.Fatal("PostgresDDL accepted a table name that is not an identifier")
	}
}

func TestIntegrationPostgresMigrate(t *testing.T) {
	dsn := postgresDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	table := testTableName(t)
	t.Cleanup(func() { dropTestTable(t, dsn, table) })

	cfg := DefaultConfig().Postgres
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

	// A table migrated by a newer binary is refused.
	if _, err := conn.Exec(ctx, "INSERT INTO sluice_sink_migrations (table_name, version) VALUES ($1, $2)", table, PostgresSchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, dsn, table); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Migrate over a newer schema: err = %v", err)
	}
}

func TestIntegrationPostgresErrors(t *testing.T) {
	dsn := postgresDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := openTestPostgres(t, dsn, newTestClock())

	// Valid JSON that jsonb refuses (22P05): the event, every time.
	batch := testEvents(0, 3)
	batch[1].JSON = []byte(`{"text":"nul \u0000 here"}`)
	err := p.Write(ctx, batch)
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
	wantClass(t, p.Write(canceled, testEvents(0, 3)), Transient)

	// The table gone under the sink is the sink's fault: transient.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP TABLE "+p.table); err != nil {
		t.Fatal(err)
	}
	err = p.Write(ctx, testEvents(0, 3))
	wantClass(t, err, Transient)
	if !errors.As(err, &pe) || pe.Code != "42P01" {
		t.Fatalf("err = %v, want undefined_table", err)
	}
}

func TestPostgresUnreachable(t *testing.T) {
	cfg := DefaultConfig().Postgres
	cfg.DSN = "postgres://sluice:sluice@127.0.0.1:1/sluice_test?sslmode=disable"
	cfg.ConnectTimeout = 2 * time.Second
	if _, err := OpenPostgres(context.Background(), cfg); err == nil {
		t.Fatal("OpenPostgres on a closed port succeeded")
	}
}
