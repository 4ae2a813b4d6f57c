package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/consumer/trace"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/contracttest"
	"github.com/sluicehq/sluice/internal/eventtest"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/internal/waitfor"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// traceWorld is where an end-to-end trace test runs: Kafka's addresses,
// the source topic (its DLQ and parked topics and sluice.audit exist),
// and the sink.
type traceWorld struct {
	brokers []string
	topic   string
	// sinkYAML is the config file's sink block; rowsFrom where the
	// trace reads the audit rows (trace.FromAuditTable or FromAuditTopic).
	sinkYAML string
	rowsFrom string
	// lock holds the sink's write lock from another connection: the
	// consumer's writes wait, and fail as transient, until unlock.
	lock func(t *testing.T) (unlock func())
}

// TestTraceEndToEnd sends events that end in each final status through
// sluice consumer (kfake, SQLite) and asks sluice trace and the
// consumer's GET /v1/trace/{source}/{id} where each is.
func TestTraceEndToEnd(t *testing.T) {
	topic := logTopic
	_, addrs := eventtest.TopicCluster(t, nil)
	path := filepath.Join(t.TempDir(), "events.db")
	runTraceEndToEnd(t, traceWorld{
		brokers:  addrs,
		topic:    topic,
		sinkYAML: fmt.Sprintf("sink: {kind: sqlite, sqlite: {path: %s, busy_timeout: 200ms}}\n", path),
		rowsFrom: trace.FromAuditTable,
		lock: func(t *testing.T) func() {
			db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
			if err != nil {
				t.Fatal(err)
			}
			return holdLock(t, db, "BEGIN IMMEDIATE")
		},
	})
}

// TestTraceEndToEndHTTP is TestTraceEndToEnd with the HTTP sink, which
// keeps no audit table: the consumer and sluice dlq replay record the
// decisions in sluice.audit, where the trace reads them.
func TestTraceEndToEndHTTP(t *testing.T) {
	_, addrs := eventtest.TopicCluster(t, nil)
	var locked atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil || r.Header.Get(sink.HeaderIdempotencyKey) == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if locked.Load() {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set(sink.HeaderPayloadFingerprint, r.Header.Get(sink.HeaderPayloadFingerprint))
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	runTraceEndToEnd(t, traceWorld{
		brokers:  addrs,
		topic:    logTopic,
		sinkYAML: fmt.Sprintf("sink: {kind: http, http: {url: %q}}\n", srv.URL+"/events"),
		rowsFrom: trace.FromAuditTopic,
		lock: func(t *testing.T) func() {
			locked.Store(true)
			return func() { locked.Store(false) }
		},
	})
}

// TestIntegrationTraceEndToEnd is TestTraceEndToEnd against the real
// Kafka and PostgreSQL named by SLUICE_KAFKA_BROKERS and
// SLUICE_POSTGRES_DSN.
func TestIntegrationTraceEndToEnd(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	dsn := os.Getenv("SLUICE_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("SLUICE_POSTGRES_DSN is not set: skipping the test against a real PostgreSQL (scripts/postgres.sh up starts one)")
	}
	conn := []kgo.Opt{kgo.SeedBrokers(brokers...)}
	topic := fmt.Sprintf("sluice.test.trace-e2e.%d", time.Now().UnixNano())
	kafkatest.CreateTopicsOn(t, conn, 1, nil, topic, record.DLQTopic(topic), record.ParkedTopic(topic))
	kafkatest.EnsureTopicOn(t, conn, record.AuditTopic)
	store := postgresTrailStore(t, dsn)
	runTraceEndToEnd(t, traceWorld{
		brokers:  brokers,
		topic:    topic,
		sinkYAML: store.sinkYAML,
		rowsFrom: trace.FromAuditTable,
		lock: func(t *testing.T) func() {
			// SHARE conflicts with the inserts' ROW EXCLUSIVE, not with reads.
			return holdLock(t, store.open(t), "BEGIN", "LOCK TABLE "+store.table+" IN SHARE MODE")
		},
	})
}

// holdLock runs stmts on one connection of db and returns what ends the
// transaction they began.
func holdLock(t *testing.T, db *sql.DB, stmts ...string) (unlock func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := c.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := c.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Errorf("unlock: %v", err)
		}
		c.Close()
		db.Close()
	}
}

// startStoppable runs the sluice command args until stop, which fails the
// test if it then ends with an error; the test's end stops it too.
func startStoppable(t *testing.T, args ...string) (stop func()) {
	t.Helper()
	p := startInProcess(t, args...)
	return func() { p.Stop(t) }
}

