package dlq

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/sink"
)

// A decision read back is the row written, but for its sequence, which
// a topic does not keep.
func TestDecisionRoundTrip(t *testing.T) {
	row := sink.AuditRow{Source: "shop", EventID: "order-1", Sequence: 7, Action: sink.AuditParked,
		At: time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC), Topic: "t.dlq", Partition: 2, Offset: 41,
		EventType: "examples.shop.v1.OrderPlaced", Group: "g", Sink: "http", Class: "transient", Error: "503",
		Attempt: 5, DLQRetries: 3, Retryable: true, Detail: "max_retries", ReplayID: "r1", Actor: "ops"}
	b, err := json.Marshal(NewDecision(row))
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseDecision(&kgo.Record{Value: b})
	if err != nil {
		t.Fatal(err)
	}
	want := row
	want.Sequence = 0
	if got := d.Row(); !got.At.Equal(want.At) || !reflect.DeepEqual(withoutAt(got), withoutAt(want)) {
		t.Fatalf("read back %+v, want %+v", got, want)
	}
	for _, v := range []string{`{"kind":"replay","action":"replay.started"}`, `not json`, `{}`, `[]`} {
		if _, err := ParseDecision(&kgo.Record{Value: []byte(v)}); !errors.Is(err, ErrNotDecision) {
			t.Errorf("%s: %v, want ErrNotDecision", v, err)
		}
	}
	if _, err := ParseDecision(&kgo.Record{Value: []byte(`{"kind":"decision","offset":"x"}`)}); err == nil || errors.Is(err, ErrNotDecision) {
		t.Errorf("a decision that does not decode: %v", err)
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
		d, err := ParseDecision(&kgo.Record{Value: v})
		if err != nil {
			return
		}
		if d.Kind != KindDecision {
			t.Fatalf("kind %q accepted", d.Kind)
		}
		b, err := json.Marshal(NewDecision(d.Row()))
		if err != nil {
			return // a time json cannot write (a year past 9999)
		}
		again, err := ParseDecision(&kgo.Record{Value: b})
		if err != nil {
			t.Fatalf("a decision written again: %v\n%s", err, b)
		}
		want := NewDecision(d.Row())
		got, w := again.Row(), want.Row()
		if !got.At.Equal(w.At) {
			t.Fatalf("at %v, want %v", got.At, w.At)
		}
		if !reflect.DeepEqual(withoutAt(got), withoutAt(w)) {
			t.Fatalf("read back %+v, want %+v", got, w)
		}
	})
}

func withoutAt(r sink.AuditRow) sink.AuditRow {
	r.At = time.Time{}
	return r
}
