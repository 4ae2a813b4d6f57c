package contract_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/jsonschematest"
)

// schemaSet is each example type's schema compiled as a real validator
// reads it, and its sound twin's.
type schemaSet struct {
	registry *contract.Registry
	wide     map[string][]jsonschematest.Validator
	sound    map[string][]jsonschematest.Validator
}

func exampleSchemas(t testing.TB) schemaSet {
	r, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	set := schemaSet{registry: r, wide: map[string][]jsonschematest.Validator{}, sound: map[string][]jsonschematest.Validator{}}
	for _, typ := range r.Types() {
		c, _ := r.Lookup(typ)
		set.wide[typ] = compileSchema(t, c, contract.JSONSchemaOf)
		set.sound[typ] = compileSchema(t, c, contract.SoundJSONSchema)
	}
	return set
}

// compileSchema compiles the schema build makes of c.
func compileSchema(t testing.TB, c *contract.Contract, build func(*contract.Contract, map[string]*contract.Schema, string) (*contract.Schema, error)) []jsonschematest.Validator {
	t.Helper()
	defs := map[string]*contract.Schema{}
	root, err := build(c, defs, "#/$defs/")
	if err != nil {
		t.Fatalf("%s: %v", c.Type(), err)
	}
	return jsonschematest.Compile(t, contract.SchemaDocument(t, root, defs), "")
}

var payloadFiles = map[string]string{
	"examples.shop.v1.OrderPlaced":            "order_placed.json",
	"examples.identity.v1.UserProfileUpdated": "user_profile_updated.json",
	"examples.logs.v1.LogLine":                "log_line.json",
}

// TestJSONSchemaExamples: the example payloads are valid under their
// schemas and their sound twins, and a payload the contract refuses for a
// rule the schema states exactly (one rule broken, one of each kind) is
// refused by both.
func TestJSONSchemaExamples(t *testing.T) {
	set := exampleSchemas(t)
	for typ, file := range payloadFiles {
		b, err := os.ReadFile(filepath.Join("testdata", "schema", file))
		if err != nil {
			t.Fatal(err)
		}
		c, _ := set.registry.Lookup(typ)
		if _, err := c.CheckJSON(b); err != nil {
			t.Fatalf("%s: %s is not valid: %v", typ, file, err)
		}
		if err := jsonschematest.ValidateAll(set.wide[typ], b); err != nil {
			t.Errorf("%s: the schema refuses %s: %v", typ, file, err)
		}
		if err := jsonschematest.ValidateAll(set.sound[typ], b); err != nil {
			t.Errorf("%s: the sound twin refuses %s: %v", typ, file, err)
		}
	}
	refused := []struct{ typ, payload string }{
		// The message rule: a free order must be paid by invoice.
		{"examples.shop.v1.OrderPlaced", `{"order_id":"0b9e1c2a-1111-4a4a-8b8b-222233334444","customer":{"customer_id":"c1","email":"a@b.cd"},"items":[{"sku":"SKU-1","quantity":1}],"currency":"EUR","total_cents":0,"payment_method":"PAYMENT_METHOD_CARD","shipping_address":{"line1":"x","city":"y","postal_code":"12","country_code":"DE"}}`},
		// The same, by JSON names, the method by number.
		{"examples.shop.v1.OrderPlaced", `{"orderId":"0b9e1c2a-1111-4a4a-8b8b-222233334444","customer":{"customerId":"c1","email":"a@b.cd"},"items":[{"sku":"SKU-1","quantity":1}],"currency":"EUR","totalCents":null,"paymentMethod":1,"shippingAddress":{"line1":"x","city":"y","postalCode":"12","countryCode":"DE"}}`},
		// sms marketing needs a phone number.
		{"examples.identity.v1.UserProfileUpdated", `{"user_id":"0b9e1c2a-1111-4a4a-8b8b-222233334444","email":"a@b.cd","display_name":"A","locale":"en","changed_fields":["email"],"consent":{"sms_marketing":true,"source":"CONSENT_SOURCE_SIGNUP"}}`},
		// A required field missing, or null; an enum's unspecified value,
		// by name and by number; an unknown field; a field twice, under
		// its two names; an email domain label past 63 characters.
		{"examples.logs.v1.LogLine", `{"severity":"SEVERITY_INFO","message":"m","timestamp":"2026-01-02T03:04:05Z","host":"h"}`},
		{"examples.logs.v1.LogLine", `{"service":"s","severity":"SEVERITY_INFO","message":"m","timestamp":null,"host":"h"}`},
		{"examples.logs.v1.LogLine", `{"service":"s","severity":"SEVERITY_UNSPECIFIED","message":"m","timestamp":"2026-01-02T03:04:05Z","host":"h"}`},
		{"examples.logs.v1.LogLine", `{"service":"s","severity":0,"message":"m","timestamp":"2026-01-02T03:04:05Z","host":"h"}`},
		{"examples.logs.v1.LogLine", `{"service":"s","severity":"SEVERITY_INFO","message":"m","timestamp":"2026-01-02T03:04:05Z","host":"h","extra":1}`},
		{"examples.logs.v1.LogLine", `{"service":"s","severity":"SEVERITY_INFO","message":"m","timestamp":"2026-01-02T03:04:05Z","host":"h","trace_id":null,"traceId":null}`},
		{"examples.logs.v1.LogLine", `{"service":"s","severity":"SEVERITY_INFO","message":"m","timestamp":"2026-01-02T03:04:05Z","host":"a-.b"}`},
		{"examples.logs.v1.LogLine", `{"service":"s","severity":"SEVERITY_INFO","message":"m","timestamp":"2026-01-02T03:04:05Z","host":"1.2.3.256"}`},
		{"examples.shop.v1.OrderPlaced", `{"order_id":"0b9e1c2a-1111-4a4a-8b8b-222233334444","customer":{"customer_id":"c1","email":"a@` + strings.Repeat("b", 64) + `.cd"},"items":[{"sku":"SKU-1","quantity":1}],"currency":"EUR","total_cents":5,"payment_method":"PAYMENT_METHOD_CARD","shipping_address":{"line1":"x","city":"y","postal_code":"12","country_code":"DE"}}`},
	}
	for _, tc := range refused {
		c, _ := set.registry.Lookup(tc.typ)
		if _, err := c.CheckJSON([]byte(tc.payload)); err == nil {
			t.Fatalf("%s: the contract accepts %s; the case is wrong", tc.typ, tc.payload)
		}
		for _, v := range append(set.wide[tc.typ], set.sound[tc.typ]...) {
			if v.Validate([]byte(tc.payload)) == nil {
				t.Errorf("%s: the schema (%s) admits %s, which the contract refuses", tc.typ, v.Name, tc.payload)
			}
		}
	}
}

