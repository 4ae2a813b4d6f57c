package consumer

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/record"
)

func TestConfigValidate(t *testing.T) {
	ok := testConfig("g")
	if err := ok.Validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
	def := NewDefaultConfig()
	def.EventTypes = []string{testType}
	if err := def.Validate(); err != nil {
		t.Fatalf("defaults with event types: %v", err)
	}
	if got := def.SourceTopics(); len(got) != 1 || got[0] != testTopic {
		t.Fatalf("topics of event types: %v", got)
	}
	// Event types resolve through the topic map the gateway publishes by.
	mapped := def
	mapped.EventTypes = []string{testType, "other.Type"}
	mapped.TypeTopics = map[string]string{testType: "mapped"}
	mapped.Topics = []string{"raw", "mapped"}
	if got := mapped.SourceTopics(); !slices.Equal(got, []string{"raw", "mapped", "ingest.other.Type"}) {
		t.Fatalf("topics of mapped event types: %v", got)
	}
	// The bound is tight enough that 1 MiB takes a 900 KiB event.
	big := def
	big.MaxEventBytes = 900 << 10
	if err := big.Validate(); err != nil {
		t.Fatalf("900 KiB events in 1 MiB dead letters: %v", err)
	}
	tests := []struct {
		field string
		mod   func(*Config)
	}{
		{"group", func(c *Config) { c.Group = "" }},
		{"topics", func(c *Config) { c.Topics = nil }},
		{"topics", func(c *Config) { c.Topics = []string{record.DLQTopic(testTopic)} }},
		{"event_types", func(c *Config) {
			c.EventTypes, c.TypeTopics = []string{testType}, map[string]string{testType: record.ParkedTopic(testTopic)}
		}},
		{"max_in_flight", func(c *Config) { c.MaxInFlight = 0 }},
		{"write_batch", func(c *Config) { c.WriteBatch = 0 }},
		{"write_batch", func(c *Config) { c.WriteBatch = c.MaxInFlight + 1 }},
		{"sink_concurrency", func(c *Config) { c.SinkConcurrency = -1 }},
		{"write_timeout", func(c *Config) { c.WriteTimeout = 0 }},
		{"retry.max_attempts", func(c *Config) { c.Retry.MaxAttempts = 0 }},
		{"retry.initial_backoff", func(c *Config) { c.Retry.InitialBackoff = 0 }},
		{"retry.max_backoff", func(c *Config) { c.Retry.MaxBackoff = c.Retry.InitialBackoff / 2 }},
		{"retry.max_elapsed", func(c *Config) { c.Retry.MaxElapsed = 0 }},
		{"breaker.window", func(c *Config) { c.Breaker.Window = 0 }},
		{"breaker.min_requests", func(c *Config) { c.Breaker.MinRequests = 0 }},
		{"breaker.failure_ratio", func(c *Config) { c.Breaker.FailureRatio = 1.5 }},
		{"breaker.cooldown", func(c *Config) { c.Breaker.Cooldown = 0 }},
		{"dlq.drain_rate", func(c *Config) { c.DLQ.DrainRate = 0 }},
		{"dlq.drain_interval", func(c *Config) { c.DLQ.DrainInterval = 0 }},
		{"dlq.max_retries", func(c *Config) { c.DLQ.MaxRetries = -1 }},
		{"dlq.deadline", func(c *Config) { c.DLQ.Deadline = 0 }},
		{"dlq.max_error_bytes", func(c *Config) { c.DLQ.MaxErrorBytes = 1 }},
		{"gateway.limits.max_event_bytes", func(c *Config) { c.MaxEventBytes = -1 }},
		{"dlq.max_record_bytes", func(c *Config) { c.DLQ.MaxRecordBytes = 100 }},
		{"dlq.max_record_bytes", func(c *Config) { c.DLQ.MaxRecordBytes = 1<<30 + 1 }},
		// The event fits, its envelope and headers do not.
		{"dlq.max_record_bytes", func(c *Config) { c.DLQ.MaxRecordBytes = int32(c.MaxEventBytes) + 1024 }},
		{"dlq.max_record_bytes", func(c *Config) { c.MaxEventBytes = int(c.DLQ.MaxRecordBytes) }},
		{"dlq.max_record_bytes", func(c *Config) { c.DLQ.MaxErrorBytes = int(c.DLQ.MaxRecordBytes) }},
		{"commit_interval", func(c *Config) { c.CommitInterval = 0 }},
		{"revoke_timeout", func(c *Config) { c.RevokeTimeout = 0 }},
		{"lag_interval", func(c *Config) { c.LagInterval = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			c := testConfig("g")
			tt.mod(&c)
			err := c.Validate()
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field {
				t.Fatalf("Validate = %v, want a ConfigError on %s", err, tt.field)
			}
			// The message names the field as the config file does, under
			// its consumer block.
			path := "consumer." + tt.field
			if tt.field == "gateway.limits.max_event_bytes" {
				path = tt.field
			}
			if !strings.HasPrefix(err.Error(), path+": ") {
				t.Fatalf("Validate = %q, want it to start with %s", err, path)
			}
			if _, err := New(c, testVersions(t), newMemSink(), []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}); !errors.As(err, &ce) {
				t.Fatalf("New accepted a bad config: %v", err)
			}
		})
	}
}
