package strictyaml

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Error is a value of the file that its field cannot take: where it is
// (line and column, from 1), its YAML path (gateway.limits.max_event_bytes,
// sources[0].name) and what was expected.
type Error struct {
	Line, Column int
	Path         string
	Msg          string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("%d:%d: %s: %s", e.Line, e.Column, e.Path, e.Msg)
}

// Decode decodes n into v, which holds the defaults, after Check: a key v
// has no field for, or a value its field cannot take, is an *Error.
func Decode(n *yaml.Node, v any) error {
	if err := Check(n, reflect.TypeOf(v), ""); err != nil {
		return err
	}
	return n.Decode(v)
}

// maxNodes bounds the nodes Check visits, aliases followed: what lies
// beyond is left to the decoder, which has its own bound on aliases.
const maxNodes = 1 << 16

// Check walks n against the Go type t as yaml.v3 would decode it (yaml
// tags, inline structs, maps, slices, pointers) and returns the first key
// t has no field for, or scalar its field cannot take, as an *Error whose
// Path starts at prefix. A type with its own UnmarshalYAML is decoded on
// its own to check it; when it is a struct with yaml tags and n a
// mapping, its keys are checked first.
func Check(n *yaml.Node, t reflect.Type, prefix string) error {
	c := checker{}
	return c.check(n, t, prefix)
}

type checker struct{ visited int }

var (
	unmarshalerType     = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	durationType        = reflect.TypeFor[time.Duration]()
	nodeType            = reflect.TypeFor[yaml.Node]()
)

