package contract

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The standard rules compiled into checks, with protovalidate's rule ids
// and messages, in the order protovalidate v1.4.0 checks them. A rules
// message with anything else set (a rule not listed here, a predefined
// rule) leaves its field to protovalidate.

// rulesLeft returns an error naming the rules still set in m after the
// compiled ones were cleared, or nil.
func rulesLeft(m proto.Message) error {
	r := m.ProtoReflect()
	if len(r.GetUnknown()) > 0 {
		return errNotCompiled("predefined rules")
	}
	var left []string
	r.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		left = append(left, string(fd.Name()))
		return true
	})
	if len(left) > 0 {
		return errNotCompiled(strings.Join(left, ", ") + " not compiled")
	}
	return nil
}

// compileValue compiles the rules on a singular value (a field, a list's
// item, a map's key or value).
func compileValue(fd protoreflect.FieldDescriptor, fr *validate.FieldRules) ([]valueCheck, error) {
	kind := fd.Kind()
	switch fr.WhichType() {
	case validate.FieldRules_Type_not_set_case:
		return nil, nil
	case validate.FieldRules_String__case:
		if kind != protoreflect.StringKind {
			break
		}
		return compileString(fr.GetString())
	case validate.FieldRules_Bool_case:
		if kind != protoreflect.BoolKind {
			break
		}
		return compileBool(fr.GetBool())
	case validate.FieldRules_Enum_case:
		if kind != protoreflect.EnumKind {
			break
		}
		return compileEnum(fd, fr.GetEnum())
	case validate.FieldRules_Int32_case:
		if kind != protoreflect.Int32Kind {
			break
		}
		return compileNumber(fr.GetInt32(), "int32", protoreflect.Value.Int, toInt32)
	case validate.FieldRules_Sint32_case:
		if kind != protoreflect.Sint32Kind {
			break
		}
		return compileNumber(fr.GetSint32(), "sint32", protoreflect.Value.Int, toInt32)
	case validate.FieldRules_Sfixed32_case:
		if kind != protoreflect.Sfixed32Kind {
			break
		}
		return compileNumber(fr.GetSfixed32(), "sfixed32", protoreflect.Value.Int, toInt32)
	case validate.FieldRules_Int64_case:
		if kind != protoreflect.Int64Kind {
			break
		}
		return compileNumber(fr.GetInt64(), "int64", protoreflect.Value.Int, toInt64)
	case validate.FieldRules_Sint64_case:
		if kind != protoreflect.Sint64Kind {
			break
		}
		return compileNumber(fr.GetSint64(), "sint64", protoreflect.Value.Int, toInt64)
	case validate.FieldRules_Sfixed64_case:
		if kind != protoreflect.Sfixed64Kind {
			break
		}
		return compileNumber(fr.GetSfixed64(), "sfixed64", protoreflect.Value.Int, toInt64)
	case validate.FieldRules_Uint32_case:
		if kind != protoreflect.Uint32Kind {
			break
		}
		return compileNumber(fr.GetUint32(), "uint32", protoreflect.Value.Uint, toUint32)
	case validate.FieldRules_Fixed32_case:
		if kind != protoreflect.Fixed32Kind {
			break
		}
		return compileNumber(fr.GetFixed32(), "fixed32", protoreflect.Value.Uint, toUint32)
	case validate.FieldRules_Uint64_case:
		if kind != protoreflect.Uint64Kind {
			break
		}
		return compileNumber(fr.GetUint64(), "uint64", protoreflect.Value.Uint, toUint64)
	case validate.FieldRules_Fixed64_case:
		if kind != protoreflect.Fixed64Kind {
			break
		}
		return compileNumber(fr.GetFixed64(), "fixed64", protoreflect.Value.Uint, toUint64)
	case validate.FieldRules_Float_case:
		if kind != protoreflect.FloatKind {
			break
		}
		return compileNumber(fr.GetFloat(), "float", protoreflect.Value.Float, toFloat32)
	case validate.FieldRules_Double_case:
		if kind != protoreflect.DoubleKind {
			break
		}
		return compileNumber(fr.GetDouble(), "double", protoreflect.Value.Float, toFloat64)
	case validate.FieldRules_Timestamp_case:
		return compileTimestamp(fd, fr.GetTimestamp())
	case validate.FieldRules_Duration_case:
		return compileDuration(fd, fr.GetDuration())
	default:
		return nil, errNotCompiled(fr.WhichType().String() + " rules not compiled")
	}
	return nil, errNotCompiled("rules do not fit the field")
}

