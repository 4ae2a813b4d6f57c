package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// celSchema is the JSON Schema of where a message rule's CEL expression
// over this is true, for the subset of CEL that has one: &&, ||, !,
// has(this.f...), true, false, and a field path (this.a.b) compared with a
// literal by ==, !=, <, <=, > or >= (a bool path alone meaning path ==
// true). A field left out of the JSON, or sent as null, is its zero value,
// as proto3 reads it; a path through an absent message ends in the last
// field's zero value. Each field is read under each of its names.
//
// Where a comparison's JSON Schema is inexact (an integer sent as a
// string, whose value a pattern cannot compare) the schema is wide: it
// admits every payload the expression holds for; with narrow it admits
// only such payloads instead. A negation takes its operand in the other
// mode, so that the whole keeps the mode asked for. Anything else is an
// error: the caller says nothing of the rule rather than guess.
func celSchema(md protoreflect.MessageDescriptor, expr string, narrow bool) (*Schema, error) {
	env, err := cel.NewEnv()
	if err != nil {
		return nil, err
	}
	parsed, iss := env.Parse(expr)
	if iss != nil && iss.Err() != nil {
		return nil, iss.Err()
	}
	return celPredicate(md, parsed.NativeRep().Expr(), narrow)
}

var errCELSubset = errors.New("outside the CEL subset that has a schema")

func celPredicate(md protoreflect.MessageDescriptor, e celast.Expr, narrow bool) (*Schema, error) {
	switch e.Kind() {
	case celast.LiteralKind:
		if b, ok := e.AsLiteral().Value().(bool); ok {
			if b {
				return &Schema{}, nil
			}
			return &Schema{Nothing: true}, nil
		}
	case celast.SelectKind:
		sel := e.AsSelect()
		path, ok := thisPath(e)
		if sel.IsTestOnly() {
			path, ok = thisPath(sel.Operand())
			if !ok {
				return nil, errCELSubset
			}
			return hasSchema(md, append(path, sel.FieldName()))
		}
		if ok {
			return comparison(md, path, operators.Equals, true, narrow)
		}
	case celast.CallKind:
		call := e.AsCall()
		args := call.Args()
		switch call.FunctionName() {
		case operators.LogicalAnd, operators.LogicalOr:
			var parts []*Schema
			for _, a := range args {
				s, err := celPredicate(md, a, narrow)
				if err != nil {
					return nil, err
				}
				parts = append(parts, s)
			}
			if call.FunctionName() == operators.LogicalAnd {
				return &Schema{AllOf: parts}, nil
			}
			return &Schema{AnyOf: parts}, nil
		case operators.LogicalNot:
			s, err := celPredicate(md, args[0], !narrow)
			if err != nil {
				return nil, err
			}
			return &Schema{Not: s}, nil
		case operators.Equals, operators.NotEquals, operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
			op := call.FunctionName()
			left, right := args[0], args[1]
			if left.Kind() == celast.LiteralKind {
				left, right, op = right, left, mirrored[op]
			}
			path, ok := thisPath(left)
			if !ok || right.Kind() != celast.LiteralKind {
				return nil, errCELSubset
			}
			return comparison(md, path, op, right.AsLiteral().Value(), narrow)
		}
	}
	return nil, errCELSubset
}

var mirrored = map[string]string{
	operators.Equals: operators.Equals, operators.NotEquals: operators.NotEquals,
	operators.Less: operators.Greater, operators.LessEquals: operators.GreaterEquals,
	operators.Greater: operators.Less, operators.GreaterEquals: operators.LessEquals,
}

// thisPath is the field names of this.a.b..., or false.
func thisPath(e celast.Expr) ([]string, bool) {
	switch e.Kind() {
	case celast.IdentKind:
		return nil, e.AsIdent() == "this"
	case celast.SelectKind:
		sel := e.AsSelect()
		if sel.IsTestOnly() {
			return nil, false
		}
		path, ok := thisPath(sel.Operand())
		return append(path, sel.FieldName()), ok
	}
	return nil, false
}

