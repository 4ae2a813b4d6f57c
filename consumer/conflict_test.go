package consumer

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/logtest"
	"github.com/sluicehq/sluice/sink"
)

// TestSinkConflictCounted: an identity that arrives again with another
// payload is a conflict the consumer counts and logs; the sink keeps the
// first payload, the job is finished as written. The same message in
// another encoding is no conflict, and a redelivery of the conflicting
// record is not counted again.
func TestSinkConflictCounted(t *testing.T) {
	addrs := newCluster(t, 1)
	first := logLine(t)
	other := logLineWith(t, "another message under the same id")
	produce(t, addrs,
		eventRecord(t, testTopic, "dup-1", "k", first),
		eventRecord(t, testTopic, "dup-1", "k", reversed(t, first)), // the same message
		eventRecord(t, testTopic, "dup-1", "k", other),              // offset 2: the conflict
		eventRecord(t, testTopic, "dup-1", "k", other),              // the same conflict again
		eventRecord(t, testTopic, "solo-1", "k", first),
	)
	db := openSQLite(t, filepath.Join(t.TempDir(), "events.db"))
	ctx := context.Background()

	labels := map[string]string{"sink": "sqlite", "source": "test"}
	// run consumes every record as group and returns the conflicts and
	// writes it counted, and its logs.
	run := func(group string) (conflicts, written float64, logs string) {
		t.Helper()
		reg := prometheus.NewRegistry()
		var buf logtest.Buffer
		r := start(t, testConfig(group), addrs, db, WithRegisterer(reg), WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
		waitFor(t, 20*time.Second, "every record written", func() bool {
			return counter(t, reg, "sluice_consumer_events_total", map[string]string{"outcome": "written"}) == 5
		})
		waitFor(t, 20*time.Second, "everything committed", func() bool {
			return committed(t, addrs, group, testTopic)[0] == 5
		})
		conflicts = counter(t, reg, "sluice_sink_conflicts_total", labels)
		written = counter(t, reg, "sluice_consumer_events_total", map[string]string{"outcome": "written"})
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
		return conflicts, written, buf.String()
	}

	conflicts, written, logs := run("conflict")
	if conflicts != 1 {
		t.Errorf("sluice_sink_conflicts_total%v = %v, want 1", labels, conflicts)
	}
	if written != 5 {
		t.Errorf("written events = %v, want 5", written)
	}
	want := []string{"sink conflict", "source=test", "id=dup-1", "payload_fingerprint=" + sink.Fingerprint(other),
		"stored_fingerprint=" + sink.Fingerprint(first), "topic=" + testTopic, "partition=0", "offset=2"}
	var line string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "sink conflict") {
			if line != "" {
				t.Errorf("more than one conflict logged:\n%s", logs)
			}
			line = l
		}
	}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("conflict log %q lacks %q", line, w)
		}
	}

	if n, err := db.Count(ctx); err != nil || n != 2 {
		t.Fatalf("Count = %d, %v; want 2", n, err)
	}
	row, err := db.Get(ctx, "test", "dup-1")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(row.Value, first) || row.KafkaOffset != 0 {
		t.Errorf("kept %x at offset %d, want the first payload at offset 0", row.Value, row.KafkaOffset)
	}
	records, err := db.Conflicts(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 || !bytes.Equal(records[0].Value, other) || records[0].KafkaOffset != 2 ||
		records[0].StoredFingerprint != sink.Fingerprint(first) {
		t.Fatalf("conflict records = %+v, want the other payload at offset 2", records)
	}

	// A new group reads every record again, as after a lost commit: the
	// conflict is recorded already, so it is not counted again.
	conflicts, _, logs = run("conflict-again")
	if conflicts != 0 {
		t.Errorf("after redelivery: sluice_sink_conflicts_total = %v, want 0", conflicts)
	}
	if strings.Contains(logs, "sink conflict") {
		t.Errorf("after redelivery a conflict was logged:\n%s", logs)
	}
	if records, err := db.Conflicts(ctx, 10); err != nil || len(records) != 1 {
		t.Fatalf("after redelivery: %d conflict records, %v; want 1", len(records), err)
	}
}
