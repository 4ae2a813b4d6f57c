package contract

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/sluicehq/sluice/internal/jsonscan"
)

// Scratch a pooled transcoding may keep: more is dropped after the call,
// so one huge payload does not pin its buffers for good.
const (
	maxPooledBytes    = 64 << 10
	maxPooledSegments = 4 << 10
)

// transcode appends to dst the protobuf binary of the JSON payload src and returns it.
// A refusal is a *MalformedError (same type the protojson path returns).
func (t *jsonTranscoder) transcode(dst, src []byte) ([]byte, error) {
	return t.run(dst, src, false)
}

// transcodeAllowUnknown is transcode that skips what protojson's
// DiscardUnknown discards: a member name the message lacks, with its
// value, and an enum name the enum lacks (the field, list element or map
// entry is then not set).
func (t *jsonTranscoder) transcodeAllowUnknown(dst, src []byte) ([]byte, error) {
	return t.run(dst, src, true)
}

func (t *jsonTranscoder) run(dst, src []byte, skipUnknown bool) (_ []byte, err error) {
	d := t.pool.Get().(*transcoding)
	defer func() {
		// A panic is a bug here, but it is this input's refusal, not the
		// gateway's crash. The scratch it leaves is not pooled again.
		if r := recover(); r != nil {
			err = &MalformedError{Msg: t.typ + ": " + fmt.Sprintf("transcoder panic: %v", r)}
		}
	}()
	d.t, d.src, d.pos, d.out, d.depth, d.skipUnknown = t, src, 0, dst, 0, skipUnknown
	err = d.payload()
	out := d.out
	d.src, d.out = nil, nil
	if cap(d.buf) <= maxPooledBytes && cap(d.tmp) <= maxPooledBytes &&
		cap(d.segs) <= maxPooledSegments && cap(d.seen) <= maxPooledSegments && cap(d.droppedAt) <= maxPooledSegments {
		d.segs, d.seen, d.droppedAt = d.segs[:0], d.seen[:0], d.droppedAt[:0]
		t.pool.Put(d)
	}
	if err != nil {
		return nil, t.malformed(err)
	}
	return out, nil
}

// transcoding is one call's state and the scratch it reuses.
type transcoding struct {
	t     *jsonTranscoder
	src   []byte
	pos   int
	out   []byte
	depth int // of JSON objects and arrays, as CheckJSONDepth counts
	// skipUnknown skips unknown member names and enum names
	// (transcodeAllowUnknown); dropped says scalar dropped an enum name.
	skipUnknown, dropped bool
	// droppedAt holds the src offsets of the map entries being read whose
	// enum value was dropped, in order: not written, but their keys still
	// count as protojson counts them (duplicateKept).
	droppedAt []int
	// segs holds, for each object and map being read, the span each field
	// or entry took in out, to reorder them when they came out of order.
	segs []segment
	// seen holds the fields and oneofs set in each object being read.
	seen   []uint64
	buf    []byte           // the value of the last string read that had escapes
	sc     jsonscan.Scanner // skips values, its stack of open containers reused
	tmp    []byte           // a copy of what is being reordered
	sorter segmentSorter
}

// segment is what one field or map entry wrote to out.
type segment struct {
	start, end int
	// key orders segments: a field's rank, or a map entry's key (bools as
	// 0 and 1, signed integers offset so that unsigned order is theirs).
	key uint64
	// kstart and kend hold a string key's bytes in out.
	kstart, kend int
	off          int // where the entry's key is in src, for errors
}

// transcodeError is a refusal on its way up; path gathers where it
// happened, innermost first, only once something failed.
type transcodeError struct {
	what string
	off  int
	path []string
}

func (e *transcodeError) Error() string { return e.what }

func (d *transcoding) fail(what string) error {
	return &transcodeError{what: what, off: d.pos}
}

func (d *transcoding) failf(format string, args ...any) error {
	return &transcodeError{what: fmt.Sprintf(format, args...), off: d.pos}
}

// errAt adds a path segment to err: a field's name, "[3]" or `["key"]`.
func errAt(err error, segment string) error {
	if e, ok := err.(*transcodeError); ok {
		e.path = append(e.path, segment)
	}
	return err
}

