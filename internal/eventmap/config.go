package eventmap

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/internal/jsonpointer"
)

// Config maps a document to an event. Start from NewDefaultConfig;
// Validate names the first wrong field.
type Config struct {
	// ID is where the event id is: a string or an integer. Required.
	ID Source `yaml:"id"`
	// Type is the contract type of every event, or where the provider's
	// own type is, for Types to map. Required.
	Type TypeSource `yaml:"type"`
	// Types maps the provider's types to contract types, when Type reads
	// one.
	Types map[string]string `yaml:"types"`
	// DefaultType is the contract type of a provider type that Types
	// lacks. Empty: such a document is an *UnknownTypeError.
	DefaultType string `yaml:"default_type"`
	// OccurredAt is where the event time is: an RFC 3339 string or Unix
	// seconds. Unset: Input.Time.
	OccurredAt Source `yaml:"occurred_at"`
	// PartitionKey is where the partition key is. Unset, missing or null:
	// none, and the gateway keys the event by its id.
	PartitionKey Source `yaml:"partition_key"`
	// Payload is the JSON pointer to the contract message's JSON object;
	// "" (the default) is the whole document.
	Payload string `yaml:"payload"`
}

// NewDefaultConfig returns the defaults documented on Config: the payload
// is the whole document, the event time the caller's. ID and Type must be
// set.
func NewDefaultConfig() Config { return Config{} }

// Source is where one value of an event is read: a JSON pointer into the
// document or a header of the request it came with. The zero Source reads
// nothing.
type Source struct {
	// Pointer is an RFC 6901 JSON pointer into the document.
	Pointer string `yaml:"pointer"`
	// Header is the name of a request header.
	Header string `yaml:"header"`
}

// Pointer is the Source at JSON pointer p.
func Pointer(p string) Source { return Source{Pointer: p} }

// Header is the Source in the request header name.
func Header(name string) Source { return Source{Header: name} }

// IsZero reports whether s reads nothing.
func (s Source) IsZero() bool { return s.Pointer == "" && s.Header == "" }

func (s Source) String() string {
	switch {
	case s.Header != "":
		return "header " + s.Header
	case s.Pointer != "":
		return "pointer " + s.Pointer
	}
	return "nothing"
}

// UnmarshalYAML reads a JSON pointer ("/id") or a mapping with pointer or
// header ({header: X-GitHub-Delivery}), and refuses other keys.
func (s *Source) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*s = Source{}
		return n.Decode(&s.Pointer)
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: want a JSON pointer or {pointer: ...} or {header: ...}", n.Line)
	}
	if err := onlyKeys(n, "pointer", "header"); err != nil {
		return err
	}
	type plain Source
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*s = Source(p)
	return nil
}

// onlyKeys refuses a mapping with a key not in keys: yaml.v3 does not
// pass KnownFields on to a custom unmarshaller's Decode.
func onlyKeys(n *yaml.Node, keys ...string) error {
	for i := 0; i < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(keys, k.Value) {
			return fmt.Errorf("line %d: field %s not found: use %s", k.Line, k.Value, strings.Join(keys, " or "))
		}
	}
	return nil
}

// TypeSource is where an event's type comes from: one contract type for
// every document, or the provider's type read from a Source.
type TypeSource struct {
	// Contract is the contract type of every event.
	Contract string
	// From is where the provider's type is read; Config.Types maps it to
	// a contract type.
	From Source
}

// FixedType is the TypeSource of documents that are all of one contract
// type.
func FixedType(contractType string) TypeSource { return TypeSource{Contract: contractType} }

// TypeFrom is the TypeSource that reads the provider's type at s.
func TypeFrom(s Source) TypeSource { return TypeSource{From: s} }

// IsZero reports whether t names no type.
func (t TypeSource) IsZero() bool { return t.Contract == "" && t.From.IsZero() }

// UnmarshalYAML reads a contract type (examples.shop.v1.OrderPlaced) or a
// Source of the provider's type ({header: X-GitHub-Event}, {pointer:
// /type}, or /type: no contract type starts with '/').
func (t *TypeSource) UnmarshalYAML(n *yaml.Node) error {
	*t = TypeSource{}
	if n.Kind == yaml.ScalarNode {
		var s string
		if err := n.Decode(&s); err != nil {
			return err
		}
		if strings.HasPrefix(s, "/") {
			t.From = Pointer(s)
		} else {
			t.Contract = s
		}
		return nil
	}
	return t.From.UnmarshalYAML(n)
}

