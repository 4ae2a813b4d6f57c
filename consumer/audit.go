package consumer

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// audit records rows, decisions already durable, through the consumer's
// Auditor. A transient failure is retried with the sink's backoff
// (Retry.InitialBackoff to Retry.MaxBackoff, never sooner than a
// RetryAfter), each attempt bounded by WriteTimeout, for at most
// Retry.MaxAttempts attempts and Retry.MaxElapsed, while ctx (the
// record's partition) lives. Rows the sink's audit table still did not
// take then, or refused, go to record.AuditTopic (the fallback, one
// attempt bounded by WriteTimeout, also when ctx ended): the database of
// a SQL sink is the one that is down while its events are dead-lettered,
// and Kafka, which just took their dead letters, is up. Rows recorded
// nowhere are given up: counted in sluice_consumer_audit_errors_total
// {action} and logged. The decision stands either way: the record's job
// finishes as decided, so an audit store that is down slows the records
// it audits, by a bounded time, and loses or duplicates no event.
func (d *deliverer) audit(ctx context.Context, rows ...audit.Row) {
	if len(rows) == 0 {
		return
	}
	var budget retryBudget
	for {
		actx, cancel := context.WithTimeout(ctx, d.cfg.WriteTimeout)
		err := d.auditor.Audit(actx, rows)
		cancel()
		if err == nil {
			return
		}
		class, retryAfter := sink.Classify(err)
		budget.fail(d.clock.Now())
		if class == sink.Transient && ctx.Err() == nil && budget.attempts < d.cfg.Retry.MaxAttempts &&
			budget.last.Sub(budget.first) < d.cfg.Retry.MaxElapsed {
			select {
			case <-d.clock.After(d.backoff(budget.attempts, retryAfter)):
				continue
			case <-ctx.Done():
			}
		}
		r := rows[0]
		if d.fallback != nil {
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.WriteTimeout)
			ferr := d.fallback.Audit(fctx, rows)
			cancel()
			if ferr == nil {
				for _, r := range rows {
					d.m.auditFallbacks.WithLabelValues(string(r.Action)).Inc()
				}
				d.log.Warn("audit rows recorded in "+record.AuditTopic+": the sink's audit table did not take them", "rows", len(rows),
					"action", r.Action, "source", r.Source, "id", r.EventID, "attempts", budget.attempts, "err", err)
				return
			}
			err = errors.Join(err, ferr)
		}
		for _, r := range rows {
			d.m.auditErrors.WithLabelValues(string(r.Action)).Inc()
		}
		d.log.Error("audit rows not recorded", "rows", len(rows), "action", r.Action, "source", r.Source, "id", r.EventID,
			"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "attempts", budget.attempts, "err", err)
		return
	}
}

// auditWritten records the written rows of events, just written, when the
// sink does not record them in its write.
func (d *deliverer) auditWritten(ctx context.Context, events []sink.Event, conflicts []sink.Conflict) {
	if d.sinkAudits {
		return
	}
	conflicted := make(map[int]bool, len(conflicts))
	for _, cf := range conflicts {
		conflicted[cf.Index] = true
	}
	now := d.clock.Now()
	rows := make([]audit.Row, 0, len(events))
	for i := range events {
		detail := ""
		if conflicted[i] {
			detail = audit.DetailConflict
		}
		rows = append(rows, sink.WrittenRow(&events[i], d.sink.Name(), now, detail))
	}
	d.audit(ctx, rows...)
}

// decisionRow is the row of a decision about r, with the envelope env
// of its dead letter, located at r's coordinates, with the trace id of
// r's traceparent (a DLQ record keeps its source record's); false when r
// has no identity to file it under (no sluice-source or sluice-event-id
// header).
func (d *deliverer) decisionRow(action audit.Action, r *kgo.Record, env *record.Envelope) (audit.Row, bool) {
	source, id, typ, traceparent := identityOf(r)
	if source == "" || id == "" {
		return audit.Row{}, false
	}
	return audit.Row{
		Source: source, EventID: id, Action: action, At: d.clock.Now(),
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, EventType: typ,
		Group: d.cfg.Group, Sink: d.sink.Name(),
		Class: env.Class, Error: env.Error, Attempt: env.Attempts, Retryable: env.Retryable,
		DLQRetries: env.DLQRetries, Detail: env.ParkedReason, TraceID: tracing.TraceIDOf(traceparent),
	}, true
}

// auditDeadLetter records the dead letter of r that Kafka just took, with
// env, the envelope it took: dead_lettered, located at the source record
// the envelope names, or parked, located at r.
func (d *deliverer) auditDeadLetter(ctx context.Context, r *kgo.Record, env *record.Envelope) {
	action := audit.DeadLettered
	if env.ParkedReason != "" {
		action = audit.Parked
	}
	row, ok := d.decisionRow(action, r, env)
	if !ok {
		return
	}
	if action == audit.DeadLettered {
		row.Topic, row.Partition, row.Offset = env.SourceTopic, env.SourcePartition, env.SourceOffset
	}
	d.audit(ctx, row)
}

// auditRetried records that a drain took r, a DLQ record with envelope
// env, to write it again.
func (d *deliverer) auditRetried(ctx context.Context, r *kgo.Record, env *record.Envelope) {
	row, ok := d.decisionRow(audit.Retried, r, env)
	if !ok {
		return
	}
	row.Error = "" // the dead_lettered row has it
	d.audit(ctx, row)
}

// identityOf reads the first sluice-source, sluice-event-id,
// sluice-event-type and traceparent headers of r as they are: a record
// that does not parse (record.ClassDecode) is still filed under the
// identity it names, and tracing.TraceIDOf reads only a traceparent that
// is one.
func identityOf(r *kgo.Record) (source, id, typ, traceparent string) {
	var seen [4]bool
	for _, h := range r.Headers {
		switch {
		case h.Key == record.HeaderSource && !seen[0]:
			source, seen[0] = string(h.Value), true
		case h.Key == record.HeaderEventID && !seen[1]:
			id, seen[1] = string(h.Value), true
		case h.Key == record.HeaderEventType && !seen[2]:
			typ, seen[2] = string(h.Value), true
		case h.Key == record.HeaderTraceparent && !seen[3]:
			traceparent, seen[3] = string(h.Value), true
		}
	}
	return source, id, typ, traceparent
}
