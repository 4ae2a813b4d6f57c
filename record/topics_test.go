package record

import (
	"slices"
	"testing"
)

func TestTopics(t *testing.T) {
	if got := EventTopic("order.created"); got != "ingest.order.created" {
		t.Errorf("EventTopic = %q", got)
	}
	over := map[string]string{"a": "orders"}
	if got := TopicsOf(over, []string{"a", "b"}); !slices.Equal(got, []string{"orders", "ingest.b"}) {
		t.Errorf("TopicsOf = %q", got)
	}
	if got := Cluster([]string{"x"}); !slices.Equal(got, []string{AuditTopic, "x", "x.dlq", "x.parked"}) {
		t.Errorf("Cluster = %q", got)
	}
	for _, tc := range []struct {
		topic, source string
		derived       bool
	}{
		{"ingest.a", "ingest.a", false},
		{"ingest.a.dlq", "ingest.a", true},
		{"ingest.a.parked", "ingest.a", true},
		{".dlq", ".dlq", true},
		{"ingest.a.dlq.parked", "ingest.a.dlq", true},
	} {
		if got := SourceOf(tc.topic); got != tc.source {
			t.Errorf("SourceOf(%q) = %q, want %q", tc.topic, got, tc.source)
		}
		if got := IsDerived(tc.topic); got != tc.derived {
			t.Errorf("IsDerived(%q) = %v", tc.topic, got)
		}
	}
}
