package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	ct "github.com/sluicehq/sluice/internal/contracttest"
)

const (
	shopType     = "examples.shop.v1.OrderPlaced"
	identityType = "examples.identity.v1.UserProfileUpdated"
	logsType     = "examples.logs.v1.LogLine"
)

// contractsConfigFile writes a config of the example contracts with the given
// compatibility block (YAML flow form, "" for none).
func contractsConfigFile(t *testing.T, compatibility string) string {
	t.Helper()
	abs, err := filepath.Abs("../../examples/contracts.binpb")
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("contracts:\n  descriptor_set: %s\n  types: [%s, %s, %s]\n", abs, shopType, identityType, logsType)
	if compatibility != "" {
		cfg += "  compatibility: " + compatibility + "\n"
	}
	return writeConfig(t, cfg+"topics: {"+shopType+": orders.placed}\n")
}

// runContracts runs `sluice contracts ARGS...` and returns its output and
// exit status.
func runContracts(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"contracts"}, args...), &out, &errOut)
	code = exitCode(err, &errOut)
	return out.String(), errOut.String(), code
}

func TestContractsDiff(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, image []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, image, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	old := write("old.binpb", examples.Contracts)
	removed := write("removed.binpb", ct.Evolve(t, examples.Contracts, ct.RemoveField(shopType, "note", false)))
	reserved := write("reserved.binpb", ct.Evolve(t, examples.Contracts, ct.RemoveField(shopType, "note", true)))
	tightened := write("tightened.binpb", ct.Evolve(t, examples.Contracts,
		ct.EditFieldRules(shopType, "currency", func(r *validate.FieldRules) { r.GetString().SetPattern("^[A-Z]{4}$") })))
	logsRemoved := write("logs-removed.binpb", ct.Evolve(t, examples.Contracts, ct.RemoveField(logsType, "host", false)))
	garbage := write("garbage.binpb", []byte("not a descriptor set"))
	cfg := contractsConfigFile(t, "")
	tolerant := contractsConfigFile(t, "{allow_tightening: true, types: {"+logsType+": {mode: none}}}")

	for _, c := range []struct {
		name string
		args []string
		code int
		want []string // in stdout (stderr for code 2)
		not  []string
	}{
		{"field removed", []string{old, removed, "--config", cfg}, 1,
			[]string{shopType + ": INCOMPATIBLE (mode backward)", "BREAKS backward+forward", "note", "field_removed", "incompatible: 1 of 3 types"}, nil},
		{"field removed, flags first", []string{"--config", cfg, old, removed}, 1, []string{"field_removed"}, nil},
		{"field reserved", []string{old, reserved, "--config", cfg}, 0,
			[]string{shopType + ": compatible (mode backward)", "note", "field_reserved", "compatible: 3 types"}, nil},
		{"mode none passes a breaking change", []string{old, removed, "--mode", "none"}, 0,
			[]string{shopType + ": compatible (mode none)", "ok (backward+forward not checked)  note  field_removed"}, nil},
		{"tightened", []string{old, tightened, "--type", shopType}, 1,
			[]string{"BREAKS backward", "currency", "rule_tightened string.pattern", "incompatible: 1 of 1 type"}, []string{identityType}},
		{"tightening allowed by the config", []string{old, tightened, "--config", tolerant}, 0,
			[]string{"(mode backward, tightening allowed)", "ok (tightening allowed)"}, nil},
		{"--mode keeps the config's allow_tightening", []string{old, tightened, "--config", tolerant, "--mode", "full"}, 0,
			[]string{"(mode full, tightening allowed)"}, nil},
		{"per-type mode from the config", []string{old, logsRemoved, "--config", tolerant}, 0,
			[]string{logsType + ": compatible (mode none", "host", "field_removed"}, nil},
		{"--mode overrides per-type modes", []string{old, logsRemoved, "--config", tolerant, "--mode", "backward"}, 1,
			[]string{logsType + ": INCOMPATIBLE"}, nil},
		{"--type restricts", []string{old, removed, "--type", logsType, "--type", identityType}, 0,
			[]string{logsType, identityType, "compatible: 2 types"}, []string{shopType}},
		{"types from the old set", []string{old, reserved}, 0,
			// The image's own messages: the three example types and theirs, and
			// examples.stripe.v1 (Event, EventData, EventRequest).
			[]string{"examples.shop.v1.Address: compatible", "compatible: 11 types"}, []string{"google.protobuf", "buf.validate"}},
		{"one set", []string{old}, 2, []string{"give the OLD and the NEW descriptor set"}, nil},
		{"bad mode", []string{old, removed, "--mode", "sideways"}, 2, []string{"--mode", "must be backward, forward, full or none"}, nil},
		{"new does not decode", []string{old, garbage, "--config", cfg}, 2, []string{"contract: new image: decode descriptor set"}, nil},
		{"old lacks the type", []string{old, removed, "--type", "examples.shop.v1.Nope"}, 2, []string{"examples.shop.v1.Nope"}, nil},
		{"no such file", []string{old, filepath.Join(dir, "nope.binpb")}, 2, []string{"nope.binpb"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runContracts(t, append([]string{"diff"}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, stdout, stderr)
			}
			out := stdout
			if code == 2 {
				out = stderr
			} else if stderr != "" {
				t.Errorf("stderr %q, want nothing", stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range c.not {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		stdout, _, code := runContracts(t, "diff", old, removed, "--config", cfg, "--json")
		if code != 1 {
			t.Fatalf("exit %d", code)
		}
		var report reportJSON
		if err := json.Unmarshal([]byte(stdout), &report); err != nil {
			t.Fatalf("%v:\n%s", err, stdout)
		}
		if report.Compatible || len(report.Types) != 3 {
			t.Fatalf("report %+v", report)
		}
		shop := report.Types[2]
		want := findingJSON{Path: "note", Rule: contract.RuleFieldRemoved, Breaks: "backward+forward", Breaking: true}
		if shop.Type != shopType || shop.Compatible || shop.Mode != contract.ModeBackward || len(shop.Findings) != 1 ||
			shop.OldFingerprint == "" || shop.NewFingerprint == shop.OldFingerprint {
			t.Fatalf("type report %+v", shop)
		}
		got := shop.Findings[0]
		got.Reason = ""
		if got != want {
			t.Errorf("finding %+v, want %+v", got, want)
		}
		if logs := report.Types[1]; !logs.Compatible || logs.Findings == nil {
			t.Errorf("untouched type %+v: want compatible, findings [] not null", logs)
		}
	})
}

func TestContractsList(t *testing.T) {
	registry, err := contract.Load(examples.Contracts, []string{shopType, identityType, logsType})
	if err != nil {
		t.Fatal(err)
	}
	cfg := contractsConfigFile(t, "{mode: full, types: {"+logsType+": {mode: none, allow_tightening: true}}}")
	stdout, stderr, code := runContracts(t, "list", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "TYPE") {
		t.Fatalf("want a header and three types:\n%s", stdout)
	}
	for _, c := range []struct{ typ, topic, policy string }{
		{identityType, "ingest." + identityType, "full"},
		{logsType, "ingest." + logsType, "none, tightening allowed"},
		{shopType, "orders.placed", "full"},
	} {
		k, _ := registry.Lookup(c.typ)
		i := strings.Index(stdout, c.typ+" ")
		if i < 0 {
			t.Errorf("no line for %s:\n%s", c.typ, stdout)
			continue
		}
		line, _, _ := strings.Cut(stdout[i:], "\n")
		for _, want := range []string{k.Fingerprint(), c.topic, c.policy, "binary " + k.Decoders().Binary, "json " + k.Decoders().JSON} {
			if !strings.Contains(line, want) {
				t.Errorf("line %q lacks %q", line, want)
			}
		}
	}

	stdout, _, code = runContracts(t, "list", "--config", cfg, "--json")
	var list []contractJSON
	if err := json.Unmarshal([]byte(stdout), &list); code != 0 || err != nil || len(list) != 3 {
		t.Fatalf("exit %d, %v:\n%s", code, err, stdout)
	}
	if l := list[1]; l.Type != logsType || l.Compatibility != (compatibilityJSON{Mode: contract.ModeNone, AllowTightening: true}) || l.Decoders.Binary == "" {
		t.Errorf("list[1] = %+v", l)
	}

	// The contracts commands read no source: a key_env unset is no error.
	t.Setenv("SLUICE_LOGS_API_KEY", "")
	if stdout, stderr, code := runContracts(t, "list", "--config", writeConfig(t, exampleConfig(t))); code != 0 || !strings.Contains(stdout, "orders.placed") {
		t.Errorf("list of the example config: exit %d, %s%s", code, stdout, stderr)
	}

	if _, stderr, code := runContracts(t, "list"); code != 2 || !strings.Contains(stderr, "--config is required") {
		t.Errorf("list without --config: exit %d, %q", code, stderr)
	}
	if _, stderr, code := runContracts(t, "frob"); code != 2 || !strings.Contains(stderr, "give diff or list") {
		t.Errorf("contracts frob: exit %d, %q", code, stderr)
	}
}

// The contracts block's new keys are refused, naming the field, when out
// of range; sluice check goes through the same validation.
func TestContractsConfigErrorsNameTheField(t *testing.T) {
	base, err := os.ReadFile("../../deploy/sluice.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := func(k string) string { return map[string]string{"SLUICE_LOGS_API_KEY": "x"}[k] }
	for _, c := range []struct{ from, to, want string }{
		{"keep_versions: 3 ", "keep_versions: 0 ", "config: contracts.keep_versions: 0 is not within [1, 16]"},
		{"keep_versions: 3 ", "keep_versions: 17 ", "config: contracts.keep_versions: 17"},
		{"watch_interval: 2s ", "watch_interval: -1s ", "config: contracts.reload.watch_interval: -1s is negative"},
		{"watch_interval: 2s ", "watch_interval: 10ms ", "config: contracts.reload.watch_interval: 10ms is below 100ms"},
		{"mode: backward ", "mode: sideways ", `config: contracts.compatibility.mode: "sideways" is not backward, forward, full or none`},
		{"types: {} ", "types: {examples.shop.v1.Nope: {mode: none}} ", "config: contracts.compatibility.types.examples.shop.v1.Nope: not one of contracts.types"},
		{"types: {} ", "types: {" + logsType + ": {mode: most}} ", "config: contracts.compatibility.types." + logsType + ".mode"},
		{"types: {} ", "types: {" + logsType + ": {mod: none}} ", "contracts.compatibility.types." + logsType + ".mod: unknown key (did you mean mode?)"},
	} {
		t.Run(c.want, func(t *testing.T) {
			raw := strings.Replace(string(base), c.from, c.to, 1)
			if raw == string(base) {
				t.Fatalf("%q not in the example config", c.from)
			}
			for _, validate := range []func(fileConfig) error{fileConfig.validate, fileConfig.validateConsumer, fileConfig.validateContracts} {
				if _, err := parseConfig([]byte(raw), env, validate); err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got %v, want an error naming %s", err, c.want)
				}
			}
		})
	}
}

// A per-type entry takes what it leaves unset from the block; a file
// without the block gets the defaults.
func TestContractsPolicies(t *testing.T) {
	raw := `contracts:
  descriptor_set: x.binpb
  types: [` + shopType + `, ` + identityType + `, ` + logsType + `]
  compatibility:
    mode: full
    allow_tightening: true
    types:
      ` + logsType + `: {mode: none}
      ` + identityType + `: {allow_tightening: false}
`
	cfg, err := parseConfig([]byte(raw), osGetenv, fileConfig.validateContracts)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Contracts.policies()
	for typ, want := range map[string]contract.Policy{
		shopType:     {Mode: contract.ModeFull, AllowTightening: true},
		logsType:     {Mode: contract.ModeNone, AllowTightening: true},
		identityType: {Mode: contract.ModeFull, AllowTightening: false},
	} {
		if got := p.For(typ); got != want {
			t.Errorf("%s: %+v, want %+v", typ, got, want)
		}
	}

	cfg, err = parseConfig([]byte("contracts: {descriptor_set: x.binpb, types: ["+shopType+"]}\n"), osGetenv, fileConfig.validateContracts)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Contracts.policies(); got.Default != (contract.Policy{Mode: contract.ModeBackward}) || got.Types != nil {
		t.Errorf("default policies %+v", got)
	}
	if cfg.Contracts.KeepVersions != contract.DefaultKeepVersions || cfg.Contracts.Reload.WatchInterval.String() != "2s" {
		t.Errorf("defaults: keep_versions %d, watch_interval %s", cfg.Contracts.KeepVersions, cfg.Contracts.Reload.WatchInterval)
	}
	cfg, err = parseConfig([]byte("contracts: {descriptor_set: x.binpb, types: ["+shopType+"], reload: {watch_interval: 0s}}\n"), osGetenv, fileConfig.validateContracts)
	if err != nil || cfg.Contracts.Reload.WatchInterval != 0 {
		t.Errorf("watch_interval 0 (no watch): %v, %s", err, cfg.Contracts.Reload.WatchInterval)
	}
}

// An exitStatus ends the command with its status and prints nothing.
func TestExitStatus(t *testing.T) {
	for _, err := range []error{exitStatus(1), fmt.Errorf("diff: %w", exitStatus(3))} {
		var stderr bytes.Buffer
		var want exitStatus
		errors.As(err, &want)
		if code := exitCode(err, &stderr); code != int(want) || stderr.Len() != 0 {
			t.Errorf("exitCode(%v) = %d, stderr %q; want %d and nothing printed", err, code, stderr.String(), want)
		}
	}
}

// An image where only a comment changed is compatible, and so reported.
func TestContractsDiffCommentOnly(t *testing.T) {
	dir := t.TempDir()
	old, next := filepath.Join(dir, "old.binpb"), filepath.Join(dir, "next.binpb")
	if err := os.WriteFile(old, examples.Contracts, 0o600); err != nil {
		t.Fatal(err)
	}
	image := ct.Evolve(t, examples.Contracts, ct.RewriteComments("ISO 4217 code.", "ISO 4217 currency code."),
		ct.AddField(identityType, "nickname", 9, descriptorpb.FieldDescriptorProto_TYPE_STRING))
	if err := os.WriteFile(next, image, 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, _, code := runContracts(t, "diff", old, next, "--type", shopType, "--type", identityType)
	if code != 0 || !strings.Contains(stdout, shopType+": compatible (mode backward) sha256:") || !strings.Contains(stdout, "(unchanged)") ||
		!strings.Contains(stdout, "nickname  field_added") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
}
