package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/contract"
)

const contractsUsage = `usage:
  sluice contracts diff OLD.binpb NEW.binpb [--mode MODE] [--config FILE] [--type T ...] [--json]
  sluice contracts list --config FILE [--json]

diff judges the descriptor set NEW against OLD, the one running, for each
event type: a line per type with its verdict, mode and fingerprints, then
a line per finding (BREAKS and the directions, or ok), its field path,
rule and reason. The types are the --type flags, else the config's
contracts.types, else every top-level message of OLD's files except those
under google/ and buf/. The policies are the config's
contracts.compatibility block, or backward for every type without
--config; --mode (backward, forward, full or none) replaces every type's
mode. Exit status: 0 compatible, 1 incompatible, 2 a usage or load error.

list prints each event type of the config's contracts: its fingerprint,
topic, compatibility policy and decoders.
`

// runContractsCmd is `sluice contracts diff|list`.
func runContractsCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "diff" && args[0] != "list") {
		fmt.Fprint(stderr, contractsUsage)
		return errors.New("contracts: give diff or list")
	}
	sub := args[0]
	fs := flag.NewFlagSet("contracts "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, contractsUsage) }
	path := fs.String("config", "", "path of the sluice YAML config (its contracts and topics blocks)")
	asJSON := fs.Bool("json", false, "print JSON")
	mode := new(string)
	var types []string
	if sub == "diff" {
		mode = fs.String("mode", "", "backward, forward, full or none, for every type (default: the config's, else backward)")
		fs.Func("type", "an event type to compare (repeatable; default: the config's contracts.types)", func(s string) error {
			types = append(types, s)
			return nil
		})
	}
	positional, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	if sub == "list" {
		if len(positional) > 0 {
			return fmt.Errorf("contracts list: unexpected argument %q", positional[0])
		}
		if *path == "" {
			fs.Usage()
			return errors.New("contracts list: --config is required")
		}
		return listContracts(*path, *asJSON, stdout)
	}
	if len(positional) != 2 {
		fs.Usage()
		return errors.New("contracts diff: give the OLD and the NEW descriptor set")
	}
	report, err := diffContracts(positional[0], positional[1], *path, *mode, types)
	if err != nil {
		return err
	}
	if *asJSON {
		err = writeReportJSON(stdout, report)
	} else {
		err = writeReport(stdout, report)
	}
	if err != nil {
		return err
	}
	if !report.Compatible() {
		return exitStatus(1)
	}
	return nil
}

// parseInterspersed parses the flags wherever they are among args, as
// in "diff OLD NEW --json", and returns the other arguments in order.
// After "--" every argument is one of those.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		left := fs.Args()
		if n := len(args) - len(left); n > 0 && args[n-1] == "--" {
			return append(rest, left...), nil
		}
		if len(left) == 0 {
			return rest, nil
		}
		rest, args = append(rest, left[0]), left[1:]
	}
}

// diffContracts compares the files oldPath and newPath for the types
// asked for, the config's or those OLD declares, under the config's
// policies with mode, when given, for every type.
func diffContracts(oldPath, newPath, configPath, mode string, types []string) (*contract.Report, error) {
	oldImage, err := os.ReadFile(oldPath)
	if err != nil {
		return nil, fmt.Errorf("contracts diff: %w", err)
	}
	newImage, err := os.ReadFile(newPath)
	if err != nil {
		return nil, fmt.Errorf("contracts diff: %w", err)
	}
	var policies contract.Policies
	if configPath != "" {
		cfg, err := loadConfig(configPath, nil, fileConfig.validateContracts)
		if err != nil {
			return nil, err
		}
		policies = cfg.Contracts.policies()
		if len(types) == 0 {
			types = cfg.Contracts.Types
		}
	}
	if mode != "" {
		m, err := contract.ParseMode(mode)
		if err != nil {
			return nil, fmt.Errorf("contracts diff: --mode: %w", err)
		}
		policies = withMode(policies, m)
	}
	if len(types) == 0 {
		if types, err = declaredMessages(oldImage); err != nil {
			return nil, fmt.Errorf("contracts diff: %s: %w", oldPath, err)
		}
	}
	return contract.Compare(oldImage, newImage, types, policies)
}