func runTraceEndToEnd(t *testing.T, w traceWorld) {
	dir := t.TempDir()
	// The topics are the test's own; the group is named for the run.
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	// v2 is the example contracts with a field added: a later version,
	// which the consumer first runs without.
	v1, v2 := filepath.Join(dir, "v1.binpb"), filepath.Join(dir, "v2.binpb")
	v2image := contracttest.Evolve(t, examples.Contracts, eventtest.AddRegion())
	for path, b := range map[string][]byte{v1: examples.Contracts, v2: v2image} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	later, _ := eventtest.Evolved(t, eventtest.AddRegion()).Lookup(eventtest.Type)
	v2fp := later.Fingerprint()
	adminAddr := freePort(t)
	config := func(contracts string) string {
		return writeConfig(t, fmt.Sprintf(`
consumer:
  group: g-%[1]s
  topics: [%[2]s]
  commit_interval: 50ms
  lag_interval: 50ms
  retry: {max_attempts: 1000, initial_backoff: 20ms, max_backoff: 200ms, max_elapsed: 5m}
  dlq: {drain_interval: 200ms, max_retries: 1}
%[3]scontracts: {descriptor_set: %[4]s, types: [%[5]s]}
kafka: {brokers: [%[6]s]}
admin: {addr: %[7]s}
log: {level: warn}
`, run, w.topic, w.sinkYAML, contracts, eventtest.Type, strings.Join(w.brokers, ", "), adminAddr))
	}
	cfg1, cfg2 := config(v1), config(v2)
	value := eventtest.LogLine(t)
	produce := func(names ...string) map[string]int64 {
		var recs []*kgo.Record
		for _, n := range names {
			switch {
			case strings.HasPrefix(n, "poison"): // no LogLine: a decode failure, never retried
				recs = append(recs, eventtest.Record(t, w.topic, n, n, []byte{0xff}))
			case strings.HasPrefix(n, "later"): // a version this consumer does not know yet: retried, then parked
				recs = append(recs, eventtest.VersionRecord(t, w.topic, n, n, v2fp, eventtest.WithRegion(value, "eu")))
			default:
				recs = append(recs, eventtest.Record(t, w.topic, n, n, value))
			}
			// Each record but poison's carries its caller's traceparent,
			// as the gateway publishes it with tracing off.
			if tp := e2eTraceparent(n); tp != "" {
				r := recs[len(recs)-1]
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: record.HeaderTraceparent, Value: []byte(tp)})
			}
		}
		eventtest.Produce(t, w.brokers, recs...)
		out := map[string]int64{}
		for i, r := range recs {
			out[names[i]] = r.Offset
		}
		return out
	}
	cli := func(cfg, name string) *trace.Answer {
		t.Helper()
		code, out, errOut := runTrace("--config", cfg, "--source", "test", "--id", name, "--json")
		var a trace.Answer
		if err := json.Unmarshal([]byte(out), &a); err != nil || code > 1 {
			t.Fatalf("sluice trace %s: exit %d, %v\n%s%s", name, code, err, out, errOut)
		}
		if (code == 1) != (a.Status == trace.Unknown) {
			t.Errorf("sluice trace %s: exit %d for %s", name, code, a.Status)
		}
		return &a
	}
	endpoint := func(name string) *trace.Answer {
		t.Helper()
		code, body := adminGet(t, adminAddr, "/v1/trace/test/"+name)
		var a trace.Answer
		if err := json.Unmarshal([]byte(body), &a); err != nil || (code != http.StatusOK) != (a.Status == trace.Unknown) {
			t.Fatalf("GET /v1/trace %s: %d %v\n%s", name, code, err, body)
		}
		return &a
	}
	// both asks the command and the endpoint, and fails t unless both
	// answer what check accepts.
	both := func(cfg, name string, check func(*trace.Answer) error) {
		t.Helper()
		for how, a := range map[string]*trace.Answer{"sluice trace": cli(cfg, name), "GET /v1/trace": endpoint(name)} {
			err := check(a)
			if err == nil && len(a.Audit) > 0 && !slices.ContainsFunc(a.Path, func(s trace.Step) bool { return s.From == w.rowsFrom }) {
				err = fmt.Errorf("no step from %s", w.rowsFrom)
			}
			if err != nil {
				b, _ := json.MarshalIndent(a, "", "  ")
				t.Errorf("%s %s: %v\n%s", how, name, err, b)
			}
		}
	}
	waitStatus := func(cfg, name string, s trace.Status) {
		t.Helper()
		waitfor.Condition(t, time.Minute, name+" "+string(s), func() bool { return cli(cfg, name).Status == s })
	}

	stop := startStoppable(t, "consumer", "--config", cfg1)
	waitfor.Condition(t, 30*time.Second, "the consumer's /readyz to answer 200", func() bool {
		code, _ := adminGet(t, adminAddr, "/readyz")
		return code == http.StatusOK
	})
	at := produce("written", "poison", "later")
	waitStatus(cfg1, "written", trace.InSink)
	waitStatus(cfg1, "poison", trace.InDLQ)
	waitStatus(cfg1, "later", trace.Parked)

	both(cfg1, "written", func(a *trace.Answer) error {
		return wantTrail(a, trace.InSink, []rowWant{{audit.Written, w.topic, at["written"], "", 0}}, func() error {
			if a.Written == nil || a.Written.Inferred || a.Written.From != (trace.Position{Topic: w.topic, Offset: at["written"]}) {
				return fmt.Errorf("written %+v", a.Written)
			}
			if id := e2eTraceID("written"); a.TraceID != id || a.Audit[0].TraceID != id {
				return fmt.Errorf("trace id %q, row's %q; want the caller's %q", a.TraceID, a.Audit[0].TraceID, id)
			}
			return nil
		})
	})
	both(cfg1, "poison", func(a *trace.Answer) error {
		return wantTrail(a, trace.InDLQ, []rowWant{{audit.DeadLettered, w.topic, at["poison"], record.ClassDecode, 0}}, func() error {
			if a.TraceID != "" {
				return fmt.Errorf("trace id %q of a record without a traceparent", a.TraceID)
			}
			d := a.DeadLetter
			// Attempts count sink writes; a record that does not decode had none.
			if d == nil || d.Class != record.ClassDecode || d.Retryable || d.Attempts != 0 || d.Next == nil || d.Next.Retried {
				return fmt.Errorf("dead letter %+v", d)
			}
			return nil
		})
	})
	// The text form, as the README shows it (go test -v prints it).
	for name, status := range map[string]trace.Status{"written": trace.InSink, "poison": trace.InDLQ} {
		code, out, errOut := runTrace("--config", cfg1, "--source", "test", "--id", name)
		if code != 0 || !strings.HasPrefix(out, string(status)+"  test/"+name) || !strings.Contains(out, "audit rows (1)") {
			t.Errorf("sluice trace %s: exit %d\n%s%s", name, code, out, errOut)
		}
		if id := e2eTraceID(name); id != "" && !strings.Contains(out, "\ntrace "+id+"\n\npath\n") {
			t.Errorf("sluice trace %s: no line \"trace %s\" under the status\n%s", name, id, out)
		}
		t.Logf("$ sluice trace --config consumer.yaml --source test --id %s\n%s", name, out)
	}

	// The later version: dead-lettered; a drain finds the version still
	// unknown before it writes anything (no retried row) and sends it
	// back, with one DLQ retry; the next drain, past max_retries, parks
	// it.
	dlqTopic, parkedTopic := record.DLQTopic(w.topic), record.ParkedTopic(w.topic)
	laterRows := []rowWant{
		{audit.DeadLettered, w.topic, at["later"], record.ClassSchema, 0},
		{audit.DeadLettered, w.topic, at["later"], record.ClassSchema, 1},
		{audit.Parked, dlqTopic, -1, record.ClassSchema, 2},
	}
	both(cfg1, "later", func(a *trace.Answer) error {
		return wantTrail(a, trace.Parked, laterRows, func() error {
			d := a.DeadLetter
			if d == nil || d.Class != record.ClassSchema || d.ParkedReason == "" || d.Topic != parkedTopic {
				return fmt.Errorf("dead letter %+v", d)
			}
			return nil
		})
	})

	// The sink refuses writes while its lock is held elsewhere: an event
	// sent then is PENDING, on the endpoint of the consumer that holds it.
	unlock := w.lock(t)
	at = produce("held")
	waitfor.Condition(t, time.Minute, "held PENDING on the endpoint", func() bool { return endpoint("held").Status == trace.Pending })
	both(cfg1, "held", func(a *trace.Answer) error {
		return wantTrail(a, trace.Pending, nil, func() error {
			p := a.Pending
			if p == nil || p.Record == nil || *p.Record != (trace.Position{Topic: w.topic, Offset: at["held"]}) || p.Lag < 1 {
				return fmt.Errorf("pending %+v", p)
			}
			if a.TraceID != e2eTraceID("held") {
				return fmt.Errorf("trace id %q of the pending copy, want %q", a.TraceID, e2eTraceID("held"))
			}
			return nil
		})
	})
	unlock()
	waitStatus(cfg1, "held", trace.InSink)

	// With the consumer stopped, an event sent is PENDING.
	stop()
	at = produce("stopped")
	a := cli(cfg1, "stopped")
	if err := wantTrail(a, trace.Pending, nil, func() error {
		if p := a.Pending; p == nil || p.Record == nil || p.Record.Offset != at["stopped"] || p.Lag < 1 || p.Ahead != 0 {
			return fmt.Errorf("pending %+v", p)
		}
		return nil
	}); err != nil {
		t.Errorf("sluice trace stopped: %v\n%s", err, a.Summary)
	}

	// The operator replays the parked event, and the consumer, now with
	// the version, writes it.
	if code, out, errOut := runCommand("dlq", "replay", "--config", cfg2, "--topic", parkedTopic, "--actor", "ops"); code != 0 {
		t.Fatalf("sluice dlq replay: exit %d\n%s%s", code, out, errOut)
	}
	startStoppable(t, "consumer", "--config", cfg2)
	waitStatus(cfg2, "stopped", trace.InSink)
	waitStatus(cfg2, "later", trace.InSink)
	both(cfg2, "later", func(a *trace.Answer) error {
		replayed := rowWant{audit.Replayed, parkedTopic, -1, record.ClassSchema, 2}
		written := rowWant{audit.Written, w.topic, -1, "", 0}
		return wantTrail(a, trace.InSink, append(laterRows[:len(laterRows):len(laterRows)], replayed, written), func() error {
			n := len(a.Audit)
			rp, wr := a.Audit[n-2], a.Audit[n-1]
			if rp.ReplayID == "" || rp.Actor != "ops" || wr.ReplayID != rp.ReplayID || wr.Actor != "ops" || wr.Offset <= at["stopped"] {
				return fmt.Errorf("replayed row %+v, written row %+v", rp, wr)
			}
			if a.Written == nil || a.Written.ReplayID != rp.ReplayID || a.Written.Actor != "ops" {
				return fmt.Errorf("written %+v", a.Written)
			}
			// The replayed record kept the dead letter's traceparent (no
			// tracer: the replay starts no trace of its own), so the
			// replayed row and its written row, like the consumer's other
			// rows, have the caller's trace id; the answer has the
			// written row's.
			for _, r := range a.Audit {
				if r.TraceID != e2eTraceID("later") {
					return fmt.Errorf("%s row's trace id %q, want %q", r.Action, r.TraceID, e2eTraceID("later"))
				}
			}
			if a.TraceID != wr.TraceID {
				return fmt.Errorf("trace id %q, want the written row's %q", a.TraceID, wr.TraceID)
			}
			return nil
		})
	})
	code, out, errOut := runTrace("--config", cfg2, "--source", "test", "--id", "later")
	if code != 0 || !strings.HasPrefix(out, "IN_SINK  test/later") || !strings.Contains(out, "audit rows (5)") {
		t.Errorf("sluice trace later: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("$ sluice trace --config consumer.yaml --source test --id later\n%s", out)
}

// e2eTraceparent is the caller's traceparent of the event named name, a
// sampled one whose trace id is made of the name; none for a poison one.
func e2eTraceparent(name string) string {
	if strings.HasPrefix(name, "poison") {
		return ""
	}
	sum := sha256.Sum256([]byte(name))
	return fmt.Sprintf("00-%x-%x-01", sum[:16], sum[16:24])
}

// e2eTraceID is the trace id of e2eTraceparent(name), "" for none.
func e2eTraceID(name string) string { return tracing.TraceIDOf(e2eTraceparent(name)) }

// rowWant is what an audit row must hold: its action, the record it was
// about (offset -1: any), its error class and DLQ retries.
type rowWant struct {
	action     audit.Action
	topic      string
	offset     int64
	class      string
	dlqRetries int
}

// wantTrail is nil when a has status and its audit rows are want, in
// sequence order, numbered from 1, and more holds.
func wantTrail(a *trace.Answer, status trace.Status, want []rowWant, more func() error) error {
	if a.Status != status {
		return fmt.Errorf("status %s, want %s: %s", a.Status, status, a.Summary)
	}
	if len(a.Audit) != len(want) {
		return fmt.Errorf("%d audit rows, want %d", len(a.Audit), len(want))
	}
	var errs []error
	for i, r := range a.Audit {
		w := want[i]
		if r.Sequence != int64(i+1) || r.Action != string(w.action) || r.Topic != w.topic || (w.offset >= 0 && r.Offset != w.offset) ||
			r.Class != w.class || r.DLQRetries != w.dlqRetries || r.At.IsZero() {
			errs = append(errs, fmt.Errorf("row %d: %+v, want %+v", i+1, r, w))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return more()
}
