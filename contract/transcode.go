package contract

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// jsonTranscoder turns a contract's JSON payload straight into protobuf
// binary: what protojson.Unmarshal (with the options CheckJSON uses) and a
// deterministic proto.Marshal make of it, byte for byte, without building
// a message. It accepts exactly the payloads that path accepts, for the
// contracts newJSONTranscoder covers.
//
// All lookups are compiled once from the descriptors; a call reads the
// JSON once, writes fields in the order deterministic marshal uses
// (reordering only what arrived out of order) and allocates nothing beyond
// growing dst for valid input. It is immutable and safe for concurrent
// use: each call takes its scratch from a pool.
type jsonTranscoder struct {
	typ string
	// maxDepth bounds the nesting of JSON objects and arrays, as
	// CheckJSONDepth does; maxMessages that of messages, as protojson's
	// RecursionLimit does with the options CheckJSON uses.
	maxDepth, maxMessages int
	root                  *msgPlan
	// types are the contract's types, by which protojson resolves a
	// "[name]" member; transcodeAllowUnknown refuses one they resolve, as
	// protojson does.
	types protoregistry.ExtensionTypeResolver
	pool  sync.Pool // of *transcoding
}

// wellKnown names the types protojson reads from a JSON form of their own.
type wellKnown uint8

const (
	notWellKnown wellKnown = iota
	wkTimestamp
	wkDuration
	wkWrapper
	wkStruct
	wkValue
	wkListValue
	wkFieldMask
	wkEmpty
)

// msgPlan is what a transcoding needs of one message type.
type msgPlan struct {
	name string
	wk   wellKnown
	// fields are in the order deterministic marshal of a dynamic message
	// writes them (protobuf-go's legacy field order): fields outside a
	// oneof by number, then oneof members by the oneof's declaration
	// index. A field's index here is its rank when reordering.
	fields []fieldPlan
	// byName holds every name protojson accepts for a field: its JSON name
	// and its proto name, resolved as Fields.ByJSONName then ByTextName do.
	byName map[string]int
	// words is the size, in uint64s, of the seen set of one object: a bit
	// per field, then one per oneof.
	words int
}

// fieldPlan is what a transcoding needs of one field. Map entries' key and
// value are fieldPlans too, numbered 1 and 2.
type fieldPlan struct {
	name string // the proto name, for error paths
	kind protoreflect.Kind
	tag  []byte // the tag with the kind's wire type
	ptag []byte // the tag of a packed list
	list bool
	mapf bool
	// packed lists are one length-delimited record.
	packed bool
	// implicit fields (proto3 without presence) are not written when zero.
	implicit bool
	// nullable fields take JSON null as a value instead of skipping it:
	// google.protobuf.Value messages and google.protobuf.NullValue enums.
	nullable bool
	// oneof is the seen bit of the field's oneof, or -1. Synthetic oneofs
	// (proto3 optional) do not count.
	oneof int
	enum  map[string]int32
	msg   *msgPlan
	key   *fieldPlan
	val   *fieldPlan
}

// newJSONTranscoder compiles a transcoder for md. It returns nil and a
// human-readable reason when md (or anything reachable from it) uses a
// feature the transcoder does not cover; the caller then falls back to protojson.
func newJSONTranscoder(md protoreflect.MessageDescriptor, maxDepth int, types protoregistry.ExtensionTypeResolver) (*jsonTranscoder, string) {
	if isWellKnownName(md.FullName()) {
		return nil, "the contract type " + string(md.FullName()) + " is a well-known type"
	}
	pl := planner{plans: make(map[protoreflect.FullName]*msgPlan)}
	root, reason := pl.message(md)
	if reason != "" {
		return nil, reason
	}
	t := &jsonTranscoder{typ: string(md.FullName()), maxDepth: maxDepth, maxMessages: binaryLevels(maxDepth), root: root, types: types}
	t.pool.New = func() any { return new(transcoding) }
	return t, ""
}

// planner compiles plans, each message type once; recursive types refer
// to the plan being built.
type planner struct {
	plans map[protoreflect.FullName]*msgPlan
}

