package dlq

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/record"
)

func deadLetterFor(t *testing.T, source, typ, class string, partition int32, offset int64, failedAt time.Time) DeadLetter {
	t.Helper()
	r := record.NewEvent(&record.Event{Topic: testTopic, ID: "id", Type: typ, Source: source,
		OccurredAt: failedAt, IngestedAt: failedAt, Fingerprint: "f"})
	env := record.Envelope{Class: class, Error: "x", Sink: "mem", FirstFailureAt: failedAt, LastFailureAt: failedAt,
		SourceTopic: testTopic, Group: "g"}
	rec := record.NewDeadLetter(record.DLQTopic(testTopic), r, &env)
	rec.Partition, rec.Offset = partition, offset
	return readDeadLetter(rec)
}

func TestSelectionMatch(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	d := deadLetterFor(t, "checkout", testType, "transient", 2, 40, t0)
	garbled := DeadLetter{Record: &kgo.Record{Partition: 2, Offset: 40}}
	garbled.Envelope, garbled.EnvelopeErr = record.ParseEnvelope(garbled.Record)
	garbled.Event, garbled.EventErr = record.ParseEvent(garbled.Record)
	tests := []struct {
		name        string
		sel         Selection
		want        bool
		wantGarbled bool
	}{
		{"everything", Selection{}, true, true},
		{"from before", Selection{From: t0}, true, false},
		{"from after", Selection{From: t0.Add(time.Nanosecond)}, false, false},
		{"to is exclusive", Selection{To: t0}, false, false},
		{"to after", Selection{To: t0.Add(time.Second)}, true, false},
		{"source", Selection{Source: "checkout"}, true, false},
		{"other source", Selection{Source: "billing"}, false, false},
		{"type", Selection{Type: testType}, true, false},
		{"other type", Selection{Type: "examples.shop.v1.OrderPlaced"}, false, false},
		{"class", Selection{Class: "transient"}, true, false},
		{"other class", Selection{Class: "permanent"}, false, false},
		{"partition", Selection{Partitions: []int32{1, 2}}, true, true},
		{"other partition", Selection{Partitions: []int32{0}}, false, false},
		{"offset range", Selection{FromOffset: 40, ToOffset: 41}, true, true},
		{"offset below", Selection{FromOffset: 41}, false, false},
		{"offset to is exclusive", Selection{ToOffset: 40}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.sel.Match(&d); got != tt.want {
				t.Fatalf("Match = %v, want %v", got, tt.want)
			}
			if got := tt.sel.Match(&garbled); got != tt.wantGarbled {
				t.Fatalf("Match(garbled) = %v, want %v", got, tt.wantGarbled)
			}
		})
	}
}
