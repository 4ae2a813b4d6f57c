package strictyaml

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type block struct {
	Name  string `yaml:"name"`
	Limit int    `yaml:"limit"`
}

func node(t *testing.T, text string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0]
}

func TestDecodeKeepsDefaults(t *testing.T) {
	b := block{Name: "default", Limit: 7}
	if err := Decode(node(t, "limit: 9\n"), &b); err != nil {
		t.Fatal(err)
	}
	if b != (block{Name: "default", Limit: 9}) {
		t.Fatalf("got %+v, want the default name and limit 9", b)
	}
}

func TestDecodeRefusesUnknownKeys(t *testing.T) {
	b := block{Limit: 7}
	err := Decode(node(t, "limit: 9\nlimt: 10\n"), &b)
	if err == nil || !strings.Contains(err.Error(), "limt") {
		t.Fatalf("got %v, want an error naming the unknown key limt", err)
	}
}
