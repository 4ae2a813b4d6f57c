package record

import (
	"slices"
	"strings"
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

// TestCheckTopic: a topic map's value must be a name Kafka takes and none
// of sluice's own topics.
func TestCheckTopic(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"orders.placed", ""},
		{"ingest.examples.shop.v1.OrderPlaced", ""},
		{"A_b-9", ""},
		{strings.Repeat("a", MaxTopicLen), ""},
		{"", "is empty"},
		{".", "not a Kafka topic name"},
		{"..", "not a Kafka topic name"},
		{strings.Repeat("a", MaxTopicLen+1), "longer than Kafka's 249 bytes"},
		{"orders placed", "not a Kafka topic name"},
		{"orders/placed", "not a Kafka topic name"},
		{"ordres\u00e9", "not a Kafka topic name"},
		{"orders.dlq", "DLQ or parked topic"},
		{"orders.parked", "DLQ or parked topic"},
		{AuditTopic, "audit topic"},
	} {
		err := CheckTopic(c.name)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckTopic(%q) = %v, want nil", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("CheckTopic(%q) = %v, want %q", c.name, err, c.want)
		}
	}
}
