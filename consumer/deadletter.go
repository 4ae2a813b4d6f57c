package consumer

import (
	"context"
	"errors"

	"github.com/sluicehq/sluice/consumer/dlq"
	"github.com/sluicehq/sluice/internal/clip"
	"github.com/sluicehq/sluice/record"
)

// deadLetter builds the envelope of j's failure, has dlq.Producer.Send
// produce j's record to its DLQ or parked topic, and finishes j once the
// produce is acknowledged. Send retries a transient failure while j's
// partition is ours and parks a bounded copy of a dead letter Kafka
// refuses for good. When that is refused too, j's partition is abandoned,
// Run stops with the *dlq.DeadLetterError and j stays unfinished, so its
// offset is never committed.
func (d *deliverer) deadLetter(ctx context.Context, j *job, f *failure) {
	now := d.clock.Now()
	env := record.Envelope{
		Class:           f.class,
		Error:           clip.String(f.err.Error(), d.cfg.DLQ.MaxErrorBytes),
		Sink:            d.sink.Name(),
		Attempts:        f.attempts,
		FirstFailureAt:  now,
		LastFailureAt:   now,
		Retryable:       f.retryable,
		SourceTopic:     j.rec.Topic,
		SourcePartition: j.rec.Partition,
		SourceOffset:    j.rec.Offset,
		Group:           d.cfg.Group,
	}
	if !f.first.IsZero() {
		env.FirstFailureAt = f.first
	}
	source := j.rec.Topic
	park := f.park
	if j.part.dlq {
		// A drained record goes back to the DLQ or parked topic of the
		// topic it was drained from, whatever its envelope says.
		source = record.SourceOf(j.rec.Topic)
		env.SourceTopic = source
		if prev := j.env; prev != nil {
			env.SourcePartition = prev.SourcePartition
			env.SourceOffset = prev.SourceOffset
			env.FirstFailureAt = prev.FirstFailureAt
			env.DLQRetries = prev.DLQRetries + 1
			env.Attempts = prev.Attempts + f.attempts
			switch {
			case park != "":
			case env.DLQRetries > d.cfg.DLQ.MaxRetries:
				park = record.ParkedMaxRetries
			case now.After(prev.FirstFailureAt.Add(d.cfg.DLQ.Deadline)):
				park = record.ParkedDeadline
			}
		}
	}
	topic := record.DLQTopic(source)
	if park != "" {
		topic = record.ParkedTopic(source)
		env.ParkedReason = park
		env.Retryable = false
	}
	// The dead letter keeps its record's headers, traceparent included:
	// its span is a child of the record's, and a drain or a replay
	// continues the event's own trace.
	sctx, span := d.tracer.startDeadLetter(ctx, j, topic, &env)
	topic, env, err := d.deadLetters.Send(sctx, topic, j.rec, env)
	endDeadLetter(span, topic, &env, err)
	if err != nil {
		d.tracer.endProcess(j, outcomeAbandoned, err)
		if dle, ok := errors.AsType[*dlq.DeadLetterError](err); ok {
			// Abandon j's partition, so that later records of j's key
			// are not written ahead of it, and stop.
			j.part.abandon()
			d.run.stop(dle)
		}
		d.run.finish(j, false)
		return
	}
	kind := outcomeDLQ
	if env.ParkedReason != "" {
		kind = outcomeParked
	}
	d.m.deadLetters.WithLabelValues(topic, kind, env.Class).Inc()
	d.auditDeadLetter(ctx, j.rec, &env)
	d.finished(j, kind, f.err)
	d.log.Info("dead-lettered", "topic", topic, "event_topic", j.rec.Topic, "partition", j.rec.Partition,
		"offset", j.rec.Offset, "class", env.Class, "err", env.Error, "parked_reason", env.ParkedReason)
	d.run.finish(j, true)
}
