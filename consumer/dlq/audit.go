package dlq

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// TopicAuditor is an audit.Writer that produces each row to
// record.AuditTopic (audit.NewRecord: a record.Decision keyed by its
// event's identity), and returns once Kafka acknowledged them all (the
// client's acks: acks=all for the consumer's). What it produces is at
// least once: a decision recorded again (a record decided on again after
// a crash) is produced again, and a reader dedupes by the decision's key
// (audit.Key), as the table sinks do. A failure publish.Retryable calls
// permanent is a sink.PermanentError, any other a transient one.
type TopicAuditor struct {
	cl  *kgo.Client
	now func() time.Time
}

var _ audit.Writer = (*TopicAuditor)(nil)

// NewTopicAuditor produces through cl, its owner's client (the
// consumer's, or Replay's), which it never closes, stamping rows that have
// no At with now (time.Now when nil).
func NewTopicAuditor(cl *kgo.Client, now func() time.Time) *TopicAuditor {
	if now == nil {
		now = time.Now
	}
	return &TopicAuditor{cl: cl, now: now}
}

// Audit produces rows, bounded by ctx.
func (a *TopicAuditor) Audit(ctx context.Context, rows []audit.Row) error {
	if len(rows) == 0 {
		return nil
	}
	recs := make([]*kgo.Record, 0, len(rows))
	for _, r := range rows {
		if r.At.IsZero() {
			r.At = a.now()
		}
		rec, err := audit.NewRecord(r)
		if err != nil {
			return sink.PermanentError(fmt.Errorf("dlq: audit record: %w", err))
		}
		recs = append(recs, rec)
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

// writeAudit produces rep to record.AuditTopic (record.NewReplayReport).
// It uses its own deadline so that a replay canceled part way is still
// audited.
func writeAudit(ctx context.Context, cl *kgo.Client, rep *ReplayReport) error {
	rep.Kind = record.KindReplay
	rec, err := record.NewReplayReport(rep.Topic, rep)
	if err != nil {
		return fmt.Errorf("dlq: audit record: %w", err)
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), adminTimeout)
	defer cancel()
	if err := cl.ProduceSync(actx, rec).FirstErr(); err != nil {
		return fmt.Errorf("dlq: audit record to %s: %w", record.AuditTopic, err)
	}
	return nil
}