func (t *jsonTranscoder) malformed(err error) *MalformedError {
	e, ok := err.(*transcodeError)
	if !ok {
		return &MalformedError{Msg: t.typ + ": " + err.Error()}
	}
	var b strings.Builder
	b.WriteString(t.typ)
	b.WriteString(": ")
	if len(e.path) > 0 {
		b.WriteString(`field "`)
		for i := len(e.path) - 1; i >= 0; i-- {
			if i != len(e.path)-1 && e.path[i][0] != '[' {
				b.WriteByte('.')
			}
			b.WriteString(e.path[i])
		}
		b.WriteString(`": `)
	}
	b.WriteString(e.what)
	b.WriteString(" at offset ")
	b.WriteString(strconv.Itoa(e.off))
	return &MalformedError{Msg: b.String()}
}

// payload reads the whole of src: one object and whitespace.
func (d *transcoding) payload() error {
	if d.next() != '{' {
		return d.fail("payload is not a JSON object")
	}
	if err := d.message(d.t.root, 1); err != nil {
		return err
	}
	if d.next() != 0 || d.pos != len(d.src) {
		return d.fail("data after the JSON object")
	}
	return nil
}

// next skips whitespace and returns the byte there, 0 at the end. No
// valid JSON token starts with 0, so a NUL byte fails like the end does.
func (d *transcoding) next() byte {
	if d.pos = jsonscan.SkipSpace(d.src, d.pos); d.pos == len(d.src) {
		return 0
	}
	return d.src[d.pos]
}

// open consumes the '{' or '[' at d.pos, within the depth limit.
func (d *transcoding) open() error {
	d.depth++
	if d.depth > d.t.maxDepth {
		return d.failf("JSON nests deeper than %d", d.t.maxDepth)
	}
	d.pos++
	return nil
}

// more reads what follows a member or element: true after a comma, false
// at close, which it consumes.
func (d *transcoding) more(close byte) (bool, error) {
	switch d.next() {
	case ',':
		d.pos++
		return true, nil
	case close:
		d.pos++
		d.depth--
		return false, nil
	}
	return false, d.failf("expected ',' or '%c'", close)
}

// name reads an object member's name and the colon after it.
func (d *transcoding) name() ([]byte, error) {
	if d.next() != '"' {
		return nil, d.fail("expected a field name")
	}
	s, err := d.str()
	if err != nil {
		return nil, err
	}
	if d.next() != ':' {
		return nil, d.fail("expected ':' after a field name")
	}
	d.pos++
	return s, nil
}

// lit consumes the literal s if it is at d.pos. What follows it is left
// to the grammar: no valid continuation is a letter or digit.
func (d *transcoding) lit(s string) bool {
	if jsonscan.HasLiteral(d.src, d.pos, s) {
		d.pos += len(s)
		return true
	}
	return false
}

// unknownMember reads the rest of a member whose name, at nameAt, the
// message p lacks: a refusal, or with skipUnknown its value skipped and
// what follows it, as more does.
func (d *transcoding) unknownMember(p *msgPlan, nameAt int, name []byte) (bool, error) {
	if !d.skipUnknown {
		d.pos = nameAt
		return false, d.failf("unknown field %q", name)
	}
	if err := d.skipField(p, nameAt, name); err != nil {
		return false, err
	}
	return d.more('}')
}

// skipField reads the value of a member whose name, at nameAt, the
// message p lacks, and writes nothing. A "[name]" the contract's types
// resolve is refused, with DiscardUnknown too, as protojson refuses it:
// it names an extension (or another type), which p cannot hold.
func (d *transcoding) skipField(p *msgPlan, nameAt int, name []byte) error {
	if n := len(name); n >= 2 && name[0] == '[' && name[n-1] == ']' && d.t.types != nil {
		ext := protoreflect.FullName(name[1 : n-1])
		if _, err := d.t.types.FindExtensionByName(ext); !errors.Is(err, protoregistry.NotFound) {
			d.pos = nameAt
			return d.failf("message %s cannot be extended by %q", p.name, ext)
		}
	}
	return d.skipValue()
}

// skipValue reads one JSON value of any kind and writes nothing. It holds
// the value to the grammar protojson reads with (names may repeat: a
// value skipped has no fields to repeat), and to the depth limit: what is
// skipped nests within WithMaxDepth, as all of the payload's text does.
func (d *transcoding) skipValue() error {
	d.sc.Buf, d.sc.Pos = d.src, d.pos
	err := d.sc.SkipProtojson(d.t.maxDepth - d.depth)
	d.pos = d.sc.Pos
	d.sc.Buf = nil
	p, ok := err.(*jsonscan.Problem)
	if !ok {
		return err
	}
	d.pos = p.Offset
	switch p.Kind {
	case jsonscan.BadString:
		return d.fail(strProblems[p.Str])
	case jsonscan.BadNumber:
		return d.fail("invalid number")
	case jsonscan.WantName:
		return d.fail("expected a field name")
	case jsonscan.WantColon:
		return d.fail("expected ':' after a field name")
	case jsonscan.WantMore:
		return d.failf("expected ',' or '%c'", p.Close)
	case jsonscan.TooDeep:
		return d.failf("JSON nests deeper than %d", d.t.maxDepth)
	}
	return d.fail("invalid value")
}

