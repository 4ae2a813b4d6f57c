package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/internal/clip"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
)

// DeadLetterError is what Run returns when Kafka refused a record's dead
// letter for good and then refused its parked copy too, or the copy could
// not be made to fit. The record is neither written nor dead-lettered, so
// its offset is not committed: Run stops rather than skip it.
type DeadLetterError struct {
	// Topic, Partition and Offset locate the record: in its source topic,
	// or in its DLQ topic for a drained record.
	Topic     string
	Partition int32
	Offset    int64
	// Refused is the topic that refused the dead letter; Parked the one
	// its copy was meant for.
	Refused, Parked string
	// Err is Kafka's refusal of the dead letter and what failed the copy.
	Err error
}

func (e *DeadLetterError) Error() string {
	return fmt.Sprintf("consumer: record %s/%d@%d can be neither dead-lettered to %s nor parked in %s: %v",
		e.Topic, e.Partition, e.Offset, e.Refused, e.Parked, e.Err)
}

func (e *DeadLetterError) Unwrap() error { return e.Err }

// deadLetter produces j's record to its DLQ or parked topic and finishes
// j once the produce is acknowledged. A produce that fails transiently is
// retried while j's partition is ours; one Kafka refuses for good (too
// large, not authorized) is replaced by a bounded copy in the parked
// topic. When that is refused too, Run stops with a *DeadLetterError and
// j stays unfinished, so its offset is never committed.
func (c *Consumer) deadLetter(ctx context.Context, j *job, f *failure) {
	now := c.o.clock.Now()
	env := record.Envelope{
		Class:           f.class,
		Error:           clip.String(f.err.Error(), c.cfg.DLQ.MaxErrorBytes),
		Sink:            c.sink.Name(),
		Attempts:        f.attempts,
		FirstFailureAt:  now,
		LastFailureAt:   now,
		Retryable:       f.retryable,
		SourceTopic:     j.rec.Topic,
		SourcePartition: j.rec.Partition,
		SourceOffset:    j.rec.Offset,
		Group:           c.cfg.Group,
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
			case env.DLQRetries > c.cfg.DLQ.MaxRetries:
				park = record.ParkedMaxRetries
			case now.After(prev.FirstFailureAt.Add(c.cfg.DLQ.Deadline)):
				park = record.ParkedDeadline
			}
		}
	}
	topic, kind := record.DLQTopic(source), "dlq"
	if park != "" {
		topic, kind = record.ParkedTopic(source), "parked"
		env.ParkedReason = park
		env.Retryable = false
	}
	err := c.produceDeadLetter(ctx, record.NewDeadLetter(topic, j.rec, &env))
	if err != nil && ctx.Err() == nil {
		// Kafka will never take it: park a copy cut to fit instead.
		refused := topic
		topic, kind = record.ParkedTopic(source), "parked"
		env, err = c.parkRefused(ctx, j, env, refused, err)
	}
	if err != nil {
		c.finish(j, false)
		return
	}
	c.m.deadLetters.WithLabelValues(topic, kind, env.Class).Inc()
	c.m.events.WithLabelValues(kind).Inc()
	c.log.Info("dead-lettered", "topic", topic, "event_topic", j.rec.Topic, "partition", j.rec.Partition,
		"offset", j.rec.Offset, "class", env.Class, "err", env.Error, "parked_reason", env.ParkedReason)
	c.finish(j, true)
}

// produceWarnInterval spaces the warnings of DLQ produces that keep failing
// transiently: Kafka being away fails every in-flight dead letter at once.
const produceWarnInterval = 5 * time.Second

