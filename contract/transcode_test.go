package contract

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	// The rich contract imports the well-known types' files, which Load
	// takes from the descriptors compiled in.
	_ "google.golang.org/protobuf/types/known/anypb"
	_ "google.golang.org/protobuf/types/known/durationpb"
	_ "google.golang.org/protobuf/types/known/emptypb"
	_ "google.golang.org/protobuf/types/known/fieldmaskpb"
	_ "google.golang.org/protobuf/types/known/structpb"
	_ "google.golang.org/protobuf/types/known/timestamppb"
	_ "google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluicehq/sluice/examples"
)

// Types of the rich contract, a proto3, a proto2 and an editions file.
const (
	richType   = "test.rich.v1.Rich"
	legacyType = "test.rich.v1.Legacy"
	edType     = "test.rich.v1.Ed"
)

type fieldOpt func(*descriptorpb.FieldDescriptorProto)

func jsonName(s string) fieldOpt {
	return func(f *descriptorpb.FieldDescriptorProto) { f.JsonName = proto.String(s) }
}

func repeated(f *descriptorpb.FieldDescriptorProto) {
	f.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
}

func packed(on bool) fieldOpt {
	return func(f *descriptorpb.FieldDescriptorProto) {
		repeated(f)
		f.Options = &descriptorpb.FieldOptions{Packed: proto.Bool(on)}
	}
}

func inOneof(i int32) fieldOpt {
	return func(f *descriptorpb.FieldDescriptorProto) { f.OneofIndex = proto.Int32(i) }
}

// optional3 makes a proto3 optional field, in synthetic oneof i.
func optional3(i int32) fieldOpt {
	return func(f *descriptorpb.FieldDescriptorProto) {
		f.OneofIndex = proto.Int32(i)
		f.Proto3Optional = proto.Bool(true)
	}
}

func features(fs *descriptorpb.FeatureSet) fieldOpt {
	return func(f *descriptorpb.FieldDescriptorProto) { f.Options = &descriptorpb.FieldOptions{Features: fs} }
}

// field builds a field; typ names a message or enum type for those kinds
// and is ignored for the others.
func field(name string, num int32, kind descriptorpb.FieldDescriptorProto_Type, typ string, opts ...fieldOpt) *descriptorpb.FieldDescriptorProto {
	f := &descriptorpb.FieldDescriptorProto{
		Name:   proto.String(name),
		Number: proto.Int32(num),
		Type:   kind.Enum(),
		Label:  descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
	}
	if kind == tMessage || kind == tEnum || kind == tGroup {
		f.TypeName = proto.String(typ)
	}
	for _, o := range opts {
		o(f)
	}
	return f
}

const (
	tDouble   = descriptorpb.FieldDescriptorProto_TYPE_DOUBLE
	tFloat    = descriptorpb.FieldDescriptorProto_TYPE_FLOAT
	tInt64    = descriptorpb.FieldDescriptorProto_TYPE_INT64
	tUint64   = descriptorpb.FieldDescriptorProto_TYPE_UINT64
	tInt32    = descriptorpb.FieldDescriptorProto_TYPE_INT32
	tFixed64  = descriptorpb.FieldDescriptorProto_TYPE_FIXED64
	tFixed32  = descriptorpb.FieldDescriptorProto_TYPE_FIXED32
	tBool     = descriptorpb.FieldDescriptorProto_TYPE_BOOL
	tString   = descriptorpb.FieldDescriptorProto_TYPE_STRING
	tGroup    = descriptorpb.FieldDescriptorProto_TYPE_GROUP
	tMessage  = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
	tBytes    = descriptorpb.FieldDescriptorProto_TYPE_BYTES
	tUint32   = descriptorpb.FieldDescriptorProto_TYPE_UINT32
	tEnum     = descriptorpb.FieldDescriptorProto_TYPE_ENUM
	tSfixed32 = descriptorpb.FieldDescriptorProto_TYPE_SFIXED32
	tSfixed64 = descriptorpb.FieldDescriptorProto_TYPE_SFIXED64
	tSint32   = descriptorpb.FieldDescriptorProto_TYPE_SINT32
	tSint64   = descriptorpb.FieldDescriptorProto_TYPE_SINT64
)

// mapOf adds a map field to msg: its entry type and the field.
func mapOf(msg *descriptorpb.DescriptorProto, name string, num int32, key descriptorpb.FieldDescriptorProto_Type, val descriptorpb.FieldDescriptorProto_Type, valType string) {
	entry := ""
	for _, part := range strings.Split(name, "_") {
		entry += strings.ToUpper(part[:1]) + part[1:]
	}
	entry += "Entry"
	msg.NestedType = append(msg.NestedType, &descriptorpb.DescriptorProto{
		Name:    proto.String(entry),
		Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
		Field: []*descriptorpb.FieldDescriptorProto{
			field("key", 1, key, ""),
			field("value", 2, val, valType),
		},
	})
	msg.Field = append(msg.Field, field(name, num, tMessage, "."+*msgPackage(msg)+"."+*msg.Name+"."+entry, repeated))
}

// msgPackage is where mapOf's messages live.
func msgPackage(*descriptorpb.DescriptorProto) *string { return proto.String("test.rich.v1") }

func enumOf(name string, values ...any) *descriptorpb.EnumDescriptorProto {
	e := &descriptorpb.EnumDescriptorProto{Name: proto.String(name)}
	for i := 0; i < len(values); i += 2 {
		e.Value = append(e.Value, &descriptorpb.EnumValueDescriptorProto{
			Name: proto.String(values[i].(string)), Number: proto.Int32(int32(values[i+1].(int))),
		})
	}
	return e
}

const (
	wkt       = ".google.protobuf."
	richMsg   = ".test.rich.v1.Rich"
	innerMsg  = ".test.rich.v1.Inner"
	colorEnum = ".test.rich.v1.Color"
)