func toInt32(v int64) int32       { return int32(v) }
func toInt64(v int64) int64       { return v }
func toUint32(v uint64) uint32    { return uint32(v) }
func toUint64(v uint64) uint64    { return v }
func toFloat32(v float64) float32 { return float32(v) }
func toFloat64(v float64) float64 { return v }

func compileString(sr *validate.StringRules) ([]valueCheck, error) {
	sr = proto.CloneOf(sr)
	m := sr.ProtoReflect()
	fields := m.Descriptor().Fields()
	take := func(name protoreflect.Name) bool {
		fd := fields.ByName(name)
		if fd.IsList() {
			if m.Get(fd).List().Len() == 0 {
				return false
			}
		} else if !m.Has(fd) {
			return false
		}
		return true
	}
	clear := func(name protoreflect.Name) { m.Clear(fields.ByName(name)) }

	var checks []valueCheck
	runeBound := func(name protoreflect.Name, rule string, n uint64, bad func(c, n uint64) bool, msg string) {
		if !take(name) {
			return
		}
		clear(name)
		f := &ruleFail{rule: rule, msg: fmt.Sprintf(msg, n)}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if bad(uint64(utf8.RuneCountInString(v.String())), n) {
				return f
			}
			return nil
		})
	}
	byteBound := func(name protoreflect.Name, rule string, n uint64, bad func(c, n uint64) bool, msg string) {
		if !take(name) {
			return
		}
		clear(name)
		f := &ruleFail{rule: rule, msg: fmt.Sprintf(msg, n)}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if bad(uint64(len(v.String())), n) {
				return f
			}
			return nil
		})
	}
	ne := func(c, n uint64) bool { return c != n }
	lt := func(c, n uint64) bool { return c < n }
	gt := func(c, n uint64) bool { return c > n }
	runeBound("len", "string.len", sr.GetLen(), ne, "must be %d characters")
	runeBound("min_len", "string.min_len", sr.GetMinLen(), lt, "must be at least %d characters")
	runeBound("max_len", "string.max_len", sr.GetMaxLen(), gt, "must be at most %d characters")
	byteBound("len_bytes", "string.len_bytes", sr.GetLenBytes(), ne, "must be %d bytes")
	byteBound("min_bytes", "string.min_bytes", sr.GetMinBytes(), lt, "must be at least %d bytes")
	byteBound("max_bytes", "string.max_bytes", sr.GetMaxBytes(), gt, "must be at most %d bytes")

	if take("const") {
		want := sr.GetConst()
		clear("const")
		f := &ruleFail{rule: "string.const", msg: "must equal `" + want + "`"}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if v.String() != want {
				return f
			}
			return nil
		})
	}
	if take("pattern") {
		check, err := compilePattern(sr.GetPattern())
		if err != nil {
			return nil, err
		}
		clear("pattern")
		checks = append(checks, check)
	}
	affix := func(name protoreflect.Name, rule, msg string, want string, bad func(s, want string) bool) {
		if !take(name) {
			return
		}
		clear(name)
		f := &ruleFail{rule: rule, msg: msg + " `" + want + "`"}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if bad(v.String(), want) {
				return f
			}
			return nil
		})
	}
	affix("prefix", "string.prefix", "does not have prefix", sr.GetPrefix(), func(s, w string) bool { return !strings.HasPrefix(s, w) })
	affix("suffix", "string.suffix", "does not have suffix", sr.GetSuffix(), func(s, w string) bool { return !strings.HasSuffix(s, w) })
	affix("contains", "string.contains", "does not contain substring", sr.GetContains(), func(s, w string) bool { return !strings.Contains(s, w) })
	affix("not_contains", "string.not_contains", "contains substring", sr.GetNotContains(), strings.Contains)
	if take("in") {
		vals := slices.Clone(sr.GetIn())
		clear("in")
		in := newStringSet(vals)
		f := &ruleFail{rule: "string.in", msg: "must be in list [" + strings.Join(vals, ", ") + "]"}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if !in.has(v.String()) {
				return f
			}
			return nil
		})
	}
	if take("not_in") {
		vals := slices.Clone(sr.GetNotIn())
		clear("not_in")
		out := newStringSet(vals)
		f := &ruleFail{rule: "string.not_in", msg: "must not be in list [" + strings.Join(vals, ", ") + "]"}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if out.has(v.String()) {
				return f
			}
			return nil
		})
	}
	if sr.HasWellKnown() {
		check, names, err := compileStringFormat(sr)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			clear(n)
		}
		checks = append(checks, check)
	}
	if err := rulesLeft(sr); err != nil {
		return nil, err
	}
	return checks, nil
}

