package contract

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// numberText is the JSON number syntax, which protojson also reads inside
// a string for every numeric kind.
const numberText = `^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$`

// floatSpecials are the strings protojson reads as a float's values that
// JSON numbers cannot spell.
var floatSpecials = []struct {
	text  string
	value float64
}{{"NaN", math.NaN()}, {"Infinity", math.Inf(1)}, {"-Infinity", math.Inf(-1)}}

// numericRules are a numeric kind's protovalidate rules, read once.
type numericRules struct {
	lower, upper       protoreflect.Value // invalid when unset
	lowerIncl, upperIn bool
	constant           protoreflect.Value
	in, notIn          []protoreflect.Value
	finite             bool
	unknown            []string
}

func readNumericRules(typed protoreflect.Message) numericRules {
	var r numericRules
	if typed == nil {
		return r
	}
	typed.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch fd.Name() {
		case "gt", "gte":
			r.lower, r.lowerIncl = v, fd.Name() == "gte"
		case "lt", "lte":
			r.upper, r.upperIn = v, fd.Name() == "lte"
		case "const":
			r.constant = v
		case "in", "not_in":
			var vs []protoreflect.Value
			for i := 0; i < v.List().Len(); i++ {
				vs = append(vs, v.List().Get(i))
			}
			if fd.Name() == "in" {
				r.in = vs
			} else {
				r.notIn = vs
			}
		case "finite":
			r.finite = v.Bool()
		case "example":
		default:
			r.unknown = append(r.unknown, string(fd.FullName()))
		}
		return true
	})
	if len(typed.GetUnknown()) > 0 {
		r.unknown = append(r.unknown, "(unknown rule fields)")
	}
	return r
}

// numberSchema is one value of a numeric kind under typed (its rules, or
// nil): the JSON numbers the rules accept, and in the wide schema the
// strings protojson reads as numbers too. Integer rules are stated
// exactly. A float's JSON number is rounded to the kind before the rules
// judge it, so its bounds are widened (narrowed, in the sound schema) to
// the rounding's midpoints; NaN and the infinities, strings in JSON, are
// listed as the rules judge them.
func (b *schemaBuilder) numberSchema(kind protoreflect.Kind, typed protoreflect.Message) *Schema {
	r := readNumericRules(typed)
	var s *Schema
	switch kind {
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		s = b.floatSchema(kind, r)
	default:
		s = b.intSchema(kind, r)
	}
	for _, u := range r.unknown {
		s = b.unstated(s, "rule "+u)
	}
	return s
}

func (b *schemaBuilder) intSchema(kind protoreflect.Kind, r numericRules) *Schema {
	num := &Schema{Type: "integer"}
	switch kind {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		num.Minimum, num.Maximum = json.Number(strconv.Itoa(math.MinInt32)), json.Number(strconv.Itoa(math.MaxInt32))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		num.Minimum, num.Maximum = "0", json.Number(strconv.FormatUint(math.MaxUint32, 10))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		num.Minimum, num.Maximum = json.Number(strconv.FormatInt(math.MinInt64, 10)), json.Number(strconv.FormatInt(math.MaxInt64, 10))
	default: // uint64, fixed64
		num.Minimum, num.Maximum = "0", json.Number(strconv.FormatUint(math.MaxUint64, 10))
	}
	if r.constant.IsValid() {
		num.Const = intText(r.constant)
	}
	for _, v := range r.in {
		num.Enum = append(num.Enum, intText(v))
	}
	if len(r.notIn) > 0 {
		var out []any
		for _, v := range r.notIn {
			out = append(out, intText(v))
		}
		num.AllOf = append(num.AllOf, &Schema{Not: &Schema{Enum: out}})
	}
	var lower, upper *Schema
	if r.lower.IsValid() {
		lower = &Schema{}
		if r.lowerIncl {
			lower.Minimum = intText(r.lower)
		} else {
			lower.ExclusiveMinimum = intText(r.lower)
		}
	}
	if r.upper.IsValid() {
		upper = &Schema{}
		if r.upperIn {
			upper.Maximum = intText(r.upper)
		} else {
			upper.ExclusiveMaximum = intText(r.upper)
		}
	}
	num.AllOf = append(num.AllOf, rangeSchemas(lower, upper, lower != nil && upper != nil && intBig(r.upper).Cmp(intBig(r.lower)) < 0)...)
	if b.sound {
		return num
	}
	return &Schema{AnyOf: []*Schema{num, {Type: "string", Pattern: numberText,
		Description: "The number in a string, as protobuf's JSON mapping writes 64-bit integers; the rules above hold for its value."}}}
}

