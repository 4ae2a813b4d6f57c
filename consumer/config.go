package consumer

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/record"
)

// Config is the consumer tier's config block.
type Config struct {
	// Group is the Kafka consumer group.
	Group string `yaml:"group"`
	// Topics are source topics by name, read as given. EventTypes adds
	// the topic of each type, through TypeTopics. At least one of the two
	// must name a topic.
	Topics     []string `yaml:"topics"`
	EventTypes []string `yaml:"event_types"`
	// TypeTopics is the deployment's one topic map, event type -> topic
	// (record.TopicOf: a type it leaves out goes to record.EventTopic of
	// it), the map the gateway publishes through: EventTypes resolve
	// through it. cmd/sluice sets it from the config file's top-level
	// topics block.
	TypeTopics map[string]string `yaml:"-"`
	// MaxInFlight bounds the records polled and not yet finished, across
	// partitions; polling stops while it is reached.
	MaxInFlight int `yaml:"max_in_flight"`
	// WriteBatch is the most events one Sink.Write receives: records of
	// different keys ready at the same time are written together.
	WriteBatch int `yaml:"write_batch"`
	// SinkConcurrency bounds concurrent Sink.Write calls; 0 means
	// MaxInFlight.
	SinkConcurrency int `yaml:"sink_concurrency"`
	// WriteTimeout bounds one Sink.Write call.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// MaxEventBytes is the largest event value the gateway publishes: its
	// gateway.limits.max_event_bytes, which cmd/sluice copies here from the
	// same file. Validate checks that DLQ.MaxRecordBytes takes such an
	// event with its envelope. Default 256 KiB, the gateway's default.
	MaxEventBytes int `yaml:"-"`

	Retry   RetryConfig   `yaml:"retry"`
	Breaker BreakerConfig `yaml:"breaker"`
	DLQ     DLQConfig     `yaml:"dlq"`

	// CommitInterval is how often finished offsets are committed.
	CommitInterval time.Duration `yaml:"commit_interval"`
	// RevokeTimeout bounds the wait for in-flight work of revoked
	// partitions; work still unfinished then is abandoned, uncommitted.
	RevokeTimeout time.Duration `yaml:"revoke_timeout"`
	// LagInterval is how often lag is measured and the DLQ checked for
	// records to drain.
	LagInterval time.Duration `yaml:"lag_interval"`
}

// RetryConfig bounds in-process retries of transient sink failures.
type RetryConfig struct {
	// MaxAttempts counts writes of an event, the first included.
	MaxAttempts    int           `yaml:"max_attempts"`
	InitialBackoff time.Duration `yaml:"initial_backoff"`
	MaxBackoff     time.Duration `yaml:"max_backoff"`
	// MaxElapsed bounds the time from the first failure to the last retry.
	MaxElapsed time.Duration `yaml:"max_elapsed"`
}

// BreakerConfig is a sink's circuit breaker.
type BreakerConfig struct {
	// Window is the span over which the failure ratio is measured.
	Window time.Duration `yaml:"window"`
	// MinRequests is the fewest writes in the window that can open it.
	MinRequests int `yaml:"min_requests"`
	// FailureRatio opens it when transient failures / writes reaches it.
	FailureRatio float64 `yaml:"failure_ratio"`
	// Cooldown is how long it stays open before a half-open probe.
	Cooldown time.Duration `yaml:"cooldown"`
}

