package contract

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// A binary payload is walked once, in wire order, before it is decoded.
// The walk refuses what the decoder must never see and what the gateway
// refuses although a decoder takes it:
//
//   - wire data that does not parse: a bad tag, a length past the end, a
//     group without its end, a packed list that is not whole elements;
//   - an unknown field, and a known field in a wire type that does not
//     match its type, at any depth, map entries included (a reflective
//     decoder keeps the first as unknown and drops the second inside map
//     entries; it has panicked on some entries whose key repeats with the
//     wrong wire type);
//   - a value a closed (proto2) enum does not define, which protobuf-go
//     keeps as an unknown field;
//   - a string that is not UTF-8, in any file (protobuf-go checks proto3
//     strings while decoding, and the scan after it checked the others;
//     hyperpb v0.1.3 refuses some valid four-byte sequences, so its own
//     check is off);
//   - nesting deeper than the limit, counted as the payload's JSON form
//     counts it (the package documentation's Depth): the contract
//     message is level 1, and each object or array its protojson form
//     opens one more, whatever the binary levels under it. A
//     google.protobuf.Struct nested n deep is n JSON levels and up to 3n
//     binary ones; a repeated field's array is a JSON level and no
//     binary one. So a payload gets the same verdict in either form. The
//     binary levels are bounded too, by binaryLevels, which no payload
//     within the JSON limit reaches: the decoders' own limits are set to
//     it.
//
// hyperpb, which decodes what the walk lets through, reads wire data with
// unchecked pointer arithmetic and has faulted (a crash that recover cannot
// catch) on unknown fields and wrong wire types in v0.1.3: it only ever sees
// data the walk has proven well formed and known.

// wireChecker walks the payloads of one contract.
type wireChecker struct {
	root     *wirePlan
	resolver protoregistry.ExtensionTypeResolver
	maxDepth int // of the JSON form
	// maxLevels bounds the binary levels, binaryLevels(maxDepth): only a
	// descriptor set that gives a well-known type's name to a message of
	// its own can nest past it within maxDepth.
	maxLevels int
}

// wirePlan is what the walk knows of one message type, planned at load.
type wirePlan struct {
	desc protoreflect.MessageDescriptor
	// byNumber holds the fields numbered below its length; others the rest.
	byNumber []*wireField
	others   map[protowire.Number]*wireField
	entry    bool // a map entry: its problems are named as such
	// opens says the message's JSON form is an object or an array, a
	// level of its own: a message, a map entry (the map's object), a
	// Struct, a ListValue, an Empty, an Any. A Value is what it holds, a
	// Struct's entry a member of the Struct's object, and a Timestamp,
	// Duration, FieldMask or wrapper a JSON string or number.
	opens bool
	// valueOpens says the message is a map entry whose value opens a
	// level, present on the wire or not: protojson writes a missing
	// message value as the empty message, {} or [].
	valueOpens bool
}

// wireField is one known field.
type wireField struct {
	fd     protoreflect.FieldDescriptor
	wire   protowire.Type                    // the wire type of one value
	packed bool                              // a repeated scalar, which may also come packed
	inner  *wirePlan                         // the message, group or map entry it holds
	closed protoreflect.EnumValueDescriptors // the values of a closed enum
	text   bool                              // a string, which must be UTF-8
	// array says the field's JSON form is an array within its message's
	// object: a level of its own, where a binary list has none.
	array bool
	// down is how many JSON levels below its message's the message it
	// holds is: 1 for a field, 2 for a list's element (the array, then
	// it), 0 where the JSON form has no level between them (a Value and
	// the Struct or ListValue it holds; a Struct and its entries).
	down int
}

// binaryLevels is the deepest binary nesting, counted as protobuf-go's
// recursion limit counts it (the contract message is 1; each message,
// group or map entry within it one more), of a payload whose JSON form
// nests maxDepth levels: a google.protobuf.Value holding a Struct is a
// JSON level and three binary ones (Struct, entry, Value), and a Value
// at the root adds one. The decoders' recursion limits are set to it, so
// that only the walk refuses for depth.
func binaryLevels(maxDepth int) int { return 3*maxDepth + 1 }

// maxIndexedNumber bounds wirePlan.byNumber, so a sparse message with a
// large field number costs a map entry, not a large slice.
const maxIndexedNumber = 64

func newWireChecker(md protoreflect.MessageDescriptor, resolver protoregistry.ExtensionTypeResolver, maxDepth int) *wireChecker {
	c := &wireChecker{resolver: resolver, maxDepth: maxDepth, maxLevels: binaryLevels(maxDepth)}
	plans := make(map[protoreflect.FullName]*wirePlan)
	c.root = planWire(md, plans)
	return c
}

