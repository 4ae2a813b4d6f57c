package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestExampleConfigLoads(t *testing.T) {
	env := map[string]string{"SLUICE_LOGS_API_KEY": "logs-key"}
	cfg, err := loadConfig("../../deploy/sluice.example.yaml", func(k string) string { return env[k] }, fileConfig.validate)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Gateway.Sources[1].KeyHashes; len(got) != 1 || got[0] != hashKey("logs-key") {
		t.Errorf("key_env not hashed into key_hashes: %v", got)
	}
	if cfg.Topics["examples.shop.v1.OrderPlaced"] != "orders.placed" || !slices.Equal(cfg.Kafka.Brokers, []string{"127.0.0.1:19092"}) {
		t.Errorf("values not read: %+v", cfg)
	}
}

// TestConfigErrorsNameTheField: a bad config stops start-up with a message
// that names the field.
func TestConfigErrorsNameTheField(t *testing.T) {
	base, err := os.ReadFile("../../deploy/sluice.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == "SLUICE_LOGS_API_KEY" {
			return "x"
		}
		return ""
	}
	for _, c := range []struct{ from, to, want string }{
		{"max_event_bytes: 262144", "max_event_bytes: 0", "limits.max_event_bytes"},
		{"max_event_bytes: 262144", "max_event_bytez: 1", "gateway.limits.max_event_bytez: unknown key (did you mean max_event_bytes?)"},
		{"publish_timeout: 10s", "publish_timeout: soon", `config:11:20: gateway.publish_timeout: want a duration (300ms, 10s, 5m, 1h), got "soon"`},
		{"key_env: [SLUICE_LOGS_API_KEY]", "key_env: [NOT_SET]", "sources[1].key_env"},
		{"burst: 1000", "burst: 10", "sources[0].burst"},
		{"compression: lz4", "compression: brotli", "kafka.compression"},
		{"brokers: [127.0.0.1:19092]", "brokers: []", "config: kafka.brokers: must name at least one broker"},
		{"dial_timeout: 5s              # a broker", "dial_timeout: 0s #", "kafka.dial_timeout"},
		{`ca_file: ""                 # PEM CA`, "ca_file: /nonexistent/ca.pem #", "kafka.tls.ca_file: open /nonexistent/ca.pem"},
		{`mechanism: ""               # PLAIN`, "mechanism: GSSAPI #", "kafka.sasl.mechanism"},
		{`mechanism: ""               # PLAIN`, "mechanism: SCRAM-SHA-512\n    tls_typo: x #", "kafka.sasl.tls_typo: unknown key"},
		{`password_env: ""            # environment`, "password_env: KAFKA_PASSWORD #", "kafka.sasl.mechanism: must be set"},
		{"descriptor_set: ../examples/contracts.binpb", "descriptor_set: ''", "contracts.descriptor_set"},
		{"format: json", "format: xml", "log.format"},
		// Validation cannot be turned off by config: that switch is the
		// benchmark build's (bench_on.go).
		{"  memory_limit: 0 ", "  skip_validation: true\n  memory_limit: 0 ", "gateway.skip_validation: unknown key"},
		// An event within max_event_bytes must fit the spool and a batch.
		{"max_record_bytes: 4194304", "max_record_bytes: 262144", "spool.max_record_bytes"},
		{"segment_bytes: 67108864\n  max_bytes: 1073741824", "segment_bytes: 131072\n  max_bytes: 270000", "spool.max_bytes"},
		{"batch_max_bytes: 1048576", "batch_max_bytes: 262144", "kafka.batch_max_bytes"},
		// The spool's own checks name their path in the file.
		{"segment_bytes: 67108864", "segment_bytes: 100", "config: spool.segment_bytes: 100 is below the minimum"},
		{"fsync: batch", "fsync: always", "config: spool.fsync:"},
	} {
		t.Run(c.want, func(t *testing.T) {
			raw := strings.Replace(string(base), c.from, c.to, 1)
			if raw == string(base) {
				t.Fatalf("%q not in the example config", c.from)
			}
			_, err := parseConfig([]byte(raw), env, fileConfig.validate)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error naming %s", err, c.want)
			}
		})
	}
}

