package strformat

import (
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// validValues holds a valid value of each format, by field name.
var validValues = map[string]string{
	"email":               "ada@example.com",
	"hostname":            "api.eu-west-1.example.com",
	"ip":                  "2001:db8::68",
	"ipv4":                "10.0.3.17",
	"ipv6":                "fe80::1ff:fe23:4567:890a",
	"uri":                 "https://example.com/orders/42?expand=items#top",
	"uri_ref":             "./orders/42?expand=items",
	"address":             "10.0.3.17",
	"uuid":                "7f3c2a9e-5b1d-4c8e-9a6f-2d4b8e1c3f70",
	"tuuid":               "7f3c2a9e5b1d4c8e9a6f2d4b8e1c3f70",
	"ip_with_prefixlen":   "192.168.1.5/24",
	"ipv4_with_prefixlen": "192.168.1.5/24",
	"ipv6_with_prefixlen": "2001:db8::1/64",
	"ip_prefix":           "192.168.1.0/24",
	"ipv4_prefix":         "192.168.1.0/24",
	"ipv6_prefix":         "2001:db8::/32",
	"host_and_port":       "example.com:8443",
	"ulid":                "01ARZ3NDEKTSV4RRFFQ69G5FAV",
	"header_name":         "Content-Type",
	"header_name_loose":   "Content-Type",
	"header_value":        "application/json; charset=utf-8",
	"header_value_loose":  "application/json; charset=utf-8",
}

// oneField returns a message type with a single string field carrying rules
// (none when nil).
func oneField(tb testing.TB, name string, rules *validate.StringRules) protoreflect.MessageDescriptor {
	tb.Helper()
	fd := &descriptorpb.FieldDescriptorProto{
		Name:     proto.String("v"),
		JsonName: proto.String("v"),
		Number:   proto.Int32(1),
		Type:     descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
		Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
	}
	if rules != nil {
		fd.Options = new(descriptorpb.FieldOptions)
		proto.SetExtension(fd.Options, validate.E_Field, validate.FieldRules_builder{String: rules}.Build())
	}
	file, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:        proto.String("strformat/bench/" + name + ".proto"),
		Package:     proto.String("strformat.bench." + name),
		Syntax:      proto.String("proto3"),
		Dependency:  []string{"buf/validate/validate.proto"},
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("M"), Field: []*descriptorpb.FieldDescriptorProto{fd}}},
	}, protoregistry.GlobalFiles)
	if err != nil {
		tb.Fatal(err)
	}
	return file.Messages().Get(0)
}

func TestValidValues(t *testing.T) {
	for _, f := range formats() {
		v, ok := validValues[f.field]
		if !ok || !f.check(v) {
			t.Errorf("%s: %q is not valid", f.field, v)
		}
	}
}

// BenchmarkFormats compares each IsX on a valid value (.../strformat) with
// protovalidate validating a one-field message carrying the rule
// (.../protovalidate), and with the same message without a rule
// (.../protovalidate-norule): the format's own cost in protovalidate is the
// difference of the last two.
func BenchmarkFormats(b *testing.B) {
	v, err := protovalidate.New()
	if err != nil {
		b.Fatal(err)
	}
	bare := oneField(b, "norule", nil)
	for _, f := range formats() {
		val := validValues[f.field]
		b.Run(f.field+"/strformat", func(b *testing.B) {
			for range b.N {
				if !f.check(val) {
					b.Fatal("invalid")
				}
			}
		})
		for _, c := range []struct {
			name string
			desc protoreflect.MessageDescriptor
		}{{"protovalidate", oneField(b, f.field, f.rules)}, {"protovalidate-norule", bare}} {
			m := dynamicpb.NewMessage(c.desc)
			m.Set(c.desc.Fields().Get(0), protoreflect.ValueOfString(val))
			if err := v.Validate(m); err != nil {
				b.Fatal(err)
			}
			b.Run(f.field+"/"+c.name, func(b *testing.B) {
				for range b.N {
					if err := v.Validate(m); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func TestDoesNotAllocate(t *testing.T) {
	for _, f := range formats() {
		v := validValues[f.field]
		if n := testing.AllocsPerRun(100, func() { f.check(v) }); n != 0 {
			t.Errorf("%s(%q): %v allocations", f.field, v, n)
		}
	}
	for _, s := range []string{"http://%C3%A9.example/", "http://[fe80::1%25en%30]:80/", "//[v1.x]/a", "a:?//[::1]"} {
		if n := testing.AllocsPerRun(100, func() { IsURIRef(s) }); n != 0 {
			t.Errorf("IsURIRef(%q): %v allocations", s, n)
		}
	}
}