// planWire plans md and every message type reachable from it; plans ends
// cycles.
func planWire(md protoreflect.MessageDescriptor, plans map[protoreflect.FullName]*wirePlan) *wirePlan {
	if p, ok := plans[md.FullName()]; ok {
		return p
	}
	p := &wirePlan{desc: md, entry: md.IsMapEntry(), opens: jsonOpens(md)}
	plans[md.FullName()] = p
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		f := newWireField(fd)
		if fd.Message() != nil {
			f.inner = planWire(fd.Message(), plans)
		}
		p.add(fd.Number(), f)
	}
	if p.entry && p.opens {
		if vd := md.Fields().ByNumber(2); vd != nil && vd.Message() != nil {
			p.valueOpens = jsonOpens(vd.Message())
		}
	}
	return p
}

func newWireField(fd protoreflect.FieldDescriptor) *wireField {
	f := &wireField{fd: fd, wire: wireType(fd)}
	f.packed = fd.IsList() && f.wire != protowire.BytesType && f.wire != protowire.StartGroupType
	f.text = fd.Kind() == protoreflect.StringKind
	if ed := fd.Enum(); ed != nil && ed.IsClosed() {
		f.closed = ed.Values()
	}
	f.array, f.down = jsonLevels(fd)
	return f
}

// jsonOpens says whether md's protojson form opens a JSON level of its
// own (wirePlan.opens). Well-known types are known by name, as protojson
// knows them.
func jsonOpens(md protoreflect.MessageDescriptor) bool {
	switch md.FullName() {
	case "google.protobuf.Value", "google.protobuf.Struct.FieldsEntry", "google.protobuf.Timestamp",
		"google.protobuf.Duration", "google.protobuf.FieldMask", "google.protobuf.BoolValue",
		"google.protobuf.Int32Value", "google.protobuf.Int64Value", "google.protobuf.UInt32Value",
		"google.protobuf.UInt64Value", "google.protobuf.FloatValue", "google.protobuf.DoubleValue",
		"google.protobuf.StringValue", "google.protobuf.BytesValue":
		return false
	}
	return true
}

// jsonLevels says how fd's JSON form nests within its message's
// (wireField.array and down).
func jsonLevels(fd protoreflect.FieldDescriptor) (array bool, down int) {
	parent := fd.ContainingMessage().FullName()
	switch {
	case fd.IsExtension():
		// "[name]": a member of the extended message's object.
	case parent == "google.protobuf.Value", parent == "google.protobuf.Struct":
		return false, 0 // the Value is its Struct or ListValue; the Struct's object holds its entries
	case parent == "google.protobuf.ListValue":
		return false, 1 // the ListValue is the array
	case !jsonOpens(fd.ContainingMessage()) && !fd.ContainingMessage().IsMapEntry():
		return false, 1 // a scalar's fields (FieldMask's paths are one string)
	}
	if fd.IsList() {
		return true, 2
	}
	return false, 1
}

func (p *wirePlan) add(num protowire.Number, f *wireField) {
	if num < maxIndexedNumber {
		if int(num) >= len(p.byNumber) {
			p.byNumber = append(p.byNumber, make([]*wireField, int(num)+1-len(p.byNumber))...)
		}
		p.byNumber[num] = f
		return
	}
	if p.others == nil {
		p.others = make(map[protowire.Number]*wireField)
	}
	p.others[num] = f
}

// field returns the known field num of the plan's message, or nil.
func (c *wireChecker) field(p *wirePlan, num protowire.Number) *wireField {
	if int(num) < len(p.byNumber) {
		if f := p.byNumber[num]; f != nil {
			return f
		}
	} else if f := p.others[num]; f != nil {
		return f
	}
	if c.resolver == nil || !p.desc.ExtensionRanges().Has(num) {
		return nil
	}
	xt, err := c.resolver.FindExtensionByNumber(p.desc.FullName(), num)
	if err != nil {
		return nil
	}
	// Extensions are rare and resolved here, each time: a plan is
	// immutable once loaded, and shared by concurrent walks.
	fd := xt.TypeDescriptor()
	f := newWireField(fd)
	if fd.Message() != nil {
		f.inner = planWire(fd.Message(), make(map[protoreflect.FullName]*wirePlan))
	}
	return f
}