// richFile is a proto3 file with every scalar kind, lists packed and not,
// maps of every key kind, oneofs, proto3 optional, recursion, an enum with
// a negative value, every covered well-known type and json_name overrides.
func richFile() *descriptorpb.FileDescriptorProto {
	rich := &descriptorpb.DescriptorProto{Name: proto.String("Rich")}
	add := func(fs ...*descriptorpb.FieldDescriptorProto) { rich.Field = append(rich.Field, fs...) }
	add(
		field("i32", 1, tInt32, ""), field("i64", 2, tInt64, ""), field("u32", 3, tUint32, ""),
		field("u64", 4, tUint64, ""), field("s32", 5, tSint32, ""), field("s64", 6, tSint64, ""),
		field("f32", 7, tFixed32, ""), field("f64", 8, tFixed64, ""), field("sf32", 9, tSfixed32, ""),
		field("sf64", 10, tSfixed64, ""), field("fl", 11, tFloat, ""), field("db", 12, tDouble, ""),
		field("b", 13, tBool, ""), field("s", 14, tString, ""), field("by", 15, tBytes, ""),
		field("color", 16, tEnum, colorEnum),
		field("r_i32", 17, tInt32, "", repeated), field("r_i64", 18, tInt64, "", packed(false)),
		field("r_s", 19, tString, "", repeated), field("r_by", 20, tBytes, "", repeated),
		field("r_db", 21, tDouble, "", repeated), field("r_color", 22, tEnum, colorEnum, repeated),
		field("r_s64", 23, tSint64, "", repeated), field("r_f32", 24, tFixed32, "", repeated),
		field("r_b", 25, tBool, "", repeated), field("r_fl", 26, tFloat, "", packed(false)),
		field("r_u64", 27, tUint64, "", repeated), field("r_sf64", 28, tSfixed64, "", repeated),
	)
	mapOf(rich, "m_si", 30, tString, tInt32, "")
	mapOf(rich, "m_is", 31, tInt32, tString, "")
	mapOf(rich, "m_ir", 32, tInt64, tMessage, richMsg)
	mapOf(rich, "m_ub", 33, tUint32, tBytes, "")
	mapOf(rich, "m_ud", 34, tUint64, tDouble, "")
	mapOf(rich, "m_bc", 35, tBool, tEnum, colorEnum)
	mapOf(rich, "m_s32", 36, tSint32, tSint64, "")
	mapOf(rich, "m_s64", 37, tSint64, tBool, "")
	mapOf(rich, "m_f32", 38, tFixed32, tFixed64, "")
	mapOf(rich, "m_f64", 39, tFixed64, tFloat, "")
	mapOf(rich, "m_sf32", 40, tSfixed32, tSfixed32, "")
	mapOf(rich, "m_sf64", 41, tSfixed64, tString, "")
	mapOf(rich, "m_sv", 42, tString, tMessage, wkt+"Value")
	mapOf(rich, "m_snv", 43, tString, tEnum, wkt+"NullValue")
	mapOf(rich, "m_st", 44, tString, tMessage, wkt+"Timestamp")
	mapOf(rich, "m_sw", 45, tString, tMessage, wkt+"Int32Value")
	mapOf(rich, "m_se", 46, tString, tMessage, wkt+"Empty")
	add(
		field("o_s", 50, tString, "", inOneof(0)), field("o_i", 51, tInt32, "", inOneof(0)),
		field("o_rich", 52, tMessage, richMsg, inOneof(0)), field("o_v", 53, tMessage, wkt+"Value", inOneof(0)),
		field("o_nv", 54, tEnum, wkt+"NullValue", inOneof(0)), field("o_ts", 55, tMessage, wkt+"Timestamp", inOneof(0)),
		field("x_b", 56, tBool, "", inOneof(1)), field("x_by", 57, tBytes, "", inOneof(1)),
		field("opt_i32", 60, tInt32, "", optional3(2)), field("opt_s", 61, tString, "", optional3(3)),
		field("opt_color", 62, tEnum, colorEnum, optional3(4)), field("opt_db", 63, tDouble, "", optional3(5)),
		field("child", 70, tMessage, richMsg), field("kids", 71, tMessage, richMsg, repeated),
		field("inner", 72, tMessage, innerMsg),
		field("ts", 80, tMessage, wkt+"Timestamp"), field("dur", 81, tMessage, wkt+"Duration"),
		field("st", 82, tMessage, wkt+"Struct"), field("v", 83, tMessage, wkt+"Value"),
		field("lv", 84, tMessage, wkt+"ListValue"), field("fm", 85, tMessage, wkt+"FieldMask"),
		field("empty", 86, tMessage, wkt+"Empty"),
		field("w_i64", 87, tMessage, wkt+"Int64Value"), field("w_u64", 88, tMessage, wkt+"UInt64Value"),
		field("w_i32", 89, tMessage, wkt+"Int32Value"), field("w_u32", 90, tMessage, wkt+"UInt32Value"),
		field("w_b", 91, tMessage, wkt+"BoolValue"), field("w_s", 92, tMessage, wkt+"StringValue"),
		field("w_by", 93, tMessage, wkt+"BytesValue"), field("w_fl", 94, tMessage, wkt+"FloatValue"),
		field("w_db", 95, tMessage, wkt+"DoubleValue"),
		field("nv", 96, tEnum, wkt+"NullValue"),
		field("r_ts", 97, tMessage, wkt+"Timestamp", repeated), field("r_v", 98, tMessage, wkt+"Value", repeated),
		field("r_st", 99, tMessage, wkt+"Struct", repeated), field("r_w", 100, tMessage, wkt+"Int32Value", repeated),
		field("r_nv", 101, tEnum, wkt+"NullValue", repeated), field("r_empty", 102, tMessage, wkt+"Empty", repeated),
		field("r_dur", 103, tMessage, wkt+"Duration", repeated), field("r_fm", 104, tMessage, wkt+"FieldMask", repeated),
		field("r_lv", 105, tMessage, wkt+"ListValue", repeated),
		field("renamed", 110, tInt32, "", jsonName("customName")),
		field("snake_case_name", 111, tString, ""),
		// Its JSON name is another field's proto name: protojson looks JSON
		// names up first.
		field("shadow", 112, tString, "", jsonName("snake_case_name")),
		field("big_tag", 1000, tInt32, ""), field("max_tag", 536870911, tString, ""),
	)
	for _, name := range []string{"choice", "other", "_opt_i32", "_opt_s", "_opt_color", "_opt_db"} {
		rich.OneofDecl = append(rich.OneofDecl, &descriptorpb.OneofDescriptorProto{Name: proto.String(name)})
	}
	inner := &descriptorpb.DescriptorProto{
		Name: proto.String("Inner"),
		Field: []*descriptorpb.FieldDescriptorProto{
			field("name", 1, tString, ""), field("next", 2, tMessage, innerMsg),
			field("many", 3, tMessage, innerMsg, repeated),
		},
	}
	mapOf(inner, "by_name", 4, tString, tMessage, innerMsg)
	return &descriptorpb.FileDescriptorProto{
		Name:    proto.String("test/rich/v1/rich.proto"),
		Package: proto.String("test.rich.v1"),
		Syntax:  proto.String("proto3"),
		Dependency: []string{
			"google/protobuf/timestamp.proto", "google/protobuf/duration.proto",
			"google/protobuf/struct.proto", "google/protobuf/field_mask.proto",
			"google/protobuf/empty.proto", "google/protobuf/wrappers.proto",
		},
		MessageType: []*descriptorpb.DescriptorProto{rich, inner},
		EnumType:    []*descriptorpb.EnumDescriptorProto{enumOf("Color", "COLOR_UNSPECIFIED", 0, "COLOR_RED", 1, "COLOR_GREEN", 2, "COLOR_NEG", -3)},
	}
}

