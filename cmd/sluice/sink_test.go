package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/sink"
)

// TestSinkRecent: `sluice sink recent` prints the rows of an SQLite sink.
func TestSinkRecent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	cfg := sink.NewDefaultConfig().SQLite
	cfg.Path = path
	ctx := context.Background()
	s, err := sink.OpenSQLite(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var batch []sink.Event
	for _, id := range []string{"ev-1", "ev-2"} {
		batch = append(batch, sink.Event{ID: id, Type: "examples.logs.v1.LogLine", Source: "demo", Key: []byte("svc"),
			Value: []byte{1}, JSON: []byte(`{"message":"` + id + `"}`), PayloadFingerprint: sink.Fingerprint([]byte{1}),
			OccurredAt: at, IngestedAt: at, Topic: "t", Partition: 1, Offset: 7})
	}
	if _, err := s.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"sink", "recent", "--sqlite", path, "-n", "5"}, &out, &errOut); err != nil {
		t.Fatalf("sink recent: %v\n%s", err, errOut.String())
	}
	for _, want := range []string{"EVENT ID", "SOURCE", "ev-1", "ev-2", "demo", "examples.logs.v1.LogLine", "t[1]@7", `{"message":"ev-1"}`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestSinkRecentCutsOnARune: a payload longer than the column is cut on
// a rune boundary: what is printed stays UTF-8.
func TestSinkRecentCutsOnARune(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	cfg := sink.NewDefaultConfig().SQLite
	cfg.Path = path
	ctx := context.Background()
	s, err := sink.OpenSQLite(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	// `{"message":"` is 12 bytes and each 日 three: byte 77 falls inside one.
	js := []byte(`{"message":"` + strings.Repeat("日", 40) + `"}`)
	ev := sink.Event{ID: "ev-1", Type: "examples.logs.v1.LogLine", Source: "demo", Key: []byte("svc"),
		Value: []byte{1}, JSON: js, PayloadFingerprint: sink.Fingerprint([]byte{1}),
		OccurredAt: at, IngestedAt: at, Topic: "t", Partition: 1, Offset: 7}
	if _, err := s.Write(ctx, []sink.Event{ev}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"sink", "recent", "--sqlite", path}, &out, &errOut); err != nil {
		t.Fatalf("sink recent: %v\n%s", err, errOut.String())
	}
	if !utf8.Valid(out.Bytes()) || !strings.Contains(out.String(), `{"message":"日日`) {
		t.Fatalf("output is not UTF-8 or lacks the payload's start:\n%q", out.String())
	}
}

// TestSinkMigrateSQLite: an SQLite file of an older release is refused
// until `sluice sink migrate --sqlite` upgrades it, keeping its rows; a
// second migrate, and one by --config, leave it as it is.
func TestSinkMigrateSQLite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "events.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	ddl, err := os.ReadFile("../../sink/testdata/sqlite-v1-table.sql") // the sink's own fixture
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf(string(ddl), "events")+`;
INSERT INTO events VALUES ('ev-1', 'examples.logs.v1.LogLine', 'demo', 'svc', '2026-11-29T10:00:00.000000000Z',
	'2026-11-29T10:00:00.000000000Z', 'sha256:abc', '{"message":"old"}', x'01', 't', 1, 7, '2026-11-29T10:00:01.000000000Z')`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	var out, errOut bytes.Buffer
	err = run(ctx, []string{"sink", "recent", "--sqlite", path}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "run sluice sink migrate") {
		t.Fatalf("sink recent of an old file: err = %v, want one asking for sluice sink migrate", err)
	}
	for i := range 2 {
		out.Reset()
		if err := run(ctx, []string{"sink", "migrate", "--sqlite", path}, &out, &errOut); err != nil {
			t.Fatalf("sink migrate #%d: %v\n%s", i+1, err, errOut.String())
		}
		if want := fmt.Sprintf("table events in %s is at schema version %d", path, sink.SQLiteSchemaVersion); !strings.Contains(out.String(), want) {
			t.Fatalf("sink migrate printed %q, want %q", out.String(), want)
		}
	}
	config := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(config, []byte("sink:\n  kind: sqlite\n  sqlite:\n    path: "+path+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"sink", "migrate", "--config", config}, &out, &errOut); err != nil {
		t.Fatalf("sink migrate --config: %v\n%s", err, errOut.String())
	}
	out.Reset()
	if err := run(ctx, []string{"sink", "recent", "--sqlite", path}, &out, &errOut); err != nil {
		t.Fatalf("sink recent after migrate: %v", err)
	}
	if !strings.Contains(out.String(), `{"message":"old"}`) {
		t.Errorf("the old row is gone:\n%s", out.String())
	}

	if err := os.WriteFile(config, []byte("sink:\n  kind: http\n  http:\n    url: http://127.0.0.1:1/events\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"sink", "migrate", "--config", config}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "http sink has no table") {
		t.Fatalf("sink migrate of an HTTP sink: err = %v", err)
	}
}

// TestSinkRecentRefusesAMissingFile: `sluice sink recent` reads a sink
// that is there; a path with no file is an error naming it, and no file
// is created there, by --sqlite or by --config.
func TestSinkRecentRefusesAMissingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "typo.db")
	config := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(config, []byte("sink: {kind: sqlite, sqlite: {path: "+path+"}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--sqlite", path}, {"--config", config}} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"sink", "recent"}, args...), &out, &errOut)
		if code := exitCode(err, &errOut); code == 0 || err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("sink recent %v: exit %d, err %v; want non-zero naming %s", args, code, err, path)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("sink recent %v left a file at %s: %v", args, path, err)
		}
	}
}
