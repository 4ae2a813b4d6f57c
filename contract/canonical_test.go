package contract

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// marshalled is b decoded as a reader decodes it and marshalled
// deterministically: the canonical encoding by definition.
func marshalled(tb testing.TB, c *Contract, b []byte) []byte {
	tb.Helper()
	m, err := c.decodeDynamic(b)
	if err != nil {
		tb.Fatalf("decode: %v", err)
	}
	out, err := canonical.Marshal(m)
	if err != nil {
		tb.Fatalf("marshal: %v", err)
	}
	return out
}

// FuzzCanonical holds Canonical's walk to the re-encoding it stands in
// for: of every payload the gateway accepts, Canonical returns what the
// reflective decoder and the deterministic marshaller make of it, and the
// walk calls a payload canonical only when it is that already. The walk
// must also prove the marshaller's own output canonical (else every
// payload would pay for the re-encoding).
func FuzzCanonical(f *testing.F) {
	targets := transcodeTargets(f)
	for _, s := range append(eventSeeds(f), edgeSeeds()...) {
		bin, err := targets[s.tg].c.reflectJSON([]byte(s.in), false)
		if err != nil || len(bin) == 0 {
			continue
		}
		f.Add(uint8(s.tg), bin)
		f.Add(uint8(s.tg), reversedFields(bin))
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		c := targets[int(which)%len(targets)].c
		if _, err := c.DecodeBinary(b); err != nil {
			return
		}
		want := marshalled(t, c, b)
		got, err := c.Canonical(b)
		if err != nil {
			t.Fatalf("Canonical: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Canonical(%x) = %x, want the re-encoding %x", b, got, want)
		}
		if w := (canonWalk{root: want}); (!w.message(c.canon, want) || len(w.runs) > 0) && !hasFloatNaN(t, c, want) {
			t.Fatalf("the walk does not prove the marshaller's output %x canonical", want)
		}
	})
}

// hasFloatNaN reports whether b holds a NaN in a float field at any depth,
// which the walk leaves to the re-encoding.
func hasFloatNaN(tb testing.TB, c *Contract, b []byte) bool {
	m, err := c.decodeDynamic(b)
	if err != nil {
		tb.Fatal(err)
	}
	return messageHasFloatNaN(m)
}

func messageHasFloatNaN(m protoreflect.Message) bool {
	found := false
	isNaN := func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch fd.Kind() {
		case protoreflect.FloatKind:
			return math.IsNaN(v.Float())
		case protoreflect.MessageKind, protoreflect.GroupKind:
			return messageHasFloatNaN(v.Message())
		}
		return false
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			for i := range v.List().Len() {
				found = found || isNaN(fd, v.List().Get(i))
			}
		case fd.IsMap():
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				found = found || isNaN(fd.MapValue(), mv)
				return !found
			})
		default:
			found = isNaN(fd, v)
		}
		return !found
	})
	return found
}

// reversedFields is b with its top-level records in reverse order: the
// same message, not canonical when it has two fields or more.
func reversedFields(b []byte) []byte {
	var records [][]byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil
		}
		records = append(records, b[:n+m])
		b = b[n+m:]
	}
	slices.Reverse(records)
	return bytes.Join(records, nil)
}

// TestCanonical: encodings of one message that differ only in form all
// have its one canonical encoding, and the walk proves the canonical one
// without re-encoding it.
func TestCanonical(t *testing.T) {
	targets := transcodeTargets(t)
	c := targets[tgRich].c
	js := `{"i32":-5,"u64":"7","s":"x","rI32":[1,2,3],"color":"COLOR_RED","mSi":{"b":2,"a":1},"mS32":{"-3":"1","2":"0"},"child":{"s":"y"},"oS":"one"}`
	canon, err := c.reflectJSON([]byte(js), false)
	if err != nil {
		t.Fatal(err)
	}
	if !isCanonical(c, canon) {
		t.Fatalf("the walk does not prove the marshaller's output canonical")
	}
	if got, err := c.Canonical(canon); err != nil || !bytes.Equal(got, canon) || &got[0] != &canon[0] {
		t.Fatalf("Canonical of a canonical payload: %x %v, want the same bytes, not a copy", got, err)
	}
	// i32 -5 as a 5-byte varint (decoders take the low 32 bits), the
	// list unpacked, and the fields reversed.
	var variants [][]byte
	variants = append(variants, reversedFields(canon))
	padded := protowire.AppendTag(nil, 1, protowire.VarintType)
	padded = protowire.AppendVarint(padded, uint64(uint32(0xFFFFFFFB)))
	variants = append(variants, append(padded, skipField(canon, 1)...))
	unpacked := skipField(canon, 17)
	for _, v := range []uint64{1, 2, 3} {
		unpacked = protowire.AppendVarint(protowire.AppendTag(unpacked, 17, protowire.VarintType), v)
	}
	variants = append(variants, unpacked)
	// The map entries of m_si (field 30) swapped, in place.
	var entries [][]byte
	for rest := canon; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		m := protowire.ConsumeFieldValue(num, typ, rest[n:])
		if num == 30 {
			entries = append(entries, rest[:n+m])
		}
		rest = rest[n+m:]
	}
	if len(entries) != 2 {
		t.Fatalf("m_si has %d entries, want 2", len(entries))
	}
	at := bytes.Index(canon, entries[0])
	swapped := slices.Concat(canon[:at], entries[1], entries[0], canon[at+len(entries[0])+len(entries[1]):])
	variants = append(variants, swapped)
	for i, v := range variants {
		if isCanonical(c, v) {
			t.Errorf("variant %d %x judged canonical", i, v)
		}
		got, err := c.Canonical(v)
		if err != nil || !bytes.Equal(got, canon) {
			t.Errorf("variant %d: Canonical = %x %v, want %x", i, got, err, canon)
		}
	}
}

// skipField is b without the top-level records of field num.
func skipField(b []byte, num protowire.Number) []byte {
	var out []byte
	for len(b) > 0 {
		n2, typ, n := protowire.ConsumeTag(b)
		m := protowire.ConsumeFieldValue(n2, typ, b[n:])
		if n2 != num {
			out = append(out, b[:n+m]...)
		}
		b = b[n+m:]
	}
	return out
}

// isCanonical reports whether the walk proves b canonical as it is.
func isCanonical(c *Contract, b []byte) bool {
	w := canonWalk{root: b}
	return w.message(c.canon, b) && len(w.runs) == 0
}