// produceDeadLetter produces rec. Errors publish.Retryable calls transient
// are retried with capped backoff while ctx lives: that is push-back while
// Kafka is away. It returns nil once Kafka acknowledged rec, ctx's error
// once ctx is done, or the first permanent error.
func (c *Consumer) produceDeadLetter(ctx context.Context, rec *kgo.Record) error {
	for attempt := 1; ; attempt++ {
		// The client stamps what it is given; each attempt gets a record
		// of its own.
		r := &kgo.Record{Topic: rec.Topic, Key: rec.Key, Value: rec.Value, Headers: rec.Headers}
		pctx, cancel := context.WithTimeout(ctx, c.cfg.WriteTimeout)
		err := c.client.ProduceSync(pctx, r).FirstErr()
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !publish.Retryable(err) {
			c.m.deadLetterErrors.WithLabelValues(rec.Topic, "permanent").Inc()
			c.log.Warn("dead-letter produce refused", "topic", rec.Topic, "bytes", record.BatchBytes(rec), "err", err)
			return err
		}
		c.m.deadLetterErrors.WithLabelValues(rec.Topic, "retryable").Inc()
		if held, ok := c.produceWarn.allow(c.o.clock.Now()); ok {
			c.log.Warn("dead-letter produce failing, retrying", "topic", rec.Topic, "attempt", attempt,
				"failures_not_logged", held, "err", err)
		}
		select {
		case <-c.o.clock.After(c.backoff(attempt, 0)):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// parkRefused parks, in place of j's dead letter that refused refused
// for good, a copy with env marked dlq_refused and the value cut to fit
// dlq.max_record_bytes. It returns the copy's envelope, ctx's error when
// ctx ended first, or, when the copy is refused as well, the
// *DeadLetterError that stops Run; j's partition is then abandoned, so
// that later records of j's key are not written ahead of it.
func (c *Consumer) parkRefused(ctx context.Context, j *job, env record.Envelope, refused string, refusal error) (record.Envelope, error) {
	source := record.SourceOf(refused)
	env.ParkedReason = record.ParkedDLQRefused
	env.Retryable = false
	env.Refusal = clip.String(refused+": "+refusal.Error(), c.cfg.DLQ.MaxErrorBytes)
	parked := record.ParkedTopic(source)
	rec, err := record.NewParkedCopy(parked, j.rec, &env, int(c.cfg.DLQ.MaxRecordBytes))
	if err == nil {
		if err = c.produceDeadLetter(ctx, rec); err == nil {
			if len(rec.Value) < len(j.rec.Value) {
				env.TruncatedFrom = len(j.rec.Value)
				c.m.truncated.WithLabelValues(parked).Inc()
			}
			return env, nil
		}
		if ctx.Err() != nil {
			return env, err
		}
	}
	dle := &DeadLetterError{Topic: j.rec.Topic, Partition: j.rec.Partition, Offset: j.rec.Offset,
		Refused: refused, Parked: parked, Err: fmt.Errorf("%w; parked copy: %w", refusal, err)}
	c.m.undeliverable.WithLabelValues(j.rec.Topic).Inc()
	c.log.Error("dead letter and parked copy refused, stopping", "topic", j.rec.Topic, "partition", j.rec.Partition,
		"offset", j.rec.Offset, "err", dle.Err)
	j.part.abandon()
	c.stop(dle)
	return env, dle
}

// errTruncated is a parked copy whose value was cut: it is not the event.
var errTruncated = errors.New("consumer: value truncated (" + record.DLQHeaderTruncated + ")")

// checkContract checks r's value as the gateway does before it publishes:
// against the contract of the type its sluice headers name, rules
// included. A value cut by record.NewParkedCopy fails.
func checkContract(reg *contract.Registry, r *kgo.Record) error {
	for _, h := range r.Headers {
		if h.Key == record.DLQHeaderTruncated {
			return errTruncated
		}
	}
	h, err := record.ParseEvent(r)
	if err != nil {
		return err
	}
	ct, ok := reg.Lookup(h.Type)
	if !ok {
		return fmt.Errorf("consumer: unknown event type %q", h.Type)
	}
	_, err = ct.CheckBinary(r.Value)
	return err
}

// logThrottle lets one log line through per interval and counts the ones
// it held back.
type logThrottle struct {
	every time.Duration

	mu   sync.Mutex
	last time.Time
	held int
}

// allow reports whether a line may be logged at now, and how many were held
// back since the last one.
func (t *logThrottle) allow(now time.Time) (held int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.last.IsZero() && now.Sub(t.last) < t.every {
		t.held++
		return 0, false
	}
	held, t.held, t.last = t.held, 0, now
	return held, true
}
