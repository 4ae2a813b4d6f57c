package consumer

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"

	"github.com/sluicehq/sluice/consumer/dlq"
	"github.com/sluicehq/sluice/record"
)

// checkDrained vets a DLQ record before a drain writes it, and returns
// the failure of one refused. source is its DLQ topic's source topic: the
// envelope must name the same one, since anyone who may write the DLQ
// topic may write an envelope; a record that does not is parked
// (source_mismatch). The value must pass its contract, since such a record
// may never have passed the gateway: the contract of its own schema
// version when it is kept, else the newest's when that can read it; one
// that fails is parked (contract). One of a version not kept that the
// newest cannot read is not judged: it fails as record.ClassSchema,
// retryable, and goes back to the DLQ until a reload brings its version or
// the drain's retries or deadline park it.
func (d *deliverer) checkDrained(source string, r *kgo.Record, env *record.Envelope) *failure {
	if !slices.Contains(d.sources, source) {
		return &failure{class: record.ClassDecode, park: record.ParkedSourceMismatch,
			err: fmt.Errorf("consumer: %s is not the DLQ topic of a source topic", r.Topic)}
	}
	if env.SourceTopic != source {
		return &failure{class: record.ClassDecode, park: record.ParkedSourceMismatch,
			err: fmt.Errorf("consumer: envelope names source topic %q, the record is in %s", env.SourceTopic, r.Topic)}
	}
	if err := dlq.CheckContract(d.versions, r); err != nil {
		f := d.refused(err)
		if !f.retryable {
			f.park = record.ParkedContract
		}
		return f
	}
	return nil
}

// admitDrained readies j, a record of a drain pass, for the sink and
// returns the topic to decode it as: its DLQ topic's source topic. It
// reports false when j is finished already: a record without a readable
// envelope and one checkDrained refuses are parked, one whose schema
// version checkDrained cannot judge goes back to the DLQ, a non-retryable
// one is skipped (committed; it stays in the DLQ for a replay), and one whose
// partition is abandoned while it waits for DLQ.DrainRate is left
// unfinished.
func (d *deliverer) admitDrained(ctx context.Context, j *job) (topic string, ok bool) {
	env, err := record.ParseEnvelope(j.rec)
	if err != nil {
		j.event("refused", attribute.String(attrDLQReason, record.ParkedUnreadable))
		// A DLQ record sluice did not write: park it rather than loop on
		// it.
		d.deadLetter(ctx, j, &failure{class: record.ClassDecode, err: err, park: record.ParkedUnreadable})
		return "", false
	}
	if !env.Retryable {
		j.event("skipped", attribute.String(attrDLQClass, env.Class))
		d.finished(j, outcomeSkipped, nil)
		d.run.finish(j, true)
		return "", false
	}
	j.env = &env
	if j.span != nil {
		j.span.SetAttributes(attribute.Int(attrDLQRetries, env.DLQRetries), attribute.String(attrDLQClass, env.Class))
	}
	// The envelope is anyone's who may write the DLQ topic: the source
	// topic is the DLQ topic's own.
	topic = record.SourceOf(j.rec.Topic)
	if f := d.checkDrained(topic, j.rec, &env); f != nil {
		if f.park != "" {
			d.m.drainRefused.WithLabelValues(j.rec.Topic, f.park).Inc()
		}
		j.event("refused", attribute.String(attrDLQClass, f.class), attribute.String(attrDLQReason, f.park))
		d.deadLetter(ctx, j, f)
		return "", false
	}
	if err := d.run.pace(ctx, j.source); err != nil {
		d.tracer.endProcess(j, outcomeAbandoned, nil)
		d.run.finish(j, false)
		return "", false
	}
	d.auditRetried(ctx, j.rec, &env)
	return topic, true
}
