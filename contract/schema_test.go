package contract_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
)

// admits reports whether the JSON value v (decoded with UseNumber) is
// valid under s, for the keywords contract.Schema writes. refs resolves
// "#/$defs/<name>".
func admits(s *contract.Schema, v any, defs map[string]*contract.Schema) bool {
	if s.Nothing {
		return false
	}
	if s.Ref != "" {
		return admits(defs[strings.TrimPrefix(s.Ref, "#/$defs/")], v, defs)
	}
	if s.Type != "" && !hasType(s.Type, v) {
		return false
	}
	if s.Const != nil && !sameJSON(s.Const, v) {
		return false
	}
	if s.Enum != nil {
		found := false
		for _, e := range s.Enum {
			found = found || sameJSON(e, v)
		}
		if !found {
			return false
		}
	}
	switch x := v.(type) {
	case string:
		n := uint64(utf8.RuneCountInString(x))
		if s.MinLength != nil && n < *s.MinLength || s.MaxLength != nil && n > *s.MaxLength {
			return false
		}
		if s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString(x) {
			return false
		}
	case json.Number:
		if !inBounds(x, s) {
			return false
		}
	case []any:
		n := uint64(len(x))
		if s.MinItems != nil && n < *s.MinItems || s.MaxItems != nil && n > *s.MaxItems {
			return false
		}
		for i, e := range x {
			if s.Items != nil && !admits(s.Items, e, defs) {
				return false
			}
			for _, f := range x[:i] {
				if s.UniqueItems && sameJSON(e, f) {
					return false
				}
			}
		}
	case map[string]any:
		n := uint64(len(x))
		if s.MinProperties != nil && n < *s.MinProperties || s.MaxProperties != nil && n > *s.MaxProperties {
			return false
		}
		for _, r := range s.Required {
			if _, ok := x[r]; !ok {
				return false
			}
		}
		for k, e := range x {
			if s.PropertyNames != nil && !admits(s.PropertyNames, k, defs) {
				return false
			}
			if p, ok := s.Properties[k]; ok {
				if !admits(p, e, defs) {
					return false
				}
			} else if s.AdditionalProperties != nil && !admits(s.AdditionalProperties, e, defs) {
				return false
			}
		}
	}
	for _, a := range s.AllOf {
		if !admits(a, v, defs) {
			return false
		}
	}
	if s.AnyOf != nil {
		any := false
		for _, a := range s.AnyOf {
			any = any || admits(a, v, defs)
		}
		if !any {
			return false
		}
	}
	return s.Not == nil || !admits(s.Not, v, defs)
}

func hasType(t string, v any) bool {
	switch x := v.(type) {
	case string:
		return t == "string"
	case bool:
		return t == "boolean"
	case nil:
		return t == "null"
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	case json.Number:
		if t == "number" {
			return true
		}
		f, ok := new(big.Float).SetString(string(x))
		return t == "integer" && ok && f.IsInt()
	}
	return false
}

func inBounds(x json.Number, s *contract.Schema) bool {
	v, ok := new(big.Float).SetString(string(x))
	if !ok {
		return false
	}
	cmp := func(bound json.Number) int {
		b, _ := new(big.Float).SetString(string(bound))
		return v.Cmp(b)
	}
	return (s.Minimum == "" || cmp(s.Minimum) >= 0) && (s.Maximum == "" || cmp(s.Maximum) <= 0) &&
		(s.ExclusiveMinimum == "" || cmp(s.ExclusiveMinimum) > 0) && (s.ExclusiveMaximum == "" || cmp(s.ExclusiveMaximum) < 0)
}

func sameJSON(a, b any) bool {
	na, aok := a.(json.Number)
	nb, bok := b.(json.Number)
	if aok && bok {
		x, _ := new(big.Float).SetString(string(na))
		y, _ := new(big.Float).SetString(string(nb))
		return x != nil && y != nil && x.Cmp(y) == 0
	}
	return reflect.DeepEqual(a, b)
}

