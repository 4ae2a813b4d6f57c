package contracttest

import (
	"slices"
	"strings"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// SetFieldType gives field name of msg another type; typeName is the
// message or enum's full name for those types ("" otherwise).
func SetFieldType(msg, name string, typ descriptorpb.FieldDescriptorProto_Type, typeName string) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		f := Field(t, set, msg, name)
		f.Type = typ.Enum()
		f.TypeName = nil
		if typeName != "" {
			f.TypeName = proto.String("." + typeName)
		}
	}
}

// SetLabel gives field name of msg another label (LABEL_REPEATED: a list).
func SetLabel(msg, name string, label descriptorpb.FieldDescriptorProto_Label) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		Field(t, set, msg, name).Label = label.Enum()
	}
}

// RenameField renames field name of msg to newName, with newName's
// default JSON name.
func RenameField(msg, name, newName string) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		f := Field(t, set, msg, name)
		f.Name, f.JsonName = proto.String(newName), proto.String(jsonName(newName))
	}
}

// SetJSONName sets the json_name of field name of msg.
func SetJSONName(msg, name, json string) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		Field(t, set, msg, name).JsonName = proto.String(json)
	}
}

// AddMessageField adds a singular field of message type typeName (a full
// name) to msg.
func AddMessageField(msg, name string, number int32, typeName string) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		m := Message(t, set, msg)
		m.Field = append(m.Field, &descriptorpb.FieldDescriptorProto{
			Name:     proto.String(name),
			JsonName: proto.String(jsonName(name)),
			Number:   proto.Int32(number),
			Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			Type:     descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(),
			TypeName: proto.String("." + typeName),
		})
	}
}

// AddImport adds path to the imports of the file that declares msg, for
// a field added to msg whose type path declares (a well-known type, say).
func AddImport(msg, path string) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		Message(t, set, msg) // fails t when msg is not there
		for _, f := range set.GetFile() {
			if !strings.HasPrefix(msg, f.GetPackage()+".") || !declares(f, strings.TrimPrefix(msg, f.GetPackage()+".")) {
				continue
			}
			if !slices.Contains(f.Dependency, path) {
				f.Dependency = append(f.Dependency, path)
			}
			return
		}
	}
}

// declares says whether file f declares the message rest ("Outer.Inner",
// relative to f's package).
func declares(f *descriptorpb.FileDescriptorProto, rest string) bool {
	msgs := f.GetMessageType()
	for _, name := range strings.Split(rest, ".") {
		i := slices.IndexFunc(msgs, func(m *descriptorpb.DescriptorProto) bool { return m.GetName() == name })
		if i < 0 {
			return false
		}
		msgs = msgs[i].GetNestedType()
	}
	return true
}

// MoveToOneof puts field name of msg into the oneof called oneof,
// declaring it when msg has none of that name.
func MoveToOneof(msg, name, oneof string) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		m := Message(t, set, msg)
		f := Field(t, set, msg, name)
		i := slices.IndexFunc(m.OneofDecl, func(o *descriptorpb.OneofDescriptorProto) bool { return o.GetName() == oneof })
		if i < 0 {
			m.OneofDecl = append(m.OneofDecl, &descriptorpb.OneofDescriptorProto{Name: proto.String(oneof)})
			i = len(m.OneofDecl) - 1
		}
		f.OneofIndex = proto.Int32(int32(i))
	}
}

// EditFieldRules changes the protovalidate rules of field name of msg
// (empty rules when it has none) with edit.
func EditFieldRules(msg, name string, edit func(*validate.FieldRules)) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		r := FieldRules(t, set, msg, name)
		edit(r)
		SetFieldRules(msg, name, r)(t, set)
	}
}

// EditMessageRules changes the protovalidate rules of msg (empty rules
// when it has none) with edit.
func EditMessageRules(msg string, edit func(*validate.MessageRules)) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		m := Message(t, set, msg)
		if m.Options == nil {
			m.Options = new(descriptorpb.MessageOptions)
		}
		r := new(validate.MessageRules)
		if old, ok := proto.GetExtension(m.Options, validate.E_Message).(*validate.MessageRules); ok && old != nil {
			r = proto.CloneOf(old)
		}
		edit(r)
		proto.SetExtension(m.Options, validate.E_Message, r)
	}
}

// EditOneofRules changes the protovalidate rules of the oneof called
// oneof in msg (empty rules when it has none) with edit.
func EditOneofRules(msg, oneof string, edit func(*validate.OneofRules)) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		m := Message(t, set, msg)
		i := slices.IndexFunc(m.OneofDecl, func(o *descriptorpb.OneofDescriptorProto) bool { return o.GetName() == oneof })
		if i < 0 {
			t.Fatalf("contracttest: no oneof %s in %s", oneof, msg)
		}
		o := m.OneofDecl[i]
		if o.Options == nil {
			o.Options = new(descriptorpb.OneofOptions)
		}
		r := new(validate.OneofRules)
		if old, ok := proto.GetExtension(o.Options, validate.E_Oneof).(*validate.OneofRules); ok && old != nil {
			r = proto.CloneOf(old)
		}
		edit(r)
		proto.SetExtension(o.Options, validate.E_Oneof, r)
	}
}

