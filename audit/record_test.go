package audit

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/record"
)

// A decision read back is the row written, but for its sequence, which
// a topic does not keep.
func TestDecisionRoundTrip(t *testing.T) {
	row := Row{Source: "shop", EventID: "order-1", Sequence: 7, Action: Parked,
		At: time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC), Topic: "t.dlq", Partition: 2, Offset: 41,
		EventType: "examples.shop.v1.OrderPlaced", Group: "g", Sink: "http", Class: "transient", Error: "503",
		Attempt: 5, DLQRetries: 3, Retryable: true, Detail: "max_retries", ReplayID: "r1", Actor: "ops",
		TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}
	rec, err := NewRecord(row)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Topic != record.AuditTopic || string(rec.Key) != record.IdentityKey(row.Source, row.EventID) {
		t.Fatalf("record %s keyed %q, want %s keyed by the identity", rec.Topic, rec.Key, record.AuditTopic)
	}
	got, ok, err := ParseRecord(rec)
	if err != nil || !ok {
		t.Fatalf("ParseRecord: %v, %v", ok, err)
	}
	want := row
	want.Sequence = 0
	if !got.At.Equal(want.At) || !reflect.DeepEqual(withoutAt(got), withoutAt(want)) {
		t.Fatalf("read back %+v, want %+v", got, want)
	}
	if !strings.Contains(string(rec.Value), `"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"`) {
		t.Errorf("the record's JSON has no trace_id: %s", rec.Value)
	}
	// A row with no trace id writes none, and a record written before
	// trace ids (no field) reads back with none.
	row.TraceID = ""
	if rec, err = NewRecord(row); err != nil || strings.Contains(string(rec.Value), "trace_id") {
		t.Fatalf("a row without a trace id: %v %s", err, rec.Value)
	}
	if got, ok, err := ParseRecord(rec); err != nil || !ok || got.TraceID != "" {
		t.Fatalf("read back %+v, %v, %v", got, ok, err)
	}
	// A trace id that is not one is dropped, the row kept.
	for _, id := range []string{"4BF92F3577B34DA6A3CE929D0E0E4736", "00000000000000000000000000000000", "abc", "4bf92f3577b34da6a3ce929d0e0e4736\\n"} {
		v := `{"kind":"decision","action":"written","source":"s","event_id":"e","trace_id":"` + id + `"}`
		got, ok, err := ParseRecord(&kgo.Record{Value: []byte(v)})
		if err != nil || !ok || got.TraceID != "" {
			t.Errorf("trace id %q: read back %q, %v, %v; want the row without it", id, got.TraceID, ok, err)
		}
	}
	for _, v := range []string{`{"kind":"replay","action":"replay.started"}`, `not json`, `{}`, `[]`} {
		if _, err := record.ParseDecision(&kgo.Record{Value: []byte(v)}); !errors.Is(err, record.ErrNotDecision) {
			t.Errorf("%s: %v, want ErrNotDecision", v, err)
		}
		if _, ok, err := ParseRecord(&kgo.Record{Value: []byte(v)}); ok || err != nil {
			t.Errorf("%s: ParseRecord %v, %v, want no row and no error", v, ok, err)
		}
	}
	if _, err := record.ParseDecision(&kgo.Record{Value: []byte(`{"kind":"decision","offset":"x"}`)}); err == nil || errors.Is(err, record.ErrNotDecision) {
		t.Errorf("a decision that does not decode: %v", err)
	}
	for _, v := range []string{
		`{"kind":"decision","action":"deleted","source":"s","event_id":"e"}`,
		`{"kind":"decision","action":"written","source":"s","event_id":""}`,
	} {
		if _, ok, err := ParseRecord(&kgo.Record{Value: []byte(v)}); ok || err == nil {
			t.Errorf("%s: ParseRecord %v, %v, want an error", v, ok, err)
		}
	}
}

// FuzzParseDecision: any record value gives a Decision or an error,
// never a panic, and a Decision written again reads back the same.
func FuzzParseDecision(f *testing.F) {
	for _, v := range []string{
		`{"kind":"decision","action":"written","source":"s","event_id":"e","at":"2026-12-01T10:00:00Z","topic":"t","partition":0,"offset":3,"attempt":0,"dlq_retries":0,"retryable":false}`,
		`{"kind":"replay","action":"replay.started"}`,
		`{"kind":"decision","at":"bad"}`,
		`{"kind":"decision","kind":"replay"}`,
		`{"kind":"decision","action":"parked","source":"s","event_id":"e","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}`,
		`{"kind":"decision","action":"parked","source":"s","event_id":"e","trace_id":"\u0000x"}`,
	} {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if row, ok, err := ParseRecord(&kgo.Record{Value: v}); err == nil && ok && !ValidTraceID(row.TraceID) {
			t.Fatalf("ParseRecord kept trace id %q", row.TraceID)
		}
		d, err := record.ParseDecision(&kgo.Record{Value: v})
		if err != nil {
			return
		}
		if d.Kind != record.KindDecision {
			t.Fatalf("kind %q accepted", d.Kind)
		}
		rec, err := NewRecord(RowOf(&d))
		if err != nil {
			return // a time json cannot write (a year past 9999)
		}
		again, err := record.ParseDecision(rec)
		if err != nil {
			t.Fatalf("a decision written again: %v\n%s", err, rec.Value)
		}
		w := DecisionOf(RowOf(&d))
		got, want := RowOf(&again), RowOf(&w)
		if !got.At.Equal(want.At) {
			t.Fatalf("at %v, want %v", got.At, want.At)
		}
		if !reflect.DeepEqual(withoutAt(got), withoutAt(want)) {
			t.Fatalf("read back %+v, want %+v", got, want)
		}
	})
}

func withoutAt(r Row) Row {
	r.At = time.Time{}
	return r
}

func TestValidTraceID(t *testing.T) {
	for id, want := range map[string]bool{
		"":                                  true,
		"4bf92f3577b34da6a3ce929d0e0e4736":  true,
		"4bf92f3577b34da6a3ce929d0e0e473":   false,
		"4bf92f3577b34da6a3ce929d0e0e47360": false,
		"4BF92F3577B34DA6A3CE929D0E0E4736":  false,
		"00000000000000000000000000000000":  false,
		"4bf92f3577b34da6a3ce929d0e0e473g":  false,
	} {
		if got := ValidTraceID(id); got != want {
			t.Errorf("ValidTraceID(%q) = %v, want %v", id, got, want)
		}
	}
}
