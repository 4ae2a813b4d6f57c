package contract

import (
	"bytes"
	"math"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// A payload's canonical encoding is the deterministic protobuf binary of
// its message: what proto.MarshalOptions{Deterministic: true} writes for
// it as a dynamic message. One message has one canonical encoding,
// whichever of its encodings (fields or map entries in another order,
// lists packed or not, varints padded, a field repeated) or its JSON form
// a sender used, so a fingerprint of it names the message. CheckJSON
// returns it; Render returns it beside the JSON; Canonical turns a binary
// payload into it.
//
// Most binary payloads are canonical already: the common encoders write
// fields by number and lists packed. Canonical proves that with a walk of
// the bytes against a plan of the message (canonPlan), which costs about a
// wire walk, and only re-encodes a payload the walk cannot prove: a
// dynamic message decoded and marshalled again. FuzzCanonical holds the
// walk to the re-encoding: a payload the walk calls canonical is its own
// re-encoding.

// Canonical returns the canonical encoding of b, a payload of the contract
// in protobuf binary that CheckBinary or DecodeBinary accepted: b itself
// when it is canonical, else b decoded and marshalled deterministically,
// as Render does. A value that does not decode is a *MalformedError.
func (c *Contract) Canonical(b []byte) ([]byte, error) {
	if c.canon != nil {
		w := canonWalk{root: b}
		if w.message(c.canon, b) {
			if len(w.runs) == 0 {
				return b, nil
			}
			if out, ok := w.sorted(); ok {
				return out, nil
			}
		}
	}
	m, err := c.decodeDynamic(b)
	if err != nil {
		return nil, err
	}
	out, err := canonical.Marshal(m)
	if err != nil {
		return nil, &MalformedError{Msg: "re-encode " + c.typ, Err: err}
	}
	return out, nil
}

// decodeDynamic decodes b into a dynamic message as a reader of the
// published value does (Render): without the gateway's refusals.
func (c *Contract) decodeDynamic(b []byte) (*dynamicpb.Message, error) {
	m := dynamicpb.NewMessage(c.desc)
	if err := c.unmarshal(func() error { return proto.Unmarshal(b, m) }); err != nil {
		return nil, &MalformedError{Msg: "decode " + c.typ + " from protobuf binary", Err: err}
	}
	return m, nil
}

// canonPlan is what the canonical walk knows of one message type.
type canonPlan struct {
	// byNumber holds the fields numbered below its length; others the rest.
	byNumber []*canonField
	others   map[protowire.Number]*canonField
}

// canonField is one field of a canonPlan.
type canonField struct {
	num  protowire.Number
	kind protoreflect.Kind
	// rank is the field's place in the marshaller's order: fields outside
	// a oneof by number, then oneof members by the oneof's declaration
	// index and number (protobuf-go's legacy field order).
	rank int
	// oneof is the index of the field's oneof, -1 outside one (a proto3
	// optional field's synthetic oneof does not count).
	oneof      int
	list, mapf bool
	// packed lists are written as one length-delimited record.
	packed bool
	// implicit fields (no presence) are written only when not zero.
	implicit bool
	inner    *canonPlan // the message it holds
	key, val *canonField
}

func newCanonPlan(md protoreflect.MessageDescriptor) *canonPlan {
	return planCanon(md, make(map[protoreflect.FullName]*canonPlan))
}

func planCanon(md protoreflect.MessageDescriptor, plans map[protoreflect.FullName]*canonPlan) *canonPlan {
	if p, ok := plans[md.FullName()]; ok {
		return p
	}
	// Extensions are not planned: the marshaller orders them first, and a
	// payload with one is re-encoded. So is a message set, whose items are
	// extensions. A group's message is planned but its payloads are
	// re-encoded too (value).
	p := &canonPlan{}
	plans[md.FullName()] = p
	fields := md.Fields()
	order := make([]protoreflect.FieldDescriptor, fields.Len())
	for i := range order {
		order[i] = fields.Get(i)
	}
	slices.SortFunc(order, legacyOrder)
	for rank, fd := range order {
		f := newCanonField(fd, plans)
		f.rank = rank
		if f.num < maxIndexedNumber {
			if int(f.num) >= len(p.byNumber) {
				p.byNumber = append(p.byNumber, make([]*canonField, int(f.num)+1-len(p.byNumber))...)
			}
			p.byNumber[f.num] = f
			continue
		}
		if p.others == nil {
			p.others = make(map[protowire.Number]*canonField)
		}
		p.others[f.num] = f
	}
	return p
}

func newCanonField(fd protoreflect.FieldDescriptor, plans map[protoreflect.FullName]*canonPlan) *canonField {
	f := &canonField{
		num:      fd.Number(),
		kind:     fd.Kind(),
		oneof:    -1,
		list:     fd.IsList(),
		mapf:     fd.IsMap(),
		packed:   fd.IsPacked(),
		implicit: !fd.HasPresence() && !fd.IsList() && !fd.IsMap(),
	}
	if od := realOneof(fd); od != nil {
		f.oneof = od.Index()
	}
	switch {
	case fd.IsMap():
		f.key = newCanonField(fd.MapKey(), plans)
		f.val = newCanonField(fd.MapValue(), plans)
	case fd.Message() != nil:
		f.inner = planCanon(fd.Message(), plans)
	}
	return f
}

func (p *canonPlan) field(num protowire.Number) *canonField {
	if int(num) < len(p.byNumber) {
		return p.byNumber[num]
	}
	return p.others[num]
}

// canonWalk is one walk of a payload: root is the payload, runs the runs
// of map entries found out of order, innermost first.
type canonWalk struct {
	root []byte
	runs []mapRun
}

// mapRun is the records of one map field in one message, root[start:end],
// not in the marshaller's order. Sorting them changes no length, so the
// payload with its runs sorted (innermost first) is canonical when the
// walk found nothing else.
type mapRun struct {
	start, end int
	f          *canonField
}

// at is the offset of s in the payload: s is a subslice of it, so their
// capacities differ by where s starts.
func (w *canonWalk) at(s []byte) int { return cap(w.root) - cap(s) }

// message reports whether b, a message of p's type, is the marshaller's
// deterministic encoding of itself but for the order of map entries,
// which it records in w.runs. It answers false for anything else it
// cannot prove, malformed data included.
func (w *canonWalk) message(p *canonPlan, b []byte) bool {
	var prev *canonField
	lastOneof, oneofField := -1, (*canonField)(nil)
	// The run of map records being read, when prev is a map: where it
	// starts, its last key, and whether its keys rose so far.
	var runStart int
	var prevKey []byte
	sorted := true
	endRun := func(end int) {
		if prev != nil && prev.mapf && !sorted {
			w.runs = append(w.runs, mapRun{start: runStart, end: end, f: prev})
		}
	}
	for len(b) > 0 {
		start := w.at(b)
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || n != protowire.SizeTag(num) {
			return false
		}
		b = b[n:]
		f := p.field(num)
		if f == nil {
			return false
		}
		if f == prev {
			// Only a list written element by element, or a map's entries,
			// take more than one record, and those are consecutive.
			if !(f.list && !f.packed) && !f.mapf {
				return false
			}
		} else {
			if prev != nil && f.rank < prev.rank {
				return false
			}
			endRun(start)
			runStart, prevKey, sorted = start, nil, true
		}
		if f.oneof >= 0 {
			// Two members of one oneof: the decoder keeps the last.
			if f.oneof == lastOneof && f != oneofField {
				return false
			}
			lastOneof, oneofField = f.oneof, f
		}
		var ok bool
		switch {
		case f.mapf:
			var key []byte
			if b, key, ok = w.entry(f, b, typ); ok && prevKey != nil && !keyBelow(f.key.kind, prevKey, key) {
				sorted = false
			}
			prevKey = key
		case f.list && f.packed:
			b, ok = f.packedList(b, typ)
		default:
			b, ok = w.value(f, b, typ, f.implicit)
		}
		if !ok {
			return false
		}
		prev = f
	}
	endRun(w.at(b))
	return true
}

// value consumes one value of f written with wire type typ and reports
// whether it is written as the marshaller writes it: the wire type of its
// kind, varints and lengths in their shortest form, a number as it
// decodes, and, when implicit, not zero.
func (w *canonWalk) value(f *canonField, b []byte, typ protowire.Type, implicit bool) ([]byte, bool) {
	switch f.kind {
	case protoreflect.GroupKind:
		// Groups are rare (proto2, or editions' delimited encoding): a
		// payload with one is re-encoded.
		return nil, false
	case protoreflect.MessageKind, protoreflect.StringKind, protoreflect.BytesKind:
		if typ != protowire.BytesType {
			return nil, false
		}
		l, n := protowire.ConsumeVarint(b)
		if n < 0 || n != protowire.SizeVarint(l) || l > uint64(len(b)-n) {
			return nil, false
		}
		v, rest := b[n:n+int(l)], b[n+int(l):]
		switch {
		case f.kind == protoreflect.MessageKind:
			return rest, w.message(f.inner, v)
		case implicit && len(v) == 0:
			return nil, false
		}
		// Strings are not checked for UTF-8 here: the wire walk refused
		// a payload with an invalid one before it was decoded.
		return rest, true
	}
	v, n, ok := f.number(b, typ)
	if !ok || implicit && v == 0 {
		return nil, false
	}
	return b[n:], true
}

// number consumes one scalar number of f written with wire type typ, and
// reports its bits as the marshaller would hold them (0 for zero, a float
// by its bits) and whether they are written as it writes them.
func (f *canonField) number(b []byte, typ protowire.Type) (bits uint64, n int, ok bool) {
	switch f.kind {
	case protoreflect.FloatKind, protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		if typ != protowire.Fixed32Type {
			return 0, 0, false
		}
		v, n := protowire.ConsumeFixed32(b)
		if n < 0 {
			return 0, 0, false
		}
		if f.kind == protoreflect.FloatKind && math.IsNaN(float64(math.Float32frombits(v))) {
			// A float NaN's bits may not survive the decoder's float64.
			return 0, 0, false
		}
		return uint64(v), n, true
	case protoreflect.DoubleKind, protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		if typ != protowire.Fixed64Type {
			return 0, 0, false
		}
		v, n := protowire.ConsumeFixed64(b)
		return v, n, n >= 0
	}
	if typ != protowire.VarintType {
		return 0, 0, false
	}
	v, n := protowire.ConsumeVarint(b)
	if n < 0 || n != protowire.SizeVarint(v) {
		return 0, 0, false
	}
	// The decoder keeps what fits its kind; the marshaller writes that
	// back. v is canonical when it is that.
	var back uint64
	switch f.kind {
	case protoreflect.BoolKind:
		back = min(v, 1)
		if v != back {
			return 0, 0, false
		}
	case protoreflect.Int32Kind, protoreflect.EnumKind:
		back = uint64(int64(int32(v)))
	case protoreflect.Uint32Kind:
		back = uint64(uint32(v))
	case protoreflect.Sint32Kind:
		back = protowire.EncodeZigZag(int64(int32(protowire.DecodeZigZag(v & math.MaxUint32))))
	case protoreflect.Int64Kind, protoreflect.Uint64Kind, protoreflect.Sint64Kind:
		back = v
	default:
		return 0, 0, false
	}
	return v, n, v == back
}

// packedList consumes a packed list of f: one record, not empty, of
// numbers each written as the marshaller writes them.
func (f *canonField) packedList(b []byte, typ protowire.Type) ([]byte, bool) {
	if typ != protowire.BytesType {
		return nil, false
	}
	l, n := protowire.ConsumeVarint(b)
	if n < 0 || n != protowire.SizeVarint(l) || l == 0 || l > uint64(len(b)-n) {
		return nil, false
	}
	list, rest := b[n:n+int(l)], b[n+int(l):]
	elem := protowire.VarintType
	switch f.kind {
	case protoreflect.FloatKind, protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		elem = protowire.Fixed32Type
	case protoreflect.DoubleKind, protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		elem = protowire.Fixed64Type
	}
	for len(list) > 0 {
		_, n, ok := f.number(list, elem)
		if !ok {
			return nil, false
		}
		list = list[n:]
	}
	return rest, true
}

// entry consumes one map entry of f: its key then its value, both written
// (the marshaller writes zero ones too), each once. It returns the key's
// value bytes, which the caller orders against the previous entry's (the
// marshaller sorts the entries by key).
func (w *canonWalk) entry(f *canonField, b []byte, typ protowire.Type) (rest, key []byte, ok bool) {
	if typ != protowire.BytesType {
		return nil, nil, false
	}
	l, n := protowire.ConsumeVarint(b)
	if n < 0 || n != protowire.SizeVarint(l) || l > uint64(len(b)-n) {
		return nil, nil, false
	}
	e, rest := b[n:n+int(l)], b[n+int(l):]
	key, e, ok = w.entryField(e, f.key)
	if !ok {
		return nil, nil, false
	}
	if _, e, ok = w.entryField(e, f.val); !ok || len(e) != 0 {
		return nil, nil, false
	}
	return rest, key, true
}

// entryField consumes part (a map entry's key or value) from e: its tag,
// then its value written as the marshaller writes it. It returns the
// value's bytes, tag excluded.
func (w *canonWalk) entryField(e []byte, part *canonField) (value, rest []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(e)
	if n < 0 || n != protowire.SizeTag(num) || num != part.num {
		return nil, nil, false
	}
	e = e[n:]
	if rest, ok = w.value(part, e, typ, false); !ok {
		return nil, nil, false
	}
	return e[:len(e)-len(rest)], rest, true
}

// keyBelow reports whether map key x sorts strictly before y as the
// marshaller sorts keys: false before true, numbers by value, strings by
// their bytes. x and y are canonical values of kind k (a string with its
// length prefix, which the comparison skips).
func keyBelow(k protoreflect.Kind, x, y []byte) bool {
	switch k {
	case protoreflect.StringKind:
		_, nx := protowire.ConsumeVarint(x)
		_, ny := protowire.ConsumeVarint(y)
		return string(x[nx:]) < string(y[ny:])
	case protoreflect.Fixed32Kind:
		a, _ := protowire.ConsumeFixed32(x)
		b, _ := protowire.ConsumeFixed32(y)
		return a < b
	case protoreflect.Sfixed32Kind:
		a, _ := protowire.ConsumeFixed32(x)
		b, _ := protowire.ConsumeFixed32(y)
		return int32(a) < int32(b)
	case protoreflect.Fixed64Kind:
		a, _ := protowire.ConsumeFixed64(x)
		b, _ := protowire.ConsumeFixed64(y)
		return a < b
	case protoreflect.Sfixed64Kind:
		a, _ := protowire.ConsumeFixed64(x)
		b, _ := protowire.ConsumeFixed64(y)
		return int64(a) < int64(b)
	}
	a, _ := protowire.ConsumeVarint(x)
	b, _ := protowire.ConsumeVarint(y)
	switch k {
	case protoreflect.Int32Kind, protoreflect.Int64Kind:
		return int64(a) < int64(b)
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return protowire.DecodeZigZag(a) < protowire.DecodeZigZag(b)
	}
	return a < b // bool, uint32, uint64
}

// sorted is a copy of the payload with its runs of map records sorted by
// key, innermost first, so that an inner run has its place before the
// records holding it move. It reports false for a run with a key twice,
// which the decoder would keep once: no order makes that canonical.
func (w *canonWalk) sorted() ([]byte, bool) {
	out := bytes.Clone(w.root)
	var scratch []byte
	var held [16]mapRecord
	for _, r := range w.runs {
		// The run as it is now (inner runs sorted), read from a copy while
		// out is rewritten.
		scratch = append(scratch[:0], out[r.start:r.end]...)
		recs := held[:0]
		for b := scratch; len(b) > 0; {
			_, _, n := protowire.ConsumeTag(b)
			l, m := protowire.ConsumeVarint(b[n:])
			size := n + m + int(l)
			// A key is a number or a string: reading it adds no run.
			key, _, _ := w.entryField(b[n+m:size], r.f.key)
			recs = append(recs, mapRecord{b[:size], key})
			b = b[size:]
		}
		kind := r.f.key.kind
		slices.SortStableFunc(recs, func(x, y mapRecord) int {
			switch {
			case keyBelow(kind, x.key, y.key):
				return -1
			case keyBelow(kind, y.key, x.key):
				return 1
			}
			return 0
		})
		at := r.start
		for i, rec := range recs {
			if i > 0 && !keyBelow(kind, recs[i-1].key, rec.key) {
				return nil, false
			}
			at += copy(out[at:], rec.bytes)
		}
	}
	return out, true
}

// mapRecord is one record of a map field: its bytes, and its entry's key.
type mapRecord struct{ bytes, key []byte }