// message reads a value of message type p, nested depth messages deep
// (the payload is 1), as protojson's unmarshalMessage counts them.
func (d *transcoding) message(p *msgPlan, depth int) error {
	if depth > d.t.maxMessages {
		return d.failf("messages nest deeper than %d", d.t.maxMessages)
	}
	switch p.wk {
	case wkTimestamp:
		return d.timestamp(p)
	case wkDuration:
		return d.duration(p)
	case wkWrapper:
		return d.singular(&p.fields[0], depth)
	case wkStruct:
		return d.mapField(&p.fields[0], depth)
	case wkListValue:
		return d.listField(&p.fields[0], depth)
	case wkValue:
		return d.value(p, depth)
	case wkFieldMask:
		return d.fieldMask(p)
	case wkEmpty:
		return d.empty()
	}
	return d.object(p, depth)
}

func (d *transcoding) object(p *msgPlan, depth int) error {
	if d.next() != '{' {
		return d.fail("expected an object for " + p.name)
	}
	if err := d.open(); err != nil {
		return err
	}
	segBase, seenBase := len(d.segs), len(d.seen)
	for range p.words {
		d.seen = append(d.seen, 0)
	}
	seen := d.seen[seenBase:]
	sorted, last := true, -1
	if d.next() == '}' {
		d.pos++
		d.depth--
	} else {
		for {
			nameAt := d.pos
			name, err := d.name()
			if err != nil {
				return err
			}
			i, ok := p.byName[string(name)]
			if !ok {
				more, err := d.unknownMember(p, nameAt, name)
				if err != nil {
					return err
				}
				if !more {
					break
				}
				continue
			}
			f := &p.fields[i]
			if seen[i/64]&(1<<(i%64)) != 0 {
				d.pos = nameAt
				return d.failf("duplicate field %q", name)
			}
			seen[i/64] |= 1 << (i % 64)
			if d.next() == 'n' && !f.nullable {
				// protojson skips a null, but only after the duplicate check.
				if !d.lit("null") {
					return errAt(d.fail("invalid value"), f.name)
				}
			} else {
				if o := f.oneof; o >= 0 {
					if seen[o/64]&(1<<(o%64)) != 0 {
						d.pos = nameAt
						return errAt(d.fail("another field of its oneof is already set"), f.name)
					}
					seen[o/64] |= 1 << (o % 64)
				}
				start := len(d.out)
				if err := d.field(f, depth); err != nil {
					return errAt(err, f.name)
				}
				if len(d.out) > start {
					if i < last {
						sorted = false
					}
					last = i
					d.segs = append(d.segs, segment{start: start, end: len(d.out), key: uint64(i)})
				}
			}
			more, err := d.more('}')
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
	}
	if !sorted {
		segs := d.segs[segBase:]
		start, end := d.sort(segs, false)
		d.rewrite(segs, start, end)
	}
	d.segs, d.seen = d.segs[:segBase], d.seen[:seenBase]
	return nil
}

func (d *transcoding) field(f *fieldPlan, depth int) error {
	switch {
	case f.mapf:
		return d.mapField(f, depth)
	case f.list:
		return d.listField(f, depth)
	}
	return d.singular(f, depth)
}

// singular writes one field's tag and value, or nothing for an implicit
// field's zero value.
func (d *transcoding) singular(f *fieldPlan, depth int) error {
	start := len(d.out)
	d.out = append(d.out, f.tag...)
	if f.msg != nil {
		return d.embedded(f.msg, depth+1)
	}
	zero, err := d.scalar(f)
	if zero && f.implicit {
		d.out = d.out[:start]
	}
	return err
}

// embedded writes a length-prefixed message.
func (d *transcoding) embedded(p *msgPlan, depth int) error {
	at := len(d.out)
	d.out = append(d.out, 0)
	err := d.message(p, depth)
	d.out, _ = endLen(d.out, at)
	return err
}

// endLen writes the length of b[pos+1:] into the byte reserved for it at
// pos, moving the bytes after when it needs more than one, and returns
// how far they moved.
func endLen(b []byte, pos int) ([]byte, int) {
	n := len(b) - pos - 1
	if n < 0x80 {
		b[pos] = byte(n)
		return b, 0
	}
	extra := protowire.SizeVarint(uint64(n)) - 1
	b = append(b, make([]byte, extra)...)
	copy(b[pos+1+extra:], b[pos+1:pos+1+n])
	protowire.AppendVarint(b[:pos], uint64(n))
	return b, extra
}

func (d *transcoding) listField(f *fieldPlan, depth int) error {
	if d.next() != '[' {
		return d.fail("expected an array")
	}
	if err := d.open(); err != nil {
		return err
	}
	start, lenAt := len(d.out), -1
	if f.packed {
		d.out = append(d.out, f.ptag...)
		lenAt = len(d.out)
		d.out = append(d.out, 0)
	}
	n := 0
	if d.next() == ']' {
		d.pos++
		d.depth--
	} else {
		for {
			if err := d.element(f, depth); err != nil {
				return errAt(err, "["+strconv.Itoa(n)+"]")
			}
			n++
			more, err := d.more(']')
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
	}
	if f.packed {
		if len(d.out) == lenAt+1 { // no element, or none but dropped ones
			d.out = d.out[:start]
		} else {
			d.out, _ = endLen(d.out, lenAt)
		}
	}
	return nil
}

func (d *transcoding) element(f *fieldPlan, depth int) error {
	if !f.packed {
		d.out = append(d.out, f.tag...)
	}
	if f.msg != nil {
		return d.embedded(f.msg, depth+1)
	}
	_, err := d.scalar(f)
	return err
}

// mapField reads a JSON object as map entries, which marshal writes with
// both key and value, sorted by key.
func (d *transcoding) mapField(f *fieldPlan, depth int) error {
	if d.next() != '{' {
		return d.fail("expected an object")
	}
	if err := d.open(); err != nil {
		return err
	}
	base, droppedBase := len(d.segs), len(d.droppedAt)
	sorted := true
	if d.next() == '}' {
		d.pos++
		d.depth--
	} else {
		for {
			seg := segment{off: d.pos}
			name, err := d.name()
			if err != nil {
				return err
			}
			seg.start = len(d.out)
			d.out = append(d.out, f.tag...)
			lenAt := len(d.out)
			d.out = append(d.out, 0)
			d.out = append(d.out, f.key.tag...)
			if !d.mapKey(f.key, name, &seg) {
				d.pos = seg.off
				return d.failf("invalid %v map key %q", f.key.kind, name)
			}
			d.out = append(d.out, f.val.tag...)
			if f.val.msg != nil {
				err = d.embedded(f.val.msg, depth+1)
			} else {
				d.dropped = false
				if _, err = d.scalar(f.val); d.dropped {
					d.droppedAt = append(d.droppedAt, seg.off)
				}
			}
			if err != nil {
				return errAt(err, d.keySegment(f.key, seg))
			}
			var moved int
			d.out, moved = endLen(d.out, lenAt)
			seg.kstart += moved
			seg.kend += moved
			seg.end = len(d.out)
			if n := len(d.segs); sorted && n > base && !d.sorter.less(&d.segs[n-1], &seg, d.out, f.key.kind) {
				sorted = false
			}
			d.segs = append(d.segs, seg)
			more, err := d.more('}')
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
	}
	if dropped := d.droppedAt[droppedBase:]; len(dropped) > 0 {
		segs := d.segs[base:]
		start, end := d.sort(segs, f.key.kind == protoreflect.StringKind)
		if err := d.duplicateKept(f.key, segs, dropped); err != nil {
			return err
		}
		d.out = d.out[:start+d.rewriteKept(segs, dropped, start, end)]
		d.droppedAt = d.droppedAt[:droppedBase]
	} else if !sorted {
		segs := d.segs[base:]
		start, end := d.sort(segs, f.key.kind == protoreflect.StringKind)
		for i := 1; i < len(segs); i++ {
			if !d.sorter.less(&segs[i-1], &segs[i], d.out, f.key.kind) {
				// Sorted, so not less is equal.
				d.pos = segs[i].off
				return d.failf("duplicate map key %s", d.keySegment(f.key, segs[i]))
			}
		}
		d.rewrite(segs, start, end)
	}
	d.segs = d.segs[:base]
	return nil
}

// mapKey writes an entry's key (its tag is written) as protojson reads a
// member name for it, and sets seg's key.
func (d *transcoding) mapKey(f *fieldPlan, name []byte, seg *segment) bool {
	switch f.kind {
	case protoreflect.StringKind:
		d.out = protowire.AppendVarint(d.out, uint64(len(name)))
		seg.kstart = len(d.out)
		d.out = append(d.out, name...)
		seg.kend = len(d.out)
		return true
	case protoreflect.BoolKind:
		switch string(name) {
		case "true":
			seg.key = 1
		case "false":
			seg.key = 0
		default:
			return false
		}
		d.out = append(d.out, byte(seg.key))
		return true
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		bits := 64
		if f.kind == protoreflect.Int32Kind || f.kind == protoreflect.Sint32Kind || f.kind == protoreflect.Sfixed32Kind {
			bits = 32
		}
		v, ok := keyInt(name, bits)
		if !ok {
			return false
		}
		seg.key = uint64(v) ^ 1<<63
		d.out = appendInteger(d.out, f.kind, uint64(v))
		return true
	default: // unsigned
		bits := 64
		if f.kind == protoreflect.Uint32Kind || f.kind == protoreflect.Fixed32Kind {
			bits = 32
		}
		v, ok := keyUint(name, bits)
		if !ok {
			return false
		}
		seg.key = v
		d.out = appendInteger(d.out, f.kind, v)
		return true
	}
}

// keySegment is an entry's path segment, for errors.
func (d *transcoding) keySegment(f *fieldPlan, seg segment) string {
	switch f.kind {
	case protoreflect.StringKind:
		return "[" + strconv.Quote(string(d.out[seg.kstart:seg.kend])) + "]"
	case protoreflect.BoolKind:
		return "[" + strconv.FormatBool(seg.key == 1) + "]"
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return "[" + strconv.FormatInt(int64(seg.key^1<<63), 10) + "]"
	}
	return "[" + strconv.FormatUint(seg.key, 10) + "]"
}

// keyInt and keyUint read a map key as strconv.ParseInt and ParseUint do
// in base 10, which is how protojson reads them: ParseInt takes a sign,
// '+' too; leading zeros are fine.
func keyInt(s []byte, bits int) (int64, bool) {
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	mag, ok := decimalDigits(s)
	limit := uint64(1) << (bits - 1)
	switch {
	case !ok:
		return 0, false
	case neg:
		return -int64(mag), mag <= limit
	}
	return int64(mag), mag < limit
}

func keyUint(s []byte, bits int) (uint64, bool) {
	v, ok := decimalDigits(s)
	return v, ok && (bits == 64 || v <= math.MaxUint32)
}

// decimalDigits reads one or more ASCII digits; false if there are none, any
// other byte, or the value overflows.
func decimalDigits(s []byte) (uint64, bool) {
	if len(s) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		var ok bool
		if v, ok = times10Plus(v, c-'0'); !ok {
			return 0, false
		}
	}
	return v, true
}

func times10Plus(v uint64, digit byte) (uint64, bool) {
	if v > (math.MaxUint64-uint64(digit))/10 {
		return 0, false
	}
	return v*10 + uint64(digit), true
}

// appendInteger writes an integer value of kind k, given as its 64 bits
// (sign-extended for signed kinds), as marshal does.
func appendInteger(b []byte, k protoreflect.Kind, v uint64) []byte {
	switch k {
	case protoreflect.Sint32Kind:
		return protowire.AppendVarint(b, protowire.EncodeZigZag(int64(int32(v))))
	case protoreflect.Sint64Kind:
		return protowire.AppendVarint(b, protowire.EncodeZigZag(int64(v)))
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return protowire.AppendFixed32(b, uint32(v))
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return protowire.AppendFixed64(b, v)
	case protoreflect.Uint32Kind:
		return protowire.AppendVarint(b, uint64(uint32(v)))
	case protoreflect.Int32Kind, protoreflect.EnumKind:
		return protowire.AppendVarint(b, uint64(int32(v)))
	}
	return protowire.AppendVarint(b, v)
}

// segmentSorter sorts segments of out by key, or by string key bytes.
type segmentSorter struct {
	segs    []segment
	out     []byte
	byBytes bool
}

func (s *segmentSorter) Len() int      { return len(s.segs) }
func (s *segmentSorter) Swap(i, j int) { s.segs[i], s.segs[j] = s.segs[j], s.segs[i] }
func (s *segmentSorter) Less(i, j int) bool {
	if s.byBytes {
		return bytes.Compare(s.out[s.segs[i].kstart:s.segs[i].kend], s.out[s.segs[j].kstart:s.segs[j].kend]) < 0
	}
	return s.segs[i].key < s.segs[j].key
}

// less orders two map entries by key, as deterministic marshal does.
func (s *segmentSorter) less(x, y *segment, out []byte, k protoreflect.Kind) bool {
	if k == protoreflect.StringKind {
		return bytes.Compare(out[x.kstart:x.kend], out[y.kstart:y.kend]) < 0
	}
	return x.key < y.key
}

// sort sorts segs, which lie end to end in out, and returns the span they
// cover. Their bytes stay where they are until rewrite.
func (d *transcoding) sort(segs []segment, byBytes bool) (start, end int) {
	start, end = segs[0].start, segs[len(segs)-1].end
	d.sorter = segmentSorter{segs: segs, out: d.out, byBytes: byBytes}
	sort.Sort(&d.sorter)
	d.sorter = segmentSorter{}
	return start, end
}

// rewrite puts the bytes of sorted segs in their order over out[start:end].
func (d *transcoding) rewrite(segs []segment, start, end int) {
	d.tmp = append(d.tmp[:0], d.out[start:end]...)
	w := start
	for _, s := range segs {
		w += copy(d.out[w:], d.tmp[s.start-start:s.end-start])
	}
}

// rewriteKept is rewrite without the segments of the entries dropped
// (their src offsets, sorted); it returns how many bytes it wrote from
// start.
func (d *transcoding) rewriteKept(segs []segment, dropped []int, start, end int) int {
	d.tmp = append(d.tmp[:0], d.out[start:end]...)
	w := start
	for _, s := range segs {
		if _, gone := slices.BinarySearch(dropped, s.off); !gone {
			w += copy(d.out[w:], d.tmp[s.start-start:s.end-start])
		}
	}
	return w - start
}

// duplicateKept judges duplicate keys among a map's sorted entries when
// some were dropped, as protojson does reading them in order: an entry is
// refused when an earlier entry with its key was set. A dropped entry
// sets nothing, so a key may follow its dropped twin, but not a kept one.
func (d *transcoding) duplicateKept(key *fieldPlan, segs []segment, dropped []int) error {
	for lo := 0; lo < len(segs); {
		hi := lo + 1
		for hi < len(segs) && !d.sorter.less(&segs[lo], &segs[hi], d.out, key.kind) {
			hi++
		}
		firstSet := -1 // the source offset of the run's first kept entry
		for _, s := range segs[lo:hi] {
			if _, gone := slices.BinarySearch(dropped, s.off); !gone && (firstSet < 0 || s.off < firstSet) {
				firstSet = s.off
			}
		}
		if firstSet >= 0 {
			dup := -1 // the first entry after it: where protojson stops
			for i, s := range segs[lo:hi] {
				if s.off > firstSet && (dup < 0 || s.off < segs[lo+dup].off) {
					dup = i
				}
			}
			if dup >= 0 {
				d.pos = segs[lo+dup].off
				return d.failf("duplicate map key %s", d.keySegment(key, segs[lo+dup]))
			}
		}
		lo = hi
	}
	return nil
}

// scalar reads a value of a non-message field and writes it without its
// tag, reporting whether it is the zero value.
//
// An enum name the enum lacks, when unknown names are skipped, is read
// and dropped: scalar takes back the tag its caller wrote before it (all
// but a packed list's element have one) and sets d.dropped, so that a
// map entry is dropped whole. A field or list element so dropped writes
// nothing.
func (d *transcoding) scalar(f *fieldPlan) (zero bool, err error) {
	c := d.next()
	start := d.pos
	switch f.kind {
	case protoreflect.BoolKind:
		switch {
		case d.lit("true"):
			d.out = append(d.out, 1)
			return false, nil
		case d.lit("false"):
			d.out = append(d.out, 0)
			return true, nil
		}
	case protoreflect.StringKind:
		if c == '"' {
			s, err := d.str()
			if err != nil {
				return false, err
			}
			d.out = protowire.AppendBytes(d.out, s)
			return len(s) == 0, nil
		}
	case protoreflect.BytesKind:
		if c == '"' {
			return d.bytesValue()
		}
	case protoreflect.EnumKind:
		switch {
		case c == '"':
			s, err := d.str()
			if err != nil {
				return false, err
			}
			if n, ok := f.enum[string(s)]; ok {
				d.out = appendInteger(d.out, protoreflect.EnumKind, uint64(n))
				return n == 0, nil
			}
			if d.skipUnknown {
				if !f.packed {
					d.out = d.out[:len(d.out)-len(f.tag)]
				}
				d.dropped = true
				return false, nil
			}
			d.pos = start
			return false, d.failf("invalid value for enum %s: %q is not one of its names", f.name, s)
		case c == 'n' && f.nullable:
			if d.lit("null") {
				d.out = append(d.out, 0)
				return true, nil
			}
		case c == '-' || '0' <= c && c <= '9':
			raw, err := d.number()
			if err != nil {
				return false, err
			}
			if neg, mag, ok := integral(raw); ok && fitsInt(neg, mag, 32, true) {
				v := signedValue(neg, mag)
				d.out = appendInteger(d.out, protoreflect.EnumKind, uint64(v))
				return v == 0, nil
			}
		}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		bits := 64
		if f.kind == protoreflect.FloatKind {
			bits = 32
		}
		v, ok, err := d.float(c, bits)
		if err != nil {
			return false, err
		}
		if ok {
			if bits == 32 {
				u := math.Float32bits(float32(v))
				d.out = protowire.AppendFixed32(d.out, u)
				return u == 0, nil
			}
			u := math.Float64bits(v)
			d.out = protowire.AppendFixed64(d.out, u)
			return u == 0, nil
		}
	default:
		var raw []byte
		switch {
		case c == '"':
			s, err := d.str()
			if err != nil {
				return false, err
			}
			if n, ok := jsonscan.ProtojsonNumberLen(s); ok && n == len(s) {
				raw = s
			}
		case c == '-' || '0' <= c && c <= '9':
			if raw, err = d.number(); err != nil {
				return false, err
			}
		}
		if raw != nil {
			bits, isSigned := intKind(f.kind)
			if neg, mag, ok := integral(raw); ok && fitsInt(neg, mag, bits, isSigned) {
				v := uint64(signedValue(neg, mag))
				d.out = appendInteger(d.out, f.kind, v)
				return v == 0, nil
			}
		}
	}
	d.pos = start
	return false, d.failf("invalid value for %v field %s", f.kind, f.name)
}

func intKind(k protoreflect.Kind) (bits int, isSigned bool) {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return 32, true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return 64, true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return 32, false
	}
	return 64, false
}

func fitsInt(neg bool, mag uint64, bits int, isSigned bool) bool {
	if !isSigned {
		return !neg && (bits == 64 || mag <= math.MaxUint32)
	}
	limit := uint64(1) << (bits - 1)
	if neg {
		return mag <= limit
	}
	return mag < limit
}

func signedValue(neg bool, mag uint64) int64 {
	if neg {
		return -int64(mag)
	}
	return int64(mag)
}

// float reads a floating-point value as protojson does: a number, or a
// string holding "NaN", "Infinity", "-Infinity" or exactly a number.
// ok is false for a value that is none of these or out of range.
func (d *transcoding) float(c byte, bits int) (v float64, ok bool, err error) {
	var raw []byte
	switch {
	case c == '"':
		s, err := d.str()
		if err != nil {
			return 0, false, err
		}
		switch string(s) {
		case "NaN":
			if bits == 32 {
				return float64(float32(math.NaN())), true, nil
			}
			return math.NaN(), true, nil
		case "Infinity":
			return math.Inf(1), true, nil
		case "-Infinity":
			return math.Inf(-1), true, nil
		}
		if n, ok := jsonscan.ProtojsonNumberLen(s); !ok || n != len(s) {
			return 0, false, nil
		}
		raw = s
	case c == '-' || '0' <= c && c <= '9':
		if raw, err = d.number(); err != nil {
			return 0, false, err
		}
	default:
		return 0, false, nil
	}
	v, perr := strconv.ParseFloat(string(raw), bits)
	return v, perr == nil, nil
}

func (d *transcoding) bytesValue() (zero bool, err error) {
	start := d.pos
	s, err := d.str()
	if err != nil {
		return false, err
	}
	// protojson's choice of alphabet and padding, and base64's leniency:
	// it skips '\r' and '\n' and ignores stray low bits.
	enc := base64.StdEncoding
	if bytes.ContainsAny(s, "-_") {
		enc = base64.URLEncoding
	}
	if len(s)%4 != 0 {
		enc = base64.RawStdEncoding
		if bytes.ContainsAny(s, "-_") {
			enc = base64.RawURLEncoding
		}
	}
	lenAt := len(d.out)
	d.out = append(d.out, 0)
	w := len(d.out)
	d.out = append(d.out, make([]byte, enc.DecodedLen(len(s)))...)
	n, err := enc.Decode(d.out[w:], s)
	if err != nil {
		d.pos = start
		return false, d.fail("invalid base64 for bytes field")
	}
	d.out = d.out[:w+n]
	d.out, _ = endLen(d.out, lenAt)
	return n == 0, nil
}

// number reads a JSON number token, as protojson's tokenizer reads one,
// and returns its text.
func (d *transcoding) number() ([]byte, error) {
	n, ok := jsonscan.ProtojsonNumberLen(d.src[d.pos:])
	if !ok {
		return nil, d.fail("invalid number")
	}
	raw := d.src[d.pos : d.pos+n]
	d.pos += n
	return raw, nil
}

func jsonDigit(c byte) bool { return '0' <= c && c <= '9' }

// integral reads a number token as protojson does for an integer field:
// any notation whose value is an integer. It keeps protojson's limits: no
// more than 20 digits once the exponent is applied, and an exponent that
// fits in 32 bits.
func integral(b []byte) (neg bool, mag uint64, ok bool) {
	i := 0
	if b[0] == '-' {
		neg = true
		i++
	}
	var intp, frac, exp []byte
	if b[i] == '0' {
		i++
	} else {
		j := i
		for ; i < len(b) && jsonDigit(b[i]); i++ {
		}
		intp = b[j:i]
	}
	if i+1 < len(b) && b[i] == '.' && jsonDigit(b[i+1]) {
		j := i + 1
		for i += 2; i < len(b) && jsonDigit(b[i]); i++ {
		}
		frac = b[j:i]
	}
	if i+1 < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		j := i
		if b[i] == '+' || b[i] == '-' {
			i++
			if i == len(b) {
				return false, 0, false
			}
		}
		for ; i < len(b) && jsonDigit(b[i]); i++ {
		}
		exp = b[j:i]
	}
	frac = bytes.TrimRight(frac, "0")
	if len(intp) == 0 && len(frac) == 0 {
		return false, 0, true
	}
	e := 0
	if len(exp) > 0 {
		v, ok := keyInt(exp, 32)
		if !ok {
			return false, 0, false
		}
		e = int(v)
	}
	if e >= 0 {
		if len(frac) > e || len(intp)+e > 20 {
			return false, 0, false
		}
		for _, digits := range [][]byte{intp, frac} {
			for _, c := range digits {
				if mag, ok = times10Plus(mag, c-'0'); !ok {
					return false, 0, false
				}
			}
		}
		for range e - len(frac) {
			if mag, ok = times10Plus(mag, 0); !ok {
				return false, 0, false
			}
		}
		return neg, mag, true
	}
	if len(frac) > 0 {
		return false, 0, false
	}
	end := len(intp) + e
	if end <= 0 {
		return false, 0, false
	}
	for _, c := range intp[end:] {
		if c != '0' {
			return false, 0, false
		}
	}
	for _, c := range intp[:end] {
		if mag, ok = times10Plus(mag, c-'0'); !ok {
			return false, 0, false
		}
	}
	return neg, mag, true
}