// TestConsumerConfigNeedsNoSources: the consumer's file has no gateway
// blocks; what it has is checked.
func TestConsumerConfigNeedsNoSources(t *testing.T) {
	raw := `
consumer: {group: g, topics: [t]}
sink: {kind: sqlite, sqlite: {path: /tmp/x.db}}
contracts: {descriptor_set: examples/contracts.binpb, types: [examples.logs.v1.LogLine]}
kafka: {brokers: [127.0.0.1:9092]}
`
	getenv := func(string) string { return "" }
	if _, err := parseConfig([]byte(raw), getenv, fileConfig.validateConsumer); err != nil {
		t.Fatalf("consumer config: %v", err)
	}
	if _, err := parseConfig([]byte(raw), getenv, fileConfig.validate); err == nil || !strings.Contains(err.Error(), "source") {
		t.Fatalf("as a gateway config: %v, want the missing sources named", err)
	}
	bad := strings.Replace(raw, "kind: sqlite", "kind: kafka", 1)
	if _, err := parseConfig([]byte(bad), getenv, fileConfig.validateConsumer); err == nil || !strings.Contains(err.Error(), "sink: kind") {
		t.Fatalf("bad sink kind: %v, want sink: kind named", err)
	}
	bad = strings.Replace(raw, "max_in_flight", "", 1)
	bad = strings.Replace(bad, "group: g", "group: ''", 1)
	if _, err := parseConfig([]byte(bad), getenv, fileConfig.validateConsumer); err == nil || !strings.Contains(err.Error(), "group") {
		t.Fatalf("empty group: %v, want consumer.group named", err)
	}
}

// TestConsumerDeadLetterFitsEvent: dead letters must take the largest
// event the gateway block lets through, with their envelope; the error
// names the consumer's field and the gateway's.
func TestConsumerDeadLetterFitsEvent(t *testing.T) {
	base := `
consumer: {group: g, topics: [t]}
sink: {kind: sqlite, sqlite: {path: /tmp/x.db}}
contracts: {descriptor_set: examples/contracts.binpb, types: [examples.logs.v1.LogLine]}
kafka: {brokers: [127.0.0.1:9092]}
`
	getenv := func(string) string { return "" }
	for _, c := range []struct{ name, yaml, want string }{
		{"defaults", base, ""},
		{"dlq record too small", strings.Replace(base, "topics: [t]", "topics: [t], dlq: {max_record_bytes: 270000}", 1), "dlq.max_record_bytes"},
		{"gateway events too large", base + "gateway: {limits: {max_event_bytes: 1048576, max_request_bytes: 4194304}}\n", "gateway.limits.max_event_bytes (1048576)"},
		{"both raised", strings.Replace(base, "topics: [t]", "topics: [t], dlq: {max_record_bytes: 2097152}", 1) +
			"gateway: {limits: {max_event_bytes: 1048576, max_request_bytes: 4194304}}\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseConfig([]byte(c.yaml), getenv, fileConfig.validateConsumer)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "dlq.max_record_bytes")):
				t.Fatalf("got %v, want an error naming dlq.max_record_bytes and %s", err, c.want)
			}
		})
	}
}

// bothRoles is a file with a gateway (one push source, checkout, and the
// pollers given) and a consumer, and what more is given.
func bothRoles(pollers []string, more string) string {
	cfg := `
sources:
  - {name: checkout, key_hashes: ["69dcdfe379354d6b4ebb5364d690b38bd38a103c638e0fd27c96f892c75afeac"], event_types: ["*"]}
contracts: {descriptor_set: examples/contracts.binpb, types: [examples.shop.v1.OrderPlaced, examples.logs.v1.LogLine]}
kafka: {brokers: [127.0.0.1:9092]}
sink: {kind: sqlite, sqlite: {path: /tmp/x.db}}
`
	if len(pollers) > 0 {
		cfg += "pollers:\n"
	}
	for _, p := range pollers {
		cfg += "  - url: https://partner.example/orders?cursor={cursor}\n    pagination: {type: cursor, cursor: /next}\n" +
			"    mapping: {id: /id, type: examples.shop.v1.OrderPlaced}\n" + p
	}
	return cfg + more
}

