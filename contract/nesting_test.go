package contract_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	// test.v1.Doc imports the well-known types' files, which Load takes
	// from the descriptors compiled in.
	_ "google.golang.org/protobuf/types/known/structpb"
	_ "google.golang.org/protobuf/types/known/timestamppb"
	_ "google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluicehq/sluice/contract"
)

const docType = "test.v1.Doc"

// docFile is test.v1.Doc, a contract whose payloads nest through every
// shape whose JSON and binary forms count levels differently: Struct,
// Value and ListValue (one JSON level is up to three binary ones), a map
// of messages (an entry is a binary level, the map's object a JSON one),
// a repeated message (the array is a JSON level only), and well-known
// types whose JSON is a scalar (a binary level, no JSON one). name has a
// rule, so that refusals for rules are compared too.
func docFile() *descriptorpb.FileDescriptorProto {
	const (
		opt = descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
		rep = descriptorpb.FieldDescriptorProto_LABEL_REPEATED
		msg = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
	)
	field := func(name string, num int32, typ descriptorpb.FieldDescriptorProto_Type, label descriptorpb.FieldDescriptorProto_Label, typeName string) *descriptorpb.FieldDescriptorProto {
		fd := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), JsonName: proto.String(name), Number: proto.Int32(num), Type: typ.Enum(), Label: label.Enum()}
		if typeName != "" {
			fd.TypeName = proto.String(typeName)
		}
		return fd
	}
	name := field("name", 11, descriptorpb.FieldDescriptorProto_TYPE_STRING, opt, "")
	name.Options = new(descriptorpb.FieldOptions)
	proto.SetExtension(name.Options, validate.E_Field, validate.FieldRules_builder{
		String: validate.StringRules_builder{MaxLen: proto.Uint64(8)}.Build(),
	}.Build())
	return &descriptorpb.FileDescriptorProto{
		Name:    proto.String("test/v1/doc.proto"),
		Package: proto.String("test.v1"),
		Syntax:  proto.String("proto3"),
		Dependency: []string{"google/protobuf/struct.proto", "google/protobuf/wrappers.proto",
			"google/protobuf/timestamp.proto", "buf/validate/validate.proto"},
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Doc"),
			Field: []*descriptorpb.FieldDescriptorProto{
				field("attrs", 1, msg, opt, ".google.protobuf.Struct"),
				field("v", 2, msg, opt, ".google.protobuf.Value"),
				field("lv", 3, msg, opt, ".google.protobuf.ListValue"),
				field("kids", 4, msg, rep, ".test.v1.Doc.KidsEntry"),
				field("items", 5, msg, rep, ".test.v1.Doc"),
				field("child", 6, msg, opt, ".test.v1.Doc"),
				field("count", 7, msg, opt, ".google.protobuf.Int64Value"),
				field("at", 8, msg, opt, ".google.protobuf.Timestamp"),
				field("tags", 9, descriptorpb.FieldDescriptorProto_TYPE_STRING, rep, ""),
				field("vs", 10, msg, rep, ".google.protobuf.Value"),
				name,
			},
			NestedType: []*descriptorpb.DescriptorProto{{
				Name:    proto.String("KidsEntry"),
				Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
				Field: []*descriptorpb.FieldDescriptorProto{
					field("key", 1, descriptorpb.FieldDescriptorProto_TYPE_STRING, opt, ""),
					field("value", 2, msg, opt, ".test.v1.Doc"),
				},
			}},
		}},
	}
}