// legacyFile is proto2: explicit presence, a closed enum, unpacked lists
// by default.
func legacyFile() *descriptorpb.FileDescriptorProto {
	legacy := &descriptorpb.DescriptorProto{
		Name: proto.String("Legacy"),
		Field: []*descriptorpb.FieldDescriptorProto{
			field("i32", 1, tInt32, ""), field("s", 2, tString, ""), field("b", 3, tBool, ""),
			field("d", 4, tDouble, ""), field("shade", 5, tEnum, ".test.rich.v1.Shade"),
			field("unpacked", 6, tInt32, "", repeated), field("packed", 7, tInt32, "", packed(true)),
			field("next", 8, tMessage, ".test.rich.v1.Legacy"), field("by", 9, tBytes, ""),
			field("p_i", 11, tInt32, "", inOneof(0)), field("p_s", 12, tString, "", inOneof(0)),
			field("shades", 13, tEnum, ".test.rich.v1.Shade", repeated), field("f", 14, tFloat, ""),
			field("i64", 15, tInt64, "", jsonName("sixtyFour")), field("u64", 16, tUint64, ""),
			field("ts", 17, tMessage, wkt+"Timestamp"), field("color", 18, tEnum, colorEnum),
		},
		OneofDecl: []*descriptorpb.OneofDescriptorProto{{Name: proto.String("pick")}},
	}
	legacy.Field[1].DefaultValue = proto.String("x")
	mapOf(legacy, "m", 10, tInt32, tMessage, ".test.rich.v1.Legacy")
	mapOf(legacy, "colors", 19, tString, tEnum, colorEnum)
	return &descriptorpb.FileDescriptorProto{
		Name:        proto.String("test/rich/v1/legacy.proto"),
		Package:     proto.String("test.rich.v1"),
		Syntax:      proto.String("proto2"),
		Dependency:  []string{"google/protobuf/timestamp.proto", "test/rich/v1/rich.proto"},
		MessageType: []*descriptorpb.DescriptorProto{legacy},
		EnumType:    []*descriptorpb.EnumDescriptorProto{enumOf("Shade", "SHADE_LIGHT", 1, "SHADE_DARK", 2)},
	}
}

// edFile is edition 2023: explicit presence and packed lists by default,
// with fields that opt out, and a closed enum.
func edFile() *descriptorpb.FileDescriptorProto {
	implicit := &descriptorpb.FeatureSet{FieldPresence: descriptorpb.FeatureSet_IMPLICIT.Enum()}
	expanded := &descriptorpb.FeatureSet{RepeatedFieldEncoding: descriptorpb.FeatureSet_EXPANDED.Enum()}
	tone := enumOf("Tone", "TONE_LOW", 1, "TONE_HIGH", 2)
	tone.Options = &descriptorpb.EnumOptions{Features: &descriptorpb.FeatureSet{EnumType: descriptorpb.FeatureSet_CLOSED.Enum()}}
	ed := &descriptorpb.DescriptorProto{
		Name: proto.String("Ed"),
		Field: []*descriptorpb.FieldDescriptorProto{
			field("a", 1, tInt32, ""), field("b", 2, tInt32, "", features(implicit)),
			field("c", 3, tInt32, "", repeated), field("d", 4, tInt32, "", features(expanded), repeated),
			field("e", 5, tEnum, ".test.rich.v1.Tone"), field("s", 6, tString, "", features(implicit)),
			field("next", 7, tMessage, ".test.rich.v1.Ed"), field("by", 8, tBytes, "", features(implicit)),
			field("db", 9, tDouble, "", features(implicit)),
		},
	}
	return &descriptorpb.FileDescriptorProto{
		Name:        proto.String("test/rich/v1/ed.proto"),
		Package:     proto.String("test.rich.v1"),
		Syntax:      proto.String("editions"),
		Edition:     descriptorpb.Edition_EDITION_2023.Enum(),
		MessageType: []*descriptorpb.DescriptorProto{ed},
		EnumType:    []*descriptorpb.EnumDescriptorProto{tone},
	}
}

func setOfFiles(tb testing.TB, files ...*descriptorpb.FileDescriptorProto) []byte {
	tb.Helper()
	b, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: files})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// transcodeTarget is a contract and its transcoder.
type transcodeTarget struct {
	c *Contract
	t *jsonTranscoder
}

func newTarget(tb testing.TB, r *Registry, typ string) transcodeTarget {
	tb.Helper()
	c, ok := r.Lookup(typ)
	if !ok {
		tb.Fatalf("%s not loaded", typ)
	}
	t, reason := newJSONTranscoder(c.desc, c.maxDepth, c.json.Resolver)
	if t == nil {
		tb.Fatalf("%s not covered: %s", typ, reason)
	}
	return transcodeTarget{c: c, t: t}
}

// transcodeTargets are the example contracts, sorted, then the rich
// contract's three types, then Rich again with a depth limit of 5.
func transcodeTargets(tb testing.TB) []transcodeTarget {
	tb.Helper()
	ex, err := Load(examples.Contracts, examples.Types)
	if err != nil {
		tb.Fatal(err)
	}
	var out []transcodeTarget
	for _, typ := range ex.Types() {
		out = append(out, newTarget(tb, ex, typ))
	}
	set := setOfFiles(tb, richFile(), legacyFile(), edFile())
	rich, err := Load(set, []string{richType, legacyType, edType})
	if err != nil {
		tb.Fatal(err)
	}
	shallow, err := Load(set, []string{richType}, WithMaxDepth(5))
	if err != nil {
		tb.Fatal(err)
	}
	return append(out, newTarget(tb, rich, richType), newTarget(tb, rich, legacyType),
		newTarget(tb, rich, edType), newTarget(tb, shallow, richType))
}

// Indexes into transcodeTargets.
const (
	tgIdentity = iota
	tgLogs
	tgShop
	tgRich
	tgLegacy
	tgEd
	tgShallow
)