// stringSet is a string rule's in or not_in list: a map when it is long.
type stringSet struct {
	list []string
	set  map[string]struct{}
}

func newStringSet(vals []string) stringSet {
	if len(vals) <= 8 {
		return stringSet{list: vals}
	}
	s := stringSet{set: make(map[string]struct{}, len(vals))}
	for _, v := range vals {
		s.set[v] = struct{}{}
	}
	return s
}

func (s stringSet) has(v string) bool {
	if s.set != nil {
		_, ok := s.set[v]
		return ok
	}
	return slices.Contains(s.list, v)
}

func compileBool(br *validate.BoolRules) ([]valueCheck, error) {
	br = proto.CloneOf(br)
	var checks []valueCheck
	if br.HasConst() {
		want := br.GetConst()
		br.ClearConst()
		f := &ruleFail{rule: "bool.const", msg: fmt.Sprintf("must equal %t", want)}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if v.Bool() != want {
				return f
			}
			return nil
		})
	}
	return checks, rulesLeft(br)
}

func compileEnum(fd protoreflect.FieldDescriptor, er *validate.EnumRules) ([]valueCheck, error) {
	er = proto.CloneOf(er)
	var checks []valueCheck
	if er.HasConst() {
		want := er.GetConst()
		er.ClearConst()
		f := &ruleFail{rule: "enum.const", msg: fmt.Sprintf("must equal %d", want)}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if int32(v.Enum()) != want {
				return f
			}
			return nil
		})
	}
	if in := er.GetIn(); len(in) > 0 {
		er.SetIn(nil)
		f := &ruleFail{rule: "enum.in", msg: "must be in list " + formatNumbers(in)}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if !slices.Contains(in, int32(v.Enum())) {
				return f
			}
			return nil
		})
	}
	if out := er.GetNotIn(); len(out) > 0 {
		er.SetNotIn(nil)
		f := &ruleFail{rule: "enum.not_in", msg: "must not be in list " + formatNumbers(out)}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if slices.Contains(out, int32(v.Enum())) {
				return f
			}
			return nil
		})
	}
	if er.GetDefinedOnly() {
		er.ClearDefinedOnly()
		values := fd.Enum().Values()
		f := &ruleFail{rule: "enum.defined_only", msg: "value must be one of the defined enum values"}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if values.ByNumber(v.Enum()) == nil {
				return f
			}
			return nil
		})
	} else if er.HasDefinedOnly() {
		er.ClearDefinedOnly()
	}
	return checks, rulesLeft(er)
}