// DLQConfig governs draining the DLQ topics.
type DLQConfig struct {
	// DrainRate is the most DLQ records retried per second in DRAIN_DLQ.
	DrainRate float64 `yaml:"drain_rate"`
	// DrainInterval is how long the sink must have been healthy, and the
	// last drain pass over, before a drain pass starts. A pass retries the
	// DLQ records present when it starts; what fails again is retried by
	// the next pass, so passes space a record's retries.
	DrainInterval time.Duration `yaml:"drain_interval"`
	// MaxRetries is the most drains a record goes through; a record that
	// fails with dlq_retries already at MaxRetries is parked.
	MaxRetries int `yaml:"max_retries"`
	// Deadline parks a record that fails later than first_failure_at +
	// Deadline.
	Deadline time.Duration `yaml:"deadline"`
	// MaxErrorBytes bounds the error message kept in the envelope.
	MaxErrorBytes int `yaml:"max_error_bytes"`
	// MaxRecordBytes is the largest DLQ or parked record the consumer
	// produces (kgo.ProducerBatchMaxBytes); it must not exceed the
	// max.message.bytes of the DLQ and parked topics. A dead letter over it,
	// or one Kafka refuses for good, is parked as a copy cut to fit. Default
	// 1 MiB (Kafka's default max.message.bytes is 1 MiB + 12).
	MaxRecordBytes int32 `yaml:"max_record_bytes"`
}

// The range kgo allows for ProducerBatchMaxBytes.
const (
	minRecordBytes = 512
	maxRecordBytes = 1 << 30
)

// NewDefaultConfig returns the defaults: sized for a sink with a ~100 ms
// round trip at a few thousand events per second.
func NewDefaultConfig() Config {
	return Config{
		Group:           "sluice-consumer",
		MaxInFlight:     1024,
		WriteBatch:      1,
		SinkConcurrency: 0,
		WriteTimeout:    10 * time.Second,
		MaxEventBytes:   256 << 10,
		Retry: RetryConfig{
			MaxAttempts:    5,
			InitialBackoff: 100 * time.Millisecond,
			MaxBackoff:     5 * time.Second,
			MaxElapsed:     30 * time.Second,
		},
		Breaker: BreakerConfig{
			Window:       10 * time.Second,
			MinRequests:  20,
			FailureRatio: 0.5,
			Cooldown:     5 * time.Second,
		},
		DLQ: DLQConfig{
			DrainRate:      50,
			DrainInterval:  time.Minute,
			MaxRetries:     5,
			Deadline:       72 * time.Hour,
			MaxErrorBytes:  1024,
			MaxRecordBytes: 1 << 20,
		},
		CommitInterval: time.Second,
		RevokeTimeout:  10 * time.Second,
		LagInterval:    5 * time.Second,
	}
}

// ConfigError names the config field that is wrong.
type ConfigError struct {
	// Field is the field's YAML path in the consumer block
	// (retry.max_attempts), except for MaxEventBytes, which sluice's config
	// file sets as gateway.limits.max_event_bytes and which is named so.
	Field string
	Err   error
}

// maxEventBytesPath is where sluice's config file sets MaxEventBytes.
const maxEventBytesPath = "gateway.limits.max_event_bytes"