// rangeSchemas is a lower and an upper bound, either of them nil: both to
// hold, or, when exclusive (protovalidate's range with its upper bound
// below its lower one), either.
func rangeSchemas(lower, upper *Schema, exclusive bool) []*Schema {
	switch {
	case lower == nil && upper == nil:
		return nil
	case lower == nil:
		return []*Schema{upper}
	case upper == nil:
		return []*Schema{lower}
	case exclusive:
		return []*Schema{{AnyOf: []*Schema{lower, upper}}}
	}
	return []*Schema{lower, upper}
}

func intText(v protoreflect.Value) json.Number { return json.Number(intBig(v).String()) }

func intBig(v protoreflect.Value) *big.Int {
	switch x := v.Interface().(type) {
	case int32:
		return big.NewInt(int64(x))
	case int64:
		return big.NewInt(x)
	case uint32:
		return new(big.Int).SetUint64(uint64(x))
	case uint64:
		return new(big.Int).SetUint64(x)
	}
	return new(big.Int)
}

// floatGrid is the values of a float kind: 32 or 64 bits.
type floatGrid int

func (g floatGrid) next(x float64) float64 {
	if g == 32 {
		return float64(math.Nextafter32(float32(x), float32(math.Inf(1))))
	}
	return math.Nextafter(x, math.Inf(1))
}

func (g floatGrid) prev(x float64) float64 {
	if g == 32 {
		return float64(math.Nextafter32(float32(x), float32(math.Inf(-1))))
	}
	return math.Nextafter(x, math.Inf(-1))
}

// between is where rounding to the grid turns from a to b, adjacent
// values of it, a < b: their midpoint, or for an infinity the point past
// the largest finite value that rounds to it.
func (g floatGrid) between(a, b float64) *big.Rat {
	switch {
	case math.IsInf(a, -1):
		rb := new(big.Rat).SetFloat64(b)
		step := new(big.Rat).Sub(new(big.Rat).SetFloat64(g.next(b)), rb)
		return rb.Sub(rb, step.Mul(step, big.NewRat(1, 2)))
	case math.IsInf(b, 1):
		ra := new(big.Rat).SetFloat64(a)
		step := new(big.Rat).Sub(ra, new(big.Rat).SetFloat64(g.prev(a)))
		return ra.Add(ra, step.Mul(step, big.NewRat(1, 2)))
	}
	sum := new(big.Rat).Add(new(big.Rat).SetFloat64(a), new(big.Rat).SetFloat64(b))
	return sum.Mul(sum, big.NewRat(1, 2))
}

func floatValue(v protoreflect.Value) float64 {
	switch x := v.Interface().(type) {
	case float32:
		return float64(x)
	case float64:
		return x
	}
	return math.NaN()
}

func (b *schemaBuilder) floatSchema(kind protoreflect.Kind, r numericRules) *Schema {
	g, max := floatGrid(64), math.MaxFloat64
	if kind == protoreflect.FloatKind {
		g, max = 32, math.MaxFloat32
	}
	num := &Schema{Type: "number"}
	if b.sound { // what rounds to the kind's largest value and no further
		num.Minimum, num.Maximum = formatFloat(-max, g), formatFloat(max, g)
	}
	var lower, upper *Schema
	if r.lower.IsValid() {
		c := floatValue(r.lower)
		if !r.lowerIncl && !math.IsInf(c, 1) {
			c = g.next(c)
		}
		if !math.IsInf(c, -1) {
			lower = b.floatAtLeast(g, c)
		}
	}
	if r.upper.IsValid() {
		c := floatValue(r.upper)
		if !r.upperIn && !math.IsInf(c, -1) {
			c = g.prev(c)
		}
		if !math.IsInf(c, 1) {
			upper = b.floatAtMost(g, c)
		}
	}
	exclusive := lower != nil && upper != nil && floatValue(r.upper) < floatValue(r.lower)
	num.AllOf = append(num.AllOf, rangeSchemas(lower, upper, exclusive)...)
	if r.constant.IsValid() {
		num.AllOf = append(num.AllOf, b.floatOneOf(g, []protoreflect.Value{r.constant}, false))
	}
	if len(r.in) > 0 {
		num.AllOf = append(num.AllOf, b.floatOneOf(g, r.in, false))
	}
	if len(r.notIn) > 0 {
		num.AllOf = append(num.AllOf, &Schema{Not: b.floatOneOf(g, r.notIn, true)})
	}
	var special []any
	for _, sp := range floatSpecials {
		if r.accepts(sp.value) {
			special = append(special, sp.text)
		}
	}
	out := &Schema{AnyOf: []*Schema{num}}
	if len(special) > 0 {
		out.AnyOf = append(out.AnyOf, &Schema{Enum: special})
	}
	if !b.sound {
		out.AnyOf = append(out.AnyOf, &Schema{Type: "string", Pattern: numberText,
			Description: "The number in a string, which protobuf's JSON mapping also reads; the rules above hold for its value."})
	}
	if len(out.AnyOf) == 1 {
		return num
	}
	return out
}