// docContract loads test.v1.Doc with opts.
func docContract(tb testing.TB, opts ...contract.Option) *contract.Contract {
	tb.Helper()
	r, err := contract.Load(setOf(tb, docFile()), []string{docType}, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return lookup(tb, r, docType)
}

// docBinary is the deterministic protobuf binary of js, a Doc in JSON,
// decoded without a depth limit of sluice's.
func docBinary(tb testing.TB, c *contract.Contract, js string) []byte {
	tb.Helper()
	m := dynamicpb.NewMessage(c.Descriptor())
	if err := (protojson.UnmarshalOptions{RecursionLimit: 10000}).Unmarshal([]byte(js), m); err != nil {
		tb.Fatalf("%s: %v", js, err)
	}
	return marshal(tb, m)
}

// nested builds JSON that nests exactly n levels deep (the payload object
// is level 1) through one shape, for n >= its shape's least depth.
type nested struct {
	name  string
	least int
	json  func(n int) string
}

// nestings are the shapes TestDepthLimit holds to the limit.
func nestings() []nested {
	// object is a Struct's JSON n levels deep; list a ListValue's; mixed
	// alternates them, as a Value may.
	var object, list, mixed func(n int) string
	object = func(n int) string {
		if n == 1 {
			return `{"a":1}`
		}
		return `{"a":` + object(n-1) + `}`
	}
	list = func(n int) string {
		if n == 1 {
			return `[true]`
		}
		return `[` + list(n-1) + `]`
	}
	mixed = func(n int) string {
		switch {
		case n == 1:
			return `{"s":"x","n":null}`
		case n%2 == 0:
			return `[1,` + mixed(n-1) + `]`
		}
		return `{"b":` + mixed(n-1) + `}`
	}
	// A chain of Docs that is one level short of n ends in an array of
	// strings: a JSON level without a message.
	var items, kids, children func(n int) string
	items = func(n int) string {
		switch n {
		case 1:
			return `{}`
		case 2:
			return `{"tags":["t"]}`
		}
		return `{"items":[` + items(n-2) + `]}`
	}
	kids = func(n int) string {
		switch n {
		case 1:
			return `{"name":"leaf"}`
		case 2:
			return `{"tags":["t"]}`
		}
		return `{"kids":{"k":` + kids(n-2) + `}}`
	}
	children = func(n int) string {
		if n == 1 {
			return `{"count":"5","at":"2026-12-01T10:00:00Z","v":1}`
		}
		return `{"child":` + children(n-1) + `}`
	}
	return []nested{
		{"Struct", 2, func(n int) string { return `{"attrs":` + object(n-1) + `}` }},
		{"ListValue", 2, func(n int) string { return `{"lv":` + list(n-1) + `}` }},
		{"Value", 2, func(n int) string { return `{"v":` + mixed(n-1) + `}` }},
		{"repeated Value", 3, func(n int) string { return `{"vs":[2,` + object(n-2) + `]}` }},
		{"map of messages", 1, kids},
		{"repeated messages", 1, items},
		{"messages ending in scalar well-known types", 1, children},
		{"Struct under a map of messages", 4, func(n int) string { return `{"kids":{"k":{"attrs":` + object(n-3) + `}}}` }},
	}
}

// TestDepthLimit holds the depth limit to one rule: a payload may nest
// max_depth levels as its JSON form counts them, whichever form it comes
// in. Each shape is built at every depth up to the limit and one level
// past it; the JSON and the binary of the same message get the same
// verdict from every check (accepted up to the limit, MALFORMED past it),
// and what a check returns is accepted as binary.
func TestDepthLimit(t *testing.T) {
	for _, max := range []int{1, 2, 3, 4, 5, 8, contract.DefaultMaxDepth} {
		c := docContract(t, contract.WithMaxDepth(max))
		for _, shape := range nestings() {
			for n := shape.least; n <= max+1; n++ {
				js := shape.json(n)
				bin := docBinary(t, c, js)
				wantOK := n <= max
				checks := []struct {
					name string
					run  func() ([]byte, error)
				}{
					{"CheckJSON", func() ([]byte, error) { return c.CheckJSON([]byte(js)) }},
					{"DecodeJSON", func() ([]byte, error) { return c.DecodeJSON([]byte(js)) }},
					{"CheckBinary", func() ([]byte, error) { return c.CheckBinary(bin) }},
					{"DecodeBinary", func() ([]byte, error) { return c.DecodeBinary(bin) }},
				}
				for _, check := range checks {
					out, err := check.run()
					if wantOK {
						if err != nil {
							t.Errorf("max %d, %s %d deep: %s: %v", max, shape.name, n, check.name, err)
						} else if _, err := c.CheckBinary(out); err != nil {
							t.Errorf("max %d, %s %d deep: CheckBinary refuses what %s returns: %v", max, shape.name, n, check.name, err)
						}
						continue
					}
					var merr *contract.MalformedError
					if !errors.As(err, &merr) {
						t.Errorf("max %d, %s %d deep: %s: %v, want MALFORMED", max, shape.name, n, check.name, err)
					}
				}
			}
		}
	}
}

// TestDepthLimitBinaryOnly: binary that protojson would write with a
// deeper JSON form than its wire data shows is judged by that JSON form.
// A map entry without its value is the value's default, which protojson
// writes as an object; a google.protobuf.Value with no kind, or a number
// that is not finite, has no JSON form at all.
func TestDepthLimitBinaryOnly(t *testing.T) {
	c := docContract(t, contract.WithMaxDepth(3))
	entry := func(fields ...[]byte) []byte {
		var b []byte
		for _, f := range fields {
			b = append(b, f...)
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, 4, protowire.BytesType), b)
	}
	value := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	nan := protowire.AppendFixed64(protowire.AppendTag(nil, 2, protowire.Fixed64Type), math.Float64bits(math.NaN()))
	for _, tc := range []struct {
		name    string
		binary  []byte
		mention string // "" when accepted
	}{
		{"entry without its value, at the limit", entry(str(1, "k")), ""},
		{"entry without its value, past the limit", value(6, entry(str(1, "k"))), "depth limit of 3"},
		{"entry with its value empty, past the limit", value(6, entry(str(1, "k"), value(2, nil))), "depth limit of 3"},
		{"Value with no kind", value(2, nil), "google.protobuf.Value"},
		{"Value NaN", value(2, nan), "google.protobuf.Value"},
		{"Struct entry without its value", value(1, value(1, str(1, "a"))), "google.protobuf.Value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, check := range []func([]byte) ([]byte, error){c.CheckBinary, c.DecodeBinary} {
				_, err := check(tc.binary)
				if tc.mention == "" {
					if err != nil {
						t.Fatal(err)
					}
					continue
				}
				var merr *contract.MalformedError
				if !errors.As(err, &merr) || !strings.Contains(err.Error(), tc.mention) {
					t.Fatalf("got %v, want MALFORMED mentioning %q", err, tc.mention)
				}
			}
		})
	}
}