// hasSchema is has(this.path): each message on the path is present and
// so is its last field, which must be one with presence; under any of
// their names, and not as null.
func hasSchema(md protoreflect.MessageDescriptor, path []string) (*Schema, error) {
	fd := md.Fields().ByName(protoreflect.Name(path[0]))
	if fd == nil || fd.IsList() || fd.IsMap() || !fd.HasPresence() {
		return nil, errCELSubset
	}
	names := fieldNames(md)[fd.Number()]
	if len(path) == 1 {
		return present(fd, names, nil), nil
	}
	if fd.Message() == nil || isWellKnownName(fd.Message().FullName()) {
		return nil, errCELSubset
	}
	inner, err := hasSchema(fd.Message(), path[1:])
	if err != nil {
		return nil, err
	}
	return present(fd, names, &Schema{Type: "object", AllOf: []*Schema{inner}}), nil
}

// comparison is this.path op lit, with absent and null fields their zero
// values.
func comparison(md protoreflect.MessageDescriptor, path []string, op string, lit any, narrow bool) (*Schema, error) {
	fd := md.Fields().ByName(protoreflect.Name(path[0]))
	if fd == nil || fd.IsList() || fd.IsMap() {
		return nil, errCELSubset
	}
	names := fieldNames(md)[fd.Number()]
	var test *Schema // of a value sent, not null
	var zeroHolds bool
	if len(path) > 1 {
		if fd.Message() == nil || isWellKnownName(fd.Message().FullName()) {
			return nil, errCELSubset
		}
		inner, err := comparison(fd.Message(), path[1:], op, lit, narrow)
		if err != nil {
			return nil, err
		}
		last, err := lastField(fd.Message(), path[1:])
		if err != nil {
			return nil, err
		}
		if zeroHolds, err = holds(last, zeroValue(last), op, lit); err != nil {
			return nil, err
		}
		test = &Schema{Type: "object", AllOf: []*Schema{inner}}
	} else {
		if fd.Message() != nil {
			return nil, errCELSubset
		}
		var err error
		if test, err = valueTest(fd, op, lit, narrow); err != nil {
			return nil, err
		}
		if zeroHolds, err = holds(fd, zeroValue(fd), op, lit); err != nil {
			return nil, err
		}
	}
	if !zeroHolds {
		return present(fd, names, test), nil
	}
	// Absent, null or holding, under each name.
	props := map[string]*Schema{}
	for _, n := range names {
		props[n] = &Schema{AnyOf: []*Schema{{Type: "null"}, test}}
	}
	return &Schema{Properties: props}, nil
}

func lastField(md protoreflect.MessageDescriptor, path []string) (protoreflect.FieldDescriptor, error) {
	fd := md.Fields().ByName(protoreflect.Name(path[0]))
	if fd == nil {
		return nil, errCELSubset
	}
	if len(path) == 1 {
		return fd, nil
	}
	if fd.Message() == nil {
		return nil, errCELSubset
	}
	return lastField(fd.Message(), path[1:])
}

// zeroValue is a field's proto3 default, in the types CEL compares.
func zeroValue(fd protoreflect.FieldDescriptor) any {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return ""
	case protoreflect.BoolKind:
		return false
	case protoreflect.DoubleKind, protoreflect.FloatKind:
		return float64(0)
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		return uint64(0)
	}
	return int64(0)
}

// holds evaluates v op lit for a zero value v.
func holds(fd protoreflect.FieldDescriptor, v any, op string, lit any) (bool, error) {
	c, err := compare(v, lit)
	if err != nil {
		return false, err
	}
	if _, ok := lit.(bool); ok && op != operators.Equals && op != operators.NotEquals {
		return false, errCELSubset
	}
	return cmpHolds(c, op), nil
}

func compare(v, lit any) (int, error) {
	switch l := lit.(type) {
	case string:
		s, ok := v.(string)
		if !ok {
			return 0, errCELSubset
		}
		return cmpOrdered(s, l), nil
	case bool:
		b, ok := v.(bool)
		if !ok {
			return 0, errCELSubset
		}
		if b == l {
			return 0, nil
		}
		return 1, nil // only == and != are read for bools
	case int64:
		if n, ok := v.(int64); ok {
			return cmpOrdered(n, l), nil
		}
	case uint64:
		if n, ok := v.(uint64); ok {
			return cmpOrdered(n, l), nil
		}
	case float64:
		if n, ok := v.(float64); ok {
			return cmpOrdered(n, l), nil
		}
	}
	return 0, errCELSubset
}