func (pl *planner) message(md protoreflect.MessageDescriptor) (*msgPlan, string) {
	if p, ok := pl.plans[md.FullName()]; ok {
		return p, ""
	}
	p := &msgPlan{name: string(md.FullName())}
	pl.plans[md.FullName()] = p
	wk, reason := wellKnownOf(md)
	if reason != "" {
		return nil, reason
	}
	p.wk = wk
	if md.ExtensionRanges().Len() > 0 {
		// protojson resolves "[name]" keys through the registry.
		return nil, "extensions on " + p.name
	}
	if md.RequiredNumbers().Len() > 0 {
		return nil, "proto2 required field " + string(md.Fields().ByNumber(md.RequiredNumbers().Get(0)).FullName())
	}
	fds := md.Fields()
	order := make([]protoreflect.FieldDescriptor, fds.Len())
	for i := range order {
		order[i] = fds.Get(i)
	}
	slices.SortFunc(order, legacyOrder)
	rank := make(map[protoreflect.FieldNumber]int, len(order))
	p.fields = make([]fieldPlan, len(order))
	for i, fd := range order {
		rank[fd.Number()] = i
		f, reason := pl.field(fd, len(order))
		if reason != "" {
			return nil, reason
		}
		p.fields[i] = f
	}
	p.words = (len(order) + md.Oneofs().Len() + 63) / 64
	if wk != notWellKnown {
		return p, ""
	}
	p.byName = make(map[string]int, 2*len(order))
	for _, fd := range order {
		for _, name := range []string{fd.JSONName(), fd.TextName()} {
			if strings.HasPrefix(name, "[") && strings.HasSuffix(name, "]") {
				continue // protojson reads such a key as an extension's name
			}
			byName := fds.ByJSONName(name)
			if byName == nil {
				byName = fds.ByTextName(name)
			}
			p.byName[name] = rank[byName.Number()]
		}
	}
	return p, ""
}

// legacyOrder is the order deterministic marshal writes a dynamic
// message's fields in (protobuf-go's order.LegacyFieldOrder, without
// extensions, which plans do not have).
func legacyOrder(x, y protoreflect.FieldDescriptor) int {
	ox, oy := realOneof(x), realOneof(y)
	switch {
	case (ox == nil) != (oy == nil):
		if ox == nil {
			return -1
		}
		return 1
	case ox != nil && ox.Index() != oy.Index():
		return cmp.Compare(ox.Index(), oy.Index())
	}
	return cmp.Compare(x.Number(), y.Number())
}

func realOneof(fd protoreflect.FieldDescriptor) protoreflect.OneofDescriptor {
	if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
		return od
	}
	return nil
}

// field plans fd, of a message with n fields.
func (pl *planner) field(fd protoreflect.FieldDescriptor, n int) (fieldPlan, string) {
	f := fieldPlan{oneof: -1}
	if od := realOneof(fd); od != nil {
		f.oneof = n + od.Index()
	}
	switch {
	case fd.IsMap():
		f.name = string(fd.Name())
		f.kind = fd.Kind()
		f.mapf = true
		f.tag = protowire.AppendTag(nil, fd.Number(), protowire.BytesType)
		key, reason := pl.element(fd.MapKey(), 1)
		if reason != "" {
			return f, reason
		}
		val, reason := pl.element(fd.MapValue(), 2)
		if reason != "" {
			return f, reason
		}
		f.key, f.val = &key, &val
		return f, ""
	case fd.IsList():
		e, reason := pl.element(fd, fd.Number())
		if reason != "" {
			return f, reason
		}
		e.oneof = f.oneof
		e.list = true
		e.packed = fd.IsPacked()
		e.ptag = protowire.AppendTag(nil, fd.Number(), protowire.BytesType)
		return e, ""
	}
	e, reason := pl.element(fd, fd.Number())
	if reason != "" {
		return f, reason
	}
	e.oneof = f.oneof
	// dynamicpb reports a field without presence as unset when zero, and
	// marshal skips it; a oneof member is always set.
	e.implicit = !fd.HasPresence() && fd.ContainingOneof() == nil
	return e, ""
}

// element plans one value of fd, written with field number num: a
// singular field's, a list's element, a map entry's key or value.
func (pl *planner) element(fd protoreflect.FieldDescriptor, num protoreflect.FieldNumber) (fieldPlan, string) {
	f := fieldPlan{name: string(fd.Name()), kind: fd.Kind(), oneof: -1}
	f.tag = protowire.AppendTag(nil, num, wireType(fd))
	switch fd.Kind() {
	case protoreflect.GroupKind:
		return f, "group field " + string(fd.FullName())
	case protoreflect.MessageKind:
		md := fd.Message()
		if md.FullName() == "google.protobuf.Any" {
			return f, "google.protobuf.Any at field " + string(fd.FullName())
		}
		p, reason := pl.message(md)
		if reason != "" {
			return f, reason
		}
		f.msg = p
		f.nullable = md.FullName() == "google.protobuf.Value"
	case protoreflect.EnumKind:
		ed := fd.Enum()
		vals := ed.Values()
		f.enum = make(map[string]int32, vals.Len())
		for i := range vals.Len() {
			f.enum[string(vals.Get(i).Name())] = int32(vals.Get(i).Number())
		}
		f.nullable = ed.FullName() == "google.protobuf.NullValue"
	}
	return f, ""
}

