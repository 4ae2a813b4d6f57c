package trace

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/record"
)

func row(action audit.Action, seq int64, at time.Time, pos Position) audit.Row {
	return audit.Row{Source: source, EventID: "e1", Sequence: seq, Action: action, At: at,
		Topic: pos.Topic, Partition: pos.Partition, Offset: pos.Offset, EventType: "examples.logs.v1.LogLine", Group: group, Sink: "sqlite"}
}

// The audit table settles IN_SINK, IN_DLQ and PARKED alone: nothing in
// Kafka is read, and every row is in the answer.
func TestTraceFromAuditTable(t *testing.T) {
	f := newFixture(t, 1)
	src := Position{topic, 0, 3}
	dl := func(seq int64, at time.Time, retryable bool) audit.Row {
		r := row(audit.DeadLettered, seq, at, src)
		r.Class, r.Error, r.Attempt, r.Retryable = "transient", "503 from the receiver", 5, retryable
		return r
	}
	retried := func(seq int64, at time.Time) audit.Row {
		return row(audit.Retried, seq, at, Position{dlqTopic, 0, 0})
	}
	parked := row(audit.Parked, 5, failedAt.Add(3*time.Hour), Position{parkedTopic, 0, 0})
	parked.Detail, parked.Class, parked.Retryable = record.ParkedMaxRetries, "transient", true
	replayed := row(audit.Replayed, 3, failedAt.Add(time.Hour), Position{dlqTopic, 0, 0})
	replayed.ReplayID, replayed.Actor = "r-1", "ops"
	writtenReplay := row(audit.Written, 4, failedAt.Add(2*time.Hour), Position{topic, 0, 9})
	writtenReplay.ReplayID, writtenReplay.Actor = "r-1", "ops"

	cases := []struct {
		name   string
		rows   []audit.Row
		status Status
		check  func(t *testing.T, a *Answer)
	}{
		{"written", []audit.Row{row(audit.Written, 1, consumerAt, src)}, InSink, func(t *testing.T, a *Answer) {
			w := a.Written
			if w == nil || w.From != src || !w.At.Equal(consumerAt) || w.Sink != "sqlite" || w.Inferred {
				t.Errorf("written %+v", w)
			}
			if !strings.Contains(a.Summary, "written to sink sqlite at 2026-11-29T08:00:01Z from "+src.String()) {
				t.Errorf("summary %q", a.Summary)
			}
		}},
		{"replayed then written", []audit.Row{dl(1, failedAt, false), replayed, writtenReplay}, InSink, func(t *testing.T, a *Answer) {
			if w := a.Written; w == nil || w.ReplayID != "r-1" || w.Actor != "ops" || w.From.Offset != 9 {
				t.Errorf("written %+v", w)
			}
			if !strings.Contains(a.Summary, "(replay r-1 by ops)") {
				t.Errorf("summary %q", a.Summary)
			}
		}},
		{"dead-lettered", []audit.Row{dl(1, failedAt, true)}, InDLQ, func(t *testing.T, a *Answer) {
			d := a.DeadLetter
			if d == nil || d.Topic != dlqTopic || !d.Retryable || d.Attempts != 5 || d.DLQRetries != 0 || d.Class != "transient" ||
				d.Source == nil || *d.Source != src || !d.FirstFailureAt.Equal(failedAt) {
				t.Fatalf("dead letter %+v", d)
			}
			n := d.Next
			if n == nil || !n.Retried || n.Every != "1m0s" || !n.NotBefore.IsZero() || n.RetriesLeft != 5 ||
				!n.ParksAfter.Equal(failedAt.Add(72*time.Hour)) {
				t.Fatalf("next drain %+v", n)
			}
			if !strings.Contains(n.Text, "at the next drain pass (one starts every 1m0s") {
				t.Errorf("next %q", n.Text)
			}
		}},
		{"retried and dead-lettered again", []audit.Row{dl(1, failedAt, true), retried(2, failedAt.Add(time.Hour)),
			dl(3, failedAt.Add(time.Hour+time.Second), true)}, InDLQ, func(t *testing.T, a *Answer) {
			d := a.DeadLetter
			if d.DLQRetries != 1 || !d.At.Equal(failedAt.Add(time.Hour+time.Second)) || !d.FirstFailureAt.Equal(failedAt) {
				t.Fatalf("dead letter %+v", d)
			}
			if want := failedAt.Add(time.Hour + time.Second + time.Minute); !d.Next.NotBefore.Equal(want) || d.Next.RetriesLeft != 4 {
				t.Errorf("next drain %+v, want not before %s", d.Next, want)
			}
		}},
		{"being retried", []audit.Row{dl(1, failedAt, true), retried(2, failedAt.Add(time.Hour))}, InDLQ, func(t *testing.T, a *Answer) {
			if d := a.DeadLetter; d.DLQRetries != 0 || !strings.Contains(d.Note, "a drain pass took it from the DLQ") {
				t.Errorf("dead letter %+v", d)
			}
		}},
		{"not retryable", []audit.Row{dl(1, failedAt, false)}, InDLQ, func(t *testing.T, a *Answer) {
			if n := a.DeadLetter.Next; n.Retried || !strings.Contains(n.Text, "drains skip it") ||
				!strings.Contains(n.Text, "sluice dlq replay --topic "+dlqTopic+" --source test") {
				t.Errorf("next drain %+v", n)
			}
		}},
		{"parked", []audit.Row{dl(1, failedAt, true), retried(2, failedAt.Add(time.Hour)), dl(3, failedAt.Add(time.Hour), true),
			retried(4, failedAt.Add(2*time.Hour)), parked}, Parked, func(t *testing.T, a *Answer) {
			d := a.DeadLetter
			if d == nil || d.Topic != parkedTopic || d.ParkedReason != record.ParkedMaxRetries || d.Record == nil || d.Record.Topic != parkedTopic {
				t.Fatalf("dead letter %+v", d)
			}
			if !strings.Contains(a.Summary, "parked in "+parkedTopic) || !strings.Contains(a.Summary, "sluice dlq replay --topic "+parkedTopic) {
				t.Errorf("summary %q", a.Summary)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := f.tracer(WithAuditReader(&rowsReader{rows: c.rows}))
			a := trace(t, tr, Query{Source: source, ID: "e1"})
			if a.Status != c.status {
				t.Fatalf("status %s, want %s: %s", a.Status, c.status, a.Summary)
			}
			if len(a.Audit) != len(c.rows) {
				t.Errorf("%d audit rows, want %d", len(a.Audit), len(c.rows))
			}
			for i, r := range a.Audit {
				if r.Sequence != c.rows[i].Sequence || r.Action != string(c.rows[i].Action) {
					t.Errorf("audit row %d: %+v", i, r)
				}
			}
			// Settled by the table: only sluice.audit is read besides, for
			// rows the table did not take.
			if len(a.Searched) != 2 || a.Searched[0].What != SearchAuditTable || a.Searched[1].What != SearchAuditTopic ||
				a.RecordsRead != 0 || a.BoundHit {
				t.Errorf("searched %+v, read %d", a.Searched, a.RecordsRead)
			}
			if len(a.Path) != len(c.rows) || a.Path[0].From != FromAuditTable {
				t.Errorf("path %+v", a.Path)
			}
			c.check(t, a)
		})
	}
}

// An audit table that does not answer is an error, not an UNKNOWN.
func TestTraceAuditTableError(t *testing.T) {
	f := newFixture(t, 1)
	tr := f.tracer(WithAuditReader(&rowsReader{err: errors.New("database is locked")}))
	_, err := tr.Trace(context.Background(), Query{Source: source, ID: "e1"})
	if err == nil || !strings.Contains(err.Error(), "audit table: database is locked") {
		t.Fatalf("err %v", err)
	}
}

// An event past the group's committed offset is PENDING with its
// partition's lag; the partition is found by a scan from the committed
// offsets, or read at the hint alone.
func TestTracePending(t *testing.T) {
	f := newFixture(t, 2)
	var recs []*kgo.Record
	for i, id := range []string{"a", "b", "c", "e1", "d", "e"} {
		recs = append(recs, event(t, id, 1))
		_ = i
	}
	recs = append(recs, event(t, "x", 0), event(t, "y", 0))
	f.produce(recs...)
	f.commit(topic, 1, 2) // a and b consumed
	f.commit(topic, 0, 2)
	tr := f.tracer(WithAuditReader(&rowsReader{}))

	for _, hint := range []*Position{nil, {topic, 1, 3}} {
		a := trace(t, tr, Query{Source: source, ID: "e1", Hint: hint})
		if a.Status != Pending {
			t.Fatalf("hint %v: status %s: %s", hint, a.Status, a.Summary)
		}
		p := a.Pending
		if p == nil || p.Record == nil || *p.Record != (Position{topic, 1, 3}) || p.Committed != 2 || p.End != 6 || p.Lag != 4 || p.Ahead != 1 || p.Group != group {
			t.Fatalf("hint %v: pending %+v", hint, p)
		}
		want := "in " + topic + "/1@3, not yet consumed: 1 records ahead of it past group g's committed offset 2 (partition lag 4)"
		if a.Summary != want {
			t.Errorf("summary %q\nwant    %q", a.Summary, want)
		}
		what := SearchSource
		if hint != nil {
			what = SearchHint
		}
		s := searched(a, what)
		if s == nil || s.Found != 1 {
			t.Fatalf("searched %+v", a.Searched)
		}
		if hint == nil {
			// From the committed offsets: 4 records in partition 1, none in 0.
			if s.InRange != 4 || len(s.Partitions) != 2 || s.Partitions[1] != (Range{Partition: 1, Start: 2, From: 2, End: 6, Next: 6}) {
				t.Errorf("source search %+v", s)
			}
		} else if s.Read != 1 || s.InRange != 1 {
			t.Errorf("hint search %+v", s)
		}
		if searched(a, SearchDLQ) == nil || searched(a, SearchParked) == nil || searched(a, SearchAuditTopic) == nil {
			t.Errorf("searched %+v", a.Searched)
		}
	}

	// Once the group commits past it, it is no longer pending.
	f.commit(topic, 1, 4)
	a := trace(t, tr, Query{Source: source, ID: "e1", Hint: &Position{topic, 1, 3}})
	if a.Status != Unknown || !strings.Contains(a.Summary, "its record "+topic+"/1@3 was consumed (group g committed past it)") {
		t.Errorf("status %s: %s", a.Status, a.Summary)
	}
}

// A replayed event not yet consumed is PENDING in its source topic, whose
// scan stops at the copy.
func TestTraceReplayedPending(t *testing.T) {
	f := newFixture(t, 1)
	f.produce(event(t, "e1", 0), event(t, "z", 0), event(t, "e1", 0), event(t, "w", 0))
	f.commit(topic, 0, 1)
	first := row(audit.DeadLettered, 1, failedAt, Position{topic, 0, 0})
	first.Class, first.Retryable = "permanent", false
	replayed := row(audit.Replayed, 2, failedAt.Add(time.Hour), Position{dlqTopic, 0, 0})
	replayed.ReplayID, replayed.Actor = "r-7", "ops"
	tr := f.tracer(WithAuditReader(&rowsReader{rows: []audit.Row{first, replayed}}))
	a := trace(t, tr, Query{Source: source, ID: "e1"})
	if a.Status != Pending || a.Pending.Record == nil || a.Pending.Record.Offset != 2 || a.Pending.Ahead != 1 {
		t.Fatalf("status %s, pending %+v: %s", a.Status, a.Pending, a.Summary)
	}
	if !strings.Contains(a.Summary, "replayed at 2026-11-29T10:00:00Z (replay r-7 by ops)") {
		t.Errorf("summary %q", a.Summary)
	}
	if len(a.Searched) != 3 || a.Searched[1].What != SearchAuditTopic || a.Searched[2].What != SearchSource ||
		a.Searched[2].Read != 2 || a.Searched[2].Note != "stopped at the event's copy" {
		t.Errorf("searched %+v", a.Searched)
	}
}

// Without an audit table (the HTTP sink), the DLQ and parked topics and
// sluice.audit are scanned: the newest dead letter says where the event
// is, and rows in sluice.audit settle it as the table's would.
func TestTraceWithoutAuditTable(t *testing.T) {
	t.Run("in the DLQ", func(t *testing.T) {
		f := newFixture(t, 1)
		f.produce(
			deadLetter(t, dlqTopic, "other", record.Envelope{Class: "transient", Retryable: true, Attempts: 5}),
			deadLetter(t, dlqTopic, "e1", record.Envelope{Class: "transient", Error: "503", Retryable: true, Attempts: 5, SourceOffset: 4}),
			deadLetter(t, dlqTopic, "e1", record.Envelope{Class: "transient", Error: "503 again", Retryable: true, Attempts: 1,
				DLQRetries: 1, SourceOffset: 4, LastFailureAt: failedAt.Add(time.Hour)}),
			&kgo.Record{Topic: record.AuditTopic, Value: []byte(`{"action":"replay.started","replay_id":"r-1"}`)},
		)
		a := trace(t, f.tracer(), Query{Source: source, ID: "e1"})
		if a.Status != InDLQ {
			t.Fatalf("status %s: %s", a.Status, a.Summary)
		}
		d := a.DeadLetter
		if d.Record == nil || *d.Record != (Position{dlqTopic, 0, 2}) || d.DLQRetries != 1 || d.Error != "503 again" ||
			d.Source == nil || *d.Source != (Position{topic, 0, 4}) || !d.FirstFailureAt.Equal(failedAt) {
			t.Fatalf("dead letter %+v", d)
		}
		if !d.Next.NotBefore.Equal(failedAt.Add(time.Hour + time.Minute)) {
			t.Errorf("next drain %+v", d.Next)
		}
		for _, what := range []string{SearchAuditTopic, SearchDLQ, SearchParked, SearchSource} {
			if searched(a, what) == nil {
				t.Errorf("no %s search: %+v", what, a.Searched)
			}
		}
		if s := searched(a, SearchDLQ); s.Read != 3 || s.Found != 2 || s.BoundHit {
			t.Errorf("dlq search %+v", s)
		}
		if s := searched(a, SearchAuditTopic); s.Read != 1 || s.Found != 0 || s.Note != "" {
			t.Errorf("audit topic search %+v", s)
		}
		// accepted, dead_lettered twice, in time order.
		if len(a.Path) != 3 || a.Path[0].Step != "accepted" || *a.Path[0].Where != (Position{topic, 0, 4}) ||
			a.Path[2].Step != "dead_lettered" || a.Path[2].Where.Offset != 2 {
			t.Errorf("path %+v", a.Path)
		}
	})

	t.Run("parked", func(t *testing.T) {
		f := newFixture(t, 1)
		f.produce(
			deadLetter(t, dlqTopic, "e1", record.Envelope{Class: "transient", Retryable: true, Attempts: 5}),
			deadLetter(t, parkedTopic, "e1", record.Envelope{Class: "transient", Retryable: true, DLQRetries: 5,
				ParkedReason: record.ParkedMaxRetries, LastFailureAt: failedAt.Add(5 * time.Hour)}),
		)
		a := trace(t, f.tracer(), Query{Source: source, ID: "e1"})
		if a.Status != Parked || a.DeadLetter.ParkedReason != record.ParkedMaxRetries || a.DeadLetter.Record.Topic != parkedTopic {
			t.Fatalf("status %s, %+v: %s", a.Status, a.DeadLetter, a.Summary)
		}
	})

	t.Run("drained", func(t *testing.T) {
		// The group committed past the retryable dead letter and no newer
		// one holds the event: a drain wrote it.
		f := newFixture(t, 1)
		f.produce(deadLetter(t, dlqTopic, "e1", record.Envelope{Class: "transient", Retryable: true, Attempts: 5}))
		f.commit(dlqTopic, 0, 1)
		a := trace(t, f.tracer(), Query{Source: source, ID: "e1"})
		if a.Status != InSink || a.Written == nil || !a.Written.Inferred || a.Written.From != (Position{dlqTopic, 0, 0}) {
			t.Fatalf("status %s, written %+v: %s", a.Status, a.Written, a.Summary)
		}
		// With the search cut, a newer dead letter may hold it: IN_DLQ.
		f = newFixture(t, 1)
		f.produce(deadLetter(t, dlqTopic, "other", record.Envelope{Class: "transient", Retryable: true}),
			deadLetter(t, dlqTopic, "e1", record.Envelope{Class: "transient", Retryable: true}))
		f.commit(dlqTopic, 0, 2)
		a = trace(t, f.tracer(), Query{Source: source, ID: "e1", Limits: Limits{MaxRecords: 1}})
		if a.Status != InDLQ || !a.BoundHit || !strings.Contains(a.DeadLetter.Note, "the search of the DLQ and parked topics was cut") {
			t.Fatalf("status %s, %+v: %s", a.Status, a.DeadLetter, a.Summary)
		}
	})

	t.Run("rows in sluice.audit", func(t *testing.T) {
		f := newFixture(t, 1)
		dl := row(audit.DeadLettered, 0, failedAt, Position{topic, 0, 0})
		dl.Sink, dl.Class, dl.Retryable = "http", "transient", true
		w := row(audit.Written, 0, failedAt.Add(time.Hour), Position{dlqTopic, 0, 0})
		w.Sink = "http"
		f.produce(auditRecord(t, dl), auditRecord(t, w), auditRecord(t, dl), // dl recorded twice: at least once
			deadLetter(t, dlqTopic, "e1", record.Envelope{Class: "transient", Retryable: true}),
			&kgo.Record{Topic: record.AuditTopic, Value: []byte(`{"kind":"decision","action":"written","event_id":7}`)},
			&kgo.Record{Topic: record.AuditTopic, Value: []byte(`{"kind":"replay","action":"replay.started"}`)})
		a := trace(t, f.tracer(), Query{Source: source, ID: "e1"})
		if a.Status != InSink || a.Written.Inferred || a.Written.Sink != "http" || len(a.Audit) != 2 ||
			a.Audit[0].Sequence != 1 || a.Audit[0].Action != string(audit.DeadLettered) ||
			a.Audit[1].Sequence != 2 || a.Audit[1].Action != string(audit.Written) {
			t.Fatalf("status %s, written %+v, rows %+v: %s", a.Status, a.Written, a.Audit, a.Summary)
		}
		s := searched(a, SearchAuditTopic)
		if s.Found != 3 || !strings.Contains(s.Note, "a record it cannot read: sluice.audit/0@3") {
			t.Errorf("audit topic search %+v", s)
		}
		if a.Path[0].From != FromAuditTopic && a.Path[0].From != FromScan {
			t.Errorf("path %+v", a.Path)
		}
	})
}

// Rows in sluice.audit that leave the event in its DLQ are completed by
// the dead letter the scan found.
func TestTraceAuditTopicRowsAndDeadLetter(t *testing.T) {
	f := newFixture(t, 1)
	dl := row(audit.DeadLettered, 0, failedAt, Position{topic, 0, 0})
	dl.Sink, dl.Class, dl.Retryable, dl.Attempt = "http", "transient", true, 5
	f.produce(auditRecord(t, dl), deadLetter(t, dlqTopic, "other", record.Envelope{Class: "transient"}),
		deadLetter(t, dlqTopic, "e1", record.Envelope{Class: "transient", Retryable: true, Attempts: 5}))
	a := trace(t, f.tracer(), Query{Source: source, ID: "e1"})
	if a.Status != InDLQ || a.DeadLetter.Record == nil || *a.DeadLetter.Record != (Position{dlqTopic, 0, 1}) || len(a.Audit) != 1 {
		t.Fatalf("status %s, %+v: %s", a.Status, a.DeadLetter, a.Summary)
	}
	// The path: accepted and dead_lettered (the scan's), dead_lettered
	// (the row's).
	if len(a.Path) != 3 || a.Path[0].Step != "accepted" {
		t.Errorf("path %+v", a.Path)
	}
}

// max_records bounds the records read across every topic, the newest
// kept, and the answer says the bound was hit and where.
func TestTraceBoundHit(t *testing.T) {
	f := newFixture(t, 1)
	recs := []*kgo.Record{deadLetter(t, dlqTopic, "e1", record.Envelope{Class: "permanent"})}
	for range 30 {
		recs = append(recs, deadLetter(t, dlqTopic, "other", record.Envelope{Class: "permanent"}))
	}
	f.produce(recs...)
	tr := f.tracer()
	a := trace(t, tr, Query{Source: source, ID: "e1", Limits: Limits{MaxRecords: 10}})
	if a.Status != Unknown || !a.BoundHit || a.RecordsRead != 10 {
		t.Fatalf("status %s, bound hit %v, read %d: %s", a.Status, a.BoundHit, a.RecordsRead, a.Summary)
	}
	s := searched(a, SearchDLQ)
	if !s.BoundHit || s.Read != 10 || s.InRange != 31 || s.Partitions[0] != (Range{Partition: 0, Start: 0, From: 21, End: 31, Next: 31}) {
		t.Errorf("dlq search %+v", s)
	}
	if !strings.Contains(a.Summary, "the limits cut the search (max_records 10") {
		t.Errorf("summary %q", a.Summary)
	}
	// Within the bound it is found.
	if a := trace(t, tr, Query{Source: source, ID: "e1", Limits: Limits{MaxRecords: 31}}); a.Status != InDLQ || a.BoundHit {
		t.Errorf("status %s, bound hit %v", a.Status, a.BoundHit)
	}
}

// The timeout ends a scan that Kafka holds up, and the answer says so.
func TestTraceTimeout(t *testing.T) {
	f := newFixture(t, 1)
	f.produce(deadLetter(t, dlqTopic, "e1", record.Envelope{Class: "permanent"}))
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f.cluster.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		f.cluster.KeepControl()
		f.cluster.SleepControl(func() { <-release })
		return nil, nil, false
	})
	a := trace(t, f.tracer(), Query{Source: source, ID: "e1", Limits: Limits{Timeout: 2 * time.Second}})
	if a.Status != Unknown || !a.BoundHit {
		t.Fatalf("status %s, bound hit %v: %s", a.Status, a.BoundHit, a.Summary)
	}
	if s := searched(a, SearchDLQ); !s.TimedOut || s.Read != 0 {
		t.Errorf("dlq search %+v", s)
	}
}

// Nothing anywhere: UNKNOWN, naming what was searched.
func TestTraceUnknown(t *testing.T) {
	f := newFixture(t, 1)
	f.produce(event(t, "other", 0))
	a := trace(t, f.tracer(WithAuditReader(&rowsReader{})), Query{Source: source, ID: "e1"})
	if a.Status != Unknown || a.BoundHit {
		t.Fatalf("status %s: %s", a.Status, a.Summary)
	}
	want := "not found in the audit table, sluice.audit (0 records), " + dlqTopic + " (0 records), " + parkedTopic + " (0 records), " + topic + " (1 records past the committed offsets)"
	if a.Summary != want {
		t.Errorf("summary %q\nwant    %q", a.Summary, want)
	}
	// Another source's event of the same id is another event.
	f.produce(record.NewEvent(&record.Event{Topic: topic, ID: "e1", Type: "examples.logs.v1.LogLine", Source: "elsewhere",
		OccurredAt: now, IngestedAt: now, Fingerprint: "sha256:x"}))
	if a := trace(t, f.tracer(), Query{Source: source, ID: "e1"}); a.Status != Unknown {
		t.Errorf("status %s: %s", a.Status, a.Summary)
	}
	// A missing topic is searched as missing, not an error.
	f.cfg.Topics = []string{topic, "ingest.missing"}
	a = trace(t, f.tracer(), Query{Source: source, ID: "e1"})
	if a.Status != Unknown || !strings.Contains(a.Summary, "ingest.missing.dlq (does not exist)") {
		t.Errorf("status %s: %s", a.Status, a.Summary)
	}
}