// compareTranscode runs in through the protojson path and the transcoder
// and fails unless they agree: both refuse with a MalformedError, or both
// accept with the same bytes. It reports whether they accepted.
func compareTranscode(t *testing.T, tg transcodeTarget, in []byte) bool {
	t.Helper()
	want, werr := tg.c.reflectJSON(in, false)
	got, gerr := tg.t.transcode(nil, in)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%s %q:\nprotojson:  %v\ntranscoder: %v", tg.c.typ, in, werr, gerr)
	}
	if gerr != nil {
		var m *MalformedError
		if !errors.As(gerr, &m) {
			t.Fatalf("%s %q: transcoder refused with %T %v, want a *MalformedError", tg.c.typ, in, gerr, gerr)
		}
		if strings.Contains(m.Msg, "transcoder panic") {
			t.Fatalf("%s %q: %v", tg.c.typ, in, gerr)
		}
		if !strings.HasPrefix(m.Msg, tg.c.typ+": ") {
			t.Fatalf("%s %q: refusal %q does not start with the type", tg.c.typ, in, m.Msg)
		}
		if !errors.As(werr, &m) {
			t.Fatalf("%s %q: protojson path refused with %T %v", tg.c.typ, in, werr, werr)
		}
		return false
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s %q:\nprotojson:  %x\ntranscoder: %x", tg.c.typ, in, want, got)
	}
	m1, m2 := dynamicpb.NewMessage(tg.c.desc), dynamicpb.NewMessage(tg.c.desc)
	if err := proto.Unmarshal(got, m1); err != nil {
		t.Fatalf("%s %q: transcoder output does not decode: %v", tg.c.typ, in, err)
	}
	if err := proto.Unmarshal(want, m2); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(m1, m2) {
		t.Fatalf("%s %q: messages differ", tg.c.typ, in)
	}
	// dst is appended to, not overwritten.
	prefixed, err := tg.t.transcode([]byte("prefix"), in)
	if err != nil || !bytes.Equal(prefixed, append([]byte("prefix"), want...)) {
		t.Fatalf("%s %q: transcode with a dst gives %x, %v", tg.c.typ, in, prefixed, err)
	}
	return true
}

// compareTranscodeAllowUnknown is compareTranscode for
// transcodeAllowUnknown against protojson with DiscardUnknown. A payload
// the strict transcoder takes, it takes with the same bytes.
func compareTranscodeAllowUnknown(t *testing.T, tg transcodeTarget, in []byte) bool {
	t.Helper()
	want, werr := tg.c.reflectJSONMode(in, false, true)
	got, gerr := tg.t.transcodeAllowUnknown(nil, in)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%s %q, unknown fields allowed:\nprotojson:  %v\ntranscoder: %v", tg.c.typ, in, werr, gerr)
	}
	if strict, err := tg.t.transcode(nil, in); err == nil && (gerr != nil || !bytes.Equal(strict, got)) {
		t.Fatalf("%s %q: strict %x, with unknown fields allowed %x, %v", tg.c.typ, in, strict, got, gerr)
	}
	if gerr != nil {
		var m *MalformedError
		if !errors.As(gerr, &m) || strings.Contains(m.Msg, "transcoder panic") || !strings.HasPrefix(m.Msg, tg.c.typ+": ") {
			t.Fatalf("%s %q: unknown fields allowed, refused with %T %v", tg.c.typ, in, gerr, gerr)
		}
		if !errors.As(werr, &m) {
			t.Fatalf("%s %q: protojson path refused with %T %v", tg.c.typ, in, werr, werr)
		}
		return false
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s %q, unknown fields allowed:\nprotojson:  %x\ntranscoder: %x", tg.c.typ, in, want, got)
	}
	return true
}

