package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exampleConfig is deploy/sluice.example.yaml with its contracts path made
// absolute, so that the file can be checked from a temporary directory.
func exampleConfig(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/sluice.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("../../examples/contracts.binpb")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(string(raw), "descriptor_set: examples/contracts.binpb", "descriptor_set: "+abs, 1)
}

// runCheck writes cfg to a file and runs `sluice check --config FILE`.
func runCheck(t *testing.T, cfg string, extra ...string) (stdout string, code int, err error) {
	t.Helper()
	path := writeConfig(t, cfg)
	t.Setenv("SLUICE_LOGS_API_KEY", "logs-key")
	var out, errOut bytes.Buffer
	err = run(context.Background(), append([]string{"check", "--config", path}, extra...), &out, &errOut)
	return out.String(), exitCode(err, &errOut), err
}

func TestCheckAcceptsTheExampleForEachCommand(t *testing.T) {
	out, code, err := runCheck(t, exampleConfig(t))
	if code != 0 {
		t.Fatalf("exit %d: %v", code, err)
	}
	for _, want := range []string{"gateway: ok (2 sources, 1 pollers, 3 contract types)", "consumer: ok (3 contract types"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
	if out, _, _ := runCheck(t, exampleConfig(t), "--role", "consumer"); strings.Contains(out, "gateway") {
		t.Errorf("--role consumer checked the gateway too: %q", out)
	}
}

// A bad config exits non-zero naming the field path, for what Validate
// alone cannot see too: files that are not there, contracts that do not
// load, topics of types that are not loaded.
func TestCheckNamesTheField(t *testing.T) {
	base := exampleConfig(t)
	for _, c := range []struct{ from, to, want string }{
		{"descriptor_set: /", "descriptor_set: /nonexistent/", "contracts.descriptor_set"},
		{"    - examples.logs.v1.LogLine\n", "    - examples.logs.v1.NoSuchType\n", "config: contracts: "},
		{"examples.shop.v1.OrderPlaced: orders.placed", "examples.shop.v1.Nope: orders.placed", "gateway.topics.examples.shop.v1.Nope"},
		{"key_env: [SLUICE_LOGS_API_KEY]", "key_env: [SLUICE_CHECK_UNSET]", "sources[1].key_env"},
		{"max_event_bytes: 262144", "max_event_bytez: 1", "field max_event_bytez not found"},
	} {
		t.Run(c.want, func(t *testing.T) {
			cfg := strings.Replace(base, c.from, c.to, 1)
			if cfg == base {
				t.Fatalf("%q not in the example config", c.from)
			}
			_, code, err := runCheck(t, cfg)
			if code == 0 || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("exit %d, err %v; want non-zero naming %s", code, err, c.want)
			}
		})
	}
}
