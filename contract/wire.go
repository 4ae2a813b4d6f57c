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
//   - nesting deeper than the limit, counted as protobuf-go's recursion
//     limit counts it: the contract message is level 1, and each message,
//     group or map entry within it one more.
//
// hyperpb, which decodes what the walk lets through, reads wire data with
// unchecked pointer arithmetic and has faulted (a crash that recover cannot
// catch) on unknown fields and wrong wire types in v0.1.3: it only ever sees
// data the walk has proven well formed and known.

// wireChecker walks the payloads of one contract.
type wireChecker struct {
	root     *wirePlan
	resolver protoregistry.ExtensionTypeResolver
	maxDepth int
}

// wirePlan is what the walk knows of one message type, planned at load.
type wirePlan struct {
	desc protoreflect.MessageDescriptor
	// byNumber holds the fields numbered below its length; others the rest.
	byNumber []*wireField
	others   map[protowire.Number]*wireField
	entry    bool // a map entry: its problems are named as such
}

// wireField is one known field.
type wireField struct {
	fd     protoreflect.FieldDescriptor
	wire   protowire.Type                    // the wire type of one value
	packed bool                              // a repeated scalar, which may also come packed
	inner  *wirePlan                         // the message, group or map entry it holds
	closed protoreflect.EnumValueDescriptors // the values of a closed enum
	text   bool                              // a string, which must be UTF-8
}

// maxIndexedNumber bounds wirePlan.byNumber, so a sparse message with a
// large field number costs a map entry, not a large slice.
const maxIndexedNumber = 64

func newWireChecker(md protoreflect.MessageDescriptor, resolver protoregistry.ExtensionTypeResolver, maxDepth int) *wireChecker {
	c := &wireChecker{resolver: resolver, maxDepth: maxDepth}
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
	p := &wirePlan{desc: md, entry: md.IsMapEntry()}
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
	return p
}

func newWireField(fd protoreflect.FieldDescriptor) *wireField {
	f := &wireField{fd: fd, wire: wireType(fd)}
	f.packed = fd.IsList() && f.wire != protowire.BytesType && f.wire != protowire.StartGroupType
	f.text = fd.Kind() == protoreflect.StringKind
	if ed := fd.Enum(); ed != nil && ed.IsClosed() {
		f.closed = ed.Values()
	}
	return f
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

// check walks b as the plan's message at nesting level depth (the
// contract message is 1).
func (c *wireChecker) check(b []byte, p *wirePlan, depth int) *problem {
	if depth > c.maxDepth {
		return &problem{what: "message nesting exceeds the recursion depth limit of " + strconv.Itoa(c.maxDepth)}
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
		if q := c.check(inner, f.inner, depth+1); q != nil {
			if p.entry {
				return q // named by the map field it belongs to
			}
			return q.at(c.segment(whole, len(whole)-len(b), f))
		}
	}
	return nil
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