// TestTranscodeAllowUnknown: with unknown fields allowed, each case is
// decided as expected, and the same way and with the same bytes as
// protojson with DiscardUnknown; want is the payload it publishes the
// bytes of ("" for a refusal).
func TestTranscodeAllowUnknown(t *testing.T) {
	targets := transcodeTargets(t)
	for _, tc := range allowUnknownCases() {
		t.Run(tc.name, func(t *testing.T) {
			tg := targets[tc.tg]
			ok := compareTranscodeAllowUnknown(t, tg, []byte(tc.in))
			if ok != (tc.want != "") {
				t.Fatalf("accepted %v, want %v", ok, tc.want != "")
			}
			if !ok {
				return
			}
			got, _ := tg.t.transcodeAllowUnknown(nil, []byte(tc.in))
			want, err := tg.t.transcode(nil, []byte(tc.want))
			if err != nil {
				t.Fatalf("want %s: %v", tc.want, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got %x, want %x (%s)", got, want, tc.want)
			}
		})
	}
}

// allowUnknownCase is a payload for transcodeTargets[tg] and what
// transcodeAllowUnknown makes of it: the bytes the strict transcoder
// makes of want, or a refusal when want is "".
type allowUnknownCase struct {
	name     string
	tg       int
	in, want string
}

func allowUnknownCases() []allowUnknownCase {
	return []allowUnknownCase{
		{"unknown scalar", tgShop, `{"orderId":"x","livemode":false}`, `{"orderId":"x"}`},
		{"unknown of every kind", tgShop,
			`{"a":{"b":[1,-2.5e3,"s\u00e9\"",true,false,null,{}],"c":{"d":[]}},"orderId":"x","e":"","f":null,"g":0}`, `{"orderId":"x"}`},
		{"unknown at depth", tgShop, `{"customer":{"email":"a@b.c","age":3,"tags":["x"]},"items":[{"sku":"A","color":"red"}]}`,
			`{"customer":{"email":"a@b.c"},"items":[{"sku":"A"}]}`},
		{"unknown name repeated", tgShop, `{"x":1,"x":{"y":2},"orderId":"x"}`, `{"orderId":"x"}`},
		{"names repeat inside a skipped value", tgShop, `{"x":{"y":1,"y":2}}`, `{}`},
		{"known name repeated", tgShop, `{"orderId":"x","x":1,"order_id":"y"}`, ""},
		{"known field in an unknown spelling", tgShop, `{"OrderId":"x"}`, `{}`},
		{"unknown value not JSON", tgShop, `{"x":[1,}`, ""},
		{"unknown value missing", tgShop, `{"x":}`, ""},
		{"unknown value a bare word", tgShop, `{"x":undefined}`, ""},
		{"unknown literal runs on", tgShop, `{"x":truex}`, ""},
		{"unknown number malformed", tgShop, `{"x":01}`, ""},
		{"unknown number runs on", tgShop, `{"x":1.5.2}`, ""},
		{"unknown string not UTF-8", tgShop, "{\"x\":\"caf\xe9\"}", ""},
		{"unknown name not UTF-8", tgShop, "{\"caf\xe9\":1}", ""},
		{"unknown string bad escape", tgShop, `{"x":"\q"}`, ""},
		{"unknown string lone surrogate", tgShop, `{"x":"\ud83d"}`, ""},
		{"unknown object unterminated", tgShop, `{"x":{"y":1}`, ""},
		{"unknown object without names", tgShop, `{"x":{1:2}}`, ""},
		{"unknown trailing comma", tgShop, `{"x":[1,2,],"orderId":"x"}`, ""},
		{"unknown nests to the limit", tgShallow, `{"x":[[[[]]]]}`, `{}`},
		{"unknown nests past the limit", tgShallow, `{"x":[[[[[]]]]]}`, ""},
		{"unknown nests past the limit in a message", tgShallow, `{"child":{"child":{"x":{"y":[{}]}}}}`, ""},
		{"unknown within the limit in a message", tgShallow, `{"child":{"child":{"x":{"y":[]}}}}`, `{"child":{"child":{}}}`},
		{"enum name unknown", tgShop, `{"orderId":"x","paymentMethod":"PAYMENT_METHOD_CRYPTO"}`, `{"orderId":"x"}`},
		{"enum name unknown, implicit presence", tgRich, `{"color":"COLOR_BLUE","i32":1}`, `{"i32":1}`},
		{"enum name unknown, explicit presence", tgRich, `{"optColor":"COLOR_BLUE"}`, `{}`},
		{"enum name unknown in a list", tgRich, `{"rColor":["COLOR_BLUE",1,"COLOR_RED","X"]}`, `{"rColor":[1,"COLOR_RED"]}`},
		{"enum names all unknown in a list", tgRich, `{"rColor":["COLOR_BLUE","X"]}`, `{}`},
		{"enum name unknown in a closed enum", tgLegacy, `{"shade":"SHADE_GREY","shades":["SHADE_DARK","SHADE_GREY"]}`, `{"shades":["SHADE_DARK"]}`},
		{"enum number unknown still taken", tgRich, `{"color":7}`, `{"color":7}`},
		{"enum name unknown in a map", tgLegacy, `{"colors":{"b":"COLOR_RED","a":"COLOR_BLUE","c":1}}`, `{"colors":{"b":"COLOR_RED","c":1}}`},
		{"map: dropped, then set", tgLegacy, `{"colors":{"a":"COLOR_BLUE","a":"COLOR_RED"}}`, `{"colors":{"a":"COLOR_RED"}}`},
		{"map: dropped twice", tgLegacy, `{"colors":{"a":"X","b":1,"a":"Y"}}`, `{"colors":{"b":1}}`},
		{"map: set, then dropped", tgLegacy, `{"colors":{"a":"COLOR_RED","a":"COLOR_BLUE"}}`, ""},
		{"map: set, dropped, set", tgLegacy, `{"colors":{"a":1,"a":"X","a":2}}`, ""},
		{"map: dropped, set, set", tgRich, `{"mBc":{"true":"X","true":1,"true":2}}`, ""},
		{"map: all dropped", tgRich, `{"mBc":{"true":"X","false":"Y"}}`, `{}`},
		{"a dropped field before a map", tgLegacy, `{"shade":"SHADE_GREY","colors":{"a":"COLOR_RED"}}`, `{"colors":{"a":"COLOR_RED"}}`},
		{"a dropped element before a map", tgRich, `{"rColor":["X"],"mBc":{"true":1},"color":"Y"}`, `{"mBc":{"true":1}}`},
		{"NullValue name unknown", tgRich, `{"nv":"NULL","rNv":["NULL_VALUE","NUL"],"mSnv":{"a":"N"}}`, `{"rNv":[0]}`},
		{"oneof: unknown name sets it", tgRich, `{"oNv":"NULL","oS":"x"}`, ""},
		{"extension name of the contract's files", tgShop, `{"[buf.validate.field]":1}`, ""},
		{"extension name, escaped", tgShop, `{"[buf.validate.\u0066ield]":{}}`, ""},
		{"message name in brackets, examples", tgShop, `{"[examples.shop.v1.Customer]":1}`, ""},
		{"enum name in brackets", tgShop, `{"[examples.shop.v1.PaymentMethod]":1}`, ""},
		{"message name in brackets", tgRich, `{"[test.rich.v1.Rich]":1}`, ""},
		{"unknown name in brackets", tgRich, `{"[test.rich.v1.nope]":1,"[]":2,"[":3,"]":4}`, `{}`},
		{"unknown fields of an Empty", tgRich, `{"empty":{"a":1,"[test.rich.v1.Rich]":[{}]},"rEmpty":[{"b":{}}]}`, `{"empty":{},"rEmpty":[{}]}`},
		{"Empty member not JSON", tgRich, `{"empty":{"a":}}`, ""},
		{"Empty without a name", tgRich, `{"empty":{1:2}}`, ""},
		{"well-known types keep their form", tgRich, `{"ts":"yesterday"}`, ""},
		{"Struct keys are keys", tgRich, `{"st":{"anything":1},"x":2}`, `{"st":{"anything":1}}`},
		{"known field's value still judged", tgShop, `{"x":1,"orderId":7}`, ""},
		{"not an object", tgShop, `[{"x":1}]`, ""},
		{"data after the object", tgShop, `{"x":1}{}`, ""},
	}
}

func TestTranscodeCoversExamples(t *testing.T) {
	r, err := Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range examples.Types {
		c, _ := r.Lookup(typ)
		if tr, reason := newJSONTranscoder(c.desc, c.maxDepth, c.json.Resolver); tr == nil {
			t.Errorf("%s: not covered: %s", typ, reason)
		}
	}
}

func TestTranscodeFallsBack(t *testing.T) {
	p2 := func(name string, msgs ...*descriptorpb.DescriptorProto) *descriptorpb.FileDescriptorProto {
		return &descriptorpb.FileDescriptorProto{
			Name: proto.String(name), Package: proto.String("test.fallback.v1"),
			Syntax: proto.String("proto2"), MessageType: msgs,
			Dependency: []string{"google/protobuf/any.proto", "google/protobuf/struct.proto"},
		}
	}
	withAny := &descriptorpb.DescriptorProto{Name: proto.String("WithAny"), Field: []*descriptorpb.FieldDescriptorProto{
		field("payload", 1, tMessage, wkt+"Any"),
	}}
	nestedAny := &descriptorpb.DescriptorProto{Name: proto.String("NestedAny"), Field: []*descriptorpb.FieldDescriptorProto{
		field("inner", 1, tMessage, ".test.fallback.v1.WithAny", repeated),
	}}
	required := field("id", 1, tInt32, "")
	required.Label = descriptorpb.FieldDescriptorProto_LABEL_REQUIRED.Enum()
	withRequired := &descriptorpb.DescriptorProto{Name: proto.String("WithRequired"), Field: []*descriptorpb.FieldDescriptorProto{required}}
	withExtensions := &descriptorpb.DescriptorProto{
		Name:           proto.String("WithExtensions"),
		Field:          []*descriptorpb.FieldDescriptorProto{field("id", 1, tInt32, "")},
		ExtensionRange: []*descriptorpb.DescriptorProto_ExtensionRange{{Start: proto.Int32(100), End: proto.Int32(200)}},
	}
	withGroup := &descriptorpb.DescriptorProto{
		Name:       proto.String("WithGroup"),
		Field:      []*descriptorpb.FieldDescriptorProto{field("g", 1, tGroup, ".test.fallback.v1.WithGroup.G")},
		NestedType: []*descriptorpb.DescriptorProto{{Name: proto.String("G"), Field: []*descriptorpb.FieldDescriptorProto{field("x", 2, tInt32, "")}}},
	}
	set := setOfFiles(t, p2("test/fallback/v1/f.proto", withAny, nestedAny, withRequired, withExtensions, withGroup))
	tests := []struct{ typ, reason string }{
		{"test.fallback.v1.WithAny", "google.protobuf.Any at field test.fallback.v1.WithAny.payload"},
		{"test.fallback.v1.NestedAny", "google.protobuf.Any at field test.fallback.v1.WithAny.payload"},
		{"test.fallback.v1.WithRequired", "proto2 required field test.fallback.v1.WithRequired.id"},
		{"test.fallback.v1.WithExtensions", "extensions on test.fallback.v1.WithExtensions"},
		{"test.fallback.v1.WithGroup", "group field test.fallback.v1.WithGroup.g"},
		{"google.protobuf.Struct", "the contract type google.protobuf.Struct is a well-known type"},
	}
	for _, tc := range tests {
		r, err := Load(set, []string{tc.typ})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := r.Lookup(tc.typ)
		tr, reason := newJSONTranscoder(c.desc, c.maxDepth, c.json.Resolver)
		if tr != nil || reason != tc.reason {
			t.Errorf("%s: got %v, %q; want nil, %q", tc.typ, tr, reason, tc.reason)
		}
	}
	// Unknown fields are allowed through protojson too, with
	// DiscardUnknown.
	for _, tc := range []struct{ typ, in, want string }{
		{"test.fallback.v1.WithRequired", `{"id":1,"x":{"y":[null]},"z":"s"}`, `{"id":1}`},
		{"test.fallback.v1.WithGroup", `{"g":{"x":2,"y":{}},"h":[]}`, `{"g":{"x":2}}`},
		{"test.fallback.v1.WithAny", `{"payload":{"@type":"type.googleapis.com/google.protobuf.Struct","value":{"a":1}},"q":1}`,
			`{"payload":{"@type":"type.googleapis.com/google.protobuf.Struct","value":{"a":1}}}`},
	} {
		r, err := Load(set, []string{tc.typ})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := r.Lookup(tc.typ)
		if _, err := c.CheckJSON([]byte(tc.in)); err == nil {
			t.Errorf("%s: CheckJSON takes %s", tc.typ, tc.in)
		}
		got, err := c.CheckJSONAllowUnknown([]byte(tc.in))
		if err != nil {
			t.Errorf("%s: CheckJSONAllowUnknown(%s): %v", tc.typ, tc.in, err)
			continue
		}
		want, err := c.CheckJSON([]byte(tc.want))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s %s: got %x, want %x", tc.typ, tc.in, got, want)
		}
	}
}