// decodeJSON decodes b as one JSON text in the domain a schema speaks
// of, or reports that it is not one. A JSON text is UTF-8 (RFC 8259
// section 8.1), and encoding/json would hand on invalid bytes as U+FFFD, a
// document other than the one the contract reads. An object's names are
// unique: encoding/json keeps the last of a repeated name, the contract
// refuses the repetition, and a schema judges objects, not texts. And a
// string escapes no lone surrogate: encoding/json decodes "\ud800" as
// U+FFFD, the contract refuses it. These are I-JSON's rules (RFC 7493).
func decodeJSON(b []byte) (any, bool) {
	if !utf8.Valid(b) || hasLoneSurrogate(b) {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	v, err := decodeValue(d)
	if err != nil {
		return nil, false
	}
	if _, err := d.Token(); err != io.EOF { // one value, and nothing after it
		return nil, false
	}
	return v, true
}

// hasLoneSurrogate reports whether a \u escape in b names a UTF-16
// surrogate that is not half of a high-low pair. Outside strings a JSON
// text has no backslash, so b is read escape by escape.
func hasLoneSurrogate(b []byte) bool {
	surrogate := func(i int) (rune, bool) { // the \uXXXX at b[i:], if any
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		return rune(n), err == nil && utf16.IsSurrogate(rune(n))
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		r, ok := surrogate(i)
		if !ok {
			i++ // the escaped character, a backslash included
			continue
		}
		if r >= 0xdc00 { // a low half with no high half before it
			return true
		}
		low, ok := surrogate(i + 6)
		if !ok || low < 0xdc00 {
			return true
		}
		i += 11
	}
	return false
}

var errRepeatedName = errors.New("an object repeats a name")

// decodeValue reads one value from d token by token, as Decode would
// into an any, refusing an object that repeats a name.
func decodeValue(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch delim {
	case '{':
		obj := map[string]any{}
		for d.More() {
			name, err := d.Token()
			if err != nil {
				return nil, err
			}
			key := name.(string)
			if _, seen := obj[key]; seen {
				return nil, errRepeatedName
			}
			if obj[key], err = decodeValue(d); err != nil {
				return nil, err
			}
		}
		_, err = d.Token()
		return obj, err
	case '[':
		arr := []any{}
		for d.More() {
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err = d.Token()
		return arr, err
	}
	return nil, errors.New("unexpected " + delim.String())
}

func exampleSchemas(t testing.TB) (*contract.Registry, map[string]*contract.Schema, map[string]*contract.Schema) {
	r, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	defs, roots := map[string]*contract.Schema{}, map[string]*contract.Schema{}
	for _, typ := range r.Types() {
		c, _ := r.Lookup(typ)
		if roots[typ], err = c.JSONSchema(defs, "#/$defs/"); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
	}
	return r, roots, defs
}

var payloadFiles = map[string]string{
	"examples.shop.v1.OrderPlaced":            "order_placed.json",
	"examples.identity.v1.UserProfileUpdated": "user_profile_updated.json",
	"examples.logs.v1.LogLine":                "log_line.json",
}

// TestJSONSchemaExamples: the example payloads are valid under their
// schemas, and a payload the contract refuses (one rule broken, one of
// each kind the schema states) is not.
func TestJSONSchemaExamples(t *testing.T) {
	r, roots, defs := exampleSchemas(t)
	for typ, file := range payloadFiles {
		b, err := os.ReadFile(filepath.Join("testdata", "schema", file))
		if err != nil {
			t.Fatal(err)
		}
		v, _ := decodeJSON(b)
		if !admits(roots[typ], v, defs) {
			t.Errorf("%s: the schema refuses %s", typ, file)
		}
		c, _ := r.Lookup(typ)
		if _, err := c.CheckJSON(b); err != nil {
			t.Fatalf("%s: %s is not valid: %v", typ, file, err)
		}
	}
	refused := []struct{ typ, payload string }{
		// The message rule: a free order must be paid by invoice.
		{"examples.shop.v1.OrderPlaced", `{"order_id":"0b9e1c2a-1111-4a4a-8b8b-222233334444","customer":{"customer_id":"c1","email":"a@b.cd"},"items":[{"sku":"SKU-1","quantity":1}],"currency":"EUR","total_cents":0,"payment_method":"PAYMENT_METHOD_CARD","shipping_address":{"line1":"x","city":"y","postal_code":"12","country_code":"DE"}}`},
		// sms marketing needs a phone number.
		{"examples.identity.v1.UserProfileUpdated", `{"user_id":"0b9e1c2a-1111-4a4a-8b8b-222233334444","email":"a@b.cd","display_name":"A","locale":"en","changed_fields":["email"],"consent":{"sms_marketing":true,"source":"CONSENT_SOURCE_SIGNUP"}}`},
		// A required field missing, an enum's unspecified value, an unknown field.
		{"examples.logs.v1.LogLine", `{"severity":"SEVERITY_INFO","message":"m","timestamp":"2026-01-02T03:04:05Z","host":"h"}`},
		{"examples.logs.v1.LogLine", `{"service":"s","severity":"SEVERITY_UNSPECIFIED","message":"m","timestamp":"2026-01-02T03:04:05Z","host":"h"}`},
		{"examples.logs.v1.LogLine", `{"service":"s","severity":"SEVERITY_INFO","message":"m","timestamp":"2026-01-02T03:04:05Z","host":"h","extra":1}`},
	}
	for _, tc := range refused {
		c, _ := r.Lookup(tc.typ)
		if _, err := c.CheckJSON([]byte(tc.payload)); err == nil {
			t.Fatalf("%s: the contract accepts %s; the case is wrong", tc.typ, tc.payload)
		}
		v, _ := decodeJSON([]byte(tc.payload))
		if admits(roots[tc.typ], v, defs) {
			t.Errorf("%s: the schema admits %s, which the contract refuses", tc.typ, tc.payload)
		}
	}
}

// FuzzJSONSchemaSound holds the schemas to their promise: a payload a
// schema admits is one its contract accepts.
func FuzzJSONSchemaSound(f *testing.F) {
	r, roots, defs := exampleSchemas(f)
	for _, file := range payloadFiles {
		b, err := os.ReadFile(filepath.Join("testdata", "schema", file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := decodeJSON(b)
		if !ok {
			return
		}
		for typ, s := range roots {
			if !admits(s, v, defs) {
				continue
			}
			c, _ := r.Lookup(typ)
			if _, err := c.CheckJSON(b); err != nil {
				t.Fatalf("%s: the schema admits %s, which the contract refuses: %v", typ, b, err)
			}
		}
	})
}

// TestJSONSchemaUnexpressed: a rule without a sound JSON Schema form is an
// error naming it, not a schema that says less than the rule.
func TestJSONSchemaUnexpressed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		field *validate.FieldRules
		msg   *validate.MessageRules
		want  string
	}{
		{name: "field cel", field: validate.FieldRules_builder{Cel: []*validate.Rule{validate.Rule_builder{Id: proto.String("x"), Expression: proto.String("this.size() > 2")}.Build()}}.Build(), want: "cel"},
		{name: "message cel outside the subset", msg: validate.MessageRules_builder{Cel: []*validate.Rule{validate.Rule_builder{Id: proto.String("x"), Expression: proto.String("this.a.startsWith('x')")}.Build()}}.Build(), want: "startsWith"},
		{name: "string rule it does not read", field: validate.FieldRules_builder{String: validate.StringRules_builder{Ipv6: proto.Bool(true)}.Build()}.Build(), want: "ipv6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := oneFieldContract(t, descriptorpb.FieldDescriptorProto_TYPE_STRING, descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL, tc.field, tc.msg)
			defs := map[string]*contract.Schema{}
			_, err := c.JSONSchema(defs, "#/$defs/")
			var unexpressed *contract.UnexpressedRuleError
			if !errors.As(err, &unexpressed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("JSONSchema: %v, want an UnexpressedRuleError naming %q", err, tc.want)
			}
			if len(defs) != 0 {
				t.Errorf("defs kept %d definitions of a type it could not describe", len(defs))
			}
		})
	}
}

