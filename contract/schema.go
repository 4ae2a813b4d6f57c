package contract

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Schema is a JSON Schema (draft 2020-12, as OpenAPI 3.1 takes it) of a
// contract's payload as REST accepts it.
//
// A Schema is sound, not complete: every value it admits passes the
// contract's decoding and its protovalidate rules, but some values the
// contract accepts are outside it. Where a rule has no exact JSON Schema
// form the schema is narrower than the rule: max_bytes becomes a length a
// quarter as long, string.email a conservative pattern, an enum its names
// without their numbers, a timestamp one in UTC whose day is at most 28.
// A rule it cannot narrow soundly (a CEL expression outside the subset
// celSchema reads, a predefined rule, bytes rules) makes JSONSchema fail
// with an *UnexpressedRuleError rather than describe the type wrongly.
type Schema struct {
	Ref                  string             `json:"$ref,omitempty"`
	Description          string             `json:"description,omitempty"`
	Type                 string             `json:"type,omitempty"`
	Const                any                `json:"const,omitempty"`
	Enum                 []any              `json:"enum,omitempty"`
	Pattern              string             `json:"pattern,omitempty"`
	MinLength            *uint64            `json:"minLength,omitempty"`
	MaxLength            *uint64            `json:"maxLength,omitempty"`
	Minimum              json.Number        `json:"minimum,omitempty"`
	Maximum              json.Number        `json:"maximum,omitempty"`
	ExclusiveMinimum     json.Number        `json:"exclusiveMinimum,omitempty"`
	ExclusiveMaximum     json.Number        `json:"exclusiveMaximum,omitempty"`
	Items                *Schema            `json:"items,omitempty"`
	MinItems             *uint64            `json:"minItems,omitempty"`
	MaxItems             *uint64            `json:"maxItems,omitempty"`
	UniqueItems          bool               `json:"uniqueItems,omitempty"`
	Properties           map[string]*Schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	AdditionalProperties *Schema            `json:"additionalProperties,omitempty"`
	PropertyNames        *Schema            `json:"propertyNames,omitempty"`
	MinProperties        *uint64            `json:"minProperties,omitempty"`
	MaxProperties        *uint64            `json:"maxProperties,omitempty"`
	AllOf                []*Schema          `json:"allOf,omitempty"`
	AnyOf                []*Schema          `json:"anyOf,omitempty"`
	Not                  *Schema            `json:"not,omitempty"`
	// Nothing, when true, is the schema false: no value is valid. It is
	// written as false.
	Nothing bool `json:"-"`
}

// MarshalJSON writes Nothing as the schema false.
func (s *Schema) MarshalJSON() ([]byte, error) {
	if s.Nothing {
		return []byte(`false`), nil
	}
	type plain Schema
	return json.Marshal((*plain)(s))
}

// UnexpressedRuleError says which rule of a contract JSONSchema could not
// describe soundly.
type UnexpressedRuleError struct {
	Field string // full name of the field or message that has the rule
	Rule  string
}

func (e *UnexpressedRuleError) Error() string {
	return fmt.Sprintf("contract: %s: rule %s has no JSON Schema form", e.Field, e.Rule)
}

// JSONSchema returns the schema of the contract's payload. The messages it
// refers to are added to defs under their full names, referred to as
// refPrefix + name; a message already in defs is not built again.
func (c *Contract) JSONSchema(defs map[string]*Schema, refPrefix string) (*Schema, error) {
	b := &schemaBuilder{defs: defs, refPrefix: refPrefix, registry: c.registry}
	added := map[string]bool{}
	s, err := b.messageRef(c.desc, added)
	if err != nil {
		for name := range added { // leave defs as they were
			delete(defs, name)
		}
		return nil, err
	}
	return s, nil
}

type schemaBuilder struct {
	defs      map[string]*Schema
	refPrefix string
	registry  *Registry
}

// messageRef is a reference to md's definition, which it builds first
// when defs has none.
func (b *schemaBuilder) messageRef(md protoreflect.MessageDescriptor, added map[string]bool) (*Schema, error) {
	if s := wellKnownSchema(md); s != nil {
		return s, nil
	}
	name := string(md.FullName())
	if _, ok := b.defs[name]; !ok {
		def := &Schema{Type: "object"}
		b.defs[name] = def // before its fields: a message may refer to itself
		added[name] = true
		if err := b.message(md, def, added); err != nil {
			return nil, err
		}
	}
	return &Schema{Ref: b.refPrefix + name}, nil
}

