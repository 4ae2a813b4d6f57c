package strictyaml

import (
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzCheck: Check never panics, and what it passes decodes: a value it
// lets through is one the field takes.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		"block: {name: a, limit: 3}\ntimeout: 10s\nsize: 4\non: true\nlist: [{name: b}]\ntags: {a: b}\nextra: 1.5\n",
		"block:\n  limit: lots\n", "size: -1\n", "base: &b {name: a}\nblock:\n  <<: *b\n", "list: [*x]\n", "tags: {a: [x]}\n",
		"on: yes\n", "size: 0x10\n", "timeout: 1h2m\n", "block: ~\n", "extra: .inf\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var doc yaml.Node
		if yaml.Unmarshal(raw, &doc) != nil || doc.Kind == 0 {
			return
		}
		if err := Check(&doc, reflect.TypeFor[outer](), ""); err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("%T: %v, want an *Error", err, err)
			}
			return
		}
		var v outer
		if err := doc.Decode(&v); err != nil {
			t.Fatalf("Check passed, Decode: %v", err)
		}
	})
}
