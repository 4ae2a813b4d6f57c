package trace

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/record"
)

const (
	traceA = "4bf92f3577b34da6a3ce929d0e0e4736" // the caller's trace
	traceB = "0af7651916cd43dd8448eb211c80319c" // a replay's
)

func traced(r audit.Row, id string) audit.Row {
	r.TraceID = id
	return r
}

// The answer's trace id is that of the record its status is about, each
// audit row keeps its own, and a row without one (written before trace
// ids were kept) leaves the newest row's that has one.
func TestTraceID(t *testing.T) {
	f := newFixture(t, 1)
	src := Position{topic, 0, 3}
	dl := row(audit.DeadLettered, 1, failedAt, src)
	dl.Class, dl.Retryable = "transient", true
	replayed := row(audit.Replayed, 2, failedAt.Add(time.Hour), Position{dlqTopic, 0, 0})
	replayed.ReplayID, replayed.Actor = "r-1", "ops"
	writtenReplay := row(audit.Written, 3, failedAt.Add(2*time.Hour), Position{topic, 0, 9})
	writtenReplay.ReplayID, writtenReplay.Actor = "r-1", "ops"
	parked := row(audit.Parked, 2, failedAt.Add(time.Hour), Position{parkedTopic, 0, 0})
	parked.Detail = record.ParkedMaxRetries

	for _, c := range []struct {
		name   string
		rows   []audit.Row
		status Status
		want   string
	}{
		{"written", []audit.Row{traced(row(audit.Written, 1, consumerAt, src), traceA)}, InSink, traceA},
		{"written by a replay: the replayed record's trace", []audit.Row{traced(dl, traceA), traced(replayed, traceB),
			traced(writtenReplay, traceB)}, InSink, traceB},
		{"dead-lettered", []audit.Row{traced(dl, traceA)}, InDLQ, traceA},
		{"parked", []audit.Row{traced(dl, traceA), traced(parked, traceA)}, Parked, traceA},
		{"a written row without one", []audit.Row{traced(dl, traceA), row(audit.Written, 2, consumerAt, src)}, InSink, traceA},
		{"none", []audit.Row{row(audit.Written, 1, consumerAt, src)}, InSink, ""},
		{"not a trace id", []audit.Row{traced(row(audit.Written, 1, consumerAt, src), "x\ny")}, InSink, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := trace(t, f.tracer(WithAuditReader(&rowsReader{rows: c.rows})), Query{Source: source, ID: "e1"})
			if a.Status != c.status || a.TraceID != c.want {
				t.Fatalf("status %s, trace id %q; want %s, %q: %s", a.Status, a.TraceID, c.status, c.want, a.Summary)
			}
			for i, r := range a.Audit {
				if want := c.rows[i].TraceID; r.TraceID != want && audit.ValidTraceID(want) {
					t.Errorf("audit row %d: trace id %q, want %q", i, r.TraceID, want)
				}
			}
		})
	}
}

// A pending copy, and a dead letter found without audit rows, give the
// trace id of their record's traceparent.
func TestTraceIDOfRecords(t *testing.T) {
	withTraceparent := func(r *kgo.Record, id string) *kgo.Record {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: record.HeaderTraceparent, Value: []byte("00-" + id + "-00f067aa0ba902b7-01")})
		return r
	}
	t.Run("pending", func(t *testing.T) {
		f := newFixture(t, 1)
		f.produce(event(t, "a", 0), withTraceparent(event(t, "e1", 0), traceA))
		f.commit(topic, 0, 1)
		a := trace(t, f.tracer(WithAuditReader(&rowsReader{})), Query{Source: source, ID: "e1"})
		if a.Status != Pending || a.TraceID != traceA {
			t.Fatalf("status %s, trace id %q: %s", a.Status, a.TraceID, a.Summary)
		}
	})
	t.Run("in the DLQ", func(t *testing.T) {
		f := newFixture(t, 1)
		f.produce(withTraceparent(deadLetter(t, dlqTopic, "e1", record.Envelope{Class: "permanent", LastFailureAt: failedAt}), traceB))
		a := trace(t, f.tracer(), Query{Source: source, ID: "e1"})
		if a.Status != InDLQ || a.TraceID != traceB {
			t.Fatalf("status %s, trace id %q: %s", a.Status, a.TraceID, a.Summary)
		}
	})
}

// The text form has a "trace <id>" line under the status line and a
// TRACE column in the audit rows; JSON has trace_id in both. Without a
// trace id there is no line, the column says "-" and JSON has no field.
func TestTraceIDText(t *testing.T) {
	f := newFixture(t, 1)
	written := row(audit.Written, 1, consumerAt, Position{topic, 0, 3})
	for _, id := range []string{traceA, ""} {
		a := trace(t, f.tracer(WithAuditReader(&rowsReader{rows: []audit.Row{traced(written, id)}})), Query{Source: source, ID: "e1"})
		var text, js bytes.Buffer
		if err := a.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if err := a.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(text.String(), "\n")
		var got struct {
			TraceID string `json:"trace_id"`
			Audit   []struct {
				TraceID *string `json:"trace_id"`
			} `json:"audit"`
		}
		if err := json.Unmarshal(js.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if id == "" {
			if strings.Contains(text.String(), "\ntrace ") || lines[1] != "" || got.TraceID != "" || got.Audit[0].TraceID != nil {
				t.Errorf("no trace id:\n%s\n%s", text.String(), js.String())
			}
			continue
		}
		if lines[1] != "trace "+traceA {
			t.Errorf("line 2 %q, want the trace id:\n%s", lines[1], text.String())
		}
		if got.TraceID != traceA || got.Audit[0].TraceID == nil || *got.Audit[0].TraceID != traceA {
			t.Errorf("JSON %s", js.String())
		}
		var head, rowLine string
		for i, l := range lines {
			if strings.HasPrefix(l, "  SEQ ") {
				head, rowLine = l, lines[i+1]
			}
		}
		if col := strings.Index(head, "TRACE"); col < 0 || !strings.HasPrefix(rowLine[col:], traceA) {
			t.Errorf("no TRACE column holding the trace id:\n%s\n%s", head, rowLine)
		}
		t.Logf("\n%s", text.String())
	}
}
