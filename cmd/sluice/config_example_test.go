package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// sampleMark is the trailing comment that marks a value of the example
// config as a sample, not the default.
var sampleMark = regexp.MustCompile(`^#\s*sample\b`)

// TestExampleConfigHeldToDefaults: deploy/sluice.example.yaml has every
// key of sluice config defaults, each at its default unless its line is
// marked "# sample"; a key or list element the defaults lack is a sample
// too, and marked so.
func TestExampleConfigHeldToDefaults(t *testing.T) {
	const path = "../../deploy/sluice.example.yaml"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var example, defaults yaml.Node
	if err := yaml.Unmarshal(raw, &example); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(defaultsYAML()), &defaults); err != nil {
		t.Fatal(err)
	}
	problems := compareExample(defaults.Content[0], example.Content[0], "")
	for _, p := range problems {
		t.Errorf("%s:%s", path, p)
	}
	if len(problems) > 0 {
		t.Logf("sluice config defaults prints every key at its default; a value that differs on purpose ends its line with \"# sample\"")
	}
}

// compareExample lists where the example ex departs from the defaults def
// without a sample mark: a key missing, a key the defaults lack, a value
// not the default.
func compareExample(def, ex *yaml.Node, path string) []string {
	var out []string
	if def.Kind == yaml.MappingNode && ex.Kind == yaml.MappingNode && (len(def.Content) > 0 || path == "") {
		seen := map[string]bool{}
		for i := 0; i+1 < len(ex.Content); i += 2 {
			k, v := ex.Content[i], ex.Content[i+1]
			seen[k.Value] = true
			p := joinPath(path, k.Value)
			if isSample(k) || isSample(v) {
				continue
			}
			dv := valueOf(def, k.Value)
			if dv == nil {
				out = append(out, fmt.Sprintf("%d: %s: not a key of the defaults: mark it # sample", k.Line, p))
				continue
			}
			out = append(out, compareExample(dv, v, p)...)
		}
		for i := 0; i+1 < len(def.Content); i += 2 {
			if k := def.Content[i]; !seen[k.Value] {
				out = append(out, fmt.Sprintf(" %s: missing (default %s)", joinPath(path, k.Value), oneLineYAML(def.Content[i+1])))
			}
		}
		return out
	}
	if a, b := oneLineYAML(def), oneLineYAML(ex); a != b {
		out = append(out, fmt.Sprintf("%d: %s: %s is not the default %s: mark it # sample", ex.Line, path, b, a))
	}
	return out
}

func isSample(n *yaml.Node) bool { return sampleMark.MatchString(strings.TrimSpace(n.LineComment)) }

func valueOf(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// oneLineYAML is n in flow style without comments, to compare values.
func oneLineYAML(n *yaml.Node) string {
	c := plainCopy(n)
	raw, err := yaml.Marshal(c)
	if err != nil {
		return n.Value
	}
	return strings.TrimSpace(string(raw))
}

func plainCopy(n *yaml.Node) *yaml.Node {
	c := &yaml.Node{Kind: n.Kind, Tag: n.ShortTag(), Value: n.Value, Style: yaml.FlowStyle}
	if n.Kind == yaml.ScalarNode {
		c.Style = 0
		if n.ShortTag() == "!!str" {
			c.Style = yaml.DoubleQuotedStyle
		}
	}
	for _, e := range n.Content {
		c.Content = append(c.Content, plainCopy(e))
	}
	return c
}