func (b *schemaBuilder) message(md protoreflect.MessageDescriptor, def *Schema, added map[string]bool) error {
	required, err := b.failsWhenUnset(md)
	if err != nil {
		return err
	}
	def.Properties = map[string]*Schema{}
	def.AdditionalProperties = &Schema{Nothing: true}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		s, err := b.field(fd, added)
		if err != nil {
			return err
		}
		def.Properties[string(fd.Name())] = s
		if required[fd.Number()] {
			def.Required = append(def.Required, string(fd.Name()))
		}
	}
	sort.Strings(def.Required)
	oneofs := md.Oneofs()
	for i := 0; i < oneofs.Len(); i++ {
		od := oneofs.Get(i)
		if od.IsSynthetic() {
			continue
		}
		def.AllOf = append(def.AllOf, oneofSchemas(od)...)
	}
	if mr, ok := proto.GetExtension(md.Options(), validate.E_Message).(*validate.MessageRules); ok && mr != nil {
		if err := knownFields(mr.ProtoReflect(), string(md.FullName()), "cel", "cel_expression"); err != nil {
			return err
		}
		exprs := mr.GetCelExpression()
		for _, rule := range mr.GetCel() {
			exprs = append(exprs, rule.GetExpression())
		}
		for _, expr := range exprs {
			s, err := celSchema(md, expr)
			if err != nil {
				return &UnexpressedRuleError{Field: string(md.FullName()), Rule: "cel " + strconv.Quote(expr) + ": " + err.Error()}
			}
			def.AllOf = append(def.AllOf, s)
		}
	}
	return nil
}

// oneofSchemas allows at most one field of od, and requires one when its
// rules say so.
func oneofSchemas(od protoreflect.OneofDescriptor) []*Schema {
	var out []*Schema
	fields := od.Fields()
	for i := 0; i < fields.Len(); i++ {
		for j := i + 1; j < fields.Len(); j++ {
			out = append(out, &Schema{Not: &Schema{Required: []string{string(fields.Get(i).Name()), string(fields.Get(j).Name())}}})
		}
	}
	if r, ok := proto.GetExtension(od.Options(), validate.E_Oneof).(*validate.OneofRules); ok && r.GetRequired() {
		one := &Schema{}
		for i := 0; i < fields.Len(); i++ {
			one.AnyOf = append(one.AnyOf, &Schema{Required: []string{string(fields.Get(i).Name())}})
		}
		out = append(out, one)
	}
	return out
}

// failsWhenUnset is the fields of md whose rules refuse them unset: the
// protovalidate violations of an empty md. A JSON object that leaves one
// of them out is refused, so the schema requires it.
func (b *schemaBuilder) failsWhenUnset(md protoreflect.MessageDescriptor) (map[protoreflect.FieldNumber]bool, error) {
	out := map[protoreflect.FieldNumber]bool{}
	if b.registry == nil {
		return out, nil
	}
	err := b.registry.validator.Validate(dynamicpb.NewMessage(md))
	vs, ok := Violations(err)
	if err != nil && !ok {
		return nil, fmt.Errorf("contract: %s: validating an empty message: %w", md.FullName(), err)
	}
	for _, v := range vs {
		name := v.Field
		if name == "" || strings.ContainsAny(name, ".[") {
			continue // a message rule, judged by celSchema
		}
		if fd := md.Fields().ByName(protoreflect.Name(name)); fd != nil {
			out[fd.Number()] = true
		}
	}
	return out, nil
}

