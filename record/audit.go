package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/clip"
)

// Kinds of the records of AuditTopic, their "kind" field.
const (
	// KindReplay is a replay's report (consumer/dlq's ReplayReport): its
	// replay.started and replay.finished records, keyed by the topic
	// replayed.
	KindReplay = "replay"
	// KindDecision is a Decision: one decision about one event, keyed by
	// its identity (IdentityKey).
	KindDecision = "decision"
)

// IdentityKey is an event's identity as one string: source and id, each
// path-escaped, joined by '/'. It is the key of the event's decision
// records, and the HTTP sink's Idempotency-Key.
func IdentityKey(source, id string) string {
	return url.PathEscape(source) + "/" + url.PathEscape(id)
}

// Decision is one audit row (package audit's Row) as a record of
// AuditTopic carries it, in JSON: the decisions of a consumer whose sink
// keeps no audit table (the HTTP sink), the rows a sink's audit table did
// not take, and the replayed rows of a replay given no audit writer. Kind
// is KindDecision. Times are RFC 3339 in UTC with nanoseconds. There is no
// sequence: a record's key is its event's IdentityKey, so an event's
// decisions are in one partition, in the order they were recorded.
type Decision struct {
	Kind       string    `json:"kind"`
	Action     string    `json:"action"`
	Source     string    `json:"source"`
	EventID    string    `json:"event_id"`
	At         time.Time `json:"at"`
	Topic      string    `json:"topic"`
	Partition  int32     `json:"partition"`
	Offset     int64     `json:"offset"`
	EventType  string    `json:"event_type,omitempty"`
	Group      string    `json:"group,omitempty"`
	Sink       string    `json:"sink,omitempty"`
	Class      string    `json:"class,omitempty"`
	Error      string    `json:"error,omitempty"`
	Attempt    int       `json:"attempt"`
	DLQRetries int       `json:"dlq_retries"`
	Retryable  bool      `json:"retryable"`
	Detail     string    `json:"detail,omitempty"`
	ReplayID   string    `json:"replay_id,omitempty"`
	Actor      string    `json:"actor,omitempty"`
	// TraceID is the trace id of the record's traceparent (audit.Row's
	// TraceID); absent when empty, and in the records of binaries that
	// did not write it.
	TraceID string `json:"trace_id,omitempty"`
}

// NewDecision is d as a record of AuditTopic, keyed by IdentityKey of its
// event, its Kind set to KindDecision.
func NewDecision(d Decision) (*kgo.Record, error) {
	d.Kind = KindDecision
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("record: decision: %w", err)
	}
	return &kgo.Record{Topic: AuditTopic, Key: []byte(IdentityKey(d.Source, d.EventID)), Value: b}, nil
}

// ErrNotDecision is ParseDecision's error for a record of AuditTopic that
// is not a Decision: a replay's report, or a record sluice did not write.
var ErrNotDecision = errors.New("record: not a decision record")

// ParseDecision reads a record of AuditTopic that NewDecision wrote. A
// record that is not a JSON object of kind KindDecision is an error
// wrapping ErrNotDecision; one that is, but does not decode as a Decision,
// another error.
func ParseDecision(r *kgo.Record) (Decision, error) {
	var head struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(r.Value, &head); err != nil {
		return Decision{}, fmt.Errorf("%w: %v", ErrNotDecision, err)
	}
	if head.Kind != KindDecision {
		return Decision{}, fmt.Errorf("%w: kind %q", ErrNotDecision, clip.String(head.Kind, 32))
	}
	var d Decision
	if err := json.Unmarshal(r.Value, &d); err != nil {
		return Decision{}, fmt.Errorf("record: decision record: %w", err)
	}
	return d, nil
}

// NewReplayReport is report, a replay's report whose JSON "kind" is
// KindReplay, as a record of AuditTopic keyed by topic, the topic
// replayed, so that a replay's records keep their order.
func NewReplayReport(topic string, report any) (*kgo.Record, error) {
	b, err := json.Marshal(report)
	if err != nil {
		return nil, fmt.Errorf("record: replay report: %w", err)
	}
	return &kgo.Record{Topic: AuditTopic, Key: []byte(topic), Value: b}, nil
}
