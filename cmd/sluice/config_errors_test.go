package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigErrorsNameFileAndPath: a config error names the file, the
// line and column, the key's YAML path and what was expected.
func TestConfigErrorsNameFileAndPath(t *testing.T) {
	const base = "kafka: {brokers: [127.0.0.1:9092]}\ncontracts: {descriptor_set: c.binpb, types: [a.B]}\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"integer", "gateway:\n  limits:\n    max_events_per_request: lots\n",
			`x.yaml:3:29: gateway.limits.max_events_per_request: want an integer, got "lots"`},
		{"typo", "gateway:\n  publish_timout: 10s\n",
			"x.yaml:2:3: gateway.publish_timout: unknown key (did you mean publish_timeout?)"},
		{"unknown block", "gatway: {}\n", "x.yaml:1:1: gatway: unknown key (did you mean gateway?)"},
		{"syntax", "gateway:\n  limits: {}\n http_addr: x\n", "x.yaml:2: syntax error: did not find expected key"},
		{"syntax, tab", "gateway:\n\tlimits: {}\n", "x.yaml:2: syntax error: found character that cannot start any token"},
		{"duration", "kafka:\n  linger: soon\n", `x.yaml:2:11: kafka.linger: want a duration (300ms, 10s, 5m, 1h), got "soon"`},
		{"size", "spool:\n  dir: /tmp/s\n  segment_bytes: 64MiB\n", `x.yaml:3:18: spool.segment_bytes: want an integer, got "64MiB"`},
		{"bool", "admission: {spool_first: maybe}\n", `x.yaml:1:26: admission.spool_first: want true or false, got "maybe"`},
		{"list for a mapping", "gateway: [1]\n", "x.yaml:1:10: gateway: want a mapping of keys, got a list"},
		{"mapping for a list", "sources: {name: a}\n", "x.yaml:1:10: sources: want a list, got a mapping"},
		{"in a source", "sources:\n  - name: a\n    rate: fast\n", `x.yaml:3:11: sources[0].rate: want a number, got "fast"`},
		{"in a webhook", "sources:\n  - name: a\n    webhook: {schme: stripe}\n", "x.yaml:3:15: sources[0].webhook.schme: unknown key (did you mean scheme?)"},
		{"in a poller", "pollers:\n  - name: a\n    intervl: 1s\n", "x.yaml:3:5: pollers[0].intervl: unknown key (did you mean interval?)"},
		{"poller not a mapping", "pollers:\n  - [a]\n", "x.yaml:2:5: pollers[0]: want a mapping of keys, got a list"},
		{"key twice", "kafka:\n  brokers: [127.0.0.1:9092]\n  linger: 1ms\n  linger: 2ms\n", "x.yaml:4:3: kafka.linger: given twice (first at line 3)"},
		{"poller ownership", "poller_ownership: {session_timeout: 10}\n", `x.yaml:1:37: poller_ownership.session_timeout: want a duration (300ms, 10s, 5m, 1h), got "10"`},
		// Enums and ranges are checked once the file is read; the error
		// still names the file, and the place when the file sets the key.
		{"enum", "log:\n  format: xml\n", `x.yaml:2:3: log.format: "xml" is not json or text`},
		{"enum, kafka", "kafka: {brokers: [127.0.0.1:9092], compression: brotli}\n", "x.yaml:1:36: kafka.compression:"},
		{"range", "contracts:\n  descriptor_set: c.binpb\n  types: [a.B]\n  keep_versions: 0\n", "x.yaml:4:3: contracts.keep_versions: 0 is not within [1, 16]"},
		{"unset", "kafka: {brokers: []}\n", "x.yaml:1:9: kafka.brokers: must name at least one broker"},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := c.yaml
			if !strings.Contains(raw, "kafka:") && !strings.Contains(raw, "contracts:") {
				raw += base
			} else if !strings.Contains(raw, "contracts:") {
				raw += "contracts: {descriptor_set: c.binpb, types: [a.B]}\n"
			} else if !strings.Contains(raw, "kafka:") {
				raw += "kafka: {brokers: [127.0.0.1:9092]}\n"
			}
			path := filepath.Join(t.TempDir(), "x.yaml")
			if err := os.WriteFile(path, []byte(raw), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadConfig(path, nil, fileConfig.validateClient)
			if err == nil {
				t.Fatalf("loaded\n%s", raw)
			}
			got := strings.TrimPrefix(err.Error(), filepath.Dir(path)+string(filepath.Separator))
			if !strings.HasPrefix(got, c.want) {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}