func (b *schemaBuilder) field(fd protoreflect.FieldDescriptor, added map[string]bool) (*Schema, error) {
	rules, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules)
	name := string(fd.FullName())
	if rules != nil {
		if err := knownFields(rules.ProtoReflect(), name, "required", "ignore", "type", "cel"); err != nil {
			return nil, err
		}
		if len(rules.GetCel()) > 0 {
			return nil, &UnexpressedRuleError{Field: name, Rule: "cel"}
		}
		if rules.GetIgnore() == validate.Ignore_IGNORE_ALWAYS {
			rules = nil
		}
	}
	switch {
	case fd.IsMap():
		keys, err := b.value(fd.MapKey(), nil, added)
		if err != nil {
			return nil, err
		}
		values, err := b.value(fd.MapValue(), nil, added)
		if err != nil {
			return nil, err
		}
		s := &Schema{Type: "object", PropertyNames: keys, AdditionalProperties: values}
		if fd.MapKey().Kind() != protoreflect.StringKind {
			return nil, &UnexpressedRuleError{Field: name, Rule: "map key of kind " + fd.MapKey().Kind().String()}
		}
		if mr := rules.GetMap(); mr != nil {
			if err := knownFields(mr.ProtoReflect(), name, "min_pairs", "max_pairs", "keys", "values"); err != nil {
				return nil, err
			}
			if mr.HasMinPairs() {
				s.MinProperties = ptr(mr.GetMinPairs())
			}
			if mr.HasMaxPairs() {
				s.MaxProperties = ptr(mr.GetMaxPairs())
			}
			if s.PropertyNames, err = b.value(fd.MapKey(), mr.GetKeys(), added); err != nil {
				return nil, err
			}
			if s.AdditionalProperties, err = b.value(fd.MapValue(), mr.GetValues(), added); err != nil {
				return nil, err
			}
		}
		if rules.GetRequired() {
			s.MinProperties = maxPtr(s.MinProperties, 1)
		}
		return s, ignoreIfZero(rules, s)
	case fd.IsList():
		s := &Schema{Type: "array"}
		var items *validate.FieldRules
		if rr := rules.GetRepeated(); rr != nil {
			if err := knownFields(rr.ProtoReflect(), name, "min_items", "max_items", "unique", "items"); err != nil {
				return nil, err
			}
			if rr.HasMinItems() {
				s.MinItems = ptr(rr.GetMinItems())
			}
			if rr.HasMaxItems() {
				s.MaxItems = ptr(rr.GetMaxItems())
			}
			s.UniqueItems = rr.GetUnique()
			items = rr.GetItems()
		}
		var err error
		if s.Items, err = b.value(fd, items, added); err != nil {
			return nil, err
		}
		if rules.GetRequired() {
			s.MinItems = maxPtr(s.MinItems, 1)
		}
		return s, ignoreIfZero(rules, s)
	}
	s, err := b.value(fd, rules, added)
	if err != nil {
		return nil, err
	}
	if rules != nil && rules.GetIgnore() == validate.Ignore_IGNORE_IF_ZERO_VALUE && fd.Message() == nil {
		return &Schema{AnyOf: []*Schema{{Const: zeroJSON(fd)}, s}}, nil
	}
	if rules.GetRequired() && !fd.HasPresence() {
		// required on a field without presence: not its zero value, which
		// is refused sent as well as left out.
		return &Schema{AllOf: []*Schema{s, {Not: &Schema{Const: zeroJSON(fd)}}}}, nil
	}
	return s, nil
}

// ignoreIfZero: an empty list or map passes a rule it would otherwise
// fail only when the rule says so; such a rule has no narrower form here
// than the rule itself, so it is an error unless it changes nothing.
func ignoreIfZero(rules *validate.FieldRules, s *Schema) error {
	if rules == nil || rules.GetIgnore() != validate.Ignore_IGNORE_IF_ZERO_VALUE {
		return nil
	}
	if s.MinItems != nil || s.MinProperties != nil {
		return &UnexpressedRuleError{Field: "(list or map)", Rule: "ignore IGNORE_IF_ZERO_VALUE with a minimum"}
	}
	return nil
}

// value is the schema of one value of fd's kind (an element, for a list)
// under rules, which may be nil.
func (b *schemaBuilder) value(fd protoreflect.FieldDescriptor, rules *validate.FieldRules, added map[string]bool) (*Schema, error) {
	name := string(fd.FullName())
	var typed protoreflect.Message
	if rules != nil {
		if err := knownFields(rules.ProtoReflect(), name, "required", "ignore", "type"); err != nil {
			return nil, err
		}
		if rules.GetIgnore() == validate.Ignore_IGNORE_ALWAYS {
			rules = nil
		}
		if rules.GetType() != nil {
			rr := rules.ProtoReflect()
			od := rr.Descriptor().Oneofs().ByName("type")
			typed = rr.Get(rr.WhichOneof(od)).Message()
		}
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return stringSchema(name, typed)
	case protoreflect.BoolKind:
		s := &Schema{Type: "boolean"}
		if typed != nil {
			if err := knownFields(typed, name, "const"); err != nil {
				return nil, err
			}
			if br := rules.GetBool(); br.HasConst() {
				s.Const = br.GetConst()
			}
		}
		return s, nil
	case protoreflect.EnumKind:
		return enumSchema(name, fd.Enum(), rules.GetEnum())
	case protoreflect.BytesKind:
		if typed != nil {
			return nil, &UnexpressedRuleError{Field: name, Rule: "bytes"}
		}
		return &Schema{Type: "string", Pattern: `^(?:[A-Za-z0-9+/]{4})*$`, Description: "base64"}, nil
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if typed != nil {
			return nil, &UnexpressedRuleError{Field: name, Rule: string(typed.Descriptor().Name())}
		}
		return b.messageRef(fd.Message(), added)
	}
	return numberSchema(name, fd.Kind(), typed)
}