func isWellKnownName(name protoreflect.FullName) bool {
	if name.Parent() != "google.protobuf" {
		return false
	}
	switch name.Name() {
	case "Any", "Timestamp", "Duration", "BoolValue", "Int32Value", "Int64Value",
		"UInt32Value", "UInt64Value", "FloatValue", "DoubleValue", "StringValue",
		"BytesValue", "Struct", "ListValue", "Value", "FieldMask", "Empty":
		return true
	}
	return false
}

// wellKnownOf says which well-known type md is, if any. protojson finds a
// well-known type's fields by number and assumes their kinds; a descriptor
// set that defines one differently gets a reason, and protojson.
func wellKnownOf(md protoreflect.MessageDescriptor) (wellKnown, string) {
	name := md.FullName()
	if !isWellKnownName(name) {
		return notWellKnown, ""
	}
	fds := md.Fields()
	// has reports whether fds has exactly the fields given, by number from
	// 1, of these kinds, singular and outside any oneof unless inOneof.
	has := func(inOneof bool, kinds ...protoreflect.Kind) bool {
		if fds.Len() != len(kinds) {
			return false
		}
		for i, k := range kinds {
			fd := fds.ByNumber(protoreflect.FieldNumber(i + 1))
			if fd == nil || fd.Kind() != k || fd.Cardinality() == protoreflect.Repeated {
				return false
			}
			if od := realOneof(fd); (od != nil) != inOneof || inOneof && od.Index() != 0 {
				return false
			}
		}
		return true
	}
	nonstandard := string(name) + " does not have its standard fields"
	one := func() protoreflect.FieldDescriptor { return fds.ByNumber(1) }
	switch name.Name() {
	case "Any":
		return notWellKnown, "google.protobuf.Any"
	case "Timestamp":
		if has(false, protoreflect.Int64Kind, protoreflect.Int32Kind) {
			return wkTimestamp, ""
		}
	case "Duration":
		if has(false, protoreflect.Int64Kind, protoreflect.Int32Kind) {
			return wkDuration, ""
		}
	case "BoolValue", "Int32Value", "Int64Value", "UInt32Value", "UInt64Value",
		"FloatValue", "DoubleValue", "StringValue", "BytesValue":
		want := map[protoreflect.Name]protoreflect.Kind{
			"BoolValue": protoreflect.BoolKind, "Int32Value": protoreflect.Int32Kind,
			"Int64Value": protoreflect.Int64Kind, "UInt32Value": protoreflect.Uint32Kind,
			"UInt64Value": protoreflect.Uint64Kind, "FloatValue": protoreflect.FloatKind,
			"DoubleValue": protoreflect.DoubleKind, "StringValue": protoreflect.StringKind,
			"BytesValue": protoreflect.BytesKind,
		}[name.Name()]
		if has(false, want) {
			return wkWrapper, ""
		}
	case "Struct":
		if fds.Len() == 1 && one() != nil && one().IsMap() &&
			one().MapKey().Kind() == protoreflect.StringKind &&
			one().MapValue().Kind() == protoreflect.MessageKind &&
			one().MapValue().Message().FullName() == "google.protobuf.Value" {
			return wkStruct, ""
		}
	case "ListValue":
		if fds.Len() == 1 && one() != nil && one().IsList() &&
			one().Kind() == protoreflect.MessageKind &&
			one().Message().FullName() == "google.protobuf.Value" {
			return wkListValue, ""
		}
	case "Value":
		if has(true, protoreflect.EnumKind, protoreflect.DoubleKind, protoreflect.StringKind,
			protoreflect.BoolKind, protoreflect.MessageKind, protoreflect.MessageKind) &&
			fds.ByNumber(5).Message().FullName() == "google.protobuf.Struct" &&
			fds.ByNumber(6).Message().FullName() == "google.protobuf.ListValue" {
			return wkValue, ""
		}
	case "FieldMask":
		if fds.Len() == 1 && one() != nil && one().IsList() && one().Kind() == protoreflect.StringKind {
			return wkFieldMask, ""
		}
	case "Empty":
		return wkEmpty, ""
	}
	return notWellKnown, nonstandard
}
