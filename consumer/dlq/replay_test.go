package dlq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// seedDLQ produces n events, e00000 on, to the test topic and the dead
// letters of ids transient (retryable) and permanent to its DLQ, as the
// consumer writes them.
func seedDLQ(t *testing.T, addrs []string, n int, transient, permanent []string) {
	t.Helper()
	v := logLine(t)
	var events, dead []*kgo.Record
	class := map[string]string{}
	for _, id := range transient {
		class[id] = "transient"
	}
	for _, id := range permanent {
		class[id] = "permanent"
	}
	at := time.Now().UTC()
	for i := range n {
		id := fmt.Sprintf("e%05d", i)
		ev := eventRecord(t, testTopic, id, id, v)
		events = append(events, ev)
		if c, ok := class[id]; ok {
			env := record.Envelope{Class: c, Error: "receiver", Sink: "mem", Attempts: 2, FirstFailureAt: at, LastFailureAt: at,
				Retryable: c == "transient", SourceTopic: testTopic, SourceOffset: int64(i), Group: "replay"}
			dead = append(dead, record.NewDeadLetter(record.DLQTopic(testTopic), ev, &env))
		}
	}
	produce(t, addrs, events...)
	produce(t, addrs, dead...)
}

// TestReplay: list, dry run and replay of a DLQ against kfake, with the
// audit records they leave.
func TestReplay(t *testing.T) {
	_, addrs := newTopicCluster(t, nil)
	seedDLQ(t, addrs, 12, []string{"e00001", "e00006"}, []string{"e00009"})
	kopts := []kgo.Opt{kgo.SeedBrokers(addrs...)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var listed []string
	err := List(ctx, kopts, record.DLQTopic(testTopic), Selection{Class: "transient"}, func(d DeadLetter) error {
		listed = append(listed, d.Event.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	if strings.Join(listed, ",") != "e00001,e00006" {
		t.Fatalf("listed %v", listed)
	}

	sourceEnd := len(readAll(t, addrs, testTopic))
	var progress bytes.Buffer
	dry, err := Replay(ctx, kopts, record.DLQTopic(testTopic), Selection{Class: "permanent"},
		ReplayOptions{DryRun: true, Rate: 1000, Actor: "alice", Progress: &progress, Topics: []string{testTopic}, Registry: testRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Scanned != 3 || dry.Matched != 1 || dry.Replayed != 1 || !dry.DryRun || dry.Outcome != "ok" {
		t.Fatalf("dry run report %+v", dry)
	}
	if n := len(readAll(t, addrs, testTopic)); n != sourceEnd {
		t.Fatalf("dry run produced %d records", n-sourceEnd)
	}
	if !strings.Contains(progress.String(), "would replay 1") {
		t.Fatalf("progress %q", progress.String())
	}

	rep, err := Replay(ctx, kopts, record.DLQTopic(testTopic), Selection{Class: "transient"},
		ReplayOptions{Rate: 1000, Actor: "bob", Topics: []string{testTopic}, Registry: testRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Matched != 2 || rep.Replayed != 2 || rep.DryRun {
		t.Fatalf("replay report %+v", rep)
	}
	src := readAll(t, addrs, testTopic)
	if len(src) != sourceEnd+2 {
		t.Fatalf("source topic grew by %d, want 2", len(src)-sourceEnd)
	}
	var replayed []string
	at := map[string]string{} // where each id was replayed
	for _, r := range src[sourceEnd:] {
		h, err := record.ParseEvent(r)
		if err != nil {
			t.Fatal(err)
		}
		if h.ReplayID != rep.ReplayID || h.ReplayActor != "bob" {
			t.Fatalf("replayed record of %s names replay %q by %q, want %q by bob", h.ID, h.ReplayID, h.ReplayActor, rep.ReplayID)
		}
		replayed = append(replayed, h.ID)
		at[h.ID] = fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset)
		for _, hh := range r.Headers {
			if strings.HasPrefix(hh.Key, record.DLQHeaderPrefix) {
				t.Fatalf("replayed record keeps envelope header %s", hh.Key)
			}
		}
	}
	if slices.Sort(replayed); strings.Join(replayed, ",") != "e00001,e00006" {
		t.Fatalf("replayed %v", replayed)
	}

	reports, decisions := auditRecords(t, addrs)
	if len(reports) != 4 {
		t.Fatalf("%d replay audit records, want 4: started and finished of two replays", len(reports))
	}
	a := reports[3]
	if a.Kind != record.KindReplay || a.Action != AuditFinished || a.ReplayID != rep.ReplayID || a.Actor != "bob" || a.Selection.Class != "transient" ||
		a.Replayed != 2 || a.Outcome != "ok" || a.StartedAt.IsZero() || a.Destination != testTopic {
		t.Fatalf("audit record %+v", a)
	}
	if a = reports[0]; a.Action != AuditStarted || a.Actor != "alice" || !a.DryRun || a.ReplayID != dry.ReplayID {
		t.Fatalf("dry-run audit record %+v", a)
	}
	// One replayed decision per record replayed, none for the dry run,
	// keyed by the event's identity.
	if len(decisions) != 2 {
		t.Fatalf("%d decision records, want the replayed rows of 2 records: %+v", len(decisions), decisions)
	}
	for _, d := range decisions {
		dl := readAll(t, addrs, record.DLQTopic(testTopic))[d.Offset]
		if d.Action != string(audit.Replayed) || d.ReplayID != rep.ReplayID || d.Actor != "bob" || d.Source != "test" ||
			d.Topic != record.DLQTopic(testTopic) || d.Partition != dl.Partition || d.Class != "transient" || d.Attempt != 2 ||
			d.EventType != testType || d.Detail != at[d.EventID] || d.At.IsZero() {
			t.Errorf("replayed decision %+v; the record was replayed to %s", d, at[d.EventID])
		}
		if h, _ := record.ParseEvent(dl); h.ID != d.EventID {
			t.Errorf("replayed decision of %s locates %s/%d@%d, which holds %s", d.EventID, d.Topic, d.Partition, d.Offset, h.ID)
		}
	}

	if _, err := Replay(ctx, kopts, record.DLQTopic(testTopic), Selection{}, ReplayOptions{Rate: 1}); err != ErrNoActor {
		t.Fatalf("replay without actor: %v", err)
	}
	if _, err := Replay(ctx, kopts, record.DLQTopic(testTopic), Selection{}, ReplayOptions{Rate: 1, Actor: "a"}); err != ErrNoContracts {
		t.Fatalf("replay without topics and contracts: %v", err)
	}
}

// TestReplayNeedsAuditTopic: without the audit topic nothing is replayed.
func TestReplayNeedsAuditTopic(t *testing.T) {
	cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, testTopic, record.DLQTopic(testTopic)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	addrs := cl.ListenAddrs()
	env := record.Envelope{Class: "transient", SourceTopic: testTopic, Retryable: true, Group: "g", Sink: "mem"}
	produce(t, addrs, record.NewDeadLetter(record.DLQTopic(testTopic), eventRecord(t, testTopic, "a", "k", logLine(t)), &env))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rep, err := Replay(ctx, []kgo.Opt{kgo.SeedBrokers(addrs...)}, record.DLQTopic(testTopic), Selection{}, ReplayOptions{Rate: 100, Actor: "a", Topics: []string{testTopic}, Registry: testRegistry(t)})
	if err == nil || !strings.Contains(err.Error(), record.AuditTopic) || rep.Replayed != 0 {
		t.Fatalf("replay without audit topic: %+v, %v", rep, err)
	}
	if n := len(readAll(t, addrs, testTopic)); n != 0 {
		t.Fatalf("%d records replayed", n)
	}
}

const orderTopic = "ingest.examples.shop.v1.OrderPlaced"

// replayCluster is kfake with the test topics and orderTopic, holding
// recs in the test topic's DLQ.
func replayCluster(t *testing.T, recs ...*kgo.Record) []string {
	t.Helper()
	cl, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.SeedTopics(1, testTopic, record.DLQTopic(testTopic), record.ParkedTopic(testTopic), record.AuditTopic, orderTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	addrs := cl.ListenAddrs()
	produce(t, addrs, recs...)
	return addrs
}

func replayOpts(t *testing.T, actor string) ReplayOptions {
	return ReplayOptions{Rate: 1000, Actor: actor, Topics: []string{testTopic, orderTopic}, Registry: testRegistry(t)}
}

// replayedIDs returns the event ids in topic.
func replayedIDs(t *testing.T, addrs []string, topic string) []string {
	t.Helper()
	var ids []string
	for _, r := range readAll(t, addrs, topic) {
		h, _ := record.ParseEvent(r)
		ids = append(ids, h.ID)
	}
	return ids
}

// TestReplayRefusesMismatchedSource: a replay produces only to the source
// topic of the DLQ topic it reads. A record whose envelope names another
// topic (the audit topic, another type's topic) is refused and counted.
func TestReplayRefusesMismatchedSource(t *testing.T) {
	addrs := replayCluster(t,
		dlqRecord(t, "to-audit", record.AuditTopic, logLine(t)),
		dlqRecord(t, "to-orders", orderTopic, logLine(t)),
		dlqRecord(t, "fine", testTopic, logLine(t)),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kopts := []kgo.Opt{kgo.SeedBrokers(addrs...)}
	refused := map[string]string{}
	opts := replayOpts(t, "carol")
	opts.Each = func(d DeadLetter, err error) {
		var rf *ReplayRefusal
		if errors.As(err, &rf) {
			refused[d.Event.ID] = rf.Reason
		}
	}
	rep, err := Replay(ctx, kopts, record.DLQTopic(testTopic), Selection{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Matched != 3 || rep.Mismatched != 2 || rep.Replayed != 1 || rep.Destination != testTopic {
		t.Fatalf("report %+v", rep)
	}
	if refused["to-audit"] != RefusedMismatch || refused["to-orders"] != RefusedMismatch || len(refused) != 2 {
		t.Fatalf("refused %v", refused)
	}
	if got := replayedIDs(t, addrs, testTopic); len(got) != 1 || got[0] != "fine" {
		t.Fatalf("%s holds %v, want fine", testTopic, got)
	}
	if n := len(readAll(t, addrs, orderTopic)); n != 0 {
		t.Fatalf("%d records replayed to %s", n, orderTopic)
	}
	for _, r := range readAll(t, addrs, record.AuditTopic) {
		var a ReplayReport
		if err := json.Unmarshal(r.Value, &a); err != nil || a.ReplayID != rep.ReplayID {
			t.Fatalf("a record in %s that is not this replay's audit: %q", record.AuditTopic, r.Value)
		}
	}
}

// auditRecords reads record.AuditTopic: the replays' reports and the
// decisions, in offset order.
func auditRecords(t *testing.T, addrs []string) ([]ReplayReport, []record.Decision) {
	t.Helper()
	var (
		reports   []ReplayReport
		decisions []record.Decision
	)
	for _, r := range readAll(t, addrs, record.AuditTopic) {
		d, err := record.ParseDecision(r)
		if err == nil {
			if string(r.Key) != sink.IdempotencyKey(d.Source, d.EventID) {
				t.Fatalf("decision of %s/%s keyed %q", d.Source, d.EventID, r.Key)
			}
			decisions = append(decisions, d)
			continue
		}
		var a ReplayReport
		if err := json.Unmarshal(r.Value, &a); err != nil || a.Kind != record.KindReplay {
			t.Fatalf("a record in %s that is neither a decision nor a replay report: %q", record.AuditTopic, r.Value)
		}
		reports = append(reports, a)
	}
	return reports, decisions
}

// TestReplayRefusesDestination: a replay of a derived topic whose source is
// not an ingest topic is refused before anything is produced.
func TestReplayRefusesDestination(t *testing.T) {
	addrs := replayCluster(t, dlqRecord(t, "a", testTopic, logLine(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, topic := range []string{record.DLQTopic(record.AuditTopic), record.ParkedTopic("ingest.unknown")} {
		_, err := Replay(ctx, []kgo.Opt{kgo.SeedBrokers(addrs...)}, topic, Selection{}, replayOpts(t, "dave"))
		if err == nil || !strings.Contains(err.Error(), "not an ingest topic") {
			t.Fatalf("replay of %s: %v, want it refused", topic, err)
		}
	}
	if n := len(readAll(t, addrs, record.AuditTopic)); n != 0 {
		t.Fatalf("%d records in %s", n, record.AuditTopic)
	}
}

// TestReplayRefusesInvalid: every record is checked against its contract
// before it is replayed, dry run included; one that fails is refused and
// counted invalid. A record of another schema version than the
// registry's is checked against the registry's when that reads it without
// loss, and refused when it cannot.
func TestReplayRefusesInvalid(t *testing.T) {
	unknown := dlqRecord(t, "unknown-type", testTopic, logLine(t))
	noHeaders := dlqRecord(t, "no-headers", testTopic, logLine(t))
	truncated := dlqRecord(t, "truncated", testTopic, logLine(t))
	otherVersion := dlqRecord(t, "other-version", testTopic, logLine(t))
	unreadableVersion := dlqRecord(t, "unreadable-version", testTopic, withRegion(t, logLine(t)))
	for i, h := range unknown.Headers {
		if h.Key == record.HeaderEventType {
			unknown.Headers[i].Value = []byte("examples.nope.v1.Nope")
		}
	}
	for _, r := range []*kgo.Record{otherVersion, unreadableVersion} {
		for i, h := range r.Headers {
			if h.Key == record.HeaderFingerprint {
				r.Headers[i].Value = []byte("sha256:00000000000000000000000000000000")
			}
		}
	}
	noHeaders.Headers = slices.DeleteFunc(noHeaders.Headers, func(h kgo.RecordHeader) bool { return h.Key == record.HeaderEventID })
	truncated.Headers = append(truncated.Headers, kgo.RecordHeader{Key: record.DLQHeaderTruncated, Value: []byte("9999")})
	addrs := replayCluster(t,
		dlqRecord(t, "broken", testTopic, brokenLogLine(t)),
		dlqRecord(t, "garbage", testTopic, []byte{0xff, 0xff, 0xff}),
		unknown, noHeaders, truncated, otherVersion, unreadableVersion,
		dlqRecord(t, "fine", testTopic, logLine(t)),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kopts := []kgo.Opt{kgo.SeedBrokers(addrs...)}
	for _, dry := range []bool{true, false} {
		opts := replayOpts(t, "erin")
		opts.DryRun = dry
		var invalid int
		var unreadable error
		opts.Each = func(d DeadLetter, err error) {
			var rf *ReplayRefusal
			if errors.As(err, &rf) && rf.Reason == RefusedContract {
				invalid++
			}
			if d.Event.ID == "unreadable-version" {
				unreadable = err
			}
		}
		rep, err := Replay(ctx, kopts, record.DLQTopic(testTopic), Selection{}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Matched != 8 || rep.Invalid != 6 || invalid != 6 || rep.Replayed != 2 {
			t.Fatalf("dry run %v: report %+v, %d refused as invalid", dry, rep, invalid)
		}
		if _, ok := errors.AsType[*UnknownVersionError](unreadable); !ok {
			t.Fatalf("dry run %v: a version the registry cannot read refused with %v", dry, unreadable)
		}
	}
	if got := replayedIDs(t, addrs, testTopic); strings.Join(got, ",") != "other-version,fine" {
		t.Fatalf("%s holds %v, want other-version and fine", testTopic, got)
	}
}

// TestReplayAudit: the started record is in the audit topic before the
// first record is replayed, the finished one after, also when the replay
// is canceled part way.
func TestReplayAudit(t *testing.T) {
	addrs := replayCluster(t,
		dlqRecord(t, "a", testTopic, logLine(t)),
		dlqRecord(t, "b", testTopic, logLine(t)),
		dlqRecord(t, "c", testTopic, logLine(t)),
	)
	kopts := []kgo.Opt{kgo.SeedBrokers(addrs...)}
	audit := func() []ReplayReport {
		reports, _ := auditRecords(t, addrs)
		return reports
	}
	tests := []struct {
		name        string
		cancelAt    int // cancel the replay when the n-th record is selected; 0 never
		wantOutcome string
		wantCount   int
	}{
		{"finishes", 0, "ok", 3},
		{"canceled part way", 2, context.Canceled.Error(), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(audit())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			opts := replayOpts(t, "frank")
			seen := 0
			var startedFirst bool
			opts.Each = func(d DeadLetter, _ error) {
				seen++
				if seen == 1 {
					a := audit()[before:]
					startedFirst = len(a) == 1 && a[0].Action == AuditStarted && a[0].Actor == "frank" &&
						!a[0].DryRun && a[0].Destination == testTopic && a[0].Rate == opts.Rate
				}
				if seen == tt.cancelAt {
					cancel()
				}
			}
			rep, err := Replay(ctx, kopts, record.DLQTopic(testTopic), Selection{}, opts)
			if (tt.cancelAt > 0) != errors.Is(err, context.Canceled) {
				t.Fatalf("replay: %v", err)
			}
			if !startedFirst {
				t.Fatal("no started audit record when the first record was about to be replayed")
			}
			a := audit()[before:]
			if len(a) != 2 || a[0].ReplayID != rep.ReplayID || a[1].ReplayID != rep.ReplayID || a[1].Action != AuditFinished ||
				a[1].Replayed != tt.wantCount || !strings.Contains(a[1].Outcome, tt.wantOutcome) || a[1].EndedAt.IsZero() {
				t.Fatalf("audit records %+v", a)
			}
		})
	}
}

// auditorFunc is a audit.Writer of a function.
type auditorFunc func(context.Context, []audit.Row) error

func (f auditorFunc) Audit(ctx context.Context, rows []audit.Row) error { return f(ctx, rows) }

// TestReplayAuditsIntoASink: given a audit.Writer (here the SQLite sink
// the consumer writes to), a replay records each record's replayed row
// there, once the record is in Kafka, and none to the audit topic but its
// reports; refused records and dry runs get none. An auditor that fails
// stops the replay after the record it could not audit.
func TestReplayAuditsIntoASink(t *testing.T) {
	addrs := replayCluster(t,
		dlqRecord(t, "a", testTopic, logLine(t)),
		dlqRecord(t, "broken", testTopic, brokenLogLine(t)),
		dlqRecord(t, "b", testTopic, logLine(t)),
	)
	kopts := []kgo.Opt{kgo.SeedBrokers(addrs...)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := sink.NewDefaultConfig().SQLite
	cfg.Path = t.TempDir() + "/events.db"
	db, err := sink.OpenSQLite(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	opts := replayOpts(t, "erin")
	opts.DryRun = true
	opts.Auditor = db
	if _, err := Replay(ctx, kopts, record.DLQTopic(testTopic), Selection{}, opts); err != nil {
		t.Fatal(err)
	}
	opts.DryRun = false
	var inKafka []int // records in the source topic when each row was recorded
	opts.Auditor = auditorFunc(func(ctx context.Context, rows []audit.Row) error {
		inKafka = append(inKafka, len(readAll(t, addrs, testTopic)))
		return db.Audit(ctx, rows)
	})
	rep, err := Replay(ctx, kopts, record.DLQTopic(testTopic), Selection{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Replayed != 2 || rep.Invalid != 1 || !slices.Equal(inKafka, []int{1, 2}) {
		t.Fatalf("report %+v; records in Kafka as each row was recorded %v, want [1 2]", rep, inKafka)
	}
	dlqRecs := readAll(t, addrs, record.DLQTopic(testTopic))
	for i, id := range []string{"a", "broken", "b"} {
		rows, err := db.AuditRows(ctx, "test", id)
		if err != nil {
			t.Fatal(err)
		}
		if id == "broken" {
			if len(rows) != 0 {
				t.Fatalf("a refused record has audit rows %+v", rows)
			}
			continue
		}
		if len(rows) != 1 || rows[0].Action != audit.Replayed || rows[0].ReplayID != rep.ReplayID || rows[0].Actor != "erin" ||
			rows[0].Topic != record.DLQTopic(testTopic) || rows[0].Offset != dlqRecs[i].Offset || !strings.HasPrefix(rows[0].Detail, testTopic+"/0@") {
			t.Fatalf("audit rows of %s: %+v", id, rows)
		}
	}
	if _, decisions := auditRecords(t, addrs); len(decisions) != 0 {
		t.Fatalf("decisions in %s although the replay had an auditor: %+v", record.AuditTopic, decisions)
	}

	// A row that cannot be recorded stops the replay: the record is in
	// Kafka, the report says what happened, nothing more is replayed.
	before := len(readAll(t, addrs, testTopic))
	opts.Auditor = auditorFunc(func(context.Context, []audit.Row) error { return errors.New("audit store down") })
	rep, err = Replay(ctx, kopts, record.DLQTopic(testTopic), Selection{}, opts)
	if err == nil || !strings.Contains(err.Error(), "audit store down") || !strings.Contains(err.Error(), "was replayed to") {
		t.Fatalf("replay with a failing auditor: %v", err)
	}
	if n := len(readAll(t, addrs, testTopic)) - before; n != 1 || rep.Replayed != 1 || !strings.Contains(rep.Outcome, "audit store down") {
		t.Fatalf("a failing auditor: %d records replayed, report %+v; want the first only, and the outcome naming the failure", n, rep)
	}

	// An actor the replay headers cannot carry is refused up front.
	opts.Actor = "line\nbreak"
	if _, err := Replay(ctx, kopts, record.DLQTopic(testTopic), Selection{}, opts); err == nil || !strings.Contains(err.Error(), record.HeaderReplayActor) {
		t.Fatalf("replay by actor %q: %v, want a refusal naming %s", opts.Actor, err, record.HeaderReplayActor)
	}
}