func cmpOrdered[T int64 | uint64 | float64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// valueTest is the schema of a value of fd sent (not null) for which
// value op lit holds: exact for enums, bools and strings; for integers,
// which may be sent as strings, wide or narrow as asked.
func valueTest(fd protoreflect.FieldDescriptor, op string, lit any, narrow bool) (*Schema, error) {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		n, ok := lit.(int64)
		if !ok {
			return nil, errCELSubset
		}
		return enumTest(fd, op, n), nil
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return nil, fmt.Errorf("%w: %s is a float, which JSON rounds", errCELSubset, fd.Name())
	}
	if _, err := compare(zeroValue(fd), lit); err != nil {
		return nil, fmt.Errorf("%w: %s compared with %T", errCELSubset, fd.Name(), lit)
	}
	switch l := lit.(type) {
	case bool:
		switch op {
		case operators.Equals:
			return &Schema{Const: l}, nil
		case operators.NotEquals:
			return &Schema{Const: !l}, nil
		}
		return nil, errCELSubset
	case string:
		switch op {
		case operators.Equals:
			return &Schema{Const: l}, nil
		case operators.NotEquals:
			return &Schema{Type: "string", Not: &Schema{Const: l}}, nil
		}
		return nil, errCELSubset
	}
	var n json.Number
	switch l := lit.(type) {
	case int64:
		n = json.Number(strconv.FormatInt(l, 10))
	case uint64:
		n = json.Number(strconv.FormatUint(l, 10))
	default:
		return nil, errCELSubset
	}
	test := &Schema{Type: "number"}
	switch op {
	case operators.Equals:
		test.Const = n
	case operators.NotEquals:
		test.Not = &Schema{Const: n}
	case operators.Less:
		test.ExclusiveMaximum = n
	case operators.LessEquals:
		test.Maximum = n
	case operators.Greater:
		test.ExclusiveMinimum = n
	default:
		test.Minimum = n
	}
	if narrow {
		return test, nil
	}
	// A string's value is not compared: every string may hold.
	return &Schema{AnyOf: []*Schema{test, {Type: "string"}}}, nil
}

// enumTest is the values of fd's enum, by name and by number, for which
// value op n holds.
func enumTest(fd protoreflect.FieldDescriptor, op string, n int64) *Schema {
	var names []any
	values := fd.Enum().Values()
	for i := 0; i < values.Len(); i++ {
		if v := values.Get(i); cmpHolds(cmpOrdered(int64(v.Number()), n), op) {
			names = append(names, string(v.Name()))
		}
	}
	if nullIsValue(fd) && cmpHolds(cmpOrdered(0, n), op) {
		names = append(names, nil)
	}
	num := &Schema{Type: "integer", Minimum: json.Number(strconv.Itoa(math.MinInt32)), Maximum: json.Number(strconv.Itoa(math.MaxInt32))}
	lit := json.Number(strconv.FormatInt(n, 10))
	switch op {
	case operators.Equals:
		num = &Schema{Const: lit}
		if n < math.MinInt32 || n > math.MaxInt32 {
			num = &Schema{Nothing: true}
		}
	case operators.NotEquals:
		num.Not = &Schema{Const: lit}
	case operators.Less:
		num.ExclusiveMaximum = lit
	case operators.LessEquals:
		num.Maximum = minNumber(num.Maximum, lit)
	case operators.Greater:
		num.ExclusiveMinimum = lit
	default:
		num.Minimum = maxNumber(num.Minimum, lit)
	}
	s := &Schema{AnyOf: []*Schema{num}}
	if len(names) > 0 {
		s.AnyOf = append([]*Schema{{Enum: names}}, s.AnyOf...)
	}
	return s
}

func minNumber(a, b json.Number) json.Number {
	x, _ := strconv.ParseInt(string(a), 10, 64)
	y, _ := strconv.ParseInt(string(b), 10, 64)
	if x < y {
		return a
	}
	return b
}

func maxNumber(a, b json.Number) json.Number {
	x, _ := strconv.ParseInt(string(a), 10, 64)
	y, _ := strconv.ParseInt(string(b), 10, 64)
	if x > y {
		return a
	}
	return b
}

func cmpHolds(c int, op string) bool {
	switch op {
	case operators.Equals:
		return c == 0
	case operators.NotEquals:
		return c != 0
	case operators.Less:
		return c < 0
	case operators.LessEquals:
		return c <= 0
	case operators.Greater:
		return c > 0
	}
	return c >= 0
}