// Error names the field by its path in sluice's config file, where the
// block is consumer: consumer.retry.max_attempts.
func (e *ConfigError) Error() string {
	path := "consumer." + e.Field
	if e.Field == maxEventBytesPath {
		path = e.Field
	}
	return fmt.Sprintf("%s: %v", path, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Validate reports the first wrong field.
func (c *Config) Validate() error {
	bad := func(field, msg string) error { return &ConfigError{Field: field, Err: errors.New(msg)} }
	switch {
	case c.Group == "":
		return bad("group", "is empty")
	case len(c.SourceTopics()) == 0:
		return bad("topics", "no topics and no event_types")
	case c.MaxInFlight < 1:
		return bad("max_in_flight", "must be at least 1")
	case c.WriteBatch < 1:
		return bad("write_batch", "must be at least 1")
	case c.WriteBatch > c.MaxInFlight:
		return bad("write_batch", "must not exceed max_in_flight")
	case c.SinkConcurrency < 0:
		return bad("sink_concurrency", "must not be negative")
	case c.WriteTimeout <= 0:
		return bad("write_timeout", "must be positive")
	case c.Retry.MaxAttempts < 1:
		return bad("retry.max_attempts", "must be at least 1")
	case c.Retry.InitialBackoff <= 0:
		return bad("retry.initial_backoff", "must be positive")
	case c.Retry.MaxBackoff < c.Retry.InitialBackoff:
		return bad("retry.max_backoff", "must be at least retry.initial_backoff")
	case c.Retry.MaxElapsed <= 0:
		return bad("retry.max_elapsed", "must be positive")
	case c.Breaker.Window <= 0:
		return bad("breaker.window", "must be positive")
	case c.Breaker.MinRequests < 1:
		return bad("breaker.min_requests", "must be at least 1")
	case c.Breaker.FailureRatio <= 0 || c.Breaker.FailureRatio > 1:
		return bad("breaker.failure_ratio", "must be in (0, 1]")
	case c.Breaker.Cooldown <= 0:
		return bad("breaker.cooldown", "must be positive")
	case c.DLQ.DrainRate <= 0:
		return bad("dlq.drain_rate", "must be positive")
	case c.DLQ.DrainInterval <= 0:
		return bad("dlq.drain_interval", "must be positive")
	case c.DLQ.MaxRetries < 0:
		return bad("dlq.max_retries", "must not be negative")
	case c.DLQ.Deadline <= 0:
		return bad("dlq.deadline", "must be positive")
	case c.DLQ.MaxErrorBytes < 16:
		return bad("dlq.max_error_bytes", "must be at least 16")
	case c.MaxEventBytes < 0:
		return bad(maxEventBytesPath, "must not be negative")
	case c.DLQ.MaxRecordBytes < minRecordBytes || c.DLQ.MaxRecordBytes > maxRecordBytes:
		return bad("dlq.max_record_bytes", fmt.Sprintf("must be in [%d, %d]", minRecordBytes, maxRecordBytes))
	case int(c.DLQ.MaxRecordBytes) < record.DeadLetterBound(c.MaxEventBytes, c.DLQ.MaxErrorBytes, c.Group):
		return bad("dlq.max_record_bytes", fmt.Sprintf(
			"%d bytes cannot hold the dead letter of an event of gateway.limits.max_event_bytes (%d): with its envelope and event headers it may take %d",
			c.DLQ.MaxRecordBytes, c.MaxEventBytes, record.DeadLetterBound(c.MaxEventBytes, c.DLQ.MaxErrorBytes, c.Group)))
	case c.CommitInterval <= 0:
		return bad("commit_interval", "must be positive")
	case c.RevokeTimeout <= 0:
		return bad("revoke_timeout", "must be positive")
	case c.LagInterval <= 0:
		return bad("lag_interval", "must be positive")
	}
	for _, t := range c.Topics {
		if record.IsDerived(t) {
			return bad("topics", fmt.Sprintf("%q is a DLQ or parked topic", t))
		}
	}
	for _, typ := range c.EventTypes {
		if t := record.TopicOf(c.TypeTopics, typ); record.IsDerived(t) {
			return bad("event_types", fmt.Sprintf("%s goes to %q, a DLQ or parked topic", typ, t))
		}
	}
	return nil
}

// SourceTopics returns Topics and the topics of EventTypes (through
// TypeTopics), without duplicates, in that order.
func (c *Config) SourceTopics() []string {
	seen := make(map[string]bool)
	var out []string
	add := func(t string) {
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, t := range c.Topics {
		add(t)
	}
	for _, typ := range c.EventTypes {
		add(record.TopicOf(c.TypeTopics, typ))
	}
	return out
}

// drainReadAhead is how many drained records of one source may be in
// flight at once: a second of DLQ.DrainRate, so that a source draining
// alone keeps the rate busy, and at most a quarter of MaxInFlight, so
// that the records of other sources, and of the source topics, are
// still read.
func (c *Config) drainReadAhead() int {
	return max(1, min(int(math.Ceil(c.DLQ.DrainRate)), c.MaxInFlight/4))
}

func (c *Config) sinkConcurrency() int {
	if c.SinkConcurrency == 0 || c.SinkConcurrency > c.MaxInFlight {
		return c.MaxInFlight
	}
	return c.SinkConcurrency
}