// exampleEvents are the JSON events in testdata and examples/events.
func exampleEvents(tb testing.TB) map[string][]byte {
	tb.Helper()
	out := make(map[string][]byte)
	for _, dir := range []string{"testdata", "../examples/events"} {
		paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			tb.Fatal(err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				tb.Fatal(err)
			}
			out[p] = b
		}
	}
	return out
}

// eventTarget is the target index of an example event by its file name.
func eventTarget(path string) int {
	switch filepath.Base(path) {
	case "order_placed.json":
		return tgShop
	case "user_profile_updated.json":
		return tgIdentity
	}
	return tgLogs
}

func TestTranscodeExampleEvents(t *testing.T) {
	targets := transcodeTargets(t)
	events := exampleEvents(t)
	if len(events) < 6 {
		t.Fatalf("found %d example events, want 6", len(events))
	}
	for path, b := range events {
		if !compareTranscode(t, targets[eventTarget(path)], b) {
			t.Errorf("%s refused", path)
		}
	}
}

// TestTranscodeBytes pins a few outputs by hand, independently of the
// oracle: field order, implicit zeros, map order, packed lists.
func TestTranscodeBytes(t *testing.T) {
	targets := transcodeTargets(t)
	tag := func(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(tag(num, protowire.VarintType), v)
	}
	str := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(tag(num, protowire.BytesType), s)
	}
	tests := []struct {
		name string
		tg   int
		in   string
		want []byte
	}{
		{"out of order, oneof last", tgRich, `{"oS":"x","b":true,"i32":-1}`,
			cat(varint(1, 1<<64-1), varint(13, 1), str(50, "x"))},
		{"implicit zeros skipped, -0 kept", tgRich, `{"i32":0,"s":"","db":-0,"fl":0}`,
			cat(protowire.AppendFixed64(tag(12, protowire.Fixed64Type), 1<<63))},
		{"map sorted by key", tgRich, `{"mIs":{"10":"b","-2":"a","3":""}}`,
			cat(str(31, "\x08\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01\x12\x01a"),
				str(31, "\x08\x03\x12\x00"), str(31, "\x08\x0a\x12\x01b"))},
		{"packed and not", tgRich, `{"rI32":[1,2],"rI64":[1,2]}`,
			cat(str(17, "\x01\x02"), varint(18, 1), varint(18, 2))},
		{"proto2 zero kept", tgLegacy, `{"i32":0,"s":""}`, cat(varint(1, 0), str(2, ""))},
		{"editions implicit and explicit", tgEd, `{"a":0,"b":0}`, varint(1, 0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := targets[tc.tg].t.transcode(nil, []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("got %x, want %x", got, tc.want)
			}
			compareTranscode(t, targets[tc.tg], []byte(tc.in))
		})
	}
}