// knownFields fails on a set field of m that is not one of names: a rule
// this builder does not read, which it must not leave out.
func knownFields(m protoreflect.Message, where string, names ...string) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		name := string(fd.Name())
		if od := fd.ContainingOneof(); od != nil && !fd.IsExtension() {
			name = string(od.Name())
		}
		for _, n := range names {
			if n == name || n == string(fd.Name()) {
				return true
			}
		}
		if name == "example" {
			return true // documentation only
		}
		err = &UnexpressedRuleError{Field: where, Rule: string(fd.FullName())}
		return false
	})
	if err == nil && len(m.GetUnknown()) > 0 {
		err = &UnexpressedRuleError{Field: where, Rule: "(unknown rule fields)"}
	}
	return err
}

func ptr[T any](v T) *T { return &v }

func zeroJSON(fd protoreflect.FieldDescriptor) any {
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BytesKind:
		return ""
	case protoreflect.BoolKind:
		return false
	case protoreflect.EnumKind:
		return string(fd.Enum().Values().ByNumber(0).Name())
	}
	return json.Number("0")
}

// Conservative patterns for the string formats: each admits only strings
// that protovalidate's rule of the same name accepts.
var formatPatterns = map[string]string{
	"email":    `^[a-z0-9]{1,32}(?:[._-][a-z0-9]{1,32}){0,3}@[a-z0-9]{1,20}(?:-[a-z0-9]{1,20}){0,2}(?:\.[a-z0-9]{1,32}){0,3}\.[a-z]{2,8}$`,
	"uuid":     `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`,
	"hostname": `^[a-z](?:[a-z0-9-]{0,30}[a-z0-9])?(?:\.[a-z](?:[a-z0-9-]{0,30}[a-z0-9])?){0,4}$`,
	"address":  `^[a-z](?:[a-z0-9-]{0,30}[a-z0-9])?(?:\.[a-z](?:[a-z0-9-]{0,30}[a-z0-9])?){0,4}$`,
	"uri":      `^https://[a-z][a-z0-9]{0,30}(?:\.[a-z][a-z0-9]{0,30}){0,4}(?:/[A-Za-z0-9._~-]{1,32}){0,8}$`,
	"ipv4":     `^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$`,
}

func stringSchema(name string, typed protoreflect.Message) (*Schema, error) {
	s := &Schema{Type: "string"}
	if typed == nil {
		return s, nil
	}
	if err := knownFields(typed, name, "const", "len", "min_len", "max_len", "min_bytes", "max_bytes",
		"pattern", "prefix", "suffix", "contains", "in", "not_in", "email", "uuid", "hostname", "address", "uri", "ipv4", "ip", "strict"); err != nil {
		return nil, err
	}
	var all []*Schema
	bad := false
	typed.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch fd.Name() {
		case "const":
			s.Const = v.String()
		case "len":
			s.MinLength, s.MaxLength = ptr(v.Uint()), ptr(v.Uint())
		case "min_len":
			s.MinLength = maxPtr(s.MinLength, v.Uint())
		case "max_len":
			s.MaxLength = minPtr(s.MaxLength, v.Uint())
		case "min_bytes": // at least as many bytes as code points
			s.MinLength = maxPtr(s.MinLength, v.Uint())
		case "max_bytes": // at most four bytes a code point
			s.MaxLength = minPtr(s.MaxLength, v.Uint()/4)
		case "pattern":
			p, ok := ecmaPattern(v.String())
			if !ok {
				bad = true
				return false
			}
			all = append(all, &Schema{Pattern: p})
		case "prefix":
			all = append(all, &Schema{Pattern: "^" + regexp.QuoteMeta(v.String())})
		case "suffix":
			all = append(all, &Schema{Pattern: regexp.QuoteMeta(v.String()) + "$"})
		case "contains":
			all = append(all, &Schema{Pattern: regexp.QuoteMeta(v.String())})
		case "in":
			s.Enum = stringList(v.List())
		case "not_in":
			all = append(all, &Schema{Not: &Schema{Enum: stringList(v.List())}})
		case "email", "uuid", "hostname", "address", "uri", "ipv4", "ip":
			if !v.Bool() {
				break
			}
			f := string(fd.Name())
			if f == "ip" {
				f = "ipv4" // a narrower form of ip
			}
			s.Description = "protovalidate string." + string(fd.Name())
			all = append(all, &Schema{Pattern: formatPatterns[f]})
		}
		return true
	})
	if bad {
		return nil, &UnexpressedRuleError{Field: name, Rule: "string.pattern (not a pattern JSON Schema can carry)"}
	}
	if len(all) == 1 && s.Pattern == "" && all[0].Not == nil {
		s.Pattern = all[0].Pattern
	} else {
		s.AllOf = all
	}
	return s, nil
}