// oneFieldContract is the contract of message t.T { <kind> a = 1; } with
// the given rules on the field and the message (either may be nil).
func oneFieldContract(t *testing.T, kind descriptorpb.FieldDescriptorProto_Type, label descriptorpb.FieldDescriptorProto_Label,
	fieldRules *validate.FieldRules, msgRules *validate.MessageRules) *contract.Contract {
	t.Helper()
	field := &descriptorpb.FieldDescriptorProto{Name: proto.String("a"), Number: proto.Int32(1),
		Type: kind.Enum(), Label: label.Enum(), JsonName: proto.String("a")}
	if fieldRules != nil {
		field.Options = &descriptorpb.FieldOptions{}
		proto.SetExtension(field.Options, validate.E_Field, fieldRules)
	}
	msg := &descriptorpb.DescriptorProto{Name: proto.String("T"), Field: []*descriptorpb.FieldDescriptorProto{field}}
	if msgRules != nil {
		msg.Options = &descriptorpb.MessageOptions{}
		proto.SetExtension(msg.Options, validate.E_Message, msgRules)
	}
	file := &descriptorpb.FileDescriptorProto{Name: proto.String("t.proto"), Package: proto.String("t"), Syntax: proto.String("proto3"),
		Dependency: []string{"buf/validate/validate.proto"}, MessageType: []*descriptorpb.DescriptorProto{msg}}
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{
		protodesc.ToFileDescriptorProto(validate.File_buf_validate_validate_proto), file}}
	image, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	r, err := contract.Load(image, []string{"t.T"})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := r.Lookup("t.T")
	return c
}