// TestTranscodeAgrees: each case is decided as expected, and the same way
// and with the same bytes as the protojson path.
func TestTranscodeAgrees(t *testing.T) {
	targets := transcodeTargets(t)
	tests := []struct {
		name string
		tg   int
		in   string
		ok   bool
	}{
		{"proto and JSON names", tgShop, `{"order_id":"a","totalCents":"1","shipping_address":{"postalCode":"x"}}`, true},
		{"same field twice by both names", tgShop, `{"order_id":"a","orderId":"b"}`, false},
		{"json_name", tgRich, `{"customName":1}`, true},
		{"json_name and proto name twice", tgRich, `{"customName":1,"renamed":2}`, false},
		{"JSON name wins over another's proto name", tgRich, `{"snake_case_name":"x","snakeCaseName":"y"}`, true},
		{"escaped name", tgRich, `{"i\u0033\u0032":5}`, true},
		{"unknown field", tgRich, `{"nope":1}`, false},
		{"extension syntax", tgRich, `{"[test.rich.v1.ext]":1}`, false},
		{"oneof twice", tgRich, `{"oS":"a","oI":1}`, false},
		{"oneof null does not count", tgRich, `{"oS":null,"oI":1}`, true},
		{"oneof Value null counts", tgRich, `{"oV":null,"oS":"a"}`, false},
		{"oneof zero written", tgRich, `{"oI":0}`, true},
		{"null skipped after the duplicate check", tgRich, `{"i32":null,"i32":1}`, false},
		{"int forms", tgRich, `{"i32":"1e3","i64":"-9223372036854775808","u64":"18446744073709551615","u32":4294967295}`, true},
		{"int exponent and fraction forms", tgRich, `{"i32":1.5e1,"sf32":100e-2,"s64":"0e99999999999"}`, true},
		{"int bare e", tgRich, `{"i32":1e}`, true},
		{"int e and sign", tgRich, `{"i32":1e+}`, false},
		{"int fraction", tgRich, `{"i32":1.5}`, false},
		{"int over 20 digits after the exponent", tgRich, `{"u64":0.00000000000000000000001e23}`, false},
		{"int32 out of range", tgRich, `{"i32":2147483648}`, false},
		{"int64 out of range", tgRich, `{"i64":9223372036854775808}`, false},
		{"uint negative", tgRich, `{"u64":-1}`, false},
		{"uint minus zero", tgRich, `{"u32":-0}`, true},
		{"int string with space", tgRich, `{"i32":" 1"}`, false},
		{"leading zero", tgRich, `{"i32":01}`, false},
		{"bool as string", tgRich, `{"b":"true"}`, false},
		{"float specials", tgRich, `{"fl":"NaN","db":"-Infinity","rFl":["Infinity","-0",1e-50]}`, true},
		{"float32 out of range", tgRich, `{"fl":3.5e38}`, false},
		{"double out of range", tgRich, `{"db":1e400}`, false},
		{"minus zero written", tgRich, `{"db":-0,"fl":-0.0}`, true},
		{"float string with space", tgRich, `{"fl":" 1"}`, false},
		{"base64 forms", tgRich, `{"rBy":["AQI","AQI=","-_8","+/8=","AQ\nID"]}`, true},
		{"base64 bad padding", tgRich, `{"by":"AQ==="}`, false},
		{"base64 one char", tgRich, `{"by":"A"}`, false},
		{"enum names and numbers", tgRich, `{"color":"COLOR_NEG","rColor":[1,"COLOR_RED",-3,7]}`, true},
		{"enum null in a list", tgRich, `{"rColor":[null]}`, false},
		{"enum number as string", tgRich, `{"color":"1"}`, false},
		{"closed enum unknown number", tgLegacy, `{"shade":0,"shades":[5]}`, true},
		{"closed enum unknown name", tgLegacy, `{"shade":"SHADE_DIM"}`, false},
		{"NullValue", tgRich, `{"nv":null,"rNv":[null,"NULL_VALUE",0],"oNv":null}`, true},
		{"surrogate pair and escapes", tgRich, `{"s":"\ud83d\ude00 \/ \b\f\n\r\t \"\\"}`, true},
		{"lone surrogate", tgRich, `{"s":"\ud83d"}`, false},
		{"reversed surrogates", tgRich, `{"s":"\ude00\ud83d"}`, false},
		{"raw control character", tgRich, "{\"s\":\"a\tb\"}", false},
		{"invalid UTF-8", tgRich, "{\"s\":\"\xff\"}", false},
		{"UTF-8 surrogate", tgRich, "{\"s\":\"\xed\xa0\x80\"}", false},
		{"null list and map skipped", tgRich, `{"rI32":null,"mSi":null}`, true},
		{"null in a list", tgRich, `{"rI32":[null]}`, false},
		{"null Value list", tgRich, `{"rV":null}`, false},
		{"map key kinds", tgRich, `{"mBc":{"true":1,"false":"COLOR_RED"},"mUd":{"18446744073709551615":1.5},"mS64":{"-9223372036854775808":true},"mSf64":{"-5":"x"}}`, true},
		{"map key plus sign", tgRich, `{"mIs":{"+1":"a","-0":"b"}}`, true},
		{"map keys equal as numbers", tgRich, `{"mIs":{"1":"a","01":"b"}}`, false},
		{"map key bad bool", tgRich, `{"mBc":{"True":1}}`, false},
		{"map null value", tgRich, `{"mIr":{"1":null}}`, false},
		{"map Value and NullValue null", tgRich, `{"mSv":{"a":null},"mSnv":{"a":null}}`, true},
		{"proto2 zeros written", tgLegacy, `{"i32":0,"s":"","b":false,"sixtyFour":"0"}`, true},
		{"editions presence and packing", tgEd, `{"a":0,"b":0,"c":[1,2],"d":[1,2],"e":9}`, true},
		{"depth at the limit", tgShallow, `{"child":{"child":{"child":{"child":{}}}}}`, true},
		{"depth over the limit", tgShallow, `{"child":{"child":{"child":{"child":{"child":{}}}}}}`, false},
		{"a Timestamp is no JSON level", tgShallow, `{"child":{"child":{"child":{"child":{"ts":"1970-01-01T00:00:01Z"}}}}}`, true},
		{"Struct values within the limit", tgShallow, `{"st":{"a":{"b":{"c":1}}}}`, true},
		{"Struct values at the limit", tgShallow, `{"st":{"a":{"b":{"c":{"d":1}}}}}`, true},
		{"Struct values over the limit", tgShallow, `{"st":{"a":{"b":{"c":{"d":{}}}}}}`, false},
		{"ListValue values at the limit", tgShallow, `{"lv":[[[[1]]]]}`, true},
		{"ListValue values over the limit", tgShallow, `{"lv":[[[[[1]]]]]}`, false},
		{"Value values at the limit", tgShallow, `{"v":{"a":[{"b":[1]}]}}`, true},
		{"Value values over the limit", tgShallow, `{"v":{"a":[{"b":[{}]}]}}`, false},
		{"JSON depth over the limit", tgShallow, `{"child":{"child":{"child":{"child":{"rI32":[]}}}}}`, false},
		{"Timestamp offset", tgLogs, `{"timestamp":"2025-03-14T09:26:53.589+01:00"}`, true},
		{"Timestamp one-digit hour", tgLogs, `{"timestamp":"2025-03-14T9:26:53Z"}`, true},
		{"Timestamp ten fraction digits", tgLogs, `{"timestamp":"9999-12-31T23:59:59.9999999999Z"}`, false},
		{"Timestamp year 0", tgLogs, `{"timestamp":"0000-12-31T23:59:59Z"}`, false},
		{"Timestamp not a leap year", tgLogs, `{"timestamp":"2023-02-29T00:00:00Z"}`, false},
		{"Duration forms", tgRich, `{"rDur":["-0.5s","0s","+1s",".5s","1.s","-.s","315576000000.999999999s"]}`, true},
		{"Duration out of range", tgRich, `{"dur":"315576000001s"}`, false},
		{"Duration ten fraction digits", tgRich, `{"dur":"1.0000000001s"}`, false},
		{"Struct, Value, ListValue", tgRich, `{"st":{"b":1,"a":"x","c":[true,null,{"d":false}]},"v":null,"lv":[1,[2]]}`, true},
		{"Struct duplicate key", tgRich, `{"st":{"a":1,"a":2}}`, false},
		{"Value number out of range", tgRich, `{"v":1e400}`, false},
		{"FieldMask", tgRich, `{"fm":" a , b "}`, false},
		{"FieldMask camel paths", tgRich, `{"fm":"a,bC.dEf,g1,A"}`, true},
		{"FieldMask underscore", tgRich, `{"fm":"a_b"}`, false},
		{"FieldMask empty path", tgRich, `{"fm":"a,,b"}`, false},
		{"Empty with a field", tgRich, `{"empty":{"a":1}}`, false},
		{"wrappers", tgRich, `{"wI64":"5","wU64":0,"wB":false,"wS":"","wBy":"AQ==","wFl":-0,"wDb":"NaN"}`, true},
		{"wrapper null in a list", tgRich, `{"rW":[null]}`, false},
		{"trailing comma", tgRich, `{"i32":1,}`, false},
		{"whitespace", tgRich, "\t{\r\n \"i32\" : 1 }\n ", true},
		{"missing comma", tgRich, `{"i32":1 "b":true}`, false},
		{"literal run on", tgRich, `{"b":truee}`, false},
		{"trailing data", tgRich, `{}]`, false},
		{"not an object", tgRich, `[]`, false},
		{"empty", tgRich, ``, false},
		{"byte order mark", tgRich, "\ufeff{}", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := compareTranscode(t, targets[tc.tg], []byte(tc.in)); got != tc.ok {
				t.Errorf("accepted %v, want %v", got, tc.ok)
			}
		})
	}
}

