package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sink"
)

// TestSinkRecent: `sluice sink recent` prints the rows of an SQLite sink.
func TestSinkRecent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	cfg := sink.DefaultConfig().SQLite
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
