package record

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkNewEventHeaders prices building one Kafka record from an
// accepted event as the gateway sees it, traceparent included, by the
// attributes it carries: none, and four (each becomes a header, sorted by
// key). BenchmarkNewRecord (bench_test.go) is the plain case.
func BenchmarkNewEventHeaders(b *testing.B) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	value := make([]byte, 300)
	base := Event{
		Topic:       EventTopic("examples.logs.v1.LogLine"),
		Key:         []byte("checkout-api"),
		Value:       value,
		Type:        "examples.logs.v1.LogLine",
		Source:      "bench",
		OccurredAt:  at,
		IngestedAt:  at.Add(time.Millisecond),
		Fingerprint: "sha256:0123456789abcdef0123456789abcdef",
		Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	}
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = "lg0123456789ab-" + strconv.Itoa(i)
	}
	for _, tc := range []struct {
		name  string
		attrs map[string]string
	}{
		{"attrs=0", nil},
		{"attrs=4", map[string]string{"tenant": "acme", "region": "eu-west-1", "env": "prod", "team": "payments"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := base
			e.Attributes = tc.attrs
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				e.ID = ids[i&1023]
				if r := NewEvent(&e); len(r.Headers) < 6 {
					b.Fatalf("%d headers", len(r.Headers))
				}
			}
		})
	}
}

func BenchmarkNewEvent(b *testing.B) {
	e := testEvent()
	b.ReportAllocs()
	for b.Loop() {
		NewEvent(e)
	}
}