// TestTranscodeErrorSays: a refusal names the contract, the field and what
// was wrong.
func TestTranscodeErrorSays(t *testing.T) {
	targets := transcodeTargets(t)
	tests := []struct {
		tg      int
		in      string
		mention string
	}{
		{tgShop, `{"items":[{"sku":"a"},{"quantity":"x"}]}`, `examples.shop.v1.OrderPlaced: field "items[1].quantity": invalid value for uint32`},
		{tgShop, `{"customer":{"age":3}}`, `field "customer": unknown field "age"`},
		{tgLogs, `{"labels":{"a":1}}`, `field "labels["a"]": invalid value for string`},
		{tgLogs, `{"labels":{"a":"1","a":"2"}}`, `duplicate map key ["a"]`},
		{tgShop, `[]`, `examples.shop.v1.OrderPlaced: payload is not a JSON object`},
		{tgShallow, `{"child":{"child":{"child":{"child":{"rI32":[]}}}}}`, `JSON nests deeper than 5`},
		{tgShallow, `{"st":{"a":{"b":{"c":{"d":{}}}}}}`, `JSON nests deeper than 5`},
	}
	for _, tc := range tests {
		_, err := targets[tc.tg].t.transcode(nil, []byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%s: got %v, want it to mention %q", tc.in, err, tc.mention)
		}
	}
}

// TestTranscodeAllocs: a valid payload costs no allocation beyond dst.
func TestTranscodeAllocs(t *testing.T) {
	// The race detector makes sync.Pool drop a share of what is put back.
	var probe sync.Pool
	for range 100 {
		probe.Put(new(int))
		if probe.Get() == nil {
			t.Skip("sync.Pool drops items in this build")
		}
	}
	targets := transcodeTargets(t)
	for path, b := range exampleEvents(t) {
		tg := targets[eventTarget(path)]
		dst := make([]byte, 0, 4096)
		tg.t.transcode(dst, b) // warm the pool
		if n := testing.AllocsPerRun(100, func() {
			if _, err := tg.t.transcode(dst, b); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per run", path, n)
		}
	}
}

// BenchmarkTranscodeJSON prices each example fixture through the
// transcoder and through the protojson path it replaces (decode into a
// dynamic message, then deterministic marshal).
func BenchmarkTranscodeJSON(b *testing.B) {
	targets := transcodeTargets(b)
	for _, tc := range []struct {
		name, fixture string
		tg            int
	}{
		{"shop", "order_placed.json", tgShop},
		{"identity", "user_profile_updated.json", tgIdentity},
		{"logs", "log_line.json", tgLogs},
	} {
		js, err := os.ReadFile(filepath.Join("testdata", tc.fixture))
		if err != nil {
			b.Fatal(err)
		}
		tg := targets[tc.tg]
		b.Run(tc.name+"/transcoder", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(js)))
			var dst []byte
			for b.Loop() {
				if dst, err = tg.t.transcode(dst[:0], js); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/protojson", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(js)))
			for b.Loop() {
				if _, err := tg.c.reflectJSON(js, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