// ruleNumber is a Go type a numeric field's rules are stated in.
type ruleNumber interface {
	~int32 | ~int64 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// numberRules is what the numeric rules messages have in common.
type numberRules[T ruleNumber] interface {
	proto.Message
	HasGt() bool
	GetGt() T
	HasGte() bool
	GetGte() T
	HasLt() bool
	GetLt() T
	HasLte() bool
	GetLte() T
	HasConst() bool
	GetConst() T
	GetIn() []T
	GetNotIn() []T
}

// compileNumber compiles the rules of a numeric field: const, in, not_in,
// finite (floats), then the range.
func compileNumber[T ruleNumber, V int64 | uint64 | float64, R numberRules[T]](nr R, typ string, get func(protoreflect.Value) V, conv func(V) T) ([]valueCheck, error) {
	nr = proto.CloneOf(nr)
	m := nr.ProtoReflect()
	fields := m.Descriptor().Fields()
	clear := func(name protoreflect.Name) { m.Clear(fields.ByName(name)) }
	isFloat := typ == "float" || typ == "double"
	val := func(v protoreflect.Value) T { return conv(get(v)) }

	var checks []valueCheck
	var lo, hi T
	var hasLo, loExcl, hasHi, hiExcl bool
	switch {
	case nr.HasGt():
		lo, hasLo, loExcl = nr.GetGt(), true, true
		clear("gt")
	case nr.HasGte():
		lo, hasLo = nr.GetGte(), true
		clear("gte")
	}
	switch {
	case nr.HasLt():
		hi, hasHi, hiExcl = nr.GetLt(), true, true
		clear("lt")
	case nr.HasLte():
		hi, hasHi = nr.GetLte(), true
		clear("lte")
	}
	if isNaN(lo) || isNaN(hi) {
		return nil, errNotCompiled("NaN bound")
	}
	if nr.HasConst() {
		want := nr.GetConst()
		clear("const")
		f := &ruleFail{rule: typ + ".const", msg: "must equal " + formatNumber(want)}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if val(v) != want {
				return f
			}
			return nil
		})
	}
	if in := nr.GetIn(); len(in) > 0 {
		clear("in")
		f := &ruleFail{rule: typ + ".in", msg: "must be in list " + formatNumbers(in)}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if !slices.Contains(in, val(v)) {
				return f
			}
			return nil
		})
	}
	if out := nr.GetNotIn(); len(out) > 0 {
		clear("not_in")
		f := &ruleFail{rule: typ + ".not_in", msg: "must not be in list " + formatNumbers(out)}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if slices.Contains(out, val(v)) {
				return f
			}
			return nil
		})
	}
	if isFloat {
		if fd := fields.ByName("finite"); m.Has(fd) {
			finite := m.Get(fd).Bool()
			clear("finite")
			if finite {
				f := &ruleFail{rule: typ + ".finite", msg: "must be finite"}
				checks = append(checks, func(v protoreflect.Value) *ruleFail {
					x := float64(val(v))
					if math.IsNaN(x) || math.IsInf(x, 0) {
						return f
					}
					return nil
				})
			}
		}
	}
	if hasLo || hasHi {
		checks = append(checks, numberRange(typ, val, lo, hi, hasLo, loExcl, hasHi, hiExcl, isFloat))
	}
	return checks, rulesLeft(nr)
}

// numberRange is the range check, one rule id and message for the bounds
// together: "int32.gt_lt" when both hold, "…_exclusive" when the range is
// the outside of [hi, lo].
func numberRange[T ruleNumber](typ string, val func(protoreflect.Value) T, lo, hi T, hasLo, loExcl, hasHi, hiExcl, isFloat bool) valueCheck {
	loRule, loMsg := typ+".gte", "greater than or equal to "+formatNumber(lo)
	if loExcl {
		loRule, loMsg = typ+".gt", "greater than "+formatNumber(lo)
	}
	hiRule, hiMsg := typ+".lte", "less than or equal to "+formatNumber(hi)
	if hiExcl {
		hiRule, hiMsg = typ+".lt", "less than "+formatNumber(hi)
	}
	below := func(x T) bool {
		if loExcl {
			return x <= lo
		}
		return x < lo
	}
	above := func(x T) bool {
		if hiExcl {
			return x >= hi
		}
		return x > hi
	}
	nan := func(x T) bool { return isFloat && x != x }
	switch {
	case !hasLo:
		f := &ruleFail{rule: hiRule, msg: "must be " + hiMsg}
		return func(v protoreflect.Value) *ruleFail {
			if x := val(v); nan(x) || above(x) {
				return f
			}
			return nil
		}
	case !hasHi:
		f := &ruleFail{rule: loRule, msg: "must be " + loMsg}
		return func(v protoreflect.Value) *ruleFail {
			if x := val(v); nan(x) || below(x) {
				return f
			}
			return nil
		}
	case hi >= lo:
		f := &ruleFail{rule: loRule + "_" + strings.TrimPrefix(hiRule, typ+"."), msg: "must be " + loMsg + " and " + hiMsg}
		return func(v protoreflect.Value) *ruleFail {
			if x := val(v); nan(x) || above(x) || below(x) {
				return f
			}
			return nil
		}
	default:
		f := &ruleFail{rule: loRule + "_" + strings.TrimPrefix(hiRule, typ+".") + "_exclusive", msg: "must be " + loMsg + " or " + hiMsg}
		return func(v protoreflect.Value) *ruleFail {
			if x := val(v); nan(x) || (above(x) && below(x)) {
				return f
			}
			return nil
		}
	}
}

