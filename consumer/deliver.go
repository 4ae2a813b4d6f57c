package consumer

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/consumer/dlq"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/breaker"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/sink"
)

// deliverer takes batches of jobs to their end: it decodes them, writes
// them to the sink through the breaker with a retry budget, isolates
// what the sink refuses, dead-letters what cannot be written, and audits
// each decision. It has no lock: the breaker, the dead-letter producer
// and the auditors are safe for concurrent use, and the rest is set once
// in New. Its methods keep the receiver name c they had as methods of
// Consumer.
type deliverer struct {
	cfg      Config
	sink     sink.Sink
	versions *contract.Versions
	// sources are the source topics; a drained record must come from
	// the DLQ topic of one.
	sources []string
	clock   Clock
	log     *slog.Logger
	m       *metrics
	breaker *breaker.Breaker
	// deadLetters produces the DLQ and parked records.
	deadLetters *dlq.Producer
	// auditor records the decisions about events: the sink when it is a
	// audit.Writer (sinkAudits: it then records written rows in its
	// writes), else a dlq.TopicAuditor. fallback, with a sink that
	// audits, is a dlq.TopicAuditor for the rows the sink did not take.
	auditor, fallback audit.Writer
	sinkAudits        bool
	// run ends jobs and stops Run.
	run runner
	// tracer starts the spans of records, writes and dead letters.
	tracer *tracer
}

// runner is what the deliverer needs of the consumer that runs it.
type runner interface {
	// finish ends j; done says its offset may be committed.
	finish(j *job, done bool)
	// stop makes Run stop and return err.
	stop(err error)
	// pace waits for the drain rate to admit a drained record of
	// source, in its source's turn.
	pace(ctx context.Context, source string) error
}

// process decodes a batch and delivers what decoded.
func (d *deliverer) process(batch []*job) {
	ctx := batch[0].part.ctx
	if ctx.Err() != nil {
		d.abandonJobs(batch)
		return
	}
	events := make([]sink.Event, 0, len(batch))
	jobs := make([]*job, 0, len(batch))
	for _, j := range batch {
		d.tracer.startProcess(ctx, j)
		topic := j.rec.Topic
		if j.part.dlq {
			var ok bool
			if topic, ok = d.admitDrained(ctx, j); !ok {
				continue
			}
		}
		ev, kept, err := decode(d.versions, topic, j.rec)
		if err != nil {
			d.deadLetter(ctx, j, d.refused(err))
			continue
		}
		d.m.bySchema.decoded(ev.Type, ev.SchemaFingerprint, kept)
		ev.Group = d.cfg.Group
		if j.env != nil {
			// The sink sees where the event was published, not where it
			// was dead-lettered.
			ev.Partition, ev.Offset = j.env.SourcePartition, j.env.SourceOffset
		}
		events = append(events, ev)
		jobs = append(jobs, j)
	}
	if len(jobs) > 0 {
		d.deliver(ctx, jobs, events)
	}
}

// failure is why a job goes to the DLQ.
type failure struct {
	class     string
	err       error
	attempts  int
	retryable bool
	first     time.Time
	// park sends the record straight to the parked topic with this
	// reason.
	park string
}

// deliver writes the events of jobs and finishes every job: written,
// dead-lettered or abandoned. Each write waits for the breaker first
// (acquire). A permanent failure is isolated (isolate). A transient one
// is retried with backoff while the retry budget lasts (retryBudget,
// spent), then its jobs are dead-lettered as retryable; while the breaker
// is not closed it costs nothing, since the sink is down, not the event.
func (d *deliverer) deliver(ctx context.Context, jobs []*job, events []sink.Event) {
	name := d.sink.Name()
	drain := jobs[0].part.dlq
	var budget retryBudget
	for {
		if !d.acquire(ctx) {
			d.abandonJobs(jobs)
			return
		}
		conflicts, err := d.write(ctx, jobs, events, budget.attempts+1)
		if err == nil {
			d.breaker.Record(false)
			d.reportConflicts(name, jobs, events, conflicts)
			d.observeEndToEnd(drain, jobs, events)
			d.auditWritten(ctx, events, conflicts)
			for _, j := range jobs {
				d.finished(j, outcomeWritten, nil)
				d.run.finish(j, true)
			}
			return
		}
		if ctx.Err() != nil {
			// Abandoned mid-write: the outcome is unknown, and unknown is
			// never committed.
			d.breaker.Abandon()
			d.abandonJobs(jobs)
			return
		}
		class, retryAfter := sink.Classify(err)
		d.m.sinkErrors.WithLabelValues(name, class.String()).Inc()
		d.breaker.Record(class == sink.Transient)
		budget.fail(d.clock.Now())
		if class == sink.Permanent {
			d.isolate(ctx, jobs, events, &failure{class: class.String(), err: err, attempts: budget.attempts, first: budget.first})
			return
		}
		if d.breaker.State() != breaker.Closed {
			// The sink is down, not this event: the next acquire waits
			// for the breaker, and the failure is forgiven.
			budget.forgive()
			continue
		}
		if d.spent(&budget, drain) {
			for _, j := range jobs {
				d.deadLetter(ctx, j, &failure{class: class.String(), err: err, attempts: budget.attempts, retryable: true, first: budget.first})
			}
			return
		}
		d.m.retries.WithLabelValues(name).Inc()
		retried(jobs, class, budget.attempts)
		select {
		case <-d.clock.After(d.backoff(budget.attempts, retryAfter)):
		case <-ctx.Done():
		}
	}
}

