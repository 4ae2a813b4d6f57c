package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClusterConfig: the cluster block is off by default, takes the agreed
// keys, and its errors name the key's path and line.
func TestClusterConfig(t *testing.T) {
	const base = "kafka: {brokers: [127.0.0.1:9092]}\ncontracts: {descriptor_set: c.binpb, types: [a.B]}\n"
	load := func(t *testing.T, raw string) (fileConfig, error) {
		path := filepath.Join(t.TempDir(), "x.yaml")
		if err := os.WriteFile(path, []byte(raw+base), 0o600); err != nil {
			t.Fatal(err)
		}
		return loadConfig(path, nil, fileConfig.validateCluster)
	}
	cfg, err := load(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster.Enabled() || cfg.Cluster.HeartbeatInterval != time.Second || cfg.Cluster.MemberTTL != 5*time.Second {
		t.Fatalf("defaults: %+v", cfg.Cluster)
	}
	cfg, err = load(t, "cluster: {heartbeat_topic: sluice.gateways, heartbeat_interval: 200ms, member_ttl: 1s}\n")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Cluster.Enabled() || cfg.Cluster.HeartbeatInterval != 200*time.Millisecond || cfg.Cluster.MemberTTL != time.Second {
		t.Fatalf("set: %+v", cfg.Cluster)
	}
	for _, c := range []struct{ name, yaml, want string }{
		{"ttl under two intervals", "cluster:\n  heartbeat_topic: g\n  heartbeat_interval: 1s\n  member_ttl: 1500ms\n",
			"x.yaml:4:3: cluster.member_ttl: must be at least twice heartbeat_interval"},
		{"topic name", "cluster: {heartbeat_topic: 'a b'}\n", "x.yaml:1:11: cluster.heartbeat_topic:"},
		{"pollers' topic", "cluster: {heartbeat_topic: sluice.pollers}\n", "x.yaml:1:11: cluster.heartbeat_topic: \"sluice.pollers\" is the pollers' cursor topic"},
		{"an event topic", "cluster: {heartbeat_topic: ingest.a.B}\n", "x.yaml:1:11: cluster.heartbeat_topic: \"ingest.a.B\" is an event type's topic"},
		{"typo", "cluster: {heartbeat_intervl: 1s}\n", "x.yaml:1:11: cluster.heartbeat_intervl: unknown key (did you mean heartbeat_interval?)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(t, c.yaml)
			if err == nil {
				t.Fatalf("loaded %s", c.yaml)
			}
			got := err.Error()
			if i := strings.Index(got, "x.yaml"); i >= 0 {
				got = got[i:]
			}
			if !strings.HasPrefix(got, c.want) {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}