// TestPollerSharesNoSourceUnlessAllowed: a poller whose source (by
// default its name) is a push source's, or another poller's, would share
// that tenant's (source, id) space; the file is refused naming
// pollers[i].source unless the poller says share_source: true.
func TestPollerSharesNoSourceUnlessAllowed(t *testing.T) {
	for _, c := range []struct {
		name    string
		pollers []string
		want    string // "" when the file passes
	}{
		{"a source of its own", []string{"    name: acme-orders\n    source: acme\n"}, ""},
		{"named after no source", []string{"    name: acme\n"}, ""},
		{"a push source's", []string{"    name: acme-orders\n    source: checkout\n"},
			`config: pollers[0].source: "checkout" is the name of sources[0]`},
		{"a push source's by its name", []string{"    name: checkout\n"},
			`config: pollers[0].source: "checkout" (the poller's name) is the name of sources[0]`},
		{"another poller's", []string{"    name: acme-orders\n    source: acme\n", "    name: acme-refunds\n    source: acme\n"},
			`config: pollers[1].source: "acme" is also the source of pollers[0]`},
		{"shared knowingly", []string{"    name: acme-orders\n    source: checkout\n    share_source: true\n"}, ""},
		{"shared with a poller knowingly", []string{"    name: acme-orders\n    source: acme\n", "    name: acme-refunds\n    source: acme\n    share_source: true\n"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseConfig([]byte(bothRoles(c.pollers, "")), func(string) string { return "" }, fileConfig.validate)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "share_source: true")):
				t.Fatalf("got %v, want an error naming %s and share_source", err, c.want)
			}
		})
	}
}

// TestOneTopicMapServesEveryRole: the top-level topics block is the topic
// map of the gateway, of the consumer's event_types and of the contracts
// listing; gateway.topics is refused, saying where the map moved.
func TestOneTopicMapServesEveryRole(t *testing.T) {
	getenv := func(string) string { return "" }
	raw := bothRoles(nil, "topics: {examples.shop.v1.OrderPlaced: orders.placed}\nconsumer: {event_types: [examples.shop.v1.OrderPlaced, examples.logs.v1.LogLine]}\n")
	for _, check := range []func(fileConfig) error{fileConfig.validate, fileConfig.validateConsumer} {
		cfg, err := parseConfig([]byte(raw), getenv, check)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Gateway.Topics["examples.shop.v1.OrderPlaced"]; got != "orders.placed" {
			t.Errorf("the gateway publishes orders to %q, want orders.placed", got)
		}
		cc := consumerConfig(cfg)
		if got, want := cc.SourceTopics(), []string{"orders.placed", "ingest.examples.logs.v1.LogLine"}; !slices.Equal(got, want) {
			t.Errorf("the consumer reads %v, want %v", got, want)
		}
	}

	moved := bothRoles(nil, "gateway: {topics: {examples.shop.v1.OrderPlaced: orders.placed}}\n")
	_, err := parseConfig([]byte(moved), getenv, fileConfig.validate)
	if err == nil || !strings.Contains(err.Error(), "gateway.topics") || !strings.Contains(err.Error(), "top-level topics") {
		t.Fatalf("gateway.topics: %v, want it refused saying it moved to the top-level topics block", err)
	}

	for _, c := range []struct{ topics, want string }{
		{"{examples.nope.v1.Gone: gone}", "config: topics.examples.nope.v1.Gone: not one of contracts.types"},
		{"{examples.shop.v1.OrderPlaced: ''}", "config: topics.examples.shop.v1.OrderPlaced: is empty"},
		{"{examples.shop.v1.OrderPlaced: 'orders placed'}", "config: topics.examples.shop.v1.OrderPlaced: \"orders placed\""},
		{"{examples.shop.v1.OrderPlaced: orders.dlq}", "config: topics.examples.shop.v1.OrderPlaced: \"orders.dlq\" is a DLQ or parked topic"},
		{"{examples.shop.v1.OrderPlaced: sluice.audit}", "config: topics.examples.shop.v1.OrderPlaced: \"sluice.audit\" is sluice's own"},
	} {
		_, err := parseConfig([]byte(bothRoles(nil, "topics: "+c.topics+"\n")), getenv, fileConfig.validateClient)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("topics: %s: %v, want %s", c.topics, err, c.want)
		}
	}
	_, err = parseConfig([]byte(bothRoles(nil, "consumer: {event_types: [examples.nope.v1.Gone]}\n")), getenv, fileConfig.validateConsumer)
	if err == nil || !strings.Contains(err.Error(), "consumer.event_types: examples.nope.v1.Gone is not one of contracts.types") {
		t.Errorf("a consumer type not in contracts: %v", err)
	}
}
