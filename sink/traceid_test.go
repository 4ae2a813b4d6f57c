package sink

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/internal/utctime"
)

// oldDecision is a dead_lettered row of e as a version 3 table holds it:
// no trace id.
func oldDecision(e Event, at time.Time) audit.Row {
	return audit.Row{Source: e.Source, EventID: e.ID, Action: audit.DeadLettered, At: at,
		Topic: e.Topic, Partition: e.Partition, Offset: e.Offset, EventType: e.Type, Group: "g", Sink: "s",
		Class: "transient", Error: "down", Attempt: 3, Retryable: true}
}

// TestSQLiteMigrateV3: a version 3 file, its audit table holding rows
// without trace_id, is refused by OpenSQLite and brought to version 4 by
// MigrateSQLite (twice: the second is a no-op); its rows read back with
// no trace id, and new rows keep theirs.
func TestSQLiteMigrateV3(t *testing.T) {
	ctx := context.Background()
	cfg := NewDefaultConfig().SQLite
	cfg.Path = filepath.Join(t.TempDir(), "events.db")
	old := testEvents(0, 2)
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	writeSQLiteV2(t, cfg.Path, cfg.Table, old, at)
	ddl, err := os.ReadFile("testdata/sqlite-v3-audit.sql")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	row := oldDecision(old[0], at)
	for _, stmt := range []string{
		fmt.Sprintf(string(ddl), quoteIdent(cfg.Table+auditSuffix)),
		fmt.Sprintf("INSERT INTO sluice_sink_migrations VALUES ('%s', 3, '%s')", cfg.Table, utctime.Format(at)),
		fmt.Sprintf(`INSERT INTO %s (source, event_id, sequence, action, decided_at, topic, kafka_partition, kafka_offset,
			event_type, consumer_group, sink, error_class, error, attempt, dlq_retries, retryable, detail, replay_id, replay_actor)
			VALUES ('%s', '%s', 1, 'dead_lettered', '%s', '%s', %d, %d, '%s', 'g', 's', 'transient', 'down', 3, 0, 1, '', '', '')`,
			quoteIdent(cfg.Table+auditSuffix), row.Source, row.EventID, utctime.Format(at), row.Topic, row.Partition, row.Offset, row.EventType),
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}

	refusedThenMigrated(t, 3,
		func() error { _, err := OpenSQLite(ctx, cfg); return err },
		func() error { return MigrateSQLite(ctx, cfg) })
	clock := newTestClock()
	s, err := OpenSQLite(ctx, cfg, WithClock(clock.Now))
	if err != nil {
		t.Fatalf("OpenSQLite after MigrateSQLite: %v", err)
	}
	defer s.Close()
	// The old row, read back with no trace id, then the written row of a
	// redelivery, with the record's.
	writeClean(t, s, []Event{old[0]})
	wantRows(t, time.Nanosecond, auditRows(t, s, old[0]), []audit.Row{row, written(old[0], KindSQLite, clock.Now(), audit.DetailDuplicate)})
	if got := auditRows(t, s, old[0])[1].TraceID; got == "" || got != old[0].TraceID {
		t.Fatalf("trace id of a row written after the migration: %q, want %q", got, old[0].TraceID)
	}
	var versions []int
	rs, err := db.QueryContext(ctx, "SELECT version FROM sluice_sink_migrations WHERE table_name = ? ORDER BY version", cfg.Table)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		var v int
		if err := rs.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if !slices.Equal(versions, []int{2, 3, 4}) {
		t.Fatalf("recorded versions = %v, want [2 3 4]", versions)
	}
}

// TestIntegrationPostgresMigrateV3: a version 3 table whose audit table
// holds rows is refused by OpenPostgres and brought to version 4 by
// Migrate, which adds trace_id (text, NOT NULL, default ”); the old rows
// read back with no trace id, new ones keep theirs, and version 4 applied
// but not recorded runs again cleanly.
func TestIntegrationPostgresMigrateV3(t *testing.T) {
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
	// The version 3 tables, as a version 3 Migrate made them.
	for v := range 3 {
		if _, err := conn.Exec(ctx, migrationsTable+";\n"+fmt.Sprintf(postgresMigrations[v], quoteIdent(table), table)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO sluice_sink_migrations (table_name, version) VALUES ($1, $2)", table, v+1); err != nil {
			t.Fatal(err)
		}
	}
	e := testEvent(5)
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	row := oldDecision(e, at)
	if _, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (source, event_id, sequence, action, decided_at, topic, kafka_partition,
		kafka_offset, event_type, consumer_group, sink, error_class, error, attempt, dlq_retries, retryable, detail, replay_id, replay_actor)
		VALUES ($1, $2, 1, 'dead_lettered', $3, $4, $5, $6, $7, 'g', 's', 'transient', 'down', 3, 0, true, '', '', '')`, quoteIdent(table+auditSuffix)),
		row.Source, row.EventID, at, row.Topic, row.Partition, row.Offset, row.EventType); err != nil {
		t.Fatal(err)
	}

	cfg := NewDefaultConfig().Postgres
	cfg.DSN, cfg.Table = dsn, table
	refusedThenMigrated(t, 3,
		func() error { _, err := OpenPostgres(ctx, cfg); return err },
		func() error { return Migrate(ctx, dsn, table) })
	var typ, def string
	var nullable string
	if err := conn.QueryRow(ctx, `SELECT data_type, is_nullable, column_default FROM information_schema.columns
		WHERE table_name = $1 AND column_name = 'trace_id'`, table+auditSuffix).Scan(&typ, &nullable, &def); err != nil {
		t.Fatalf("trace_id of %s: %v", table+auditSuffix, err)
	}
	if typ != "text" || nullable != "NO" || def != "''::text" {
		t.Fatalf("trace_id is %s, nullable %s, default %s; want text NOT NULL DEFAULT ''", typ, nullable, def)
	}
	// Version 4 applied but not recorded runs again cleanly.
	if _, err := conn.Exec(ctx, "DELETE FROM sluice_sink_migrations WHERE table_name = $1 AND version = 4", table); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, dsn, table); err != nil {
		t.Fatalf("Migrate over an unrecorded version 4: %v", err)
	}

	clock := newTestClock()
	p, err := OpenPostgres(ctx, cfg, WithClock(clock.Now))
	if err != nil {
		t.Fatalf("OpenPostgres after Migrate: %v", err)
	}
	defer p.Close()
	writeClean(t, p, []Event{e})
	wantRows(t, time.Microsecond, auditRows(t, p, e), []audit.Row{row, written(e, KindPostgres, clock.Now(), "")})
	if got := auditRows(t, p, e)[1].TraceID; got == "" || got != e.TraceID {
		t.Fatalf("trace id of a row written after the migration: %q, want %q", got, e.TraceID)
	}
}
