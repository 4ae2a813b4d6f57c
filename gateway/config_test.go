package gateway

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
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
	for _, goName := range []string{"limits.MaxEventBytes", "Limits.max_event_bytes", "sources[0].KeyHashes", "grpc_tls.CertFile", "dedup.max_entries.x"} {
		if isYAMLPath(reflect.TypeFor[Config](), goName) {
			t.Errorf("isYAMLPath takes %s", goName)
		}
	}
	for _, c := range []struct {
		field  string
		mutate func(*Config)
	}{
		{"grpc_addr", func(c *Config) { c.GRPCAddr = "" }},
		{"http_addr", func(c *Config) { c.HTTPAddr = "" }},
		{"grpc_tls.key_file", func(c *Config) { c.GRPCTLS.CertFile = "cert.pem" }},
		{"http_tls.insecure", func(c *Config) {
			c.HTTPTLS.CertFile, c.HTTPTLS.KeyFile, c.HTTPTLS.Insecure = "cert.pem", "key.pem", true
		}},
		{"limits.max_event_bytes", func(c *Config) { c.Limits.MaxEventBytes = 0 }},
		{"limits.max_events_per_request", func(c *Config) { c.Limits.MaxEventsPerRequest = 0 }},
		{"limits.max_event_age", func(c *Config) { c.Limits.MaxEventAge = 0 }},
		{"limits.max_event_future", func(c *Config) { c.Limits.MaxEventFuture = -time.Second }},
		{"limits.max_concurrent_streams", func(c *Config) { c.Limits.MaxConcurrentStreams = 0 }},
		{"limits.receiving_requests", func(c *Config) { c.Limits.ReceivingRequests = 0 }},
		{"limits.unauthenticated_streams", func(c *Config) { c.Limits.UnauthenticatedStreams = 1 }},
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
		{"http.read_timeout", func(c *Config) { c.HTTP.ReadTimeout = 0 }},
		{"http.idle_timeout", func(c *Config) { c.HTTP.IdleTimeout = 0 }},
		{"http.max_header_bytes", func(c *Config) { c.HTTP.MaxHeaderBytes = 1024 }},
		{"publish_timeout", func(c *Config) { c.PublishTimeout = 0 }},
		{"unavailable_retry_after", func(c *Config) { c.UnavailableRetryAfter = 0 }},
		{"dedup.window", func(c *Config) { c.Dedup.Window = -time.Second }},
		{"dedup.max_entries", func(c *Config) { c.Dedup.MaxEntries = 1 }},
		{"sources", func(c *Config) { c.Sources = nil }},
		{"sources[0].key_hashes[0]", func(c *Config) { c.Sources[0].KeyHashes = []string{"secret-in-clear"} }},
		{"sources[0].event_types", func(c *Config) { c.Sources[0].EventTypes = nil }},
		{"sources[0].burst", func(c *Config) { c.Sources[0].Burst = 1 }},
		{"sources[0].name", func(c *Config) { c.Sources[0].Name = "" }},
		{"sources[0].rate", func(c *Config) { c.Sources[0].Rate = -1 }},
		{"sources[0].bytes_rate", func(c *Config) { c.Sources[0].BytesRate = -1 }},
		{"sources[0].bytes_rate", func(c *Config) { c.Sources[0].BytesRate = 1e300 }},
		{"sources[0].bytes_burst", func(c *Config) { c.Sources[0].BytesBurst = int64(c.Limits.MaxRequestBytes) - 1 }},
		{"sources[0].max_requests", func(c *Config) { c.Sources[0].MaxRequests = -1 }},
		{"sources[0].max_streams", func(c *Config) { c.Sources[0].MaxStreams = -1 }},
		{"sources[0].share", func(c *Config) { c.Sources[0].Share = -1 }},
		{"limits.reserved_share", func(c *Config) { c.Limits.ReservedShare = 1.5 }},
		{"sources[0].share", func(c *Config) {
			// Two sources, all reserved, and room in each half for one
			// request: the smaller share cannot hold it.
			c.Limits.ReservedShare = 1
			c.Limits.RequestMemoryBytes = 2 * requestCost(c.Limits.MaxRequestBytes)
			c.Sources = append(c.Sources, SourceConfig{Name: "b", KeyHashes: []string{HashKey("k2")}, EventTypes: []string{"*"}, Share: 2})
		}},
		{"sources[0].client_certs", func(c *Config) { c.Sources[0].ClientCerts = []string{"cn:checkout"} }},
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
			if !isYAMLPath(reflect.TypeFor[Config](), c.field) {
				t.Errorf("%s is not a path of yaml names in Config", c.field)
			}
		})
	}
}

// isYAMLPath says whether path ("limits.max_event_bytes",
// "sources[0].key_hashes[1]") names a field of t by its yaml tags, through
// inline structs, slices and map keys. Sources, which the gateway block
// does not read from YAML (the sluice file lists them at its top level),
// are named "sources".
func isYAMLPath(t reflect.Type, path string) bool {
	for path != "" {
		seg, rest, _ := strings.Cut(path, ".")
		name, _, _ := strings.Cut(seg, "[")
		f, ok := yamlField(t, name)
		if !ok {
			return false
		}
		t, path = f.Type, rest
		for t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() == reflect.Map {
			return true // the rest is a key
		}
	}
	return true
}

func yamlField(t reflect.Type, name string) (reflect.StructField, bool) {
	if t.Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case opts == "inline":
			if g, ok := yamlField(f.Type, name); ok {
				return g, true
			}
		case tag == name, tag == "-" && f.Name == "Sources" && name == "sources":
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// TestTopicOfUnloadedType: New names a topics entry whose type has no
// contract loaded by its path in the topic map, which is not a key of the
// gateway block (the file's top-level topics block is).
func TestTopicOfUnloadedType(t *testing.T) {
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewDefaultConfig()
	cfg.Sources = []SourceConfig{{Name: "src", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}}}
	cfg.Topics = map[string]string{"examples.logs.v1.LogLine": "logs", "examples.nope.v1.Gone": "gone"}
	_, err = New(cfg, served(registry), acceptAll{})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "topics.examples.nope.v1.Gone" || isYAMLPath(reflect.TypeFor[Config](), "topics") {
		t.Fatalf("got %v, want an error naming topics.examples.nope.v1.Gone", err)
	}
}
