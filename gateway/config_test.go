package gateway

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		c := NewDefaultConfig()
		c.Sources = []SourceConfig{{Name: "a", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}, Rate: 10, Burst: 1000}}
		return c
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for limit, want := range map[int64]int64{0: 256 << 20, 512 << 20: 128 << 20} {
		c := valid()
		c.MemoryLimit = limit
		if got := c.RequestMemory(); got != want {
			t.Errorf("memory_limit %d: request memory %d, want %d", limit, got, want)
		}
	}
	for _, c := range []struct {
		field  string
		mutate func(*Config)
	}{
		{"limits.max_event_bytes", func(c *Config) { c.Limits.MaxEventBytes = 0 }},
		{"limits.max_request_bytes", func(c *Config) { c.Limits.MaxRequestBytes = c.Limits.MaxEventBytes - 1 }},
		{"limits.max_depth", func(c *Config) { c.Limits.MaxDepth = 1000 }},
		{"limits.stream_window", func(c *Config) { c.Limits.StreamWindow = 0 }},
		{"limits.stream_window_bytes", func(c *Config) { c.Limits.StreamWindowBytes = int64(c.Limits.MaxRequestBytes) }},
		{"limits.stream_idle_timeout", func(c *Config) { c.Limits.StreamIdleTimeout = c.PublishTimeout }},
		{"limits.max_violations_per_event", func(c *Config) { c.Limits.MaxViolationsPerEvent = 0 }},
		{"limits.max_violations_per_response", func(c *Config) { c.Limits.MaxViolationsPerResponse = c.Limits.MaxViolationsPerEvent - 1 }},
		{"limits.request_memory_bytes", func(c *Config) { c.Limits.RequestMemoryBytes = -1 }},
		{"limits.request_memory_bytes", func(c *Config) { c.Limits.RequestMemoryBytes = 3 * int64(c.Limits.MaxRequestBytes) }},
		{"limits.request_memory_bytes", func(c *Config) { c.MemoryLimit = 512 << 20; c.Limits.RequestMemoryBytes = 200 << 20 }},
		{"memory_limit", func(c *Config) { c.MemoryLimit = 64 << 20 }},
		{"limits.checking_events", func(c *Config) { c.Limits.CheckingEvents = c.Limits.MaxEventsPerRequest - 1 }},
		{"limits.max_queue_wait", func(c *Config) { c.Limits.MaxQueueWait = 0 }},
		{"limits.max_streams", func(c *Config) { c.Limits.MaxStreams = 0 }},
		{"limits.receive_timeout", func(c *Config) { c.Limits.ReceiveTimeout = 0 }},
		{"limits.max_header_list_bytes", func(c *Config) { c.Limits.MaxHeaderListBytes = 100 }},
		{"limits.max_header_list_bytes", func(c *Config) { c.Limits.MaxHeaderListBytes = 1 << 30 }},
		{"limits.max_connection_age", func(c *Config) { c.Limits.MaxConnectionAge = 0 }},
		{"limits.max_connection_age_grace", func(c *Config) { c.Limits.MaxConnectionAgeGrace = -time.Second }},
		{"http.write_timeout", func(c *Config) { c.HTTP.WriteTimeout = c.PublishTimeout }},
		{"http.read_header_timeout", func(c *Config) { c.HTTP.ReadHeaderTimeout = 0 }},
		{"dedup.window", func(c *Config) { c.Dedup.Window = -time.Second }},
		{"dedup.max_entries", func(c *Config) { c.Dedup.MaxEntries = 1 }},
		{"sources", func(c *Config) { c.Sources = nil }},
		{"sources[0].key_hashes[0]", func(c *Config) { c.Sources[0].KeyHashes = []string{"secret-in-clear"} }},
		{"sources[0].event_types", func(c *Config) { c.Sources[0].EventTypes = nil }},
		{"sources[0].burst", func(c *Config) { c.Sources[0].Burst = 1 }},
		{"sources[1].name", func(c *Config) { c.Sources = append(c.Sources, c.Sources[0]) }},
		{"sources[1].key_hashes[0]", func(c *Config) {
			c.Sources = append(c.Sources, SourceConfig{Name: "b", KeyHashes: c.Sources[0].KeyHashes, EventTypes: []string{"*"}})
		}},
	} {
		t.Run(c.field, func(t *testing.T) {
			cfg := valid()
			c.mutate(&cfg)
			err := cfg.Validate()
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != c.field {
				t.Fatalf("got %v, want an error naming %s", err, c.field)
			}
			if !strings.Contains(err.Error(), c.field) {
				t.Errorf("message %q does not name the field", err)
			}
		})
	}
}