// FuzzJSONSchemaSound holds the schemas to both promises: a payload the
// contract accepts is valid under the schema (completeness), and one the
// sound twin admits is accepted (soundness, of every rule the two state
// alike), and so admitted by the schema too.
func FuzzJSONSchemaSound(f *testing.F) {
	set := exampleSchemas(f)
	for _, file := range payloadFiles {
		b, err := os.ReadFile(filepath.Join("testdata", "schema", file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, b := range [][]byte{examples.LogLineJSON, examples.OrderPlacedJSON, examples.UserProfileUpdatedJSON} {
		f.Add(b)
	}
	types := set.registry.Types()
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, typ := range types {
			c, _ := set.registry.Lookup(typ)
			_, err := c.CheckJSON(b)
			if err == nil {
				if verr := set.wide[typ][0].Validate(b); verr != nil {
					t.Fatalf("%s: the schema refuses %s, which the contract accepts: %v", typ, b, verr)
				}
			}
			// The oracle reads only I-JSON, the domain a schema speaks of:
			// encoding/json would read invalid UTF-8, a lone surrogate or
			// a repeated name as another document than the contract does.
			if !contract.IJSON(b) {
				continue
			}
			if set.sound[typ][0].Validate(b) != nil {
				continue
			}
			if err != nil {
				t.Fatalf("%s: the sound twin admits %s, which the contract refuses: %v", typ, b, err)
			}
		}
	})
}

// TestJSONSchemaUnstated: a rule without a JSON Schema form is left out of
// the schema, which admits what breaks it and names it in a description,
// while the sound twin admits nothing of the field.
func TestJSONSchemaUnstated(t *testing.T) {
	for _, tc := range []struct {
		name    string
		field   *validate.FieldRules
		msg     *validate.MessageRules
		payload string // accepted by the schema, refused by the contract
	}{
		{name: "field cel", field: validate.FieldRules_builder{Cel: []*validate.Rule{validate.Rule_builder{Id: proto.String("x"), Expression: proto.String("this.size() > 2")}.Build()}}.Build(), payload: `{"a":"x"}`},
		{name: "message cel outside the subset", msg: validate.MessageRules_builder{Cel: []*validate.Rule{validate.Rule_builder{Id: proto.String("x"), Expression: proto.String("this.a.startsWith('x')")}.Build()}}.Build(), payload: `{"a":"y"}`},
		{name: "a pattern no engine reads alike", field: validate.FieldRules_builder{String: validate.StringRules_builder{Pattern: proto.String(`^a\b`)}.Build()}.Build(), payload: `{"a":"ab"}`},
		{name: "string.host_and_port", field: validate.FieldRules_builder{String: validate.StringRules_builder{HostAndPort: proto.Bool(true)}.Build()}.Build(), payload: `{"a":"h"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := oneFieldContract(t, descriptorpb.FieldDescriptorProto_TYPE_STRING, descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL, tc.field, tc.msg)
			if _, err := c.CheckJSON([]byte(tc.payload)); err == nil {
				t.Fatalf("the contract accepts %s; the case is wrong", tc.payload)
			}
			defs := map[string]*contract.Schema{}
			root, err := c.JSONSchema(defs, "#/$defs/")
			if err != nil {
				t.Fatal(err)
			}
			doc := contract.SchemaDocument(t, root, defs)
			if err := jsonschematest.ValidateAll(jsonschematest.Compile(t, doc, ""), []byte(tc.payload)); err != nil {
				t.Errorf("the schema states a rule it cannot: it refuses %s: %v", tc.payload, err)
			}
			if !strings.Contains(string(doc), "Not stated here") {
				t.Errorf("no description names the rule: %s", doc)
			}
			for _, v := range compileSchema(t, c, contract.SoundJSONSchema) {
				if v.Validate([]byte(`{"a":"abc"}`)) == nil || v.Validate([]byte(tc.payload)) == nil {
					t.Errorf("the sound twin (%s) admits a value of a field it cannot describe", v.Name)
				}
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
// zero value sent, not only left out or null, as protovalidate does; the
// schema, its twin and the contract agree on every payload of the table.
func TestJSONSchemaRequired(t *testing.T) {
	required := validate.FieldRules_builder{Required: proto.Bool(true)}.Build()
	for _, tc := range []struct {
		name     string
		kind     descriptorpb.FieldDescriptorProto_Type
		label    descriptorpb.FieldDescriptorProto_Label
		payloads []string
	}{
		{"string", descriptorpb.FieldDescriptorProto_TYPE_STRING, descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL, []string{`{}`, `{"a":""}`, `{"a":null}`, `{"a":"x"}`}},
		{"int64", descriptorpb.FieldDescriptorProto_TYPE_INT64, descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL, []string{`{}`, `{"a":0}`, `{"a":0.0}`, `{"a":-0}`, `{"a":7}`, `{"a":null}`}},
		{"bool", descriptorpb.FieldDescriptorProto_TYPE_BOOL, descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL, []string{`{}`, `{"a":false}`, `{"a":true}`}},
		{"repeated", descriptorpb.FieldDescriptorProto_TYPE_STRING, descriptorpb.FieldDescriptorProto_LABEL_REPEATED, []string{`{}`, `{"a":[]}`, `{"a":null}`, `{"a":[""]}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := oneFieldContract(t, tc.kind, tc.label, required, nil)
			wide, sound := compileSchema(t, c, contract.JSONSchemaOf), compileSchema(t, c, contract.SoundJSONSchema)
			for _, p := range tc.payloads {
				_, checkErr := c.CheckJSON([]byte(p))
				for _, v := range append(wide, sound...) {
					if admitted := v.Validate([]byte(p)) == nil; admitted != (checkErr == nil) {
						t.Errorf("%s: the schema admits %s: %v; the contract: %v", v.Name, p, admitted, checkErr)
					}
				}
			}
		})
	}
}
