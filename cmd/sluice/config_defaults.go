package main

//go:generate go run ../../internal/configdoc/gen -root ../.. -o config_comments.go
//go:generate go test -run TestConfigDocsFresh . -args -write-config-docs

import (
	"context"
	"encoding"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/internal/strictyaml"
	"github.com/sluicehq/sluice/pull"
)

const configUsage = `usage:
  sluice config defaults

prints the whole config file with every key at its default, each with its
comment. A list (sources, pollers) is empty by default: one element of it is
printed commented out, marked as a sample, to show its shape.
`

// runConfigCmd is `sluice config defaults`.
func runConfigCmd(_ context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) != 1 || args[0] != "defaults" {
		return errors.New("config: want a subcommand: sluice config defaults")
	}
	_, err := io.WriteString(stdout, defaultsYAML())
	return err
}

// configEntry is one key of the config file, in the file's order.
type configEntry struct {
	path    string // sources[].webhook.scheme
	key     string // scheme
	depth   int    // indentation, in levels
	typ     string // what it takes: duration, integer, list of strings, mapping
	value   string // the default as YAML when it is written on the key's line
	comment string
	block   bool // a mapping of keys below
	sample  bool // within a sample list element
	// item says the entry starts a list element ("- " before the key).
	item bool
}

// samples are the list elements shown as samples: their package's
// defaults for one element, as a file that names only the required keys
// would have them.
var samples = map[reflect.Type]func() any{
	reflect.TypeFor[sourceFile](): func() any {
		return sourceFile{SourceConfig: gateway.SourceConfig{Name: "checkout", EventTypes: []string{"examples.shop.v1.OrderPlaced"}}}
	},
	reflect.TypeFor[pull.Config](): func() any {
		c := pull.NewDefaultConfig()
		c.Name = "acme-orders"
		return c
	},
	reflect.TypeFor[gateway.WebhookConfig](): func() any { return gateway.NewDefaultWebhookConfig() },
}

// configEntries are the keys of the default config, and of one sample of
// each list of mappings.
func configEntries() []configEntry {
	var out []configEntry
	walkConfig(&out, reflect.ValueOf(defaultFileConfig()), "", 0, false)
	return out
}

func commentOf(t reflect.Type, f reflect.StructField) string {
	pkg := t.PkgPath()
	return fieldComments[pkg+"."+t.Name()+"."+f.Name]
}

// keyNames writes the Go names of t's fields in text as their keys in
// the file: "MaxEventBytes bounds" reads "max_event_bytes bounds". A name
// of one capital (Kafka, Group) is a key only as the comment's first
// word: elsewhere it may be prose.
func keyNames(t reflect.Type, text string) string {
	for _, f := range strictyaml.Fields(t) {
		name := t.FieldByIndex(f.Index).Name
		if name == f.Key || !strings.Contains(text, name) {
			continue
		}
		if capitals(name) > 1 {
			text = regexp.MustCompile(`\b`+name+`\b`).ReplaceAllString(text, f.Key)
		} else if rest, ok := strings.CutPrefix(text, name+" "); ok {
			text = f.Key + " " + rest
		}
	}
	return text
}

func capitals(s string) int {
	n := 0
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			n++
		}
	}
	return n
}

func walkConfig(out *[]configEntry, v reflect.Value, path string, depth int, sample bool) {
	t := v.Type()
	for _, f := range strictyaml.Fields(t) {
		// The comment is the field's own, or the inline struct's.
		owner, sf := t, t.FieldByIndex(f.Index)
		if len(f.Index) > 1 {
			owner = t.FieldByIndex(f.Index[:len(f.Index)-1]).Type
		}
		fv := v.FieldByIndex(f.Index)
		e := configEntry{path: joinPath(path, f.Key), key: f.Key, depth: depth, comment: keyNames(t, commentOf(owner, sf)), sample: sample}
		addValue(out, e, fv)
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// addValue adds e, the key of v, and what lies below it.
func addValue(out *[]configEntry, e configEntry, v reflect.Value) {
	t := v.Type()
	for t.Kind() == reflect.Pointer {
		if v.IsNil() {
			if mk, ok := samples[t.Elem()]; ok && t.Elem().Kind() == reflect.Struct {
				e.typ, e.value = "mapping", "null"
				if e.sample {
					e.block = true // within a sample, its keys are shown
				} else {
					e.comment = strings.TrimSpace(e.comment + " Unset by default; the sample below shows its keys.")
				}
				*out = append(*out, e)
				walkConfig(out, reflect.ValueOf(mk()), e.path, e.depth+1, true)
				return
			}
			e.typ, e.value = typeName(t.Elem()), "null"
			*out = append(*out, e)
			return
		}
		v, t = v.Elem(), t.Elem()
	}
	switch {
	case isScalar(t):
		e.typ, e.value = typeName(t), scalarYAML(v)
		*out = append(*out, e)
	case t.Kind() == reflect.Struct:
		e.typ, e.block = "mapping", true
		*out = append(*out, e)
		walkConfig(out, v, e.path, e.depth+1, e.sample)
	case t.Kind() == reflect.Slice && isScalar(t.Elem()):
		e.typ, e.value = "list of "+typeName(t.Elem())+"s", flowYAML(v)
		*out = append(*out, e)
	case t.Kind() == reflect.Slice:
		e.typ, e.value = "list of mappings", flowYAML(v)
		*out = append(*out, e)
		el := t.Elem()
		if mk, ok := samples[el]; ok && v.Len() == 0 {
			first := len(*out)
			walkConfig(out, reflect.ValueOf(mk()), e.path+"[]", e.depth+1, true)
			if len(*out) > first {
				(*out)[first].item = true
			}
		}
	case t.Kind() == reflect.Map:
		e.typ, e.value = "mapping of "+typeName(t.Key())+" to "+typeName(t.Elem()), flowYAML(v)
		*out = append(*out, e)
	default:
		e.typ, e.value = t.String(), flowYAML(v)
		*out = append(*out, e)
	}
}

var (
	durationType      = reflect.TypeFor[time.Duration]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// isScalar says whether t is written as one YAML scalar.
func isScalar(t reflect.Type) bool {
	if t == durationType || t.Implements(textMarshalerType) {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	case reflect.Struct:
		// A struct read by its own UnmarshalYAML, keyless (a scalar or
		// a mapping of its own): written as a string.
		return reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]()) && !hasYAMLKeys(t)
	}
	return false
}

func hasYAMLKeys(t reflect.Type) bool {
	for i := range t.NumField() {
		if _, ok := t.Field(i).Tag.Lookup("yaml"); ok {
			return true
		}
	}
	return false
}

func typeName(t reflect.Type) string {
	if t == durationType {
		return "duration"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Struct, reflect.Map:
		if isScalar(t) {
			return "string"
		}
		return "mapping"
	case reflect.Slice:
		return "list"
	case reflect.Pointer:
		return typeName(t.Elem())
	}
	return t.String()
}

// scalarYAML is v as a YAML scalar.
func scalarYAML(v reflect.Value) string {
	if v.Type() == durationType {
		return durationText(time.Duration(v.Int()))
	}
	if v.Kind() == reflect.Struct && !v.Type().Implements(textMarshalerType) {
		return `""` // a keyless struct: only its zero value is a default
	}
	return flowYAML(v)
}

// flowYAML is v in YAML flow style, on one line.
func flowYAML(v reflect.Value) string {
	n := &yaml.Node{}
	if err := n.Encode(v.Interface()); err != nil {
		return fmt.Sprint(v.Interface())
	}
	setFlow(n)
	raw, err := yaml.Marshal(n)
	if err != nil {
		return fmt.Sprint(v.Interface())
	}
	s := strings.TrimSpace(string(raw))
	if s == "" && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		return `""`
	}
	return s
}