// withMode is p with every type's mode m.
func withMode(p contract.Policies, m contract.Mode) contract.Policies {
	out := contract.Policies{Default: p.Default}
	out.Default.Mode = m
	if len(p.Types) > 0 {
		out.Types = make(map[string]contract.Policy, len(p.Types))
	}
	for typ, pol := range p.Types {
		pol.Mode = m
		out.Types[typ] = pol
	}
	return out
}

// declaredMessages are the top-level messages of the set's files, but
// for those under google/ and buf/ (well-known types, protovalidate).
func declaredMessages(image []byte) ([]string, error) {
	set := new(descriptorpb.FileDescriptorSet)
	if err := proto.Unmarshal(image, set); err != nil {
		return nil, fmt.Errorf("decode descriptor set: %w", err)
	}
	var out []string
	for _, f := range set.GetFile() {
		if strings.HasPrefix(f.GetName(), "google/") || strings.HasPrefix(f.GetName(), "buf/") {
			continue
		}
		for _, m := range f.GetMessageType() {
			name := m.GetName()
			if f.GetPackage() != "" {
				name = f.GetPackage() + "." + name
			}
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("declares no message outside google/ and buf/: give --type")
	}
	return out, nil
}

// findingStatus says what a finding means under its type's policy:
// "BREAKS" and the directions it breaks when it makes the type
// incompatible, else "ok" and why a direction it breaks does not count.
func findingStatus(tr contract.TypeReport, f contract.Finding) string {
	switch {
	case slices.Contains(tr.Breaking(), f):
		return "BREAKS " + f.Breaks.String()
	case f.Breaks == 0:
		return "ok"
	case f.Tightening && tr.Policy.AllowTightening:
		return "ok (tightening allowed)"
	}
	return "ok (" + f.Breaks.String() + " not checked)"
}

func policyText(p contract.Policy) string {
	if p.AllowTightening {
		return string(p.Mode) + ", tightening allowed"
	}
	return string(p.Mode)
}

func writeReport(w io.Writer, r *contract.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	incompatible := 0
	for _, tr := range r.Types {
		verdict := "compatible"
		if !tr.Compatible {
			verdict = "INCOMPATIBLE"
			incompatible++
		}
		fingerprints := tr.Old + " → " + tr.New
		switch tr.New {
		case "":
			fingerprints = tr.Old + " → (gone)"
		case tr.Old:
			fingerprints = tr.Old + " (unchanged)"
		}
		fmt.Fprintf(tw, "%s: %s (mode %s) %s\n", tr.Type, verdict, policyText(tr.Policy), fingerprints)
		for _, f := range tr.Findings {
			path, rule := f.Path, f.Rule
			if path == "" {
				path = "(message)"
			}
			if f.ValidateRule != "" {
				rule += " " + f.ValidateRule
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", findingStatus(tr, f), path, rule, f.Reason)
		}
	}
	noun := "types"
	if len(r.Types) == 1 {
		noun = "type"
	}
	if incompatible > 0 {
		fmt.Fprintf(tw, "incompatible: %d of %d %s\n", incompatible, len(r.Types), noun)
	} else {
		fmt.Fprintf(tw, "compatible: %d %s\n", len(r.Types), noun)
	}
	return tw.Flush()
}

// The JSON forms of a Report.
type (
	reportJSON struct {
		Compatible bool             `json:"compatible"`
		Types      []typeReportJSON `json:"types"`
	}
	typeReportJSON struct {
		Type            string        `json:"type"`
		Mode            contract.Mode `json:"mode"`
		AllowTightening bool          `json:"allow_tightening"`
		OldFingerprint  string        `json:"old_fingerprint"`
		NewFingerprint  string        `json:"new_fingerprint"` // "" when the type is gone
		Compatible      bool          `json:"compatible"`
		Findings        []findingJSON `json:"findings"`
	}
	findingJSON struct {
		Path         string `json:"path"`
		Rule         string `json:"rule"`
		ValidateRule string `json:"validate_rule,omitempty"`
		Reason       string `json:"reason"`
		Breaks       string `json:"breaks"` // backward, forward, backward+forward or none
		Tightening   bool   `json:"tightening"`
		Breaking     bool   `json:"breaking"` // it makes the type incompatible under its policy
	}
)

func writeReportJSON(w io.Writer, r *contract.Report) error {
	out := reportJSON{Compatible: r.Compatible(), Types: []typeReportJSON{}}
	for _, tr := range r.Types {
		t := typeReportJSON{Type: tr.Type, Mode: tr.Policy.Mode, AllowTightening: tr.Policy.AllowTightening,
			OldFingerprint: tr.Old, NewFingerprint: tr.New, Compatible: tr.Compatible, Findings: []findingJSON{}}
		breaking := tr.Breaking()
		for _, f := range tr.Findings {
			t.Findings = append(t.Findings, findingJSON{Path: f.Path, Rule: f.Rule, ValidateRule: f.ValidateRule, Reason: f.Reason,
				Breaks: f.Breaks.String(), Tightening: f.Tightening, Breaking: slices.Contains(breaking, f)})
		}
		out.Types = append(out.Types, t)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// contractJSON is one line of `sluice contracts list --json`.
type contractJSON struct {
	Type          string            `json:"type"`
	Fingerprint   string            `json:"fingerprint"`
	Topic         string            `json:"topic"`
	Compatibility compatibilityJSON `json:"compatibility"`
	Decoders      decodersJSON      `json:"decoders"`
}

type compatibilityJSON struct {
	Mode            contract.Mode `json:"mode"`
	AllowTightening bool          `json:"allow_tightening"`
}

type decodersJSON struct {
	Binary       string `json:"binary"`
	BinaryReason string `json:"binary_reason,omitempty"`
	JSON         string `json:"json"`
	JSONReason   string `json:"json_reason,omitempty"`
}

// listContracts prints the config's contracts.
func listContracts(path string, asJSON bool, w io.Writer) error {
	cfg, err := loadConfig(path, nil, fileConfig.validateContracts)
	if err != nil {
		return err
	}
	registry, err := contract.LoadFile(cfg.Contracts.DescriptorSet, cfg.Contracts.Types, contract.WithMaxDepth(cfg.Gateway.Limits.MaxDepth))
	if err != nil {
		return fmt.Errorf("config: contracts: %w", err)
	}
	policies := cfg.Contracts.policies()
	var list []contractJSON
	for _, typ := range registry.Types() {
		c, _ := registry.Lookup(typ)
		pol := policies.For(typ)
		d := c.Decoders()
		list = append(list, contractJSON{Type: typ, Fingerprint: c.Fingerprint(), Topic: cfg.topicOf(typ),
			Compatibility: compatibilityJSON{Mode: pol.Mode, AllowTightening: pol.AllowTightening},
			Decoders:      decodersJSON{Binary: d.Binary, BinaryReason: d.BinaryReason, JSON: d.JSON, JSONReason: d.JSONReason}})
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tFINGERPRINT\tTOPIC\tCOMPATIBILITY\tDECODERS")
	for _, c := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Type, c.Fingerprint, c.Topic,
			policyText(contract.Policy{Mode: c.Compatibility.Mode, AllowTightening: c.Compatibility.AllowTightening}),
			decodersText(c.Decoders))
	}
	return tw.Flush()
}

func decodersText(d decodersJSON) string {
	side := func(kind, name, why string) string {
		if why != "" {
			return kind + " " + name + " (" + why + ")"
		}
		return kind + " " + name
	}
	return side("binary", d.Binary, d.BinaryReason) + ", " + side("json", d.JSON, d.JSONReason)
}
