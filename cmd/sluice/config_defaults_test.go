package main

import (
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/internal/configdoc"
)

var writeConfigDocs = flag.Bool("write-config-docs", false, "write docs/config.md (go generate ./cmd/sluice)")

const regenerate = "run go generate ./cmd/sluice"

// TestConfigCommentsFresh: the table of field comments compiled into
// sluice is the Go sources' doc comments.
func TestConfigCommentsFresh(t *testing.T) {
	got, err := configdoc.Comments("../..")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, fieldComments) {
		for k, v := range got {
			if fieldComments[k] != v {
				t.Errorf("%s: the sources say %q, config_comments.go %q", k, v, fieldComments[k])
			}
		}
		for k := range fieldComments {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: in config_comments.go, no longer in the sources", k)
			}
		}
		t.Fatalf("cmd/sluice/config_comments.go is stale: %s", regenerate)
	}
}

// TestConfigDocsFresh: docs/config.md is the reference written from the
// config types; with -write-config-docs (go generate) it is rewritten.
func TestConfigDocsFresh(t *testing.T) {
	const path = "../../docs/config.md"
	want := configReference()
	if *writeConfigDocs {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: %s", err, regenerate)
	}
	if string(got) != want {
		t.Fatalf("docs/config.md is stale: %s", regenerate)
	}
	for _, key := range []string{"`poller_ownership.session_timeout` | duration | `10s` |", "`gateway.limits.max_event_bytes` | integer | `262144` |",
		"`pollers[].interval` | duration | `30s` |", "`sources[].name` | string |"} {
		if !strings.Contains(want, key) {
			t.Errorf("docs/config.md has no row %q", key)
		}
	}
}

// TestConfigDefaults: sluice config defaults prints every key of the
// config at its default, under its comment; parsed, it is the defaults,
// and the samples of sources and pollers are commented out.
func TestConfigDefaults(t *testing.T) {
	code, out, errOut := runCommand("config", "defaults")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	cfg, err := parseConfig([]byte(out), nil, func(fileConfig) error { return nil })
	if err != nil {
		t.Fatalf("the defaults do not parse: %v", err)
	}
	cfg.Gateway.Topics, cfg.roles = nil, fileRoles{}
	// Compared as YAML: an empty list or map parses to one that is not nil.
	got, _ := yaml.Marshal(cfg)
	want, _ := yaml.Marshal(defaultFileConfig())
	if string(got) != string(want) {
		t.Fatalf("parsed defaults\n%s\nwant\n%s", got, want)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	keys := 0
	for _, e := range configEntries() {
		if e.sample {
			continue
		}
		keys++
		if findKey(&doc, e.path) == nil {
			t.Errorf("no key %s in sluice config defaults", e.path)
		}
	}
	if keys < 150 {
		t.Errorf("only %d keys", keys)
	}
	for _, want := range []string{
		"\npoller_ownership:\n  # group is the consumer group of the replicas. Default \"sluice-pollers\".\n  group: sluice-pollers\n",
		"\nsources: []\n# sample, not a default:\n# - name: checkout\n",
		"\npollers: []\n# sample, not a default:\n# # name identifies the poller",
		"\n# - name: acme-orders\n",
		"    # max_events_per_request bounds the events of one request or stream batch.\n    max_events_per_request: 500\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("sluice config defaults lacks %q", want)
		}
	}
}