func (c *checker) check(n *yaml.Node, t reflect.Type, path string) error {
	if c.visited++; c.visited > maxNodes || n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return c.check(n.Content[0], t, path)
	case yaml.AliasNode:
		return c.check(n.Alias, t, path)
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil // null leaves a field as it is
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nodeType || t.Kind() == reflect.Interface {
		return nil
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		// Such a type may take a scalar too (a JSON pointer or a
		// mapping): only its mapping keys are checked here.
		if n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct && hasYAMLTags(t) {
			if err := c.mapping(n, t, path); err != nil {
				return err
			}
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			var inner *Error
			if errors.As(err, &inner) {
				// Checked by the type's own Decode: its path is n's.
				p := path
				if inner.Path != "" {
					p = join(path, inner.Path)
				}
				return &Error{Line: inner.Line, Column: inner.Column, Path: p, Msg: inner.Msg}
			}
			return at(n, path, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return nil
	}
	if t != durationType && reflect.PointerTo(t).Implements(textUnmarshalerType) {
		if n.Kind != yaml.ScalarNode {
			return at(n, path, "want a "+t.Name()+", got "+kindName(n))
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			return at(n, path, fmt.Sprintf("want a %s, got %q", t.Name(), n.Value))
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return at(n, path, "want a mapping of keys, got "+kindName(n))
		}
		return c.mapping(n, t, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return at(n, path, "want a mapping, got "+kindName(n))
		}
		return c.entries(n, t, path, func(k, v *yaml.Node) error {
			if err := c.check(k, t.Key(), path); err != nil {
				return err
			}
			return c.check(v, t.Elem(), join(path, k.Value))
		})
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			if t.Elem().Kind() == reflect.Uint8 && n.Kind == yaml.ScalarNode {
				return nil // []byte from a string
			}
			return at(n, path, "want a list, got "+kindName(n))
		}
		for i, e := range n.Content {
			if err := c.check(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	return c.scalar(n, t, path)
}

// merge checks the value of a merge key (<<): a mapping or a list of
// them, as the decoder takes it (an alias counts as what it names).
func (c *checker) merge(v *yaml.Node, t reflect.Type, path string) error {
	target := func(n *yaml.Node) *yaml.Node {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		return n
	}
	const want = "a merge (<<) takes a mapping or a list of mappings"
	switch m := target(v); m.Kind {
	case yaml.MappingNode:
		return c.check(m, t, path)
	case yaml.SequenceNode:
		for _, e := range m.Content {
			if target(e).Kind != yaml.MappingNode {
				return at(e, path, want+", got "+kindName(target(e)))
			}
		}
		for _, e := range m.Content {
			if err := c.check(e, t, path); err != nil {
				return err
			}
		}
		return nil
	default:
		return at(v, path, want+", got "+kindName(m))
	}
}

// isMerge says whether k is a merge key: a plain <<, not a quoted one.
func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge"
}

// mapping checks n's keys and values against the struct t.
func (c *checker) mapping(n *yaml.Node, t reflect.Type, path string) error {
	fields := fieldsOf(t)
	return c.entries(n, t, path, func(k, v *yaml.Node) error {
		ft, ok := fields[k.Value]
		if !ok || k.Kind != yaml.ScalarNode {
			return at(k, join(path, k.Value), unknownKey(k.Value, fields))
		}
		return c.check(v, ft, join(path, k.Value))
	})
}

// entries refuses a key the mapping n (of the map or struct type t) gives
// twice, checks its merges against t, and calls each with every other key
// and value, up to the first error.
func (c *checker) entries(n *yaml.Node, t reflect.Type, path string, each func(k, v *yaml.Node) error) error {
	if err := duplicateKey(n, path); err != nil {
		return err
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var err error
		if isMerge(k) {
			err = c.merge(v, t, path)
		} else {
			err = each(k, v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// duplicateKey refuses a mapping that gives a key twice: which one
// counts would be a guess.
func duplicateKey(n *yaml.Node, path string) error {
	first := make(map[string]*yaml.Node)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode || isMerge(k) {
			continue
		}
		if f, ok := first[k.Value]; ok {
			return at(k, join(path, k.Value), fmt.Sprintf("given twice (first at line %d)", f.Line))
		}
		first[k.Value] = k
	}
	return nil
}

func (c *checker) scalar(n *yaml.Node, t reflect.Type, path string) error {
	want := wantOf(t)
	if n.Kind != yaml.ScalarNode {
		return at(n, path, "want "+want+", got "+kindName(n))
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		if t.Kind() == reflect.String {
			return at(n, path, "want "+want+", got "+n.Value)
		}
		return at(n, path, fmt.Sprintf("want %s, got %q", want, n.Value))
	}
	return nil
}

// wantOf says what a scalar of type t is written as.
func wantOf(t reflect.Type) string {
	if t == durationType {
		return "a duration (300ms, 10s, 5m, 1h)"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	}
	return "a " + t.String()
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "null"
		}
		return strconv.Quote(n.Value)
	}
	return "something else"
}

func at(n *yaml.Node, path, msg string) *Error {
	return &Error{Line: n.Line, Column: n.Column, Path: path, Msg: msg}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// unknownKey says that key is not one of fields, and which it may have
// meant.
func unknownKey(key string, fields map[string]reflect.Type) string {
	best, bestD := "", 0
	for name := range fields {
		d := distance(key, name)
		if best == "" || d < bestD || d == bestD && name < best {
			best, bestD = name, d
		}
	}
	if best != "" && bestD <= max(2, len(key)/3) {
		return "unknown key (did you mean " + best + "?)"
	}
	return "unknown key"
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Field is a key of a struct as yaml.v3 decodes it.
type Field struct {
	Key   string
	Index []int
	Type  reflect.Type
}

// Fields are the keys of the struct t in order, inline structs'
// flattened, as yaml.v3 decodes them.
func Fields(t reflect.Type) []Field {
	var out []Field
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			if ft.Kind() == reflect.Struct {
				for _, inner := range Fields(ft) {
					inner.Index = append([]int{i}, inner.Index...)
					out = append(out, inner)
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, Field{Key: name, Index: []int{i}, Type: f.Type})
	}
	return out
}

func fieldsOf(t reflect.Type) map[string]reflect.Type {
	m := make(map[string]reflect.Type)
	for _, f := range Fields(t) {
		m[f.Key] = f.Type
	}
	return m
}

func hasYAMLTags(t reflect.Type) bool {
	for i := range t.NumField() {
		if _, ok := t.Field(i).Tag.Lookup("yaml"); ok {
			return true
		}
	}
	return false
}
