package sink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/internal/utctime"
)

// auditSink is a table sink as the audit tests use it.
type auditSink interface {
	Sink
	audit.Writer
	audit.Reader
	rowReader
}

// auditImpl opens a table sink under test, with refuse, which makes the
// table named by suffix ("" for the events, auditSuffix for the audit
// table) refuse every row of event id.
type auditImpl struct {
	name      string
	precision time.Duration
	open      func(t *testing.T, clock *testClock) (s auditSink, refuse func(t *testing.T, suffix, id string))
}

func sqliteAuditImpl() auditImpl {
	return auditImpl{
		name:      KindSQLite,
		precision: time.Nanosecond,
		open: func(t *testing.T, clock *testClock) (auditSink, func(*testing.T, string, string)) {
			dir := t.TempDir()
			s := openTestSQLite(t, dir, clock)
			return s, func(t *testing.T, suffix, id string) {
				db, err := sql.Open("sqlite", filepath.Join(dir, "events.db"))
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				table := quoteIdent("events" + suffix)
				if _, err := db.Exec(fmt.Sprintf(`CREATE TRIGGER "refuse%s" BEFORE INSERT ON %s WHEN NEW.event_id = '%s'
					BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`, suffix, table, id)); err != nil {
					t.Fatal(err)
				}
			}
		},
	}
}

