package audit

import (
	"errors"
	"reflect"
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
		Attempt: 5, DLQRetries: 3, Retryable: true, Detail: "max_retries", ReplayID: "r1", Actor: "ops"}
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
	} {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
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