// check walks b as the plan's message, depth levels deep in the JSON form
// and level levels deep in binary (the contract message is 1 in both).
// depth is where the message's own JSON level is, if it opens one: a
// Value's is where the Struct or ListValue it holds opens.
func (c *wireChecker) check(b []byte, p *wirePlan, depth, level int) *problem {
	switch {
	case p.opens && depth > c.maxDepth, p.valueOpens && depth+1 > c.maxDepth:
		return c.tooDeep()
	case level > c.maxLevels:
		return &problem{what: "message nesting exceeds " + strconv.Itoa(c.maxLevels) + " levels of protobuf binary"}
	}
	whole := b
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return &problem{what: "invalid wire data", err: protowire.ParseError(n)}
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return &problem{what: "invalid wire data in field " + strconv.Itoa(int(num)), err: protowire.ParseError(n)}
		}
		val := b[:n]
		b = b[n:]

		f := c.field(p, num)
		if f == nil {
			if p.entry {
				return &problem{what: "map entry has unknown field " + strconv.Itoa(int(num))}
			}
			return &problem{what: "unknown field " + strconv.Itoa(int(num))}
		}
		if typ != f.wire && !(f.packed && typ == protowire.BytesType) {
			if p.entry {
				return &problem{what: fmt.Sprintf("map entry %s has wire type %d, which does not match its type %s", f.fd.Name(), typ, f.fd.Kind())}
			}
			return &problem{what: fmt.Sprintf("field %s has wire type %d, which does not match its type %s", fieldSegment(f.fd), typ, f.fd.Kind())}
		}
		if f.array && depth+1 > c.maxDepth {
			return c.tooDeep().at(fieldSegment(f.fd))
		}
		var inner []byte
		switch {
		case f.inner != nil && typ == protowire.BytesType:
			inner, _ = protowire.ConsumeBytes(val)
		case f.inner != nil: // a group; val ends with its END_GROUP tag
			inner = val[:len(val)-protowire.SizeTag(num)]
		case typ == protowire.BytesType && f.packed:
			list, _ := protowire.ConsumeBytes(val)
			if q := f.checkPacked(list); q != nil {
				return q.at(fieldSegment(f.fd))
			}
			continue
		case f.text:
			if v, _ := protowire.ConsumeBytes(val); !utf8.Valid(v) {
				if p.entry {
					return &problem{what: "map entry " + string(f.fd.Name()) + " is not valid UTF-8"}
				}
				return (&problem{what: "invalid UTF-8"}).at(c.segment(whole, len(whole)-len(b), f))
			}
			continue
		case f.closed != nil:
			v, _ := protowire.ConsumeVarint(val)
			if q := f.checkEnum(v); q != nil {
				return q.at(fieldSegment(f.fd))
			}
			continue
		default:
			continue
		}
		if q := c.check(inner, f.inner, depth+f.down, level+1); q != nil {
			if p.entry {
				return q // named by the map field it belongs to
			}
			return q.at(c.segment(whole, len(whole)-len(b), f))
		}
	}
	return nil
}

// tooDeep is the refusal of a payload whose JSON form nests deeper than
// the limit.
func (c *wireChecker) tooDeep() *problem {
	return &problem{what: "nesting exceeds the depth limit of " + strconv.Itoa(c.maxDepth) + " (as its JSON form nests)"}
}

// segment names f in a problem's path: its name, and for a list element
// its index, counted over the message bytes up to end.
func (c *wireChecker) segment(msg []byte, end int, f *wireField) string {
	name := fieldSegment(f.fd)
	if !f.fd.IsList() {
		return name
	}
	index := -1
	for b := msg[:end]; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		b = b[n:]
		if num == f.fd.Number() {
			index++
		}
	}
	return name + "[" + strconv.Itoa(index) + "]"
}

// checkPacked refuses a packed list that is not whole elements of the
// field's type, or holds a value its closed enum does not define.
func (f *wireField) checkPacked(b []byte) *problem {
	switch f.wire {
	case protowire.Fixed32Type:
		if len(b)%4 == 0 {
			return nil
		}
	case protowire.Fixed64Type:
		if len(b)%8 == 0 {
			return nil
		}
	default:
		for len(b) > 0 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				break
			}
			if q := f.checkEnum(v); q != nil {
				return q
			}
			b = b[n:]
		}
		if len(b) == 0 {
			return nil
		}
	}
	return &problem{what: "packed list is not whole " + f.fd.Kind().String() + " elements"}
}

// checkEnum refuses a value of a closed enum that the enum does not
// define: protobuf-go keeps one as an unknown field, which the gateway
// refuses. The number is the varint's low 32 bits, as decoders read it.
func (f *wireField) checkEnum(v uint64) *problem {
	if f.closed == nil || f.closed.ByNumber(protoreflect.EnumNumber(int32(v))) != nil {
		return nil
	}
	return &problem{what: "value " + strconv.Itoa(int(int32(v))) + " is not defined in closed enum " + string(f.fd.Enum().FullName())}
}

func fieldSegment(fd protoreflect.FieldDescriptor) string {
	if fd.IsExtension() {
		return "[" + string(fd.FullName()) + "]"
	}
	return string(fd.Name())
}

// wireType is the wire type of one value of fd: a message is
// length-delimited, a group is delimited by its tags.
func wireType(fd protoreflect.FieldDescriptor) protowire.Type {
	switch fd.Kind() {
	case protoreflect.BoolKind, protoreflect.EnumKind,
		protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Uint32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Uint64Kind:
		return protowire.VarintType
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	default: // string, bytes, message
		return protowire.BytesType
	}
}