func postgresAuditImpl(dsn string) auditImpl {
	return auditImpl{
		name:      KindPostgres,
		precision: time.Microsecond,
		open: func(t *testing.T, clock *testClock) (auditSink, func(*testing.T, string, string)) {
			p := openTestPostgres(t, dsn, clock)
			return p, func(t *testing.T, suffix, id string) {
				ctx := context.Background()
				conn, err := pgx.Connect(ctx, dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(ctx)
				table := strings.Trim(p.table, `"`) + suffix
				fn := quoteIdent(table + "_refuse")
				if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE FUNCTION %[1]s() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.event_id = '%[3]s' THEN RAISE EXCEPTION 'refused by the test'; END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER refuse BEFORE INSERT ON %[2]s FOR EACH ROW EXECUTE FUNCTION %[1]s();`, fn, quoteIdent(table), id)); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					conn, err := pgx.Connect(ctx, dsn)
					if err != nil {
						t.Error(err)
						return
					}
					defer conn.Close(ctx)
					if _, err := conn.Exec(ctx, "DROP FUNCTION IF EXISTS "+fn+" CASCADE"); err != nil {
						t.Error(err)
					}
				})
			}
		},
	}
}

func TestAudit(t *testing.T) { runAudit(t, sqliteAuditImpl()) }

func TestIntegrationPostgresAudit(t *testing.T) { runAudit(t, postgresAuditImpl(postgresDSN(t))) }

// auditRows reads the rows of e's identity from s.
func auditRows(t *testing.T, s audit.Reader, e Event) []audit.Row {
	t.Helper()
	rows, err := s.AuditRows(context.Background(), e.Source, e.ID)
	if err != nil {
		t.Fatalf("AuditRows(%q, %q): %v", e.Source, e.ID, err)
	}
	return rows
}

// wantRows fails t unless got are want with sequences 1, 2, ..., each at
// its At to precision.
func wantRows(t *testing.T, precision time.Duration, got, want []audit.Row) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d audit rows, want %d:\n got %+v\nwant %+v", len(got), len(want), got, want)
	}
	for i := range want {
		w := want[i]
		w.Sequence = int64(i + 1)
		w.At = w.At.Truncate(precision).UTC()
		if got[i] != w {
			t.Errorf("audit row %d:\n got %+v\nwant %+v", i, got[i], w)
		}
	}
}

// written is e's written row as the sink named name writes it at at.
func written(e Event, name string, at time.Time, detail string) audit.Row {
	return WrittenRow(&e, name, at, detail)
}

func runAudit(t *testing.T, impl auditImpl) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("written rows and decisions, in sequence order", func(t *testing.T) {
		clock := newTestClock()
		s, _ := impl.open(t, clock)
		batch := testEvents(0, 3)
		batch[1].Group, batch[1].ReplayID, batch[1].ReplayActor = "g1", "r-1", "ops"
		writtenAt := clock.Now()
		writeClean(t, s, batch)
		for _, e := range batch {
			wantRows(t, impl.precision, auditRows(t, s, e), []audit.Row{written(e, impl.name, writtenAt, "")})
		}
		if got := auditRows(t, s, batch[1])[0]; got.Group != "g1" || got.ReplayID != "r-1" || got.Actor != "ops" {
			t.Fatalf("written row of a replayed event = %+v, want its group, replay id and actor", got)
		}
		if got := auditRows(t, s, batch[2])[0]; got.TraceID == "" || got.TraceID != batch[2].TraceID {
			t.Fatalf("written row's trace id %q, want the event's %q", got.TraceID, batch[2].TraceID)
		}

		// Decisions without a write come after, in the order recorded.
		clock.Advance(time.Minute)
		e := batch[0]
		dead := audit.Row{Source: e.Source, EventID: e.ID, Action: audit.DeadLettered, At: clock.Now().Add(-time.Second),
			Topic: e.Topic, Partition: e.Partition, Offset: e.Offset, EventType: e.Type, Group: "g", Sink: impl.name,
			Class: "transient", Error: "down", Attempt: 5, Retryable: true, TraceID: e.TraceID}
		retried := audit.Row{Source: e.Source, EventID: e.ID, Action: audit.Retried, Topic: e.Topic + ".dlq", Partition: 2, Offset: 7,
			EventType: e.Type, Group: "g", Sink: impl.name, Class: "transient", Attempt: 5, Retryable: true,
			TraceID: "0af7651916cd43dd8448eb211c80319c"}
		// A trace id that is not one is dropped, the row kept.
		parked := audit.Row{Source: e.Source, EventID: e.ID, Action: audit.Parked, At: clock.Now(), Topic: e.Topic + ".dlq", Partition: 2, Offset: 9,
			EventType: e.Type, Group: "g", Sink: impl.name, Class: "transient", Error: "down", Attempt: 6, DLQRetries: 1, Detail: "max_retries",
			TraceID: "not\x00a trace id"}
		if err := s.Audit(ctx, []audit.Row{dead, retried}); err != nil {
			t.Fatalf("Audit: %v", err)
		}
		if err := s.Audit(ctx, []audit.Row{parked}); err != nil {
			t.Fatalf("Audit: %v", err)
		}
		retried.At = clock.Now() // stamped by the sink
		parked.TraceID = ""
		wantRows(t, impl.precision, auditRows(t, s, e), []audit.Row{written(e, impl.name, writtenAt, ""), dead, retried, parked})
		if rows := auditRows(t, s, Event{Source: "nobody", ID: e.ID}); len(rows) != 0 {
			t.Fatalf("rows of an identity never audited: %+v", rows)
		}
		// The identity is (source, id): the same id of another source has
		// a trail of its own.
		other := testEvent(0)
		other.Source = "tenant-b"
		writeClean(t, s, []Event{other})
		wantRows(t, impl.precision, auditRows(t, s, other), []audit.Row{written(other, impl.name, clock.Now(), "")})
		if n := len(auditRows(t, s, e)); n != 4 {
			t.Fatalf("%d rows for %q after another source's event, want 4", n, e.Source)
		}
	})

	t.Run("a record decided on again adds no row", func(t *testing.T) {
		clock := newTestClock()
		s, _ := impl.open(t, clock)
		e := testEvent(1)
		at := clock.Now()
		writeClean(t, s, []Event{e})
		// Redelivered, later, in a batch of its own and twice in one.
		clock.Advance(time.Minute)
		writeClean(t, s, []Event{e})
		writeClean(t, s, []Event{e, e})
		want := []audit.Row{written(e, impl.name, at, "")}
		wantRows(t, impl.precision, auditRows(t, s, e), want)

		// Another record of the same event is a duplicate; another payload
		// under the identity a conflict. Each once, however often it comes.
		dupe := e
		dupe.Offset += 10
		copied := withPayload(e, "copy")
		copied.Offset += 20
		for range 2 {
			if _, err := s.Write(ctx, []Event{dupe, copied}); err != nil {
				t.Fatal(err)
			}
		}
		want = append(want, written(dupe, impl.name, clock.Now(), audit.DetailDuplicate),
			written(copied, impl.name, clock.Now(), audit.DetailConflict))
		wantRows(t, impl.precision, auditRows(t, s, e), want)

		// The same decision twice, in one call and in two, is one row; a
		// decision with another attempt, DLQ retry or replay is another.
		dead := audit.Row{Source: e.Source, EventID: e.ID, Action: audit.DeadLettered, At: clock.Now(), Topic: e.Topic,
			Partition: e.Partition, Offset: e.Offset, Class: "permanent", Error: "refused", Attempt: 1}
		again := dead
		again.Error = "refused again" // not part of the decision
		if err := s.Audit(ctx, []audit.Row{dead, again}); err != nil {
			t.Fatal(err)
		}
		if err := s.Audit(ctx, []audit.Row{again}); err != nil {
			t.Fatal(err)
		}
		want = append(want, dead)
		wantRows(t, impl.precision, auditRows(t, s, e), want)
		next := dead
		next.DLQRetries = 1
		replayed := audit.Row{Source: e.Source, EventID: e.ID, Action: audit.Replayed, At: clock.Now(), Topic: e.Topic + ".parked",
			ReplayID: "r-1", Actor: "ops"}
		replayedAgain := replayed
		replayedAgain.ReplayID = "r-2"
		if err := s.Audit(ctx, []audit.Row{next, replayed, replayedAgain, replayed}); err != nil {
			t.Fatal(err)
		}
		want = append(want, next, replayed, replayedAgain)
		wantRows(t, impl.precision, auditRows(t, s, e), want)
	})

	t.Run("an event row and its written row are one transaction", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			suffix string // of the table that refuses the row
		}{
			{"the audit row refused", auditSuffix},
			{"the event row refused", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				clock := newTestClock()
				s, refuse := impl.open(t, clock)
				batch := testEvents(10, 4)
				refuse(t, tc.suffix, batch[2].ID)
				if _, err := s.Write(ctx, batch); err == nil {
					t.Fatal("Write succeeded although a row was refused")
				}
				if n, err := s.Count(ctx); err != nil || n != 0 {
					t.Fatalf("Count after the failed write = %d, %v; want 0", n, err)
				}
				for _, e := range batch {
					if rows := auditRows(t, s, e); len(rows) != 0 {
						t.Fatalf("audit rows of %q after the failed write: %+v", e.ID, rows)
					}
				}
				// The others are written with their rows once the refused
				// one is left out.
				batch = slices.Delete(batch, 2, 3)
				writeClean(t, s, batch)
				for _, e := range batch {
					wantRows(t, impl.precision, auditRows(t, s, e), []audit.Row{written(e, impl.name, clock.Now(), "")})
				}
			})
		}
	})

	t.Run("concurrent writers keep sequences dense", func(t *testing.T) {
		clock := newTestClock()
		s, _ := impl.open(t, clock)
		events := testEvents(50, 5)
		const writers = 6
		var wg sync.WaitGroup
		errs := make(chan error, 2*writers)
		for g := range writers {
			wg.Add(2)
			go func() {
				defer wg.Done()
				batch := slices.Clone(events)
				for i := range batch {
					batch[i].Offset += int64(1000 * g) // each writer's own records
				}
				if g%2 == 1 {
					slices.Reverse(batch)
				}
				_, err := s.Write(ctx, batch)
				errs <- err
			}()
			go func() {
				defer wg.Done()
				var rows []audit.Row
				for i := len(events) - 1; i >= 0; i-- {
					e := events[i]
					rows = append(rows, audit.Row{Source: e.Source, EventID: e.ID, Action: audit.DeadLettered, Topic: e.Topic,
						Partition: e.Partition, Offset: e.Offset, Attempt: g + 1})
				}
				errs <- s.Audit(ctx, rows)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent write or audit: %v", err)
			}
		}
		for _, e := range events {
			rows := auditRows(t, s, e)
			if len(rows) != 2*writers {
				t.Fatalf("%q has %d rows, want %d", e.ID, len(rows), 2*writers)
			}
			inserted := 0
			for i, r := range rows {
				if r.Sequence != int64(i+1) {
					t.Fatalf("%q: sequences %v, want 1 to %d", e.ID, sequences(rows), len(rows))
				}
				if r.Action == audit.Written && r.Detail == "" {
					inserted++
				}
			}
			if inserted != 1 {
				t.Fatalf("%q: %d written rows stored the event, want 1", e.ID, inserted)
			}
		}
	})

	t.Run("rows no table can store", func(t *testing.T) {
		clock := newTestClock()
		s, _ := impl.open(t, clock)
		e := testEvent(3)
		good := audit.Row{Source: e.Source, EventID: e.ID, Action: audit.Parked, Detail: "contract"}
		for _, tc := range []struct {
			name string
			mod  func(*audit.Row)
		}{
			{"empty id", func(r *audit.Row) { r.EventID = "" }},
			{"empty source", func(r *audit.Row) { r.Source = "" }},
			{"id with a control character", func(r *audit.Row) { r.EventID = "a\nb" }},
			{"unknown action", func(r *audit.Row) { r.Action = "deleted" }},
			{"group not UTF-8", func(r *audit.Row) { r.Group = "\xff" }},
			{"actor with NUL", func(r *audit.Row) { r.Actor = "a\x00" }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				bad := good
				tc.mod(&bad)
				err := s.Audit(ctx, []audit.Row{good, bad})
				wantClass(t, err, Permanent)
				if !errors.Is(err, ErrInvalidAuditRow) {
					t.Fatalf("err = %v, want ErrInvalidAuditRow", err)
				}
				if rows := auditRows(t, s, e); len(rows) != 0 {
					t.Fatalf("a refused call recorded %+v", rows)
				}
			})
		}
		// Free text is kept as valid UTF-8 without NUL, cut to fit.
		noisy := good
		noisy.Error = "bad \xff byte and \x00 NUL " + strings.Repeat("x", 2*maxAuditTextBytes)
		if err := s.Audit(ctx, []audit.Row{noisy}); err != nil {
			t.Fatal(err)
		}
		got := auditRows(t, s, e)[0].Error
		if !strings.HasPrefix(got, "bad \uFFFD byte and  NUL x") || len(got) > maxAuditTextBytes {
			t.Fatalf("stored error %q (%d bytes)", got[:40], len(got))
		}
	})

	t.Run("after Close", func(t *testing.T) {
		s, _ := impl.open(t, newTestClock())
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		e := testEvent(4)
		err := s.Audit(ctx, []audit.Row{{Source: e.Source, EventID: e.ID, Action: audit.Retried}})
		wantClass(t, err, Transient)
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Audit after Close: err = %v, want ErrClosed", err)
		}
	})
}

func sequences(rows []audit.Row) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.Sequence
	}
	return out
}

// TestSQLiteAuditLookup: an event's rows are read by the audit table's
// primary key, not by a scan.
func TestSQLiteAuditLookup(t *testing.T) {
	s := openTestSQLite(t, t.TempDir(), newTestClock())
	rs, err := s.r.Query("EXPLAIN QUERY PLAN "+s.auditRows, "src", "id")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var plan []string
	for rs.Next() {
		var id, parent, notused int
		var detail string
		if err := rs.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if p := strings.Join(plan, "; "); !strings.Contains(p, "USING INDEX") || strings.Contains(p, "TEMP B-TREE") {
		t.Fatalf("query plan of AuditRows: %s; want a lookup by index, in its order", p)
	}
}

// writeSQLiteV2 makes path a version 2 file holding events, as a version 2
// binary left it.
func writeSQLiteV2(t *testing.T, path, table string, events []Event, written time.Time) {
	t.Helper()
	ctx := context.Background()
	ddl, err := os.ReadFile("testdata/sqlite-v2-tables.sql")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		fmt.Sprintf(string(ddl), quoteIdent(table), quoteIdent(table+conflictsSuffix)),
		sqliteMigrationsTable,
		fmt.Sprintf("INSERT INTO sluice_sink_migrations VALUES ('%s', 2, '%s')", table, utctime.Format(written)),
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range events {
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s (%s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, quoteIdent(table), rowColumns),
			e.ID, e.Type, e.Source, string(e.Key), utctime.Format(e.OccurredAt), utctime.Format(e.IngestedAt),
			e.SchemaFingerprint, string(e.JSON), e.Value, e.Topic, e.Partition, e.Offset, utctime.Format(written), e.PayloadFingerprint); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSQLiteMigrateV2: a version 2 file holding rows is refused by
// OpenSQLite and brought to version 3 by MigrateSQLite: its rows kept,
// without audit rows (their decisions were never recorded), and new
// writes audited.
func TestSQLiteMigrateV2(t *testing.T) {
	ctx := context.Background()
	cfg := NewDefaultConfig().SQLite
	cfg.Path = filepath.Join(t.TempDir(), "events.db")
	old := testEvents(0, 20)
	writtenV2 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	writeSQLiteV2(t, cfg.Path, cfg.Table, old, writtenV2)

	refusedThenMigrated(t, 2,
		func() error { _, err := OpenSQLite(ctx, cfg); return err },
		func() error { return MigrateSQLite(ctx, cfg) })
	clock := newTestClock()
	s, err := OpenSQLite(ctx, cfg, WithClock(clock.Now))
	if err != nil {
		t.Fatalf("OpenSQLite after MigrateSQLite: %v", err)
	}
	defer s.Close()
	if n, err := s.Count(ctx); err != nil || n != int64(len(old)) {
		t.Fatalf("Count after MigrateSQLite = %d, %v; want %d", n, err, len(old))
	}
	for _, e := range old {
		row, err := s.Get(ctx, e.Source, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		checkRow(t, stores{value: true, precision: time.Nanosecond}, e, row, writtenV2)
		if rows := auditRows(t, s, e); len(rows) != 0 {
			t.Fatalf("a row written before version 3 has audit rows %+v", rows)
		}
	}
	// A redelivery of an old event is a duplicate, and the first row of
	// its trail; a new event is audited as written.
	fresh := testEvent(100)
	writeClean(t, s, []Event{old[0], fresh})
	wantRows(t, time.Nanosecond, auditRows(t, s, old[0]), []audit.Row{written(old[0], KindSQLite, clock.Now(), audit.DetailDuplicate)})
	wantRows(t, time.Nanosecond, auditRows(t, s, fresh), []audit.Row{written(fresh, KindSQLite, clock.Now(), "")})

	db, err := sql.Open("sqlite", cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
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

// TestIntegrationPostgresMigrateV2: a version 2 table holding rows is
// refused by OpenPostgres and brought to version 3 by Migrate, which adds
// the audit table with its keys; its rows are kept without audit rows and
// new writes are audited.
func TestIntegrationPostgresMigrateV2(t *testing.T) {
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
	// The version 2 table, as a version 2 Migrate made it.
	for v := range 2 {
		if _, err := conn.Exec(ctx, migrationsTable+";\n"+fmt.Sprintf(postgresMigrations[v], quoteIdent(table), table)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO sluice_sink_migrations (table_name, version) VALUES ($1, $2)", table, v+1); err != nil {
			t.Fatal(err)
		}
	}
	old := testEvents(0, 6)
	var cols pgColumns
	for i := range old {
		cols.add(&old[i], i)
	}
	writtenV2 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	insert := fmt.Sprintf(`INSERT INTO %s (%s)
SELECT id, ty, src, pk, occ, ing, sfp, p::jsonb, v, tp, kp, ko, $14::timestamptz, pfp
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[],
	$7::text[], $8::text[], $9::bytea[], $10::text[], $11::int4[], $12::int8[], $13::text[])
	AS u(id, ty, src, pk, occ, ing, sfp, p, v, tp, kp, ko, pfp)`, quoteIdent(table), rowColumns)
	if _, err := conn.Exec(ctx, insert, cols.args(false, writtenV2)...); err != nil {
		t.Fatal(err)
	}

	cfg := NewDefaultConfig().Postgres
	cfg.DSN, cfg.Table = dsn, table
	refusedThenMigrated(t, 2,
		func() error { _, err := OpenPostgres(ctx, cfg); return err },
		func() error { return Migrate(ctx, dsn, table) })
	var keys []string
	rows, err := conn.Query(ctx, `SELECT pg_get_constraintdef(oid) FROM pg_constraint
		WHERE conrelid = $1::regclass AND contype IN ('p', 'u') ORDER BY contype`, quoteIdent(table+auditSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if keys, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if want := []string{"PRIMARY KEY (source, event_id, sequence)", "UNIQUE (" + auditDecisionKey + ")"}; !slices.Equal(keys, want) {
		t.Fatalf("keys of the audit table = %q, want %q", keys, want)
	}

	clock := newTestClock()
	p, err := OpenPostgres(ctx, cfg, WithClock(clock.Now))
	if err != nil {
		t.Fatalf("OpenPostgres after Migrate: %v", err)
	}
	defer p.Close()
	if n, err := p.Count(ctx); err != nil || n != int64(len(old)) {
		t.Fatalf("Count after Migrate = %d, %v; want %d", n, err, len(old))
	}
	for _, e := range old {
		if rows := auditRows(t, p, e); len(rows) != 0 {
			t.Fatalf("a row written before version 3 has audit rows %+v", rows)
		}
	}
	fresh := testEvent(100)
	writeClean(t, p, []Event{old[0], fresh})
	wantRows(t, time.Microsecond, auditRows(t, p, old[0]), []audit.Row{written(old[0], KindPostgres, clock.Now(), audit.DetailDuplicate)})
	wantRows(t, time.Microsecond, auditRows(t, p, fresh), []audit.Row{written(fresh, KindPostgres, clock.Now(), "")})
}

// OpenSQLiteAuditReader only reads: it creates no file, refuses a table
// at another version, and reads the rows while another connection holds
// the file's write lock.
func TestSQLiteAuditReader(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := NewDefaultConfig().SQLite
	cfg.BusyTimeout = 50 * time.Millisecond
	cfg.Path = filepath.Join(dir, "none.db")
	if _, err := OpenSQLiteAuditReader(ctx, cfg); err == nil {
		t.Fatal("a reader of a file that is not there")
	}
	if _, err := os.Stat(cfg.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the reader made the file: %v", err)
	}
	cfg.Path = filepath.Join(dir, "v2.db")
	writeSQLiteV2(t, cfg.Path, cfg.Table, nil, time.Now())
	if _, err := OpenSQLiteAuditReader(ctx, cfg); err == nil || !strings.Contains(err.Error(), "schema version 2") {
		t.Fatalf("a reader of a version 2 file: %v", err)
	}

	s := openTestSQLite(t, dir, newTestClock())
	e := testEvents(0, 1)
	if _, err := s.Write(ctx, e); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer c.ExecContext(ctx, "ROLLBACK")
	cfg.Path = filepath.Join(dir, "events.db")
	r, err := OpenSQLiteAuditReader(ctx, cfg)
	if err != nil {
		t.Fatalf("a reader while the file is locked: %v", err)
	}
	defer r.Close()
	rows, err := r.AuditRows(ctx, e[0].Source, e[0].ID)
	if err != nil || len(rows) != 1 || rows[0].Action != audit.Written {
		t.Fatalf("rows %+v, %v", rows, err)
	}
}