// str reads the JSON string at d.pos and returns its value: a slice of
// src when it has no escapes, else of d.buf, good until the next string.
// It refuses what protojson refuses: bytes that are not UTF-8 and a \u
// surrogate not in a pair.
func (d *transcoding) str() ([]byte, error) {
	// Most strings are plain ASCII: read here, inlined; ScanString reads
	// the rest from the start.
	if start := d.pos + 1; start <= len(d.src) {
		if j := jsonscan.PlainEnd(d.src, start); j < len(d.src) && d.src[j] == '"' {
			d.pos = j + 1
			return d.src[start:j], nil
		}
	}
	s, end, bad, at := jsonscan.ScanString(d.src, d.pos, true)
	if bad != jsonscan.StrOK {
		d.pos = at
		return nil, d.fail(strProblems[bad])
	}
	d.pos = end
	if !s.Escaped {
		return s.Raw, nil
	}
	d.buf = jsonscan.Unescape(d.buf[:0], s.Raw)
	return d.buf, nil
}

// strProblems are the transcoder's words for what ScanString refuses.
var strProblems = [...]string{
	jsonscan.StrUnterminated:  "unterminated string",
	jsonscan.StrEndsInEscape:  "unterminated string",
	jsonscan.StrControl:       "control character in string",
	jsonscan.StrBadEscape:     "invalid escape in string",
	jsonscan.StrBadHex:        "invalid escape in string",
	jsonscan.StrBadUTF8:       "invalid UTF-8 in string",
	jsonscan.StrLoneSurrogate: "invalid surrogate escape in string",
	jsonscan.StrBadSurrogates: "invalid surrogate pair in string",
}
