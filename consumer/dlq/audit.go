package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/clip"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// Kinds of the records of record.AuditTopic, their "kind" field.
const (
	// KindReplay is a ReplayReport: a replay's replay.started and
	// replay.finished records, keyed by the topic replayed.
	KindReplay = "replay"
	// KindDecision is a Decision: one decision about one event, keyed by
	// its identity (sink.IdempotencyKey).
	KindDecision = "decision"
)

// Decision is a sink.AuditRow as a record of record.AuditTopic carries it,
// in JSON: the decisions of a consumer whose sink keeps no audit table
// (the HTTP sink), and the replayed rows of a replay given no
// sink.Auditor. Kind is KindDecision. Times are RFC 3339 in UTC with
// nanoseconds. There is no sequence: a record's key is its event's
// identity, so an event's decisions are in one partition, in the order
// they were recorded.
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
}

// NewDecision is r as a Decision.
func NewDecision(r sink.AuditRow) Decision {
	return Decision{Kind: KindDecision, Action: string(r.Action), Source: r.Source, EventID: r.EventID, At: r.At.UTC(),
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, EventType: r.EventType, Group: r.Group, Sink: r.Sink,
		Class: r.Class, Error: r.Error, Attempt: r.Attempt, DLQRetries: r.DLQRetries, Retryable: r.Retryable,
		Detail: r.Detail, ReplayID: r.ReplayID, Actor: r.Actor}
}

// Row is d as a sink.AuditRow, its Sequence 0.
func (d *Decision) Row() sink.AuditRow {
	return sink.AuditRow{Source: d.Source, EventID: d.EventID, Action: sink.AuditAction(d.Action), At: d.At,
		Topic: d.Topic, Partition: d.Partition, Offset: d.Offset, EventType: d.EventType, Group: d.Group, Sink: d.Sink,
		Class: d.Class, Error: d.Error, Attempt: d.Attempt, DLQRetries: d.DLQRetries, Retryable: d.Retryable,
		Detail: d.Detail, ReplayID: d.ReplayID, Actor: d.Actor}
}

// ErrNotDecision is ParseDecision's error for a record of record.AuditTopic
// that is not a Decision: a ReplayReport, or a record sluice did not write.
var ErrNotDecision = errors.New("dlq: not a decision record")

// ParseDecision reads a record of record.AuditTopic written by a
// TopicAuditor. A record that is not a JSON object of kind KindDecision
// is an error wrapping ErrNotDecision; one that is, but does not decode
// as a Decision, another error.
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
		return Decision{}, fmt.Errorf("dlq: decision record: %w", err)
	}
	return d, nil
}

// TopicAuditor is a sink.Auditor that produces each row as a Decision to
// record.AuditTopic, keyed by its event's identity, and returns once Kafka
// acknowledged them all (the client's acks: acks=all for the consumer's).
// What it produces is at least once: a decision recorded again (a record
// decided on again after a crash) is produced again, and a reader
// dedupes by the decision's key, as the table sinks do (sink.AuditRow).
// A failure publish.Retryable calls permanent is a sink.PermanentError,
// any other a transient one.
type TopicAuditor struct {
	cl  *kgo.Client
	now func() time.Time
}

var _ sink.Auditor = (*TopicAuditor)(nil)

// NewTopicAuditor produces through cl, stamping rows that have no At with
// now (time.Now when nil).
func NewTopicAuditor(cl *kgo.Client, now func() time.Time) *TopicAuditor {
	if now == nil {
		now = time.Now
	}
	return &TopicAuditor{cl: cl, now: now}
}

// Audit produces rows, bounded by ctx.
func (a *TopicAuditor) Audit(ctx context.Context, rows []sink.AuditRow) error {
	if len(rows) == 0 {
		return nil
	}
	recs := make([]*kgo.Record, 0, len(rows))
	for _, r := range rows {
		if r.At.IsZero() {
			r.At = a.now()
		}
		b, err := json.Marshal(NewDecision(r))
		if err != nil {
			return sink.PermanentError(fmt.Errorf("dlq: audit record: %w", err))
		}
		recs = append(recs, &kgo.Record{Topic: record.AuditTopic, Key: []byte(sink.IdempotencyKey(r.Source, r.EventID)), Value: b})
	}
	if err := a.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		err = fmt.Errorf("dlq: audit records to %s: %w", record.AuditTopic, err)
		if !publish.Retryable(err) {
			return sink.PermanentError(err)
		}
		return sink.TransientError(err, 0)
	}
	return nil
}

// writeAudit produces rep to record.AuditTopic, keyed by the replayed topic so
// that a replay's records keep their order. It uses its own deadline so
// that a replay canceled part way is still audited.
func writeAudit(ctx context.Context, cl *kgo.Client, rep *ReplayReport) error {
	rep.Kind = KindReplay
	b, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("dlq: audit record: %w", err)
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), adminTimeout)
	defer cancel()
	if err := cl.ProduceSync(actx, &kgo.Record{Topic: record.AuditTopic, Key: []byte(rep.Topic), Value: b}).FirstErr(); err != nil {
		return fmt.Errorf("dlq: audit record to %s: %w", record.AuditTopic, err)
	}
	return nil
}