func setFlow(n *yaml.Node) {
	n.Style |= yaml.FlowStyle
	if n.Kind == yaml.ScalarNode {
		n.Style &^= yaml.FlowStyle
	}
	for _, c := range n.Content {
		setFlow(c)
	}
}

// defaultsYAML is `sluice config defaults`: the default config file, each
// key under its comment, the sample elements of lists commented out.
func defaultsYAML() string {
	var b strings.Builder
	b.WriteString("# sluice's config file with every key at its default (sluice config defaults).\n")
	b.WriteString("# A file sets only what differs. Relative paths resolve against the file's directory.\n")
	b.WriteString("# Lines marked \"sample\" are commented out: they show the shape of a list element\n# (a source, a poller) or of a block that is unset by default; they are not defaults.\n")
	inSample := false
	for _, e := range configEntries() {
		if e.depth == 0 {
			b.WriteString("\n")
		}
		indent := strings.Repeat("  ", e.depth)
		commentIndent := indent
		if e.item {
			commentIndent = strings.Repeat("  ", e.depth-1)
		}
		var lines []string
		for _, line := range wrap(e.comment, 76-len(indent)) {
			lines = append(lines, commentIndent+"# "+line)
		}
		if e.item {
			// The element's first key carries the list's dash.
			indent = strings.Repeat("  ", e.depth-1) + "- "
		}
		if e.block {
			lines = append(lines, indent+e.key+":")
		} else {
			lines = append(lines, indent+e.key+": "+e.value)
		}
		if e.sample && !inSample {
			b.WriteString("# sample, not a default:\n")
		}
		inSample = e.sample
		for _, line := range lines {
			if e.sample {
				line = "# " + line
			}
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// wrap breaks text into lines of at most width bytes, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// durationText is d as it is written in a config file: 5m, not 5m0s.
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// configReference is docs/config.md: every key of the config file, with
// its type, default and comment, block by block.
func configReference() string {
	var b strings.Builder
	b.WriteString(`# Config reference

<!-- Generated from the config types by go generate ./cmd/sluice; do not edit. -->

Every key of sluice's config file: its YAML path, what it takes, its default
and what it does. A config file sets only what differs from the defaults; a key
no block has is an error that names the file, line and path. Relative paths
(descriptor_set, TLS and token files, the spool's dir, the SQLite sink's path,
webhook secret files) resolve against the config file's directory.

` + "`sluice config defaults`" + ` prints the same as a YAML file, each key under its
comment. The keys of ` + "`sources[]`" + ` and ` + "`pollers[]`" + ` are those of one list element:
both lists are empty by default, and the defaults shown are an element's.
`)
	for _, e := range configEntries() {
		if e.depth == 0 {
			fmt.Fprintf(&b, "\n## %s\n\n", e.key)
			if e.comment != "" {
				b.WriteString(strings.Join(wrap(e.comment, 80), "\n") + "\n\n")
			}
			b.WriteString("| Key | Type | Default | Description |\n|---|---|---|---|\n")
			if !e.block {
				fmt.Fprintf(&b, "| `%s` | %s | %s | |\n", e.path, e.typ, cell(e))
			}
			continue
		}
		comment := strings.ReplaceAll(e.comment, "|", "\\|")
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", e.path, e.typ, cell(e), comment)
	}
	return b.String()
}

// cell is e's default in a table cell.
func cell(e configEntry) string {
	if e.block {
		return ""
	}
	return "`" + strings.ReplaceAll(e.value, "|", "\\|") + "`"
}
