package consumer

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/consumer/dlq"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// tableSink is a sink that keeps an audit table.
type tableSink interface {
	sink.Sink
	audit.Writer
	audit.Reader
}

// flakyTable is a table sink whose writes fail transiently while they
// hold an id in failing; Audit and AuditRows are the table's own.
type flakyTable struct {
	tableSink
	mu      sync.Mutex
	failing map[string]bool
}

func (f *flakyTable) fail(ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = map[string]bool{}
	for _, id := range ids {
		f.failing[id] = true
	}
}

func (f *flakyTable) Write(ctx context.Context, batch []sink.Event) ([]sink.Conflict, error) {
	f.mu.Lock()
	for _, e := range batch {
		if f.failing[e.ID] {
			f.mu.Unlock()
			return nil, sink.TransientError(fmt.Errorf("receiver 503 for %s", e.ID), 0)
		}
	}
	f.mu.Unlock()
	return f.tableSink.Write(ctx, batch)
}

// openPostgres migrates a table of the test's own at dsn and opens it.
func openPostgres(t testing.TB, dsn string) *sink.Postgres {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	table := "consumer_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sink.Migrate(ctx, dsn, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, fmt.Sprintf(`DROP TABLE IF EXISTS %[1]s, %[1]s_conflicts, %[1]s_audit;
			DELETE FROM sluice_sink_migrations WHERE table_name = '%[1]s'`, table)); err != nil {
			t.Error(err)
		}
	})
	cfg := sink.NewDefaultConfig().Postgres
	cfg.DSN, cfg.Table = dsn, table
	p, err := sink.OpenPostgres(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func postgresDSN(t testing.TB) string {
	dsn := os.Getenv("SLUICE_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("SLUICE_POSTGRES_DSN not set (scripts/postgres.sh up prints one)")
	}
	return dsn
}

// TestAuditTrail: on kfake and SQLite, every kind of decision lands in the
// sink's audit table, in order, with its coordinates.
func TestAuditTrail(t *testing.T) {
	runAuditTrail(t, openSQLite(t, filepath.Join(t.TempDir(), "events.db")))
}

// TestIntegrationPostgresAuditTrail is TestAuditTrail into PostgreSQL.
func TestIntegrationPostgresAuditTrail(t *testing.T) {
	runAuditTrail(t, openPostgres(t, postgresDSN(t)))
}

// runAuditTrail consumes four events into table: good is written; poison
// does not decode and is dead-lettered; flaky fails, is dead-lettered,
// retried by a drain and written; doomed fails every drain until it is
// parked past dlq.max_retries, then an operator's replay produces it again
// and it is written, its written row naming the replay.
func runAuditTrail(t *testing.T, table tableSink) {
	addrs := newCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v := logLine(t)
	// Each record carries a traceparent of its own but poison, whose is
	// malformed: every row keeps its record's trace id, poison's none.
	produce(t, addrs,
		withTraceparent(eventRecord(t, testTopic, "good", "good", v), traceparentOf("good")),
		withTraceparent(eventRecord(t, testTopic, "poison", "poison", []byte{0xff, 0xff, 0xff}), "00-not-a-traceparent"),
		withTraceparent(eventRecord(t, testTopic, "flaky", "flaky", v), traceparentOf("flaky")),
		withTraceparent(eventRecord(t, testTopic, "doomed", "doomed", v), traceparentOf("doomed")),
	)
	s := &flakyTable{tableSink: table}
	s.fail("flaky", "doomed")
	const group = "audit-trail"
	trail := func(id string) []audit.Row {
		t.Helper()
		rows, err := s.AuditRows(ctx, "test", id)
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}

	// A first consumer fills the DLQ and does not drain it.
	cfg := drainConfig(group)
	cfg.DLQ.DrainInterval = time.Hour
	first := start(t, cfg, addrs, s)
	waitFor(t, 20*time.Second, "three dead letters", func() bool { return len(readAll(t, addrs, record.DLQTopic(testTopic))) == 3 })
	waitFor(t, 20*time.Second, "the source topic committed", func() bool { return committed(t, addrs, group, testTopic)[0] == 4 })
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}

	// A second one drains: flaky passes, doomed fails until parked.
	s.fail("doomed")
	cfg = drainConfig(group)
	cfg.DLQ.MaxRetries = 1
	second := start(t, cfg, addrs, s)
	waitFor(t, 30*time.Second, "doomed parked", func() bool { return len(readAll(t, addrs, record.ParkedTopic(testTopic))) == 1 })
	waitFor(t, 20*time.Second, "flaky written", func() bool { return len(trail("flaky")) == 3 })

	// An operator replays the parked record; now it passes.
	s.fail()
	rep, err := dlq.Replay(ctx, []kgo.Opt{kgo.SeedBrokers(addrs...)}, record.ParkedTopic(testTopic), dlq.Selection{},
		dlq.ReplayOptions{Rate: 1000, Actor: "ops@example", Topics: []string{testTopic}, Registry: testRegistry(t), Auditor: s})
	if err != nil || rep.Replayed != 1 {
		t.Fatalf("replay: %+v, %v", rep, err)
	}
	waitFor(t, 20*time.Second, "the replayed record written", func() bool { return len(trail("doomed")) == 7 })
	if err := second.stop(); err != nil {
		t.Fatal(err)
	}

	// Where the records are: the DLQ by id and dlq_retries, the parked
	// record, the replayed one.
	dlqAt := map[string]*kgo.Record{}
	for _, r := range readAll(t, addrs, record.DLQTopic(testTopic)) {
		h, _ := record.ParseEvent(r)
		dlqAt[fmt.Sprintf("%s/%d", h.ID, mustEnvelope(t, r).DLQRetries)] = r
	}
	parked := readAll(t, addrs, record.ParkedTopic(testTopic))[0]
	src := readAll(t, addrs, testTopic)
	if len(src) != 5 {
		t.Fatalf("%d records in %s, want the four and the replayed one", len(src), testTopic)
	}
	replayed := src[4]

	// row is what a row says, without its time, error and attempts, which
	// are checked apart.
	type row struct {
		action     audit.Action
		at         string // topic/partition@offset
		class      string
		retryable  bool
		dlqRetries int
		detail     string
		replay     string
	}
	loc := func(r *kgo.Record) string { return fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset) }
	check := func(id string, want []row) {
		t.Helper()
		got := trail(id)
		var g []row
		for _, r := range got {
			g = append(g, row{r.Action, fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset), r.Class, r.Retryable,
				r.DLQRetries, r.Detail, r.ReplayID})
		}
		if !slices.Equal(g, want) {
			t.Fatalf("trail of %s:\n got %+v\nwant %+v", id, g, want)
		}
		attempt := 0
		for i, r := range got {
			decider := r.Group == group && r.Sink == table.Name()
			if r.Action == audit.Replayed { // an operator's
				decider = r.Group == "" && r.Sink == ""
			}
			if r.Sequence != int64(i+1) || r.Source != "test" || r.EventID != id || r.EventType != testType || !decider || r.At.IsZero() {
				t.Errorf("trail of %s, row %d: %+v", id, i, r)
			}
			// Every row has the record's trace id, the replayed row
			// (consumer/dlq's) and the written row of the replayed
			// record too: with no tracer, the replay keeps the dead
			// letter's traceparent.
			wantTrace := traceIDOf(id)
			if id == "poison" {
				wantTrace = ""
			}
			if r.TraceID != wantTrace {
				t.Errorf("trail of %s, row %d: trace id %q, want %q", id, i, r.TraceID, wantTrace)
			}
			switch r.Action {
			case audit.DeadLettered, audit.Parked:
				// Attempts only grow; the error is the envelope's.
				if r.Error == "" || r.Attempt < attempt || (r.Class != record.ClassDecode && r.Attempt == attempt) {
					t.Errorf("trail of %s, row %d: error %q, attempt %d after %d", id, i, r.Error, r.Attempt, attempt)
				}
				attempt = r.Attempt
			case audit.Retried:
				if r.Attempt != attempt {
					t.Errorf("trail of %s, row %d: retried with attempt %d, dead-lettered with %d", id, i, r.Attempt, attempt)
				}
			}
		}
	}
	at := func(topic string, off int64) string { return fmt.Sprintf("%s/0@%d", topic, off) }
	check("good", []row{{action: audit.Written, at: at(testTopic, 0)}})
	check("poison", []row{{action: audit.DeadLettered, at: at(testTopic, 1), class: record.ClassDecode}})
	check("flaky", []row{
		{action: audit.DeadLettered, at: at(testTopic, 2), class: "transient", retryable: true},
		{action: audit.Retried, at: loc(dlqAt["flaky/0"]), class: "transient", retryable: true},
		{action: audit.Written, at: at(testTopic, 2)},
	})
	doomed := trail("doomed")
	tail := []row{
		{action: audit.Replayed, at: loc(parked), class: "transient", dlqRetries: 2, detail: loc(replayed), replay: rep.ReplayID},
		{action: audit.Written, at: loc(replayed), replay: rep.ReplayID},
	}
	if doomed[5].Action == audit.Written {
		// The consumer wrote the replayed record before the replay
		// recorded its row: both are there, naming the replay.
		tail[0], tail[1] = tail[1], tail[0]
	}
	check("doomed", append([]row{
		{action: audit.DeadLettered, at: at(testTopic, 3), class: "transient", retryable: true},
		{action: audit.Retried, at: loc(dlqAt["doomed/0"]), class: "transient", retryable: true},
		{action: audit.DeadLettered, at: at(testTopic, 3), class: "transient", retryable: true, dlqRetries: 1},
		{action: audit.Retried, at: loc(dlqAt["doomed/1"]), class: "transient", retryable: true, dlqRetries: 1},
		{action: audit.Parked, at: loc(dlqAt["doomed/1"]), class: "transient", dlqRetries: 2, detail: record.ParkedMaxRetries},
	}, tail...))
	for _, r := range doomed[5:] {
		if r.Actor != "ops@example" {
			t.Errorf("row %+v does not name the replay's actor", r)
		}
	}
}

// TestAuditTrailToTopic: a consumer whose sink keeps no audit table (the
// HTTP sink) produces its decisions to sluice.audit, keyed by identity:
// written once the receiver took the event, dead_lettered once the DLQ
// did.
func TestAuditTrailToTopic(t *testing.T) {
	addrs := newCluster(t, 2)
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	hcfg := sink.NewDefaultConfig().HTTP
	hcfg.URL = srv.URL
	h, err := sink.OpenHTTP(hcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	v := logLine(t)
	var recs []*kgo.Record
	wantTrace := map[string]string{"poison": traceIDOf("poison")}
	for i := range 6 {
		id := fmt.Sprintf("h%d", i)
		rec := eventRecord(t, testTopic, id, fmt.Sprintf("k%d", i), v)
		if i%2 == 0 { // the others have no traceparent, and no trace id
			rec, wantTrace[id] = withTraceparent(rec, traceparentOf(id)), traceIDOf(id)
		}
		recs = append(recs, rec)
	}
	recs = append(recs, withTraceparent(eventRecord(t, testTopic, "poison", "kp", []byte{0xff}), traceparentOf("poison")))
	produce(t, addrs, recs...)
	r := start(t, testConfig("audit-http"), addrs, h)
	decisions := map[string]record.Decision{}
	waitFor(t, 20*time.Second, "seven decisions", func() bool {
		for _, rec := range readAll(t, addrs, record.AuditTopic) {
			d, err := record.ParseDecision(rec)
			if err != nil {
				t.Fatalf("%s holds a record that is no decision: %v", record.AuditTopic, err)
			}
			if string(rec.Key) != sink.IdempotencyKey(d.Source, d.EventID) {
				t.Fatalf("decision of %s/%s keyed %q", d.Source, d.EventID, rec.Key)
			}
			decisions[d.EventID] = d
		}
		return len(decisions) == 7
	})
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if posts.Load() < 6 {
		t.Fatalf("%d posts", posts.Load())
	}
	srcAt := map[string]*kgo.Record{}
	for _, rec := range readAll(t, addrs, testTopic) {
		hh, _ := record.ParseEvent(rec)
		srcAt[hh.ID] = rec
	}
	for id, d := range decisions {
		want := string(audit.Written)
		if id == "poison" {
			want = string(audit.DeadLettered)
		}
		rec := srcAt[id]
		if d.Kind != record.KindDecision || d.Action != want || d.Source != "test" || d.Group != "audit-http" || d.Sink != "http" ||
			d.Topic != testTopic || d.Partition != rec.Partition || d.Offset != rec.Offset || d.EventType != testType || d.At.IsZero() {
			t.Errorf("decision about %s: %+v (its record is at %d@%d)", id, d, rec.Partition, rec.Offset)
		}
		if id == "poison" && (d.Class != record.ClassDecode || d.Retryable || d.Error == "") {
			t.Errorf("dead_lettered decision %+v", d)
		}
		if d.TraceID != wantTrace[id] {
			t.Errorf("decision about %s: trace id %q, want %q", id, d.TraceID, wantTrace[id])
		}
	}
}

// traceIDOf is the trace id traceparentOf gives the event id.
func traceIDOf(id string) string {
	return tracing.TraceIDOf(traceparentOf(id))
}

// traceparentOf is a sampled traceparent whose trace id is made of id.
func traceparentOf(id string) string {
	sum := sha256.Sum256([]byte(id))
	return fmt.Sprintf("00-%x-%x-01", sum[:16], sum[16:24])
}

func withTraceparent(r *kgo.Record, tp string) *kgo.Record {
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: record.HeaderTraceparent, Value: []byte(tp)})
	return r
}

// failingAuditor is a table sink whose Audit fails with err, counting its
// calls; writes (and their written rows) pass.
type failingAuditor struct {
	tableSink
	err   error
	calls atomic.Int32
}

func (f *failingAuditor) Audit(context.Context, []audit.Row) error {
	f.calls.Add(1)
	return f.err
}

// TestAuditFailureDoesNotHoldEvents: a sink's audit table that fails
// costs nothing: the record is dead-lettered once, the partition commits
// past it, the events behind it are written, and the decision's row is
// recorded in sluice.audit instead (sluice_consumer_audit_fallbacks_total).
// Only when sluice.audit does not take it either is the row lost
// (sluice_consumer_audit_errors_total). A transient failure is retried
// Retry.MaxAttempts times, a permanent one not at all.
func TestAuditFailureDoesNotHoldEvents(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		calls int32
	}{
		{"transient", sink.TransientError(errors.New("audit store down"), 0), 3},
		{"permanent", sink.PermanentError(errors.New("audit row refused")), 1},
	} {
		for _, topic := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/audit topic %v", tc.name, topic), func(t *testing.T) {
				seeds := []string{testTopic, record.DLQTopic(testTopic), record.ParkedTopic(testTopic)}
				if topic {
					seeds = append(seeds, record.AuditTopic)
				}
				cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, seeds...))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(cl.Close)
				addrs := cl.ListenAddrs()
				v := logLine(t)
				produce(t, addrs,
					eventRecord(t, testTopic, "poison", "k", []byte{0xff}),
					eventRecord(t, testTopic, "after-1", "k", v),
					eventRecord(t, testTopic, "after-2", "k", v),
				)
				s := &failingAuditor{tableSink: openSQLite(t, filepath.Join(t.TempDir(), "events.db")), err: tc.err}
				cfg := testConfig("audit-fails-" + tc.name)
				cfg.Retry.MaxAttempts = 3
				cfg.WriteTimeout = time.Second // bounds the produce to an audit topic that is not there
				reg := prometheus.NewRegistry()
				r := start(t, cfg, addrs, s, WithRegisterer(reg))
				waitFor(t, 20*time.Second, "the events after it written", func() bool {
					return counter(t, reg, "sluice_consumer_events_total", map[string]string{"outcome": "written"}) == 2
				})
				waitFor(t, 20*time.Second, "everything committed", func() bool { return committed(t, addrs, cfg.Group, testTopic)[0] == 3 })
				dead := map[string]string{"action": "dead_lettered"}
				lost := counter(t, reg, "sluice_consumer_audit_errors_total", dead)
				fellBack := counter(t, reg, "sluice_consumer_audit_fallbacks_total", dead)
				if err := r.stop(); err != nil {
					t.Fatal(err)
				}
				if n := len(readAll(t, addrs, record.DLQTopic(testTopic))); n != 1 {
					t.Fatalf("%d dead letters, want 1", n)
				}
				for _, id := range []string{"after-1", "after-2"} {
					rows, err := s.AuditRows(context.Background(), "test", id)
					if err != nil || len(rows) != 1 || rows[0].Action != audit.Written {
						t.Fatalf("%s: rows %+v, %v; want its written row", id, rows, err)
					}
				}
				if got := s.calls.Load(); got != tc.calls {
					t.Fatalf("%d Audit calls, want %d", got, tc.calls)
				}
				if !topic {
					if lost != 1 || fellBack != 0 {
						t.Fatalf("audit errors counted %v, fallbacks %v; want 1, 0", lost, fellBack)
					}
					return
				}
				if lost != 0 || fellBack != 1 {
					t.Fatalf("audit errors counted %v, fallbacks %v; want 0, 1", lost, fellBack)
				}
				var rows []audit.Row
				for _, rec := range readAll(t, addrs, record.AuditTopic) {
					if d, err := record.ParseDecision(rec); err == nil {
						rows = append(rows, audit.RowOf(&d))
					}
				}
				if len(rows) != 1 || rows[0].Action != audit.DeadLettered || rows[0].EventID != "poison" ||
					rows[0].Class != record.ClassDecode || rows[0].Offset != 0 || rows[0].Sink != s.Name() {
					t.Fatalf("rows in %s: %+v", record.AuditTopic, rows)
				}
			})
		}
	}
}

// TestAuditSkipsRecordsWithoutIdentity: a record naming no source or id
// has no trail to file a row under: it is dead-lettered as ever, and no
// row is attempted or counted as lost.
func TestAuditSkipsRecordsWithoutIdentity(t *testing.T) {
	addrs := newCluster(t, 1)
	rec := eventRecord(t, testTopic, "anon", "k", logLine(t))
	rec.Headers = slices.DeleteFunc(rec.Headers, func(h kgo.RecordHeader) bool { return h.Key == record.HeaderEventID })
	produce(t, addrs, rec)
	s := &failingAuditor{tableSink: openSQLite(t, filepath.Join(t.TempDir(), "events.db")), err: errors.New("unreachable")}
	reg := prometheus.NewRegistry()
	r := start(t, testConfig("anon"), addrs, s, WithRegisterer(reg))
	waitFor(t, 20*time.Second, "dead-lettered", func() bool { return len(readAll(t, addrs, record.DLQTopic(testTopic))) == 1 })
	waitFor(t, 20*time.Second, "committed", func() bool { return committed(t, addrs, "anon", testTopic)[0] == 1 })
	lost := counter(t, reg, "sluice_consumer_audit_errors_total", map[string]string{"action": "dead_lettered"})
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if s.calls.Load() != 0 || lost != 0 {
		t.Fatalf("%d Audit calls for a record without identity", s.calls.Load())
	}
	if strings.Contains(fmt.Sprint(readAll(t, addrs, record.AuditTopic)), "anon") {
		t.Fatal("a decision about a record without identity reached the audit topic")
	}
}