// floatAtLeast is the JSON numbers that round to c or above.
func (b *schemaBuilder) floatAtLeast(g floatGrid, c float64) *Schema {
	if math.IsInf(c, 1) || math.IsNaN(c) {
		return &Schema{Nothing: true}
	}
	edge := g.between(g.prev(c), c)
	if b.sound {
		return &Schema{ExclusiveMinimum: decimal(edge, true)}
	}
	return &Schema{Minimum: decimal(edge, false)}
}

// floatAtMost is the JSON numbers that round to c or below.
func (b *schemaBuilder) floatAtMost(g floatGrid, c float64) *Schema {
	if math.IsInf(c, -1) || math.IsNaN(c) {
		return &Schema{Nothing: true}
	}
	edge := g.between(c, g.next(c))
	if b.sound {
		return &Schema{ExclusiveMaximum: decimal(edge, false)}
	}
	return &Schema{Maximum: decimal(edge, true)}
}

// floatOneOf is the JSON numbers that round to one of vs: wide, every
// number that may (the intervals around them); narrow, only the values
// themselves. inverse asks for the opposite of the schema's mode, for use
// under not.
func (b *schemaBuilder) floatOneOf(g floatGrid, vs []protoreflect.Value, inverse bool) *Schema {
	narrow := b.sound != inverse
	out := &Schema{}
	for _, v := range vs {
		c := floatValue(v)
		if math.IsInf(c, 0) || math.IsNaN(c) {
			continue // no JSON number is one
		}
		if narrow {
			out.Enum = append(out.Enum, formatFloat(c, g))
			continue
		}
		out.AnyOf = append(out.AnyOf, &Schema{
			Minimum: decimal(g.between(g.prev(c), c), false),
			Maximum: decimal(g.between(c, g.next(c)), true),
		})
	}
	if out.Enum == nil && out.AnyOf == nil {
		return &Schema{Nothing: true}
	}
	return out
}

func formatFloat(x float64, g floatGrid) json.Number {
	return json.Number(strconv.FormatFloat(x, 'g', -1, int(g)))
}

// accepts reports whether a float value passes the rules, as protovalidate
// judges it: NaN fails every bound and equals nothing.
func (r numericRules) accepts(x float64) bool {
	if r.finite && (math.IsNaN(x) || math.IsInf(x, 0)) {
		return false
	}
	if r.constant.IsValid() && x != floatValue(r.constant) {
		return false
	}
	if len(r.in) > 0 {
		found := false
		for _, v := range r.in {
			found = found || x == floatValue(v)
		}
		if !found {
			return false
		}
	}
	for _, v := range r.notIn {
		if x == floatValue(v) {
			return false
		}
	}
	belowLo := r.lower.IsValid() && (math.IsNaN(x) || x < floatValue(r.lower) || !r.lowerIncl && x == floatValue(r.lower))
	aboveHi := r.upper.IsValid() && (math.IsNaN(x) || x > floatValue(r.upper) || !r.upperIn && x == floatValue(r.upper))
	if r.lower.IsValid() && r.upper.IsValid() && floatValue(r.upper) < floatValue(r.lower) {
		return !(belowLo && aboveHi) && !math.IsNaN(x)
	}
	return !belowLo && !aboveHi
}

// decimal is r as a JSON number of at most 21 significant digits, rounded
// toward +Inf when up, toward -Inf otherwise: a bound moved outward or
// inward by less than any float's rounding step.
func decimal(r *big.Rat, up bool) json.Number {
	if r.Sign() == 0 {
		return "0"
	}
	a := new(big.Rat).Abs(r)
	f, _ := new(big.Float).SetRat(a).Float64()
	e := 0
	if f != 0 && !math.IsInf(f, 0) {
		e = int(math.Floor(math.Log10(f)))
	} else if math.IsInf(f, 0) {
		e = 308
	} else {
		e = -324
	}
	shift := 20 - e
	scaled := new(big.Rat).Set(a)
	ten := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(shift))), nil))
	if shift >= 0 {
		scaled.Mul(scaled, ten)
	} else {
		scaled.Quo(scaled, ten)
	}
	q, m := new(big.Int).QuoRem(scaled.Num(), scaled.Denom(), new(big.Int))
	if m.Sign() != 0 && (r.Sign() > 0) == up {
		q.Add(q, big.NewInt(1))
	}
	digits := q.String()
	exp := -shift
	for len(digits) > 1 && strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		exp++
	}
	if r.Sign() < 0 {
		digits = "-" + digits
	}
	if exp != 0 {
		digits += "e" + strconv.Itoa(exp)
	}
	return json.Number(digits)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