// ClearReserved drops the reserved numbers and names of msg, as a
// careless next version might.
func ClearReserved(msg string) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		m := Message(t, set, msg)
		m.ReservedRange, m.ReservedName = nil, nil
	}
}

// RemoveMessage removes the message fullName from its file or its
// enclosing message.
func RemoveMessage(fullName string) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		target := Message(t, set, fullName)
		drop := func(ms []*descriptorpb.DescriptorProto) []*descriptorpb.DescriptorProto {
			return slices.DeleteFunc(ms, func(m *descriptorpb.DescriptorProto) bool { return m == target })
		}
		var walk func(ms []*descriptorpb.DescriptorProto)
		walk = func(ms []*descriptorpb.DescriptorProto) {
			for _, m := range ms {
				m.NestedType = drop(m.NestedType)
				walk(m.NestedType)
			}
		}
		for _, f := range set.GetFile() {
			f.MessageType = drop(f.MessageType)
			walk(f.MessageType)
		}
	}
}

// Enum returns the enum fullName ("pkg.Enum" or "pkg.Outer.Enum") in set.
func Enum(t testing.TB, set *descriptorpb.FileDescriptorSet, fullName string) *descriptorpb.EnumDescriptorProto {
	t.Helper()
	for _, f := range set.GetFile() {
		for _, e := range f.GetEnumType() {
			if qualify(f.GetPackage(), e.GetName()) == fullName {
				return e
			}
		}
		var walk func(prefix string, ms []*descriptorpb.DescriptorProto) *descriptorpb.EnumDescriptorProto
		walk = func(prefix string, ms []*descriptorpb.DescriptorProto) *descriptorpb.EnumDescriptorProto {
			for _, m := range ms {
				full := qualify(prefix, m.GetName())
				for _, e := range m.GetEnumType() {
					if qualify(full, e.GetName()) == fullName {
						return e
					}
				}
				if e := walk(full, m.GetNestedType()); e != nil {
					return e
				}
			}
			return nil
		}
		if e := walk(f.GetPackage(), f.GetMessageType()); e != nil {
			return e
		}
	}
	t.Fatalf("contracttest: no enum %s in the set", fullName)
	return nil
}

func qualify(scope, name string) string {
	if scope == "" {
		return name
	}
	return scope + "." + name
}

func enumValue(t testing.TB, e *descriptorpb.EnumDescriptorProto, name string) (int, *descriptorpb.EnumValueDescriptorProto) {
	t.Helper()
	for i, v := range e.GetValue() {
		if v.GetName() == name {
			return i, v
		}
	}
	t.Fatalf("contracttest: no value %s in enum %s", name, e.GetName())
	return -1, nil
}

// AddEnumValue adds value name = number to enum.
func AddEnumValue(enum, name string, number int32) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		e := Enum(t, set, enum)
		e.Value = append(e.Value, &descriptorpb.EnumValueDescriptorProto{Name: proto.String(name), Number: proto.Int32(number)})
	}
}

// SetEnumType makes enum closed or open through the editions feature
// enum_type: the file that declares it must be an editions file.
func SetEnumType(enum string, closed bool) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		e := Enum(t, set, enum)
		if e.Options == nil {
			e.Options = new(descriptorpb.EnumOptions)
		}
		if e.Options.Features == nil {
			e.Options.Features = new(descriptorpb.FeatureSet)
		}
		typ := descriptorpb.FeatureSet_OPEN
		if closed {
			typ = descriptorpb.FeatureSet_CLOSED
		}
		e.Options.Features.EnumType = typ.Enum()
	}
}

// RemoveEnumValue removes value name from enum and, when reserve is set,
// reserves its number and name.
func RemoveEnumValue(enum, name string, reserve bool) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		e := Enum(t, set, enum)
		i, v := enumValue(t, e, name)
		e.Value = slices.Delete(e.Value, i, i+1)
		if reserve {
			e.ReservedRange = append(e.ReservedRange, &descriptorpb.EnumDescriptorProto_EnumReservedRange{
				Start: proto.Int32(v.GetNumber()), End: proto.Int32(v.GetNumber()), // inclusive
			})
			e.ReservedName = append(e.ReservedName, name)
		}
	}
}

// RenumberEnumValue gives value name of enum another number.
func RenumberEnumValue(enum, name string, number int32) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		_, v := enumValue(t, Enum(t, set, enum), name)
		v.Number = proto.Int32(number)
	}
}

// RewriteComments replaces old with new in every comment of the set (the
// source code info), which must hold old somewhere.
func RewriteComments(old, new string) Edit {
	return func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		found := false
		rewrite := func(s *string) *string {
			if s == nil || !strings.Contains(*s, old) {
				return s
			}
			found = true
			return proto.String(strings.ReplaceAll(*s, old, new))
		}
		for _, f := range set.GetFile() {
			for _, loc := range f.GetSourceCodeInfo().GetLocation() {
				loc.LeadingComments = rewrite(loc.LeadingComments)
				loc.TrailingComments = rewrite(loc.TrailingComments)
				for i, d := range loc.LeadingDetachedComments {
					loc.LeadingDetachedComments[i] = *rewrite(&d)
				}
			}
		}
		if !found {
			t.Fatalf("contracttest: no comment holds %q", old)
		}
	}
}