// ecmaPattern is an RE2 pattern as ECMA-262 reads it the same, when it
// uses only what both dialects share: literals, classes, groups,
// alternation, anchors and bounded or plain quantifiers.
func ecmaPattern(p string) (string, bool) {
	if _, err := regexp.Compile(p); err != nil {
		return "", false
	}
	if strings.Contains(p, `(?`) && !strings.Contains(p, `(?:`) || strings.ContainsAny(p, "\n\r") ||
		strings.Contains(p, `\A`) || strings.Contains(p, `\z`) || strings.Contains(p, `\p`) || strings.Contains(p, `\Q`) ||
		strings.Contains(p, `[[:`) {
		return "", false
	}
	return p, true
}

func stringList(l protoreflect.List) []any {
	out := make([]any, l.Len())
	for i := range out {
		out[i] = l.Get(i).String()
	}
	return out
}

func maxPtr(p *uint64, v uint64) *uint64 {
	if p != nil && *p > v {
		return p
	}
	return &v
}

func minPtr(p *uint64, v uint64) *uint64 {
	if p != nil && *p < v {
		return p
	}
	return &v
}

func enumSchema(name string, ed protoreflect.EnumDescriptor, rules *validate.EnumRules) (*Schema, error) {
	allowed := map[int32]bool{}
	values := ed.Values()
	for i := 0; i < values.Len(); i++ {
		allowed[int32(values.Get(i).Number())] = true
	}
	if rules != nil {
		if err := knownFields(rules.ProtoReflect(), name, "const", "defined_only", "in", "not_in"); err != nil {
			return nil, err
		}
		if rules.HasConst() {
			allowed = map[int32]bool{rules.GetConst(): allowed[rules.GetConst()]}
		}
		if in := rules.GetIn(); len(in) > 0 {
			keep := map[int32]bool{}
			for _, n := range in {
				keep[n] = allowed[n]
			}
			allowed = keep
		}
		for _, n := range rules.GetNotIn() {
			delete(allowed, n)
		}
	}
	s := &Schema{Type: "string"}
	for i := 0; i < values.Len(); i++ {
		v := values.Get(i)
		if allowed[int32(v.Number())] {
			s.Enum = append(s.Enum, string(v.Name()))
			delete(allowed, int32(v.Number())) // an alias once
		}
	}
	if len(s.Enum) == 0 {
		return &Schema{Nothing: true}, nil
	}
	return s, nil
}