func isNaN[T ruleNumber](x T) bool { return x != x }

// formatNumber writes a rule's number as protovalidate's messages do:
// floats in the shortest decimal form without an exponent, NaN and
// ±Infinity by name.
func formatNumber[T ruleNumber](x T) string {
	switch v := any(x).(type) {
	case float32:
		return formatRuleFloat(float64(v))
	case float64:
		return formatRuleFloat(v)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case int64:
		return strconv.FormatInt(v, 10)
	case uint32:
		return strconv.FormatUint(uint64(v), 10)
	default:
		return fmt.Sprint(v)
	}
}

func formatRuleFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func formatNumbers[T ruleNumber](xs []T) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = formatNumber(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func compileRepeatedRules(fd protoreflect.FieldDescriptor, rr *validate.RepeatedRules) ([]valueCheck, error) {
	rr = proto.CloneOf(rr)
	rr.ClearItems()
	var checks []valueCheck
	if rr.HasMinItems() {
		n := rr.GetMinItems()
		rr.ClearMinItems()
		f := &ruleFail{rule: "repeated.min_items", msg: fmt.Sprintf("must contain at least %d item(s)", n)}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if uint64(v.List().Len()) < n {
				return f
			}
			return nil
		})
	}
	if rr.HasMaxItems() {
		n := rr.GetMaxItems()
		rr.ClearMaxItems()
		f := &ruleFail{rule: "repeated.max_items", msg: fmt.Sprintf("must contain no more than %d item(s)", n)}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if uint64(v.List().Len()) > n {
				return f
			}
			return nil
		})
	}
	if rr.GetUnique() {
		if fd.Message() != nil {
			return nil, errNotCompiled("unique on messages")
		}
		rr.ClearUnique()
		kind := fd.Kind()
		f := &ruleFail{rule: "repeated.unique", msg: "repeated value must contain unique items"}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if !uniqueList(kind, v.List()) {
				return f
			}
			return nil
		})
	} else if rr.HasUnique() {
		rr.ClearUnique()
	}
	return checks, rulesLeft(rr)
}

// uniqueList reports whether no two items of l are equal as Go's == has
// them (NaN equals nothing, -0 equals 0), bytes by content.
func uniqueList(kind protoreflect.Kind, l protoreflect.List) bool {
	n := l.Len()
	for i := 1; i < n; i++ {
		a := l.Get(i)
		for j := range i {
			if equalScalar(kind, a, l.Get(j)) {
				return false
			}
		}
	}
	return true
}

// equalScalar compares two values of a scalar kind as Go's == does.
func equalScalar(kind protoreflect.Kind, a, b protoreflect.Value) bool {
	switch kind {
	case protoreflect.BoolKind:
		return a.Bool() == b.Bool()
	case protoreflect.EnumKind:
		return a.Enum() == b.Enum()
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return a.Int() == b.Int()
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return a.Uint() == b.Uint()
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return a.Float() == b.Float()
	case protoreflect.StringKind:
		return a.String() == b.String()
	case protoreflect.BytesKind:
		return bytes.Equal(a.Bytes(), b.Bytes())
	}
	return false
}

func compileMapRules(mr *validate.MapRules) ([]valueCheck, error) {
	mr = proto.CloneOf(mr)
	mr.ClearKeys()
	mr.ClearValues()
	var checks []valueCheck
	if mr.HasMinPairs() {
		n := mr.GetMinPairs()
		mr.ClearMinPairs()
		f := &ruleFail{rule: "map.min_pairs", msg: fmt.Sprintf("map must be at least %d entries", n)}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if uint64(v.Map().Len()) < n {
				return f
			}
			return nil
		})
	}
	if mr.HasMaxPairs() {
		n := mr.GetMaxPairs()
		mr.ClearMaxPairs()
		f := &ruleFail{rule: "map.max_pairs", msg: fmt.Sprintf("map must be at most %d entries", n)}
		checks = append(checks, func(v protoreflect.Value) *ruleFail {
			if uint64(v.Map().Len()) > n {
				return f
			}
			return nil
		})
	}
	return checks, rulesLeft(mr)
}
