package strictyaml

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

type block struct {
	Name  string `yaml:"name"`
	Limit int    `yaml:"limit"`
}

type outer struct {
	Block   block             `yaml:"block"`
	Timeout time.Duration     `yaml:"timeout"`
	Size    uint32            `yaml:"size"`
	On      bool              `yaml:"on"`
	List    []block           `yaml:"list"`
	Tags    map[string]string `yaml:"tags"`
	inlined `yaml:",inline"`
}

type inlined struct {
	Extra float64 `yaml:"extra"`
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

// TestCheckNamesPathAndWant: each bad value comes back with its line,
// column, YAML path and what the field takes.
func TestCheckNamesPathAndWant(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"block:\n  limit: 9\n  limt: 10\n", "3:3: block.limt: unknown key (did you mean limit?)"},
		{"block:\n  limit: lots\n", `2:10: block.limit: want an integer, got "lots"`},
		{"timeout: soon\n", `1:10: timeout: want a duration (300ms, 10s, 5m, 1h), got "soon"`},
		{"size: -1\n", `1:7: size: want a non-negative integer, got "-1"`},
		{"on: maybe\n", `1:5: on: want true or false, got "maybe"`},
		{"extra: x\n", `1:8: extra: want a number, got "x"`},
		{"list:\n  - name: a\n  - nme: b\n", "3:5: list[1].nme: unknown key (did you mean name?)"},
		{"list: {name: a}\n", "1:7: list: want a list, got a mapping"},
		{"block: [1]\n", "1:8: block: want a mapping of keys, got a list"},
		{"tags: {a: [x]}\n", "1:11: tags.a: want a string, got a list"},
		{"zzzzzz: 1\n", "1:1: zzzzzz: unknown key"},
		{"block:\n  limit: 1\n  limit: 2\n", "3:3: block.limit: given twice (first at line 2)"},
		{"tags: {a: x, a: y}\n", "1:14: tags.a: given twice (first at line 1)"},
		{"base: &b {name: a}\nblock:\n  <<: *b\n  limit: 1\n", "1:1: base: unknown key"},
		// A merge takes mappings only, as the decoder does; a quoted << is
		// a key like any other.
		{"<<:\n", "1:4: a merge (<<) takes a mapping or a list of mappings, got null"},
		{"block:\n  <<: [{name: a}, x]\n", `2:19: block: a merge (<<) takes a mapping or a list of mappings, got "x"`},
		{"tags: {<<: [a]}\n", `1:13: tags: a merge (<<) takes a mapping or a list of mappings, got "a"`},
		{"block: {'<<': {name: a}}\n", "1:9: block.<<: unknown key"},
	} {
		err := Check(node(t, c.yaml), reflectTypeOf[outer](), "")
		var e *Error
		if !errors.As(err, &e) || err.Error() != c.want {
			t.Errorf("%q: got %v, want %s", c.yaml, err, c.want)
		}
	}
	if err := Check(node(t, "block: {name: a, limit: 3}\ntimeout: 10s\nsize: 4\non: true\nlist: [{name: b}]\ntags: {a: b}\nextra: 1.5\n"), reflectTypeOf[outer](), ""); err != nil {
		t.Fatalf("a good file: %v", err)
	}
}

func TestDecodeRefusesUnknownKeys(t *testing.T) {
	b := block{Limit: 7}
	err := Decode(node(t, "limit: 9\nlimt: 10\n"), &b)
	if err == nil || err.Error() != "2:1: limt: unknown key (did you mean limit?)" {
		t.Fatalf("got %v, want an error naming the unknown key limt", err)
	}
}

func reflectTypeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }
