package contract

import (
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"google.golang.org/protobuf/proto"
)

// ReflectCheckJSON is CheckJSON through protojson and a dynamic message,
// which the transcoder's path replaces where it covers the contract.
func (c *Contract) ReflectCheckJSON(b []byte) ([]byte, error) { return c.reflectJSON(b, true) }

// ReflectCheckJSONAllowUnknown is CheckJSONAllowUnknown through protojson
// with DiscardUnknown and a dynamic message.
func (c *Contract) ReflectCheckJSONAllowUnknown(b []byte) ([]byte, error) {
	return c.reflectJSONMode(b, true, true)
}

// ReflectDecodeJSON is DecodeJSON through protojson and a dynamic message.
func (c *Contract) ReflectDecodeJSON(b []byte) ([]byte, error) { return c.reflectJSON(b, false) }

// DynamicCheckBinary is CheckBinary as it was before hyperpb: the payload
// decoded into a dynamicpb message by protobuf-go's reflective decoder,
// with the refusals that stood around it: the decoder's own, then the
// map-entry guard that walked the wire data before it, and the scan for
// unknown fields, invalid UTF-8 and out-of-range times after it. The
// depth limit is judged by its definition instead of the wire walk's
// count: on the JSON that protojson writes of the message.
// FuzzBinaryDecoders holds the two to the same answers.
func (c *Contract) DynamicCheckBinary(b []byte) (_ []byte, err error) {
	levels := binaryLevels(c.maxDepth)
	if mec := newMapEntryChecker(c.desc, c.json.Resolver, levels); mec != nil {
		if p := mec.check(b, c.desc, 1); p != nil {
			return nil, p.malformed(c.typ)
		}
	}
	m := c.msgType.New()
	opts := proto.UnmarshalOptions{RecursionLimit: levels, Resolver: c.json.Resolver, AllowPartial: true}
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("contract: decoder panic: %v", r)
			}
		}()
		err = opts.Unmarshal(b, m.Interface())
	}()
	if err != nil {
		return nil, &MalformedError{Msg: "decode " + c.typ + " from protobuf binary", Err: err}
	}
	if err := c.checkInitialized(m); err != nil {
		return nil, err
	}
	if p := scanMessage(m, newScanPlans(c.desc, false)); p != nil {
		return nil, p.malformed(c.typ)
	}
	js, err := protojson.MarshalOptions{Resolver: c.json.Resolver}.Marshal(m.Interface())
	if err != nil {
		return nil, &MalformedError{Msg: "write " + c.typ + " as JSON", Err: err}
	}
	if err := CheckJSONDepth(js, c.maxDepth); err != nil {
		return nil, err
	}
	if err := c.registry.validate(m.Interface(), len(b)); err != nil {
		return nil, err
	}
	return b, nil
}

// The map-entry guard as it stood, for DynamicCheckBinary. The reflective
// decoder that dynamic messages use drops any field of a
// map entry other than the key and the value, and panics on some entries
// whose key field repeats with the wrong wire type (google.golang.org/protobuf
// v1.36.12, proto.UnmarshalOptions.unmarshalMap). mapEntryChecker walks the
// wire bytes before decoding and refuses such entries, so that unknown
// fields are refused inside map entries too and the decoder never sees what
// makes it panic. It looks only into messages that can hold a map.

// mapEntryChecker knows which messages reachable from a contract can hold
// a map, directly or through their fields.
type mapEntryChecker struct {
	holders  map[protoreflect.FullName]bool
	resolver protoregistry.ExtensionTypeResolver
	maxDepth int
}

// newMapEntryChecker returns nil when no message reachable from md holds a
// map: such contracts skip the walk.
func newMapEntryChecker(md protoreflect.MessageDescriptor, resolver protoregistry.ExtensionTypeResolver, maxDepth int) *mapEntryChecker {
	reachable := reachableMessages(md)

	// A message holds a map if it has a map field, may have extensions
	// (which the descriptor does not show), or has a field of a message
	// that holds one. Repeat until nothing changes, for recursive types.
	holders := make(map[protoreflect.FullName]bool)
	for changed := true; changed; {
		changed = false
		for _, m := range reachable {
			if holders[m.FullName()] {
				continue
			}
			holds := m.ExtensionRanges().Len() > 0
			fields := m.Fields()
			for i := 0; i < fields.Len() && !holds; i++ {
				fd := fields.Get(i)
				holds = fd.IsMap() || (fd.Message() != nil && holders[fd.Message().FullName()])
			}
			if holds {
				holders[m.FullName()] = true
				changed = true
			}
		}
	}
	if !holders[md.FullName()] {
		return nil
	}
	return &mapEntryChecker{holders: holders, resolver: resolver, maxDepth: maxDepth}
}

// check walks b as message md at nesting level depth (the contract message
// is 1). It counts levels as the decoder does, a map entry being one, and
// stops where the decoder stops. Bytes that are not valid wire data are
// left to the decoder, which refuses them.
func (c *mapEntryChecker) check(b []byte, md protoreflect.MessageDescriptor, depth int) *problem {
	if depth > c.maxDepth || !c.holders[md.FullName()] {
		return nil
	}
	return eachField(b, func(num protowire.Number, typ protowire.Type, val []byte) *problem {
		fd := md.Fields().ByNumber(num)
		if fd == nil && md.ExtensionRanges().Has(num) && c.resolver != nil {
			if xt, err := c.resolver.FindExtensionByNumber(md.FullName(), num); err == nil {
				fd = xt.TypeDescriptor()
			}
		}
		if fd == nil {
			return nil
		}
		var p *problem
		switch {
		case fd.IsMap() && typ == protowire.BytesType:
			entry, _ := protowire.ConsumeBytes(val)
			p = c.checkEntry(entry, fd, depth+1)
		case fd.Message() != nil && typ == protowire.BytesType:
			inner, _ := protowire.ConsumeBytes(val)
			p = c.check(inner, fd.Message(), depth+1)
		case fd.Message() != nil && typ == protowire.StartGroupType:
			// val ends with the END_GROUP tag of this field.
			inner := val[:len(val)-protowire.SizeTag(num)]
			p = c.check(inner, fd.Message(), depth+1)
		}
		if p != nil {
			return p.at(fieldSegment(fd))
		}
		return nil
	})
}

// checkEntry refuses a map entry with a field other than the key (1) and
// the value (2), or with either of them in a wire type that does not match.
func (c *mapEntryChecker) checkEntry(b []byte, fd protoreflect.FieldDescriptor, depth int) *problem {
	if depth > c.maxDepth {
		return nil
	}
	return eachField(b, func(num protowire.Number, typ protowire.Type, val []byte) *problem {
		var want protoreflect.FieldDescriptor
		switch num {
		case 1:
			want = fd.MapKey()
		case 2:
			want = fd.MapValue()
		default:
			return &problem{what: "map entry has unknown field " + strconv.Itoa(int(num))}
		}
		if typ != wireType(want) {
			return &problem{what: fmt.Sprintf("map entry %s has wire type %d, which does not match its type %s", want.Name(), typ, want.Kind())}
		}
		if num == 2 && want.Message() != nil {
			inner, _ := protowire.ConsumeBytes(val)
			return c.check(inner, want.Message(), depth+1)
		}
		return nil
	})
}

// eachField calls fn with each field of the wire data b, in order, until fn
// reports a problem. It stops quietly at bytes that are not valid wire
// data: those are left to the decoder, which refuses them.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, val []byte) *problem) *problem {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil
		}
		if p := fn(num, typ, b[:n]); p != nil {
			return p
		}
		b = b[n:]
	}
	return nil
}

// ValidateSized runs the contract's rules, compiled and protovalidate's,
// on msg as a payload of size bytes in protobuf binary.
func (c *Contract) ValidateSized(msg proto.Message, size int) error { return c.validate(msg, size) }

// ProtovalidateSized runs protovalidate alone on msg, as validation was
// before rules were compiled: the compiled checks' reference.
func (r *Registry) ProtovalidateSized(msg proto.Message, size int) error {
	return r.validate(msg, size)
}

// Registry returns the registry the contract was loaded into.
func (c *Contract) Registry() *Registry { return c.registry }