// TestJSONSchemaRequired: required on a field without presence refuses its
// zero value sent, not only left out, as protovalidate does; the schema
// and the contract agree on every payload of the table.
func TestJSONSchemaRequired(t *testing.T) {
	required := validate.FieldRules_builder{Required: proto.Bool(true)}.Build()
	for _, tc := range []struct {
		name     string
		kind     descriptorpb.FieldDescriptorProto_Type
		label    descriptorpb.FieldDescriptorProto_Label
		payloads []string
	}{
		{"string", descriptorpb.FieldDescriptorProto_TYPE_STRING, descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL, []string{`{}`, `{"a":""}`, `{"a":"x"}`}},
		{"int64", descriptorpb.FieldDescriptorProto_TYPE_INT64, descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL, []string{`{}`, `{"a":0}`, `{"a":0.0}`, `{"a":7}`}},
		{"bool", descriptorpb.FieldDescriptorProto_TYPE_BOOL, descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL, []string{`{}`, `{"a":false}`, `{"a":true}`}},
		{"repeated", descriptorpb.FieldDescriptorProto_TYPE_STRING, descriptorpb.FieldDescriptorProto_LABEL_REPEATED, []string{`{}`, `{"a":[]}`, `{"a":[""]}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := oneFieldContract(t, tc.kind, tc.label, required, nil)
			defs := map[string]*contract.Schema{}
			s, err := c.JSONSchema(defs, "#/$defs/")
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.payloads {
				v, _ := decodeJSON([]byte(p))
				_, checkErr := c.CheckJSON([]byte(p))
				if admits(s, v, defs) && checkErr != nil {
					t.Errorf("the schema admits %s, which the contract refuses: %v", p, checkErr)
				}
				if !admits(s, v, defs) && checkErr == nil {
					t.Logf("the schema refuses %s, which the contract accepts (sound, not complete)", p)
				}
			}
		})
	}
}

// TestJSONSchemaFormatsAtTheirLongest: the longest string each format's
// pattern admits is one protovalidate's rule accepts (a label past 63
// characters, say, would not be).
func TestJSONSchemaFormatsAtTheirLongest(t *testing.T) {
	rep := strings.Repeat
	label := "a" + rep("b", 30) + "c" // 32 characters, the pattern's longest label
	for _, tc := range []struct {
		name  string
		rules *validate.StringRules
		value string
	}{
		{"email", validate.StringRules_builder{Email: proto.Bool(true)}.Build(),
			rep("a", 32) + rep("."+rep("a", 32), 3) + "@" + rep("b", 20) + rep("-"+rep("b", 20), 2) + rep("."+rep("c", 32), 3) + "." + rep("d", 8)},
		{"hostname", validate.StringRules_builder{Hostname: proto.Bool(true)}.Build(), label + rep("."+label, 4)},
		{"address", validate.StringRules_builder{Address: proto.Bool(true)}.Build(), label + rep("."+label, 4)},
		{"uri", validate.StringRules_builder{Uri: proto.Bool(true)}.Build(),
			"https://a" + rep("b", 30) + rep(".a"+rep("b", 30), 4) + rep("/"+rep("~", 32), 8)},
		{"uuid", validate.StringRules_builder{Uuid: proto.Bool(true)}.Build(), "ffffffff-ffff-ffff-ffff-ffffffffffff"},
		{"ipv4", validate.StringRules_builder{Ipv4: proto.Bool(true)}.Build(), "255.255.255.255"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := oneFieldContract(t, descriptorpb.FieldDescriptorProto_TYPE_STRING, descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL,
				validate.FieldRules_builder{String: tc.rules}.Build(), nil)
			defs := map[string]*contract.Schema{}
			s, err := c.JSONSchema(defs, "#/$defs/")
			if err != nil {
				t.Fatal(err)
			}
			payload, _ := json.Marshal(map[string]string{"a": tc.value})
			v, _ := decodeJSON(payload)
			if !admits(s, v, defs) {
				t.Fatalf("the schema does not admit %q; the case is not the pattern's longest", tc.value)
			}
			if _, err := c.CheckJSON(payload); err != nil {
				t.Errorf("the schema admits %q, which the contract refuses: %v", tc.value, err)
			}
		})
	}
}