// numberSchema is a JSON number of kind within its range and rules. The
// bounds are exact decimal text, since an int64 does not fit a float64.
func numberSchema(name string, kind protoreflect.Kind, typed protoreflect.Message) (*Schema, error) {
	s := &Schema{Type: "integer"}
	switch kind {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		s.Minimum, s.Maximum = json.Number(strconv.Itoa(math.MinInt32)), json.Number(strconv.Itoa(math.MaxInt32))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		s.Minimum, s.Maximum = "0", json.Number(strconv.FormatUint(math.MaxUint32, 10))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		s.Minimum, s.Maximum = json.Number(strconv.FormatInt(math.MinInt64, 10)), json.Number(strconv.FormatInt(math.MaxInt64, 10))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		s.Minimum, s.Maximum = "0", json.Number(strconv.FormatUint(math.MaxUint64, 10))
	case protoreflect.FloatKind:
		s.Type, s.Minimum, s.Maximum = "number", "-3.4e38", "3.4e38"
	case protoreflect.DoubleKind:
		s.Type = "number"
	default:
		return nil, &UnexpressedRuleError{Field: name, Rule: "kind " + kind.String()}
	}
	if typed == nil {
		return s, nil
	}
	if err := knownFields(typed, name, "const", "lt", "lte", "gt", "gte", "in", "not_in", "finite", "less_than", "greater_than"); err != nil {
		return nil, err
	}
	text := func(v protoreflect.Value) json.Number {
		switch x := v.Interface().(type) {
		case int32:
			return json.Number(strconv.FormatInt(int64(x), 10))
		case int64:
			return json.Number(strconv.FormatInt(x, 10))
		case uint32:
			return json.Number(strconv.FormatUint(uint64(x), 10))
		case uint64:
			return json.Number(strconv.FormatUint(x, 10))
		case float32:
			return json.Number(strconv.FormatFloat(float64(x), 'g', -1, 32))
		case float64:
			return json.Number(strconv.FormatFloat(x, 'g', -1, 64))
		}
		return ""
	}
	var lower, upper json.Number
	typed.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch fd.Name() {
		case "const":
			s.Const = text(v)
		case "lt":
			upper, s.ExclusiveMaximum = text(v), text(v)
		case "lte":
			upper, s.Maximum = text(v), text(v)
		case "gt":
			lower, s.ExclusiveMinimum = text(v), text(v)
		case "gte":
			lower, s.Minimum = text(v), text(v)
		case "in":
			for i := 0; i < v.List().Len(); i++ {
				s.Enum = append(s.Enum, text(v.List().Get(i)))
			}
		case "not_in":
			var out []any
			for i := 0; i < v.List().Len(); i++ {
				out = append(out, text(v.List().Get(i)))
			}
			s.AllOf = append(s.AllOf, &Schema{Not: &Schema{Enum: out}})
		}
		return true
	})
	if lower != "" && upper != "" {
		lo, _ := strconv.ParseFloat(string(lower), 64)
		hi, _ := strconv.ParseFloat(string(upper), 64)
		if lo > hi { // protovalidate's exclusive range: outside [upper, lower]
			return nil, &UnexpressedRuleError{Field: name, Rule: "an exclusive range (gt above lt)"}
		}
	}
	if s.ExclusiveMaximum != "" {
		s.Maximum = s.ExclusiveMaximum // exclusiveMaximum is the bound; maximum the kind's, no wider
		if kind == protoreflect.FloatKind || kind == protoreflect.DoubleKind {
			s.Maximum = ""
		}
	}
	if s.ExclusiveMinimum != "" {
		s.Minimum = s.ExclusiveMinimum
		if kind == protoreflect.FloatKind || kind == protoreflect.DoubleKind {
			s.Minimum = ""
		}
	}
	return s, nil
}

// wellKnownSchema is the JSON form of the well-known types protojson
// prints other than as objects, narrowed as Schema says; nil for any
// other message.
func wellKnownSchema(md protoreflect.MessageDescriptor) *Schema {
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		return &Schema{Type: "string", Description: "RFC 3339 time in UTC",
			Pattern: `^(?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,9})?Z$`}
	case "google.protobuf.Duration":
		return &Schema{Type: "string", Description: "seconds with an s suffix", Pattern: `^-?[0-9]{1,11}(?:\.[0-9]{1,9})?s$`}
	case "google.protobuf.StringValue":
		return &Schema{Type: "string"}
	case "google.protobuf.BoolValue":
		return &Schema{Type: "boolean"}
	case "google.protobuf.Int32Value", "google.protobuf.UInt32Value", "google.protobuf.Int64Value",
		"google.protobuf.UInt64Value", "google.protobuf.FloatValue", "google.protobuf.DoubleValue":
		kinds := map[protoreflect.FullName]protoreflect.Kind{
			"google.protobuf.Int32Value": protoreflect.Int32Kind, "google.protobuf.UInt32Value": protoreflect.Uint32Kind,
			"google.protobuf.Int64Value": protoreflect.Int64Kind, "google.protobuf.UInt64Value": protoreflect.Uint64Kind,
			"google.protobuf.FloatValue": protoreflect.FloatKind, "google.protobuf.DoubleValue": protoreflect.DoubleKind,
		}
		s, _ := numberSchema(string(md.FullName()), kinds[md.FullName()], nil)
		return s
	case "google.protobuf.Empty":
		return &Schema{Type: "object", MaxProperties: ptr(uint64(0))}
	case "google.protobuf.Any", "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue",
		"google.protobuf.FieldMask", "google.protobuf.BytesValue":
		// Values of these carry their own depth and names; no payload
		// of them is promised.
		return &Schema{Nothing: true, Description: string(md.FullName()) + " is not described"}
	}
	return nil
}
