package sink

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/utctime"
)

func TestSQLiteReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := newTestClock()
	s := openTestSQLite(t, dir, clock)
	events := testEvents(0, 10)
	if err := writeErr(ctx, s, events); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = openTestSQLite(t, dir, clock)
	n, err := s.Count(ctx)
	if err != nil || n != 10 {
		t.Fatalf("Count after reopen = %d, %v; want 10", n, err)
	}
	for _, e := range events {
		row, err := s.Get(ctx, e.Source, e.ID)
		if err != nil {
			t.Fatalf("Get(%q, %q): %v", e.Source, e.ID, err)
		}
		checkRow(t, stores{value: true, precision: time.Nanosecond}, e, row, clock.Now())
	}
}

// crashChildEnv tells the test binary to act as TestSQLiteSurvivesKill's
// child: write the events, report, and wait to be killed.
const crashChildEnv = "SLUICE_SINK_CRASH_CHILD_DB"

// TestSQLiteSurvivesKill writes from a child process that is then killed
// with SIGKILL, without Close and without a checkpoint: every batch the
// child saw acknowledged must be in the file.
func TestSQLiteSurvivesKill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSQLiteCrashChild$", "-test.count=1", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// The child waits on this pipe; it ends when this process does.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "acked ") {
			fmt.Sscan(strings.TrimPrefix(line, "acked "), &acked)
			if acked == 20 {
				break
			}
		}
	}
	if acked != 20 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child acknowledged %d batches, want 20", acked)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	cfg := NewDefaultConfig().SQLite
	cfg.Path = path
	s, err := OpenSQLite(ctx, cfg)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	n, err := s.Count(ctx)
	if err != nil || n != 20*5 {
		t.Fatalf("Count after kill = %d, %v; want %d", n, err, 20*5)
	}
}

func TestSQLiteCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("runs only as TestSQLiteSurvivesKill's child")
	}
	cfg := NewDefaultConfig().SQLite
	cfg.Path = path
	s, err := OpenSQLite(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for b := range 20 {
		if err := writeErr(context.Background(), s, testEvents(b*5, 5)); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("acked %d\n", b+1)
	}
	// Wait to be killed; if the parent is gone, its end of stdin closes.
	io.Copy(io.Discard, os.Stdin)
	os.Exit(3)
}

