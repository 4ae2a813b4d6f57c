// Package contracttest evolves descriptor sets for tests: it takes an
// image (the example contracts, say) and returns a new one with edits
// applied, as a contract repository's next commit would, without protoc or
// buf.
//
//	next := contracttest.Evolve(t, examples.Contracts,
//		contracttest.AddField("examples.shop.v1.OrderPlaced", "gift_wrap", 9, descriptorpb.FieldDescriptorProto_TYPE_BOOL))
package contracttest

import (
	"strings"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Edit changes a descriptor set in place; it fails t when what it edits
// is not there.
type Edit func(t testing.TB, set *descriptorpb.FileDescriptorSet)

// Evolve returns image with edits applied, in order, serialized.
func Evolve(t testing.TB, image []byte, edits ...Edit) []byte {
	t.Helper()
	set := new(descriptorpb.FileDescriptorSet)
	if err := proto.Unmarshal(image, set); err != nil {
		t.Fatalf("contracttest: decode image: %v", err)
	}
	for _, e := range edits {
		e(t, set)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(set)
	if err != nil {
		t.Fatalf("contracttest: encode image: %v", err)
	}
	return b
}

// Message returns the message fullName ("pkg.Outer.Inner") in set.
func Message(t testing.TB, set *descriptorpb.FileDescriptorSet, fullName string) *descriptorpb.DescriptorProto {
	t.Helper()
	for _, f := range set.GetFile() {
		rest, ok := strings.CutPrefix(fullName, f.GetPackage()+".")
		if !ok {
			continue
		}
		msgs := f.GetMessageType()
		var m *descriptorpb.DescriptorProto
		for _, name := range strings.Split(rest, ".") {
			m = nil
			for _, c := range msgs {
				if c.GetName() == name {
					m = c
					break
				}
			}
			if m == nil {
				break
			}
			msgs = m.GetNestedType()
		}
		if m != nil {
			return m
		}
	}
	t.Fatalf("contracttest: no message %s in the set", fullName)
	return nil
}

// Field returns field name of message msg.
func Field(t testing.TB, set *descriptorpb.FileDescriptorSet, msg, name string) *descriptorpb.FieldDescriptorProto {
	t.Helper()
	for _, f := range Message(t, set, msg).GetField() {
		if f.GetName() == name {
			return f
		}
	}
	t.Fatalf("contracttest: no field %s in %s", name, msg)
	return nil
}

// AddField adds a singular scalar field without presence to msg.
func AddField(msg, name string, number int32, typ descriptorpb.FieldDescriptorProto_Type) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		m := Message(t, set, msg)
		m.Field = append(m.Field, &descriptorpb.FieldDescriptorProto{
			Name:     proto.String(name),
			JsonName: proto.String(jsonName(name)),
			Number:   proto.Int32(number),
			Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			Type:     typ.Enum(),
		})
	}
}

// RemoveField removes field name from msg and, when reserve is set,
// reserves its number and name.
func RemoveField(msg, name string, reserve bool) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		m := Message(t, set, msg)
		f := Field(t, set, msg, name)
		for i, g := range m.Field {
			if g == f {
				m.Field = append(m.Field[:i], m.Field[i+1:]...)
				break
			}
		}
		if reserve {
			m.ReservedRange = append(m.ReservedRange, &descriptorpb.DescriptorProto_ReservedRange{
				Start: proto.Int32(f.GetNumber()), End: proto.Int32(f.GetNumber() + 1),
			})
			m.ReservedName = append(m.ReservedName, name)
		}
	}
}

// SetFieldRules replaces the protovalidate rules of field name of msg
// (nil: no rules).
func SetFieldRules(msg, name string, rules *validate.FieldRules) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		f := Field(t, set, msg, name)
		if f.Options == nil {
			f.Options = new(descriptorpb.FieldOptions)
		}
		if rules == nil {
			proto.ClearExtension(f.Options, validate.E_Field)
			return
		}
		proto.SetExtension(f.Options, validate.E_Field, rules)
	}
}

// FieldRules returns a copy of the protovalidate rules of field name of
// msg in set (empty rules when it has none), for an edit to change.
func FieldRules(t testing.TB, set *descriptorpb.FileDescriptorSet, msg, name string) *validate.FieldRules {
	t.Helper()
	f := Field(t, set, msg, name)
	if r, ok := proto.GetExtension(f.GetOptions(), validate.E_Field).(*validate.FieldRules); ok && r != nil {
		return proto.CloneOf(r)
	}
	return new(validate.FieldRules)
}

// jsonName is protoc's default json_name: lowerCamelCase of the field name.
func jsonName(name string) string {
	var b strings.Builder
	up := false
	for _, r := range name {
		if r == '_' {
			up = true
			continue
		}
		if up && 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		b.WriteRune(r)
	}
	return b.String()
}