// write makes one Sink.Write of the events of jobs, the attempt-th of
// this batch, bounded by WriteTimeout, in a `sink write` span when one of
// jobs records, and observes its latency (with the span's trace id as an
// exemplar).
func (d *deliverer) write(ctx context.Context, jobs []*job, events []sink.Event, attempt int) ([]sink.Conflict, error) {
	sctx, span := d.tracer.startWrite(ctx, jobs, attempt)
	start := time.Now()
	wctx, cancel := context.WithTimeout(sctx, d.cfg.WriteTimeout)
	conflicts, err := d.sink.Write(wctx, events)
	cancel()
	tracing.Observe(sctx, d.m.sinkLatency.WithLabelValues(d.sink.Name()), time.Since(start).Seconds())
	endWrite(span, len(conflicts), err)
	return conflicts, err
}

// observeEndToEnd observes, for each event of jobs just written, the time
// since the gateway ingested it. Drained events are observed apart: their
// age is their failures', not the pipeline's.
func (d *deliverer) observeEndToEnd(drain bool, jobs []*job, events []sink.Event) {
	route := routeDirect
	if drain {
		route = routeDLQ
	}
	h := d.m.endToEnd.WithLabelValues(route)
	now := d.clock.Now()
	for i := range events {
		if at := events[i].IngestedAt; !at.IsZero() {
			jobs[i].observe(h, max(0, now.Sub(at).Seconds()))
		}
	}
}

// finished counts j's outcome in sluice_consumer_events_total and, for a
// record of a drain pass, in sluice_consumer_dlq_drained_total, and ends
// j's span with it; err is why j failed, nil when it did not.
func (d *deliverer) finished(j *job, outcome string, err error) {
	d.m.events.WithLabelValues(outcome).Inc()
	if j.part.dlq {
		d.m.drained.WithLabelValues(outcome).Inc()
	}
	if outcome == outcomeWritten && j.conflict {
		outcome = outcomeConflict
	}
	d.tracer.endProcess(j, outcome, err)
}

// abandonJobs finishes jobs unwritten: their offsets are not committed.
func (d *deliverer) abandonJobs(jobs []*job) {
	for _, j := range jobs {
		d.tracer.endProcess(j, outcomeAbandoned, nil)
		d.run.finish(j, false)
	}
}

// isolate handles a batch the sink refused permanently: it is split in
// halves, each delivered again, until the failing event is alone; that
// one is dead-lettered with f and the others are written.
func (d *deliverer) isolate(ctx context.Context, jobs []*job, events []sink.Event, f *failure) {
	if len(jobs) > 1 {
		half := len(jobs) / 2
		d.deliver(ctx, jobs[:half], events[:half])
		d.deliver(ctx, jobs[half:], events[half:])
		return
	}
	d.deadLetter(ctx, jobs[0], f)
}

// retryBudget is what the transient failures of one delivery have spent:
// writes (Retry.MaxAttempts) and the time since the first failure
// (Retry.MaxElapsed).
type retryBudget struct {
	attempts int
	// first and last are when the first and the latest failure happened.
	first, last time.Time
}

// fail counts a failed write at now.
func (b *retryBudget) fail(now time.Time) {
	if b.first.IsZero() {
		b.first = now
	}
	b.last = now
	b.attempts++
}

// forgive forgets the failures: they were the sink's outage, not the
// event's.
func (b *retryBudget) forgive() { *b = retryBudget{} }

// spent reports whether b is used up: Retry.MaxElapsed has passed since
// the first failure, or the attempts are used up (Retry.MaxAttempts; one
// for a drained record) and the breaker has seen enough writes to tell
// this event's failure from an outage starting.
func (d *deliverer) spent(b *retryBudget, drain bool) bool {
	attempts := (drain || b.attempts >= d.cfg.Retry.MaxAttempts) && d.breaker.Judged()
	return attempts || b.last.Sub(b.first) >= d.cfg.Retry.MaxElapsed
}

// reportConflicts counts and logs the conflicts a write reported: events
// whose identity the sink held with another payload. The sink kept what it
// held and recorded the copy, so their jobs finish as written.
func (d *deliverer) reportConflicts(name string, jobs []*job, events []sink.Event, conflicts []sink.Conflict) {
	for _, cf := range conflicts {
		if cf.Index < 0 || cf.Index >= len(events) {
			d.log.Error("sink reported a conflict outside its batch", "sink", name, "index", cf.Index, "batch", len(events))
			continue
		}
		e := &events[cf.Index]
		if j := jobs[cf.Index]; j.span != nil {
			j.conflict = true
			j.event("conflict", attribute.String(attrStoredFingerprint, cf.StoredFingerprint))
		}
		d.m.sinkConflicts.WithLabelValues(name, e.Source).Inc()
		d.log.Warn("sink conflict: identity held with another payload, the first kept", "sink", name,
			"source", e.Source, "id", e.ID, "payload_fingerprint", e.PayloadFingerprint,
			"stored_fingerprint", cf.StoredFingerprint, "topic", e.Topic, "partition", e.Partition, "offset", e.Offset)
	}
}

// acquire waits until the breaker lets a write through. It reports false
// when ctx is done first.
func (d *deliverer) acquire(ctx context.Context) bool {
	for {
		ok, wait, changed := d.breaker.Acquire()
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-d.clock.After(wait):
		case <-ctx.Done():
			return false
		}
	}
}

// backoff is the wait before retry number attempt (1 for the first):
// full jitter over an exponential ceiling, and never less than what the
// sink asked for.
func (d *deliverer) backoff(attempt int, retryAfter time.Duration) time.Duration {
	wait := backoff.Config{Initial: d.cfg.Retry.InitialBackoff, Max: d.cfg.Retry.MaxBackoff}.Wait(attempt, nil)
	return max(wait, retryAfter)
}

// breakerState is the state of the sink's breaker.
func (d *deliverer) breakerState() breaker.State { return d.breaker.State() }
