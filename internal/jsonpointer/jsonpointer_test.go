package jsonpointer

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func TestLookup(t *testing.T) {
	doc := []byte(`{"a":{"b/c":[10,{"~d":"x"}]},"":1,"n":null}`)
	for _, c := range []struct{ ptr, want string }{
		{"", string(doc)},
		{"/a/b~1c/0", "10"},
		{"/a/b~1c/1/~0d", `"x"`},
		{"/", "1"},
		{"/n", "null"},
		{"/a/b~1c/2", "!"},
		{"/a/b~1c/01", "!"},
		{"/a/b~1c/-", "!"},
		{"/zz", "!"},
		{"/a/b~1c/0/x", "!"},
		{"a", "!"},
	} {
		v, err := Lookup(doc, c.ptr)
		got := string(v)
		if err != nil {
			got = "!"
		}
		if got != c.want {
			t.Errorf("%q: %q (%v), want %q", c.ptr, got, err, c.want)
		}
		dv, derr := NewDoc(doc).Lookup(c.ptr)
		if !bytes.Equal(dv, v) || (derr == nil) != (err == nil) {
			t.Errorf("%q: Doc.Lookup %q (%v), Lookup %q (%v)", c.ptr, dv, derr, v, err)
		}
	}
}

// TestLookupErrors: a pointer that names nothing is ErrNotFound; a bad
// pointer or a document that is not JSON is not.
func TestLookupErrors(t *testing.T) {
	for _, c := range []struct {
		doc, ptr string
		notFound bool
	}{
		{`{"a":1}`, "/b", true},
		{`{"a":1}`, "/a/b", true},
		{`[1]`, "/1", true},
		{`[1]`, "/x", true},
		{`{"a":1}`, "a", false},
		{`{"a":1}`, "/~2", false},
		{`{"a":`, "/a", false},
		{`nope`, "", false},
		{`{"a":[1,}`, "/a/0", false},
	} {
		_, err := Lookup([]byte(c.doc), c.ptr)
		if err == nil || errors.Is(err, ErrNotFound) != c.notFound {
			t.Errorf("%s %q: %v, want not found %v", c.doc, c.ptr, err, c.notFound)
		}
	}
}

func TestScalarString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`"a\u00e9"`, "aé"},
		{`12345678901234567890`, "12345678901234567890"},
		{`-1.5e3`, "-1.5e3"},
		{`true`, "!"},
		{`null`, "!"},
		{`{}`, "!"},
		{`[]`, "!"},
		{``, "!"},
	} {
		got, err := ScalarString(json.RawMessage(c.in))
		if err != nil {
			got = "!"
		}
		if got != c.want {
			t.Errorf("%s: %q (%v), want %q", c.in, got, err, c.want)
		}
	}
}

// FuzzLookup: any document and pointer give a valid JSON value or an
// error, never a panic, and a Doc answers as Lookup does, the second time
// too (from its memo).
func FuzzLookup(f *testing.F) {
	f.Add(`{"a":{"b/c":[10,{"~d":"x"}]},"":1}`, "/a/b~1c/1/~0d", "/a/b~1c/0")
	f.Add(`[1,2,{"id":"z"}]`, "/2/id", "/0")
	f.Add(`{"a/b":{"~c":[{"id":"x"}]}}`, "/a~1b/~0c/0/id", "/a~1b")
	f.Add(`{"id":null}`, "/id/x", "/01")
	f.Add(` {"a" : [ 1 , 2 ] } `, "/a/1", "")
	f.Fuzz(func(t *testing.T, doc, p, q string) {
		d := NewDoc([]byte(doc))
		for _, ptr := range []string{p, q, p} {
			v, err := Lookup([]byte(doc), ptr)
			dv, derr := d.Lookup(ptr)
			if (err == nil) != (derr == nil) || !bytes.Equal(v, dv) {
				t.Fatalf("%q in %q: Lookup %q, %v; Doc.Lookup %q, %v", ptr, doc, v, err, dv, derr)
			}
			if err == nil && !json.Valid(v) {
				t.Fatalf("%q in %q: %q is not JSON", ptr, doc, v)
			}
			if err == nil && ptr == "" && !bytes.Equal(v, bytes.TrimSpace([]byte(doc))) {
				t.Fatalf("the whole of %q is %q", doc, v)
			}
		}
	})
}