// A query the Tracer refuses is a *QueryError naming the field.
func TestTraceRefusesQuery(t *testing.T) {
	f := newFixture(t, 1)
	tr := f.tracer()
	for _, c := range []struct {
		q     Query
		field string
	}{
		{Query{ID: "e1"}, "source"},
		{Query{Source: source}, "id"},
		{Query{Source: source, ID: strings.Repeat("x", 513)}, "id"},
		{Query{Source: "a\x00b", ID: "e1"}, "source"},
		{Query{Source: source, ID: "\xff"}, "id"},
		{Query{Source: source, ID: "e1", Hint: &Position{Topic: dlqTopic}}, "topic"},
		{Query{Source: source, ID: "e1", Hint: &Position{Topic: topic, Partition: -1}}, "partition"},
		{Query{Source: source, ID: "e1", Hint: &Position{Topic: topic, Offset: -1}}, "offset"},
		{Query{Source: source, ID: "e1", Limits: Limits{MaxRecords: -1}}, "max_records"},
	} {
		_, err := tr.Trace(context.Background(), c.q)
		var qe *QueryError
		if !errors.As(err, &qe) || qe.Field != c.field {
			t.Errorf("%+v: %v, want a QueryError on %s", c.q, err, c.field)
		}
	}
}

// The text form holds the status line, the path, every audit row and
// what was searched.
func TestAnswerText(t *testing.T) {
	f := newFixture(t, 1)
	dl := row(audit.DeadLettered, 1, failedAt, Position{topic, 0, 3})
	dl.Class, dl.Error, dl.Attempt, dl.Retryable = "transient", "503\nfrom the receiver", 5, true
	a := trace(t, f.tracer(WithAuditReader(&rowsReader{rows: []audit.Row{dl}})), Query{Source: source, ID: "e1"})
	var b bytes.Buffer
	if err := a.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"IN_DLQ  test/e1: dead-lettered to " + dlqTopic + " at 2026-11-29T09:00:00Z: transient (retryable), 5 attempts, 0 failed drains; next: at the next drain pass",
		"\npath\n  AT ", "dead_lettered  " + topic + "/0@3",
		"\naudit rows (1)\n  SEQ ", "503 from the receiver",
		"\nsearched\n  WHAT ", "audit_table",
		"read 0 records (max_records 100000, timeout 30s): no bound hit",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	t.Logf("\n%s", out)
}

// Beside an audit table, the rows the consumer recorded in sluice.audit
// while the table did not take them are part of the trail, in time order
// with sequence 0, and decide with the table's: a dead letter the table
// holds, parked while the table was down, is PARKED. A row both hold is
// the table's.
func TestTraceTableAndFallbackRows(t *testing.T) {
	f := newFixture(t, 1)
	src, dlqRec := Position{topic, 0, 3}, Position{dlqTopic, 0, 0}
	dl := row(audit.DeadLettered, 1, failedAt, src)
	dl.Class, dl.Retryable, dl.Attempt = "transient", true, 3
	retried := row(audit.Retried, 0, failedAt.Add(time.Minute), dlqRec)
	retried.Class, retried.Retryable, retried.Attempt = "transient", true, 3
	parked := row(audit.Parked, 0, failedAt.Add(2*time.Minute), dlqRec)
	parked.Class, parked.Attempt, parked.DLQRetries, parked.Detail = "transient", 4, 1, "max_retries"
	f.produce(auditRecord(t, dl), auditRecord(t, retried), auditRecord(t, parked))
	a := trace(t, f.tracer(WithAuditReader(&rowsReader{rows: []audit.Row{dl}})), Query{Source: source, ID: "e1"})
	if a.Status != Parked {
		t.Fatalf("status %s: %s", a.Status, a.Summary)
	}
	want := []struct {
		seq    int64
		action audit.Action
		from   string
	}{{1, audit.DeadLettered, FromAuditTable}, {0, audit.Retried, FromAuditTopic}, {0, audit.Parked, FromAuditTopic}}
	if len(a.Audit) != len(want) {
		t.Fatalf("rows %+v", a.Audit)
	}
	for i, w := range want {
		if r := a.Audit[i]; r.Sequence != w.seq || r.Action != string(w.action) {
			t.Errorf("row %d: %+v, want %+v", i, r, w)
		}
		if p := a.Path[i]; p.Step != string(w.action) || p.From != w.from {
			t.Errorf("step %d: %+v, want %+v", i, p, w)
		}
	}
	if s := searched(a, SearchAuditTopic); s == nil || s.Found != 3 {
		t.Errorf("audit topic search %+v", s)
	}
}
