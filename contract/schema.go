package contract

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
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
// A Schema is complete: every payload CheckJSON accepts is valid under
// it, in each spelling protojson reads (a field by its JSON name or its
// proto name, null for an absent field, an enum by name or number, a
// 64-bit or any other number as a string, "NaN" and the infinities). A
// client generated from it never refuses what the gateway would take.
// Where a rule has an exact JSON Schema form it is stated so (the
// patterns of string.email, hostname, ipv4, uuid and the like, lengths,
// ranges, enums, required fields, oneofs, message CEL rules of the subset
// celSchema reads); where it has none the schema says less and the
// field's description names the rule: max_bytes becomes a length as long
// in characters, string.uri and ipv6 wider patterns, a timestamp one whose
// day may be past its month's end, a CEL expression outside that subset
// nothing. Patterns are written for engines that read them by code point
// (portablePattern).
type Schema struct {
	Ref                  string             `json:"$ref,omitempty"`
	Description          string             `json:"description,omitempty"`
	Type                 string             `json:"type,omitempty"`
	Format               string             `json:"format,omitempty"`
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
	PatternProperties    map[string]*Schema `json:"patternProperties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	DependentSchemas     map[string]*Schema `json:"dependentSchemas,omitempty"`
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
	// OrNull, with Type, admits null too: the type is written [Type, "null"].
	OrNull bool `json:"-"`
}

// MarshalJSON writes Nothing as the schema false, and OrNull as a type
// list.
func (s *Schema) MarshalJSON() ([]byte, error) {
	if s.Nothing {
		return []byte(`false`), nil
	}
	type plain Schema
	if !s.OrNull {
		return json.Marshal((*plain)(s))
	}
	return json.Marshal(struct {
		Type []string `json:"type"`
		*plain
	}{[]string{s.Type, "null"}, (*plain)(s)})
}

// The schema is complete: every payload Check accepts is valid under it,
// in each spelling protojson reads (proto and JSON names, null for absent,
// enums by name or number, numbers as strings, "NaN" and the infinities).
// A rule with an exact JSON Schema form is stated so (formats as exact
// patterns, lengths, ranges, enums, required fields, oneofs, the CEL
// subset celSchema reads); one without is stated wider, or not at all, and
// named in the field's description. Patterns are in the subset RE2,
// ECMA-262 (u flag), Rust and Python read alike (portablePattern).
// FuzzJSONSchemaWire holds it to completeness with a real validator, and
// its sound twin, stating every inexact rule narrower, to soundness
// (FuzzJSONSchemaSound).
//
// JSONSchema returns the schema of the contract's payload. The messages it
// refers to are added to defs under their full names, referred to as
// refPrefix + name; a message already in defs is not built again. Its only
// error is the registry's, validating an empty message.
func (c *Contract) JSONSchema(defs map[string]*Schema, refPrefix string) (*Schema, error) {
	return c.jsonSchema(defs, refPrefix, false)
}

// jsonSchema builds the schema, or with sound its narrow twin: one that
// admits only payloads Check accepts, where each rule the schema cannot
// state exactly is stated narrower instead of wider, and one it cannot
// state at all admits nothing. The two share every exact statement; the
// tests hold the twin to soundness and the schema to completeness.
func (c *Contract) jsonSchema(defs map[string]*Schema, refPrefix string, sound bool) (*Schema, error) {
	b := &schemaBuilder{defs: defs, refPrefix: refPrefix, registry: c.registry, sound: sound}
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
	sound     bool
	err       error // the first error of the registry's, which ends the build
}

// pick is wide in the schema and narrow in its sound twin.
func (b *schemaBuilder) pick(wide, narrow *Schema) *Schema {
	if b.sound {
		return narrow
	}
	return wide
}

// unstated is s without a rule the schema cannot state: s with the rule
// named in its description, or in the sound twin nothing.
func (b *schemaBuilder) unstated(s *Schema, rule string) *Schema {
	if b.sound {
		return &Schema{Nothing: true}
	}
	return described(s, "Not stated here: "+rule+".")
}

// described is s with text added to its description.
func described(s *Schema, text string) *Schema {
	if s.Description != "" {
		s.Description += " "
	}
	s.Description += text
	return s
}

// messageRef is a reference to md's definition, which it builds first
// when defs has none.
func (b *schemaBuilder) messageRef(md protoreflect.MessageDescriptor, added map[string]bool) (*Schema, error) {
	name := string(md.FullName())
	if _, ok := b.defs[name]; !ok {
		def := &Schema{Type: "object"}
		b.defs[name] = def // before its fields: a message may refer to itself
		added[name] = true
		b.message(md, def, added)
		if b.err != nil {
			return nil, b.err
		}
	}
	return &Schema{Ref: b.refPrefix + name}, nil
}

// fieldNames is every name protojson reads for each field of md: its JSON
// name and its proto name, each resolved as protojson resolves it, JSON
// names first. A name that is one field's JSON name and another's proto
// name is the first field's only.
func fieldNames(md protoreflect.MessageDescriptor) map[protoreflect.FieldNumber][]string {
	fields := md.Fields()
	out := map[protoreflect.FieldNumber][]string{}
	seen := map[string]bool{}
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		for _, name := range []string{fd.TextName(), fd.JSONName()} {
			if seen[name] {
				continue
			}
			target := fields.ByJSONName(name)
			if target == nil {
				target = fields.ByTextName(name)
			}
			if target == nil {
				continue
			}
			seen[name] = true
			out[target.Number()] = append(out[target.Number()], name)
		}
	}
	return out
}

// nullIsValue reports whether JSON null is a value of fd rather than its
// absence: google.protobuf.Value and NullValue.
func nullIsValue(fd protoreflect.FieldDescriptor) bool {
	if md := fd.Message(); md != nil {
		return md.FullName() == "google.protobuf.Value"
	}
	if ed := fd.Enum(); ed != nil {
		return ed.FullName() == "google.protobuf.NullValue"
	}
	return false
}

// present is fd sent under one of its names, not as null (which is its
// absence, unless null is one of its values).
func present(fd protoreflect.FieldDescriptor, names []string, value *Schema) *Schema {
	if value == nil && !nullIsValue(fd) {
		value = &Schema{Not: &Schema{Type: "null"}}
	}
	var out []*Schema
	for _, n := range names {
		s := &Schema{Required: []string{n}}
		if value != nil {
			s.Properties = map[string]*Schema{n: value}
		}
		out = append(out, s)
	}
	if len(out) == 1 {
		return out[0]
	}
	return &Schema{AnyOf: out}
}

func (b *schemaBuilder) message(md protoreflect.MessageDescriptor, def *Schema, added map[string]bool) {
	unsetFails, err := b.failsWhenUnset(md)
	if err != nil {
		b.err = err
		return
	}
	names := fieldNames(md)
	def.Properties = map[string]*Schema{}
	def.AdditionalProperties = &Schema{Nothing: true}
	if md.ExtensionRanges().Len() > 0 && !b.sound {
		def.PatternProperties = map[string]*Schema{`^\[`: {Description: "An extension, by its full name in brackets."}}
	}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		ns := names[fd.Number()]
		fails := unsetFails[fd.Number()] || fd.Cardinality() == protoreflect.Required
		s := b.field(fd, !fails, added)
		if b.err != nil {
			return
		}
		for _, n := range ns {
			def.Properties[n] = s
		}
		if fails {
			if len(ns) == 1 {
				def.Required = append(def.Required, ns[0])
			} else {
				def.AllOf = append(def.AllOf, present(fd, ns, nil))
			}
		}
		if len(ns) > 1 { // protojson refuses a field sent twice, under either name
			if def.DependentSchemas == nil {
				def.DependentSchemas = map[string]*Schema{}
			}
			others := map[string]*Schema{}
			for _, n := range ns[1:] {
				others[n] = &Schema{Nothing: true}
			}
			def.DependentSchemas[ns[0]] = &Schema{Properties: others}
		}
	}
	sort.Strings(def.Required)
	oneofs := md.Oneofs()
	for i := 0; i < oneofs.Len(); i++ {
		od := oneofs.Get(i)
		if od.IsSynthetic() {
			continue
		}
		def.AllOf = append(def.AllOf, oneofSchemas(od, names)...)
	}
	mr, _ := proto.GetExtension(md.Options(), validate.E_Message).(*validate.MessageRules)
	if mr == nil {
		return
	}
	for _, rule := range unknownRules(mr.ProtoReflect(), "cel", "cel_expression", "oneof") {
		*def = *b.unstated(def, "message rule "+rule)
	}
	exprs := mr.GetCelExpression()
	for _, rule := range mr.GetCel() {
		exprs = append(exprs, rule.GetExpression())
	}
	for _, expr := range exprs {
		s, err := celSchema(md, expr, b.sound)
		if err != nil {
			*def = *b.unstated(def, "CEL rule "+strconv.Quote(expr)+" ("+err.Error()+")")
			continue
		}
		def.AllOf = append(def.AllOf, s)
	}
	for _, rule := range mr.GetOneof() {
		s, ok := b.messageOneof(md, names, rule)
		if !ok {
			*def = *b.unstated(def, "message oneof over "+strings.Join(rule.GetFields(), ", "))
			continue
		}
		def.AllOf = append(def.AllOf, s...)
	}
}

// oneofSchemas allows at most one field of od, and requires one when its
// rules say so. A field sent as null is not set.
func oneofSchemas(od protoreflect.OneofDescriptor, names map[protoreflect.FieldNumber][]string) []*Schema {
	var out []*Schema
	fields := od.Fields()
	for i := 0; i < fields.Len(); i++ {
		for j := i + 1; j < fields.Len(); j++ {
			a, c := fields.Get(i), fields.Get(j)
			out = append(out, &Schema{Not: &Schema{AllOf: []*Schema{
				present(a, names[a.Number()], nil), present(c, names[c.Number()], nil)}}})
		}
	}
	if r, ok := proto.GetExtension(od.Options(), validate.E_Oneof).(*validate.OneofRules); ok && r.GetRequired() {
		one := &Schema{}
		for i := 0; i < fields.Len(); i++ {
			fd := fields.Get(i)
			one.AnyOf = append(one.AnyOf, present(fd, names[fd.Number()], nil))
		}
		out = append(out, one)
	}
	return out
}

// messageOneof is a message rule's oneof: at most one of its fields set,
// and one when required. A field is set when it is present with a value
// other than its zero value, or for fields with presence, when present.
func (b *schemaBuilder) messageOneof(md protoreflect.MessageDescriptor, names map[protoreflect.FieldNumber][]string, rule *validate.MessageOneofRule) ([]*Schema, bool) {
	var fds []protoreflect.FieldDescriptor
	for _, name := range rule.GetFields() {
		fd := md.Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			return nil, false
		}
		fds = append(fds, fd)
	}
	var out []*Schema
	for i := range fds {
		for j := i + 1; j < len(fds); j++ {
			// Not both set: the opposite of the mode under not.
			out = append(out, &Schema{Not: &Schema{AllOf: []*Schema{
				b.set(fds[i], names[fds[i].Number()], !b.sound), b.set(fds[j], names[fds[j].Number()], !b.sound)}}})
		}
	}
	if rule.GetRequired() {
		one := &Schema{}
		for _, fd := range fds {
			one.AnyOf = append(one.AnyOf, b.set(fd, names[fd.Number()], b.sound))
		}
		out = append(out, one)
	}
	return out, true
}

// set is fd set, as protovalidate's message oneof rule reads it: wide,
// every payload that may set it; narrow, only payloads that do.
func (b *schemaBuilder) set(fd protoreflect.FieldDescriptor, names []string, narrow bool) *Schema {
	switch {
	case fd.IsList():
		return present(fd, names, &Schema{MinItems: ptr(uint64(1))})
	case fd.IsMap():
		return present(fd, names, &Schema{MinProperties: ptr(uint64(1))})
	case fd.HasPresence():
		return present(fd, names, nil)
	}
	value := &Schema{AllOf: []*Schema{{Not: &Schema{Type: "null"}}}}
	switch fd.Kind() {
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		// -0 is set, and JSON Schema finds it equal to 0; so is a number
		// too small for the kind, which rounds to zero of its sign. Only
		// numbers past those are set for sure.
		if narrow {
			value.AllOf = append(value.AllOf, &Schema{Type: "number", Not: floatZero(fd.Kind())})
		}
	case protoreflect.BytesKind:
		if narrow {
			value.AllOf = append(value.AllOf, &Schema{Not: &Schema{Pattern: `^[\r\n]*$`}})
		} else {
			value.AllOf = append(value.AllOf, &Schema{Not: &Schema{Const: ""}})
		}
	default:
		zero := zeroSchema(fd)
		if narrow && isIntKind(fd.Kind()) {
			zero = &Schema{AnyOf: []*Schema{zero, {Type: "string"}}}
		}
		value.AllOf = append(value.AllOf, &Schema{Not: zero})
	}
	return present(fd, names, value)
}

// floatZero is the JSON numbers that round to a zero of a float kind,
// of either sign.
func floatZero(kind protoreflect.Kind) *Schema {
	g := floatGrid(64)
	if kind == protoreflect.FloatKind {
		g = 32
	}
	edge := g.between(0, g.next(0))
	return &Schema{Type: "number", Minimum: decimal(new(big.Rat).Neg(edge), false), Maximum: decimal(edge, true)}
}

func isIntKind(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.BoolKind, protoreflect.StringKind, protoreflect.BytesKind, protoreflect.EnumKind,
		protoreflect.FloatKind, protoreflect.DoubleKind, protoreflect.MessageKind, protoreflect.GroupKind:
		return false
	}
	return true
}

// zeroSchema is the JSON values that are fd's zero value in its canonical
// spellings: "", false, 0 (which JSON Schema finds equal to -0 and 0.0),
// and an enum's zero by each name and by number.
func zeroSchema(fd protoreflect.FieldDescriptor) *Schema {
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BytesKind:
		return &Schema{Const: ""}
	case protoreflect.BoolKind:
		return &Schema{Const: false}
	case protoreflect.EnumKind:
		s := &Schema{Enum: []any{json.Number("0")}}
		values := fd.Enum().Values()
		for i := 0; i < values.Len(); i++ {
			if v := values.Get(i); v.Number() == 0 {
				s.Enum = append(s.Enum, string(v.Name()))
			}
		}
		if nullIsValue(fd) {
			s.Enum = append(s.Enum, nil)
		}
		return s
	}
	return &Schema{Const: json.Number("0")}
}

// failsWhenUnset is the fields of md whose rules refuse them unset: the
// protovalidate violations of an empty md. A JSON object that leaves one
// of them out, or sends it as null, is refused, so the schema requires it.
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

// fieldRules is fd's rules, nil when it has none or ignores them always.
func fieldRules(fd protoreflect.FieldDescriptor) *validate.FieldRules {
	rules, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules)
	if rules.GetIgnore() == validate.Ignore_IGNORE_ALWAYS {
		return nil
	}
	return rules
}

// field is the schema of fd's value in its message's JSON object. nullable
// says null (fd unset) passes its rules.
func (b *schemaBuilder) field(fd protoreflect.FieldDescriptor, nullable bool, added map[string]bool) *Schema {
	rules := fieldRules(fd)
	var s *Schema
	switch {
	case fd.IsMap():
		s = b.mapSchema(fd, rules, added)
	case fd.IsList():
		s = b.listSchema(fd, rules, added)
	default:
		s = b.value(fd, rules, added)
		if rules.GetRequired() && !fd.HasPresence() {
			// required without presence: not the zero value, which is
			// refused sent as well as left out. A float's -0 passes, and
			// JSON Schema finds it equal to 0: only the twin says so.
			if b.sound || fd.Kind() != protoreflect.FloatKind && fd.Kind() != protoreflect.DoubleKind {
				s = &Schema{AllOf: []*Schema{s, {Not: zeroSchema(fd)}}}
			}
		}
	}
	if rules != nil {
		for _, rule := range unknownRules(rules.ProtoReflect(), "required", "ignore", "type", "cel", "cel_expression") {
			s = b.unstated(s, "rule "+rule)
		}
		for _, expr := range rules.GetCelExpression() {
			s = b.unstated(s, "CEL rule "+strconv.Quote(expr))
		}
		for _, rule := range rules.GetCel() {
			s = b.unstated(s, "CEL rule "+strconv.Quote(rule.GetId())+" ("+rule.GetExpression()+")")
		}
	}
	if nullable && !nullIsValue(fd) {
		s = orNull(s)
	}
	return s
}

// orNull is s or null.
func orNull(s *Schema) *Schema {
	if s.Nothing {
		return &Schema{Type: "null"}
	}
	simple := s.Type != "" && s.Ref == "" && s.Const == nil && s.AllOf == nil && s.AnyOf == nil && s.Not == nil && !s.OrNull
	switch {
	case simple && s.Enum == nil:
		c := *s
		c.OrNull = true
		return &c
	case simple:
		c := *s
		c.OrNull = true
		c.Enum = append(append([]any(nil), s.Enum...), nil)
		return &c
	case s.AnyOf != nil && s.Type == "" && s.Ref == "" && s.Const == nil && s.Enum == nil && s.AllOf == nil && s.Not == nil:
		c := *s
		c.AnyOf = append(append([]*Schema(nil), s.AnyOf...), &Schema{Type: "null"})
		return &c
	}
	return &Schema{AnyOf: []*Schema{s, {Type: "null"}}}
}

func (b *schemaBuilder) mapSchema(fd protoreflect.FieldDescriptor, rules *validate.FieldRules, added map[string]bool) *Schema {
	mr := rules.GetMap()
	s := &Schema{Type: "object",
		PropertyNames:        b.mapKey(fd.MapKey(), mr.GetKeys()),
		AdditionalProperties: b.value(fd.MapValue(), mr.GetValues(), added)}
	if mr != nil {
		if mr.HasMinPairs() {
			s.MinProperties = ptr(mr.GetMinPairs())
		}
		if mr.HasMaxPairs() {
			s.MaxProperties = ptr(mr.GetMaxPairs())
		}
		for _, rule := range unknownRules(mr.ProtoReflect(), "min_pairs", "max_pairs", "keys", "values") {
			s = b.unstated(s, "rule "+rule)
		}
	}
	if rules.GetRequired() {
		s.MinProperties = maxPtr(s.MinProperties, 1)
	}
	if rules.GetIgnore() == validate.Ignore_IGNORE_IF_ZERO_VALUE {
		s = &Schema{AnyOf: []*Schema{{Type: "object", MaxProperties: ptr(uint64(0))}, s}}
	}
	return s
}

// mapKey is a map key as a JSON object's name: a string key as itself, any
// other kind as protojson reads it (strconv's syntax, which takes a sign
// and leading zeros).
func (b *schemaBuilder) mapKey(fd protoreflect.FieldDescriptor, rules *validate.FieldRules) *Schema {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return b.value(fd, rules, nil)
	case protoreflect.BoolKind:
		s := &Schema{Enum: []any{"true", "false"}}
		if c := rules.GetBool(); c != nil && c.HasConst() {
			s.Enum = []any{strconv.FormatBool(c.GetConst())}
		}
		return s
	}
	wide, narrow := `^[+-]?[0-9]+$`, `^(?:0|-?[1-9][0-9]{0,8})$`
	switch fd.Kind() {
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		wide, narrow = `^[0-9]+$`, `^(?:0|[1-9][0-9]{0,8})$`
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		wide, narrow = `^[0-9]+$`, `^(?:0|[1-9][0-9]{0,18})$`
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		narrow = `^(?:0|-?[1-9][0-9]{0,17})$`
	}
	s := b.pick(&Schema{Pattern: wide, Description: "An integer in decimal digits."}, &Schema{Pattern: narrow})
	if rules.GetType() != nil {
		s = b.unstated(s, "the key's "+fd.Kind().String()+" rules")
	}
	return s
}

func (b *schemaBuilder) listSchema(fd protoreflect.FieldDescriptor, rules *validate.FieldRules, added map[string]bool) *Schema {
	s := &Schema{Type: "array"}
	rr := rules.GetRepeated()
	s.Items = b.value(fd, rr.GetItems(), added)
	if rr != nil {
		if rr.HasMinItems() {
			s.MinItems = ptr(rr.GetMinItems())
		}
		if rr.HasMaxItems() {
			s.MaxItems = ptr(rr.GetMaxItems())
		}
		if rr.GetUnique() {
			// Equal JSON values are equal elements, but a float's NaN is
			// unequal to itself: NaN twice is unique.
			if b.sound || fd.Kind() != protoreflect.FloatKind && fd.Kind() != protoreflect.DoubleKind {
				s.UniqueItems = true
			} else {
				s = described(s, "Items are unique (repeated.unique).")
			}
		}
		for _, rule := range unknownRules(rr.ProtoReflect(), "min_items", "max_items", "unique", "items") {
			s = b.unstated(s, "rule "+rule)
		}
	}
	if rules.GetRequired() {
		s.MinItems = maxPtr(s.MinItems, 1)
	}
	if rules.GetIgnore() == validate.Ignore_IGNORE_IF_ZERO_VALUE {
		s = &Schema{AnyOf: []*Schema{{Type: "array", MaxItems: ptr(uint64(0))}, s}}
	}
	return s
}

// typedRules is the kind's rules of rules (the message its type oneof
// holds), or nil.
func typedRules(rules *validate.FieldRules) protoreflect.Message {
	if rules.GetType() == nil {
		return nil
	}
	rr := rules.ProtoReflect()
	od := rr.Descriptor().Oneofs().ByName("type")
	return rr.Get(rr.WhichOneof(od)).Message()
}

// value is the schema of one value of fd's kind (an element, for a list;
// a map entry's key or value) under rules, which may be nil: the zero
// value too when the rules ignore it.
func (b *schemaBuilder) value(fd protoreflect.FieldDescriptor, rules *validate.FieldRules, added map[string]bool) *Schema {
	if rules.GetIgnore() == validate.Ignore_IGNORE_ALWAYS {
		rules = nil
	}
	typed := typedRules(rules)
	var s *Schema
	switch fd.Kind() {
	case protoreflect.StringKind:
		s = b.stringSchema(typed)
	case protoreflect.BoolKind:
		s = &Schema{Type: "boolean"}
		if br := rules.GetBool(); br.HasConst() {
			s.Const = br.GetConst()
		}
		if typed != nil {
			for _, rule := range unknownRules(typed, "const") {
				s = b.unstated(s, "rule "+rule)
			}
		}
	case protoreflect.EnumKind:
		s = b.enumSchema(fd.Enum(), rules.GetEnum())
	case protoreflect.BytesKind:
		s = b.pick(&Schema{Type: "string", Pattern: `^[A-Za-z0-9+/=_\r\n-]*$`,
			Description: "Base64, standard or URL-safe, padded or not."}, &Schema{Type: "string", Pattern: `^(?:[A-Za-z0-9+/]{4})*$`})
		if typed != nil {
			s = b.unstated(s, "the bytes rules")
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if wk, ok := b.wellKnown(fd.Message(), rules, typed); ok {
			return wk
		}
		ref, err := b.messageRef(fd.Message(), added)
		if err != nil {
			b.err = err
			return &Schema{Nothing: true}
		}
		s = ref
		if typed != nil {
			s = b.unstated(&Schema{AllOf: []*Schema{ref}}, "rules "+string(typed.Descriptor().Name()))
		}
	default:
		s = b.numberSchema(fd.Kind(), typed)
	}
	if rules.GetIgnore() == validate.Ignore_IGNORE_IF_ZERO_VALUE && fd.Message() == nil {
		zero := zeroSchema(fd)
		if fd.Kind() == protoreflect.FloatKind || fd.Kind() == protoreflect.DoubleKind {
			// Every number that rounds to zero may be ignored; but -0,
			// which JSON Schema finds equal to 0, is not.
			zero = b.pick(floatZero(fd.Kind()), &Schema{Nothing: true})
		}
		s = &Schema{AnyOf: []*Schema{zero, s}}
	}
	return s
}

// unknownRules is the set fields of m that are not one of names: rules
// the builder does not read. An example is documentation only.
func unknownRules(m protoreflect.Message, names ...string) []string {
	var out []string
	m.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		name := string(fd.Name())
		if od := fd.ContainingOneof(); od != nil && !fd.IsExtension() && od.Name() == "type" {
			name = "type"
		}
		for _, n := range names {
			if n == name {
				return true
			}
		}
		if name != "example" {
			out = append(out, string(fd.FullName()))
		}
		return true
	})
	if len(m.GetUnknown()) > 0 {
		out = append(out, "(unknown rule fields)")
	}
	return out
}

func ptr[T any](v T) *T { return &v }

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

// enumSchema is an enum's values by name (each alias) and by number, as
// its rules allow them; exact, since protojson reads a name as its number.
func (b *schemaBuilder) enumSchema(ed protoreflect.EnumDescriptor, rules *validate.EnumRules) *Schema {
	values := ed.Values()
	defined := map[int32]bool{}
	for i := 0; i < values.Len(); i++ {
		defined[int32(values.Get(i).Number())] = true
	}
	// finite, when not nil, is every number allowed; otherwise any int32
	// but notIn.
	var finite map[int32]bool
	restrict := func(keep map[int32]bool) {
		if finite == nil {
			finite = keep
			return
		}
		for n := range finite {
			if !keep[n] {
				delete(finite, n)
			}
		}
	}
	if rules.HasConst() {
		restrict(map[int32]bool{rules.GetConst(): true})
	}
	if in := rules.GetIn(); len(in) > 0 {
		keep := map[int32]bool{}
		for _, n := range in {
			keep[n] = true
		}
		restrict(keep)
	}
	if rules.GetDefinedOnly() || ed.IsClosed() { // a closed enum's other numbers are refused as malformed
		keep := map[int32]bool{}
		for n := range defined {
			keep[n] = true
		}
		restrict(keep)
	}
	notIn := map[int32]bool{}
	for _, n := range rules.GetNotIn() {
		notIn[n] = true
		delete(finite, n)
	}
	allowed := func(n int32) bool { return !notIn[n] && (finite == nil || finite[n]) }
	var names []any
	for i := 0; i < values.Len(); i++ {
		if v := values.Get(i); allowed(int32(v.Number())) {
			names = append(names, string(v.Name()))
		}
	}
	null := ed.FullName() == "google.protobuf.NullValue"
	if null {
		names = append(names, nil)
	}
	var s *Schema
	if finite != nil {
		nums := make([]int32, 0, len(finite))
		for n := range finite {
			nums = append(nums, n)
		}
		sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
		s = &Schema{Enum: names}
		for _, n := range nums {
			s.Enum = append(s.Enum, json.Number(strconv.Itoa(int(n))))
		}
		if len(s.Enum) == 0 {
			s = &Schema{Nothing: true}
		}
	} else {
		num := &Schema{Type: "integer", Minimum: json.Number(strconv.Itoa(math.MinInt32)), Maximum: json.Number(strconv.Itoa(math.MaxInt32))}
		if len(notIn) > 0 {
			var out []any
			for _, n := range rules.GetNotIn() {
				out = append(out, json.Number(strconv.Itoa(int(n))))
			}
			num.Not = &Schema{Enum: out}
		}
		s = &Schema{AnyOf: []*Schema{num}}
		if len(names) > 0 {
			s.AnyOf = append([]*Schema{{Enum: names}}, s.AnyOf...)
		}
	}
	s = described(s, "By name or by number.")
	if rules != nil {
		for _, rule := range unknownRules(rules.ProtoReflect(), "const", "defined_only", "in", "not_in") {
			s = b.unstated(s, "rule "+rule)
		}
	}
	return s
}
