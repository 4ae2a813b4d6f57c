package sink

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSQLiteReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := newTestClock()
	s := openTestSQLite(t, dir, clock)
	events := testEvents(0, 10)
	if err := s.Write(ctx, events); err != nil {
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
		row, err := s.Get(ctx, e.ID)
		if err != nil {
			t.Fatalf("Get(%q): %v", e.ID, err)
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

	cfg := DefaultConfig().SQLite
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
	cfg := DefaultConfig().SQLite
	cfg.Path = path
	s, err := OpenSQLite(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for b := range 20 {
		if err := s.Write(context.Background(), testEvents(b*5, 5)); err != nil {
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
		cfg := DefaultConfig().SQLite
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
		wantClass(t, s.Write(ctx, testEvents(0, 2)), Transient)
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		wantClass(t, s.Write(ctx, testEvents(0, 2)), 0)
	})
	t.Run("constraint is permanent", func(t *testing.T) {
		// An operator's table with a stricter rule than the sink's.
		dir := t.TempDir()
		cfg := DefaultConfig().SQLite
		cfg.Path = filepath.Join(dir, "events.db")
		db, err := sql.Open("sqlite", cfg.Path)
		if err != nil {
			t.Fatal(err)
		}
		ddl := strings.Replace(fmt.Sprintf(sqliteSchema, quoteIdent(cfg.Table)),
			"source             TEXT NOT NULL,", "source TEXT NOT NULL CHECK (source <> 'forbidden'),", 1)
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			t.Fatal(err)
		}
		db.Close()
		s, err := OpenSQLite(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		batch := testEvents(0, 3)
		batch[2].Source = "forbidden"
		wantClass(t, s.Write(ctx, batch), Permanent)
		if n, err := s.Count(ctx); err != nil || n != 0 {
			t.Fatalf("Count after failed batch = %d, %v; want 0 (one transaction)", n, err)
		}
	})
	t.Run("canceled context is transient", func(t *testing.T) {
		s := openTestSQLite(t, t.TempDir(), newTestClock())
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		wantClass(t, s.Write(cctx, testEvents(0, 2)), Transient)
	})
}

func TestSQLiteReads(t *testing.T) {
	ctx := context.Background()
	cfg := DefaultConfig().SQLite
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
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(missing) err = %v, want ErrNotFound", err)
	}
	for b := range 3 {
		if err := s.Write(ctx, testEvents(b*4, 4)); err != nil {
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