// ConfigError is a Config field and what is wrong with it. Field is the
// field's YAML key ("id", "type", "types", "default_type",
// "occurred_at", "partition_key", "payload"); a caller that nests the
// block puts its own prefix on it.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return "eventmap: " + e.Field + ": " + e.Reason }

// Validate reports the first wrong field as a *ConfigError. It checks
// syntax; whether the contract types exist is the caller's to check.
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if c.ID.IsZero() {
		return bad("id", "must be set: a JSON pointer to the id, like /id, or {header: Name}")
	}
	for _, f := range []struct {
		name string
		src  Source
	}{{"id", c.ID}, {"type", c.Type.From}, {"occurred_at", c.OccurredAt}, {"partition_key", c.PartitionKey}} {
		if err := f.src.check(); err != nil {
			return bad(f.name, "%v", err)
		}
	}
	switch t := c.Type; {
	case t.IsZero():
		return bad("type", "must be set: a contract type, or {header: Name} or {pointer: /type} of the provider's type, with types")
	case t.Contract != "" && !t.From.IsZero():
		return bad("type", "a contract type or a source of the provider's type, not both")
	case t.Contract != "":
		if err := checkTypeName(t.Contract); err != nil {
			return bad("type", "%v", err)
		}
		if len(c.Types) > 0 {
			return bad("types", "maps the provider's types: set type to {header: Name} or {pointer: /type} of it")
		}
		if c.DefaultType != "" {
			return bad("default_type", "is for provider types that types lacks: set type to {header: Name} or {pointer: /type} of it")
		}
	default:
		if len(c.Types) == 0 && c.DefaultType == "" {
			return bad("types", "must map the provider's types to contract types, or default_type be set")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Types)) {
		if k == "" {
			return bad("types", "a provider type is empty")
		}
		if err := checkTypeName(c.Types[k]); err != nil {
			return bad("types", "%q: %v", k, err)
		}
	}
	if c.DefaultType != "" {
		if err := checkTypeName(c.DefaultType); err != nil {
			return bad("default_type", "%v", err)
		}
	}
	if err := jsonpointer.Check(c.Payload); err != nil {
		return bad("payload", "%v", err)
	}
	return nil
}

// check checks a Source's syntax; the zero Source is fine.
func (s Source) check() error {
	switch {
	case s.Pointer != "" && s.Header != "":
		return fmt.Errorf("a pointer or a header, not both")
	case s.Header != "":
		if !validHeaderName(s.Header) {
			return fmt.Errorf("%q is not a header name", s.Header)
		}
	}
	return jsonpointer.Check(s.Pointer)
}

// validHeaderName reports whether s is a field name: an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// maxTypeChars is Event.type's max_len in ingest.proto.
const maxTypeChars = 200

// checkTypeName checks that s can name a protobuf message: dot-separated
// identifiers, within Event.type's length.
func checkTypeName(s string) error {
	if s == "" {
		return fmt.Errorf("a contract type is empty")
	}
	if len(s) > maxTypeChars {
		return fmt.Errorf("%.40q...: a contract type has at most %d characters", s, maxTypeChars)
	}
	for _, part := range strings.Split(s, ".") {
		ok := part != "" && !('0' <= part[0] && part[0] <= '9')
		for i := 0; ok && i < len(part); i++ {
			c := part[i]
			ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
		}
		if !ok {
			return fmt.Errorf("%q is not a protobuf message name, like examples.shop.v1.OrderPlaced", s)
		}
	}
	return nil
}

// ContractTypes are the contract types c can map a document to: its
// fixed type, or the values of Types and DefaultType, sorted, each once.
func (c Config) ContractTypes() []string {
	if c.Type.Contract != "" {
		return []string{c.Type.Contract}
	}
	out := slices.Collect(maps.Values(c.Types))
	if c.DefaultType != "" {
		out = append(out, c.DefaultType)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Inherit returns c with what it leaves unset taken from d: the defaults
// of a webhook scheme, for one. Each Source, Type and the payload pointer
// are taken when c's is unset; Types and DefaultType together, when c
// has neither and its type is not a fixed contract type.
func (c Config) Inherit(d Config) Config {
	if c.ID.IsZero() {
		c.ID = d.ID
	}
	if c.Type.IsZero() {
		c.Type = d.Type
	}
	if len(c.Types) == 0 && c.DefaultType == "" && c.Type.Contract == "" {
		c.Types, c.DefaultType = maps.Clone(d.Types), d.DefaultType
	}
	if c.OccurredAt.IsZero() {
		c.OccurredAt = d.OccurredAt
	}
	if c.PartitionKey.IsZero() {
		c.PartitionKey = d.PartitionKey
	}
	if c.Payload == "" {
		c.Payload = d.Payload
	}
	return c
}