func TestSQLiteErrorClasses(t *testing.T) {
	ctx := context.Background()
	t.Run("locked file is transient", func(t *testing.T) {
		dir := t.TempDir()
		cfg := NewDefaultConfig().SQLite
		cfg.Path = filepath.Join(dir, "events.db")
		cfg.BusyTimeout = 0
		s, err := OpenSQLite(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		other, err := sql.Open("sqlite", cfg.Path)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		conn, err := other.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		wantClass(t, writeErr(ctx, s, testEvents(0, 2)), Transient)
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		wantClass(t, writeErr(ctx, s, testEvents(0, 2)), 0)
	})
	t.Run("constraint is permanent", func(t *testing.T) {
		// An operator's table with a stricter rule than the sink's.
		dir := t.TempDir()
		cfg := NewDefaultConfig().SQLite
		cfg.Path = filepath.Join(dir, "events.db")
		db, err := sql.Open("sqlite", cfg.Path)
		if err != nil {
			t.Fatal(err)
		}
		ddl := strings.Replace(fmt.Sprintf(sqliteTable, quoteIdent(cfg.Table)),
			"source              TEXT NOT NULL,", "source TEXT NOT NULL CHECK (source <> 'forbidden'),", 1)
		for _, stmt := range []string{
			ddl,
			fmt.Sprintf(sqliteConflictsTable, quoteIdent(cfg.Table+conflictsSuffix)),
			fmt.Sprintf(sqliteAuditTable, quoteIdent(cfg.Table+auditSuffix)),
			sqliteMigrationsTable,
			fmt.Sprintf("INSERT INTO sluice_sink_migrations VALUES ('%s', %d, '')", cfg.Table, SQLiteSchemaVersion),
		} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
		s, err := OpenSQLite(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		batch := testEvents(0, 3)
		batch[2].Source = "forbidden"
		wantClass(t, writeErr(ctx, s, batch), Permanent)
		if n, err := s.Count(ctx); err != nil || n != 0 {
			t.Fatalf("Count after failed batch = %d, %v; want 0 (one transaction)", n, err)
		}
	})
	t.Run("canceled context is transient", func(t *testing.T) {
		s := openTestSQLite(t, t.TempDir(), newTestClock())
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		wantClass(t, writeErr(cctx, s, testEvents(0, 2)), Transient)
	})
}

func TestSQLiteReads(t *testing.T) {
	ctx := context.Background()
	cfg := NewDefaultConfig().SQLite
	cfg.Path = filepath.Join(t.TempDir(), "events.db")
	cfg.Table = "order" // a keyword: the sink quotes it
	s, err := OpenSQLite(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rows, err := s.Recent(ctx, 10); err != nil || len(rows) != 0 {
		t.Fatalf("Recent on empty table = %d rows, %v", len(rows), err)
	}
	if _, err := s.Get(ctx, "shop-0", "nope"); !errors.Is(err, errNotFound) {
		t.Fatalf("Get(missing) err = %v, want errNotFound", err)
	}
	for b := range 3 {
		if err := writeErr(ctx, s, testEvents(b*4, 4)); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := s.Recent(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.EventID)
	}
	want := []string{"evt-0011", "evt-0010", "evt-0009", "evt-0008", "evt-0007"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Recent(5) = %v, want %v", got, want)
	}
	if rows, err := s.Recent(ctx, -1); err != nil || len(rows) != 0 {
		t.Fatalf("Recent(-1) = %d rows, %v; want none", len(rows), err)
	}
}

// TestSQLiteReader: OpenSQLiteReader reads a sink's existing file and
// nothing else: a path with no file is an error naming it (fs.ErrNotExist)
// and no file is made there; a table at an older version asks for sluice
// sink migrate; the rows read are Recent's.
func TestSQLiteReader(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := NewDefaultConfig().SQLite
	cfg.Path = filepath.Join(dir, "none.db")
	if _, err := OpenSQLiteReader(ctx, cfg); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), cfg.Path) {
		t.Fatalf("a reader of a file that is not there: %v, want fs.ErrNotExist naming %s", err, cfg.Path)
	}
	if _, err := os.Stat(cfg.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the reader made the file: %v", err)
	}
	cfg.Path = filepath.Join(dir, "v2.db")
	writeSQLiteV2(t, cfg.Path, cfg.Table, nil, time.Now())
	if _, err := OpenSQLiteReader(ctx, cfg); err == nil || !strings.Contains(err.Error(), "schema version 2") || !strings.Contains(err.Error(), "run sluice sink migrate") {
		t.Fatalf("a reader of a version 2 file: %v", err)
	}

	s := openTestSQLite(t, dir, newTestClock())
	if err := writeErr(ctx, s, testEvents(0, 3)); err != nil {
		t.Fatal(err)
	}
	cfg.Path = filepath.Join(dir, "events.db")
	r, err := OpenSQLiteReader(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Recent(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.Recent(ctx, 2)
	if err != nil || len(got) != 2 || !slices.EqualFunc(got, want, func(a, b Row) bool { return a.EventID == b.EventID && a.Source == b.Source }) {
		t.Fatalf("reader's Recent(2) = %+v, sink's %+v (%v)", got, want, err)
	}
}

// sqliteV1Table is the table as releases before the (source, event id)
// key created it, with no version recorded; %[1]s is the quoted name.
func sqliteV1Table(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/sqlite-v1-table.sql")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(string(b), name)
}

// writeSQLiteV1 makes path a version 1 file holding events, written at
// written, as a version 1 binary left it.
func writeSQLiteV1(t *testing.T, path, table string, events []Event, written time.Time) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, sqliteV1Table(t, quoteIdent(table))); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, e := range events {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s (%s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(event_id) DO NOTHING`, quoteIdent(table), v1Columns),
			e.ID, e.Type, e.Source, string(e.Key), utctime.Format(e.OccurredAt), utctime.Format(e.IngestedAt),
			e.SchemaFingerprint, string(e.JSON), e.Value, e.Topic, e.Partition, e.Offset, utctime.Format(written)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestSQLiteMigrateV1: a version 1 file holding rows is refused by
// OpenSQLite and brought to version 2 by MigrateSQLite, its rows kept, in
// their order, and fingerprinted; MigrateSQLite runs again without harm.
func TestSQLiteMigrateV1(t *testing.T) {
	ctx := context.Background()
	cfg := NewDefaultConfig().SQLite
	cfg.Path = filepath.Join(t.TempDir(), "events.db")
	old := testEvents(0, 600) // more than one chunk of the fingerprint pass
	written := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	writeSQLiteV1(t, cfg.Path, cfg.Table, old, written)

	refusedThenMigrated(t, 1,
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
			t.Fatalf("Get(%q, %q): %v", e.Source, e.ID, err)
		}
		// testEvent's fingerprint is the digest of its value, as the
		// migration computes it for the rows it finds.
		checkRow(t, stores{value: true, precision: time.Nanosecond}, e, row, written)
	}
	recent, err := s.Recent(ctx, 2)
	if err != nil || len(recent) != 2 || recent[0].EventID != old[599].ID || recent[1].EventID != old[598].ID {
		t.Fatalf("Recent(2) after MigrateSQLite = %+v, %v; want the last two rows written", recent, err)
	}

	// The old rows take part in identity like new ones.
	writeClean(t, s, old[:2])
	other := old[0]
	other.Source = "tenant-b"
	writeClean(t, s, []Event{other})
	changed := withPayload(old[1], "changed")
	conflicts, err := s.Write(ctx, []Event{changed})
	wantClass(t, err, 0)
	if want := []Conflict{{0, old[1].PayloadFingerprint}}; !slices.Equal(conflicts, want) {
		t.Fatalf("conflicts = %v, want %v", conflicts, want)
	}
	checkRecords(t, s, stores{value: true, precision: time.Nanosecond}, []Event{changed}, old[1].PayloadFingerprint, clock.Now())
}

// TestSQLiteSchemaVersions: a new file is made at the newest version by
// OpenSQLite or MigrateSQLite alike; a file a newer binary migrated is
// refused by both.
func TestSQLiteSchemaVersions(t *testing.T) {
	ctx := context.Background()
	versions := func(t *testing.T, path string) []int {
		t.Helper()
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rs, err := db.QueryContext(ctx, "SELECT version FROM sluice_sink_migrations WHERE table_name = 'events' ORDER BY version")
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		var out []int
		for rs.Next() {
			var v int
			if err := rs.Scan(&v); err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	t.Run("fresh file", func(t *testing.T) {
		for _, create := range []struct {
			name string
			fn   func(SQLiteConfig) error
		}{
			{"OpenSQLite", func(cfg SQLiteConfig) error {
				s, err := OpenSQLite(ctx, cfg)
				if err == nil {
					s.Close()
				}
				return err
			}},
			{"MigrateSQLite", func(cfg SQLiteConfig) error { return MigrateSQLite(ctx, cfg) }},
		} {
			t.Run(create.name, func(t *testing.T) {
				cfg := NewDefaultConfig().SQLite
				cfg.Path = filepath.Join(t.TempDir(), "events.db")
				if err := create.fn(cfg); err != nil {
					t.Fatal(err)
				}
				if got := versions(t, cfg.Path); !slices.Equal(got, []int{SQLiteSchemaVersion}) {
					t.Fatalf("recorded versions = %v, want [%d]", got, SQLiteSchemaVersion)
				}
				if err := MigrateSQLite(ctx, cfg); err != nil {
					t.Fatalf("MigrateSQLite of a new file: %v", err)
				}
				s, err := OpenSQLite(ctx, cfg)
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
			})
		}
	})
	t.Run("newer version is refused", func(t *testing.T) {
		cfg := NewDefaultConfig().SQLite
		cfg.Path = filepath.Join(t.TempDir(), "events.db")
		if err := MigrateSQLite(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("sqlite", cfg.Path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO sluice_sink_migrations VALUES ('events', ?, '')", SQLiteSchemaVersion+1); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if _, err := OpenSQLite(ctx, cfg); err == nil || !strings.Contains(err.Error(), "newer") {
			t.Fatalf("OpenSQLite of a newer table: err = %v", err)
		}
		if err := MigrateSQLite(ctx, cfg); err == nil || !strings.Contains(err.Error(), "newer") {
			t.Fatalf("MigrateSQLite of a newer table: err = %v", err)
		}
	})
}
