package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// stop makes Run stop as if its context ended, and return err.
func (c *Consumer) stop(err error) {
	c.fatalMu.Lock()
	if c.fatal == nil {
		c.fatal = err
	}
	c.fatalMu.Unlock()
	c.stopPolling()
}

// checkDrained vets a DLQ record before a drain writes it. source is its
// DLQ topic's source topic: the envelope must name the same one, since
// anyone who may write the DLQ topic may write an envelope. The value must
// pass its contract, since such a record never passed the gateway. The
// reason is the parked reason of a record refused.
func (c *Consumer) checkDrained(source string, r *kgo.Record, env *record.Envelope) (reason string, err error) {
	if !slices.Contains(c.sources, source) {
		return record.ParkedSourceMismatch, fmt.Errorf("consumer: %s is not the DLQ topic of a source topic", r.Topic)
	}
	if env.SourceTopic != source {
		return record.ParkedSourceMismatch, fmt.Errorf("consumer: envelope names source topic %q, the record is in %s",
			env.SourceTopic, r.Topic)
	}
	if err := checkContract(c.reg, r); err != nil {
		return record.ParkedContract, err
	}
	return "", nil
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
