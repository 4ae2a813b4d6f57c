package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// celSchema is the JSON Schema that holds exactly where a message rule's
// CEL expression over this is true, for the subset of CEL that has one:
// &&, ||, !, has(this.f...), true, false, and a field path (this.a.b)
// compared with a literal by ==, !=, <, <=, > or >= (a bool path alone
// meaning path == true). A field left out of the JSON is its zero value,
// as proto3 reads it; a path through an absent message ends in the last
// field's zero value. Anything else is an error: the caller leaves the
// type undescribed rather than guess.
func celSchema(md protoreflect.MessageDescriptor, expr string) (*Schema, error) {
	env, err := cel.NewEnv()
	if err != nil {
		return nil, err
	}
	parsed, iss := env.Parse(expr)
	if iss != nil && iss.Err() != nil {
		return nil, iss.Err()
	}
	return celPredicate(md, parsed.NativeRep().Expr())
}

var errCELSubset = errors.New("outside the CEL subset that has a schema")

func celPredicate(md protoreflect.MessageDescriptor, e celast.Expr) (*Schema, error) {
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
			return comparison(md, path, operators.Equals, true)
		}
	case celast.CallKind:
		call := e.AsCall()
		args := call.Args()
		switch call.FunctionName() {
		case operators.LogicalAnd, operators.LogicalOr:
			var parts []*Schema
			for _, a := range args {
				s, err := celPredicate(md, a)
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
			s, err := celPredicate(md, args[0])
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
			return comparison(md, path, op, right.AsLiteral().Value())
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
// so is its last field, which must be one with presence.
func hasSchema(md protoreflect.MessageDescriptor, path []string) (*Schema, error) {
	fd := md.Fields().ByName(protoreflect.Name(path[0]))
	if fd == nil || fd.IsList() || fd.IsMap() || !fd.HasPresence() {
		return nil, errCELSubset
	}
	s := &Schema{Required: []string{path[0]}}
	if len(path) > 1 {
		if fd.Message() == nil || wellKnownSchema(fd.Message()) != nil {
			return nil, errCELSubset
		}
		inner, err := hasSchema(fd.Message(), path[1:])
		if err != nil {
			return nil, err
		}
		s.Properties = map[string]*Schema{path[0]: inner}
	}
	return s, nil
}

// comparison is this.path op lit, with absent fields their zero values.
func comparison(md protoreflect.MessageDescriptor, path []string, op string, lit any) (*Schema, error) {
	fd := md.Fields().ByName(protoreflect.Name(path[0]))
	if fd == nil || fd.IsList() || fd.IsMap() {
		return nil, errCELSubset
	}
	var present *Schema
	var zeroHolds bool
	if len(path) > 1 {
		if fd.Message() == nil || wellKnownSchema(fd.Message()) != nil {
			return nil, errCELSubset
		}
		inner, err := comparison(fd.Message(), path[1:], op, lit)
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
		present = inner
	} else {
		if fd.Message() != nil {
			return nil, errCELSubset
		}
		var err error
		if present, err = valueTest(fd, op, lit); err != nil {
			return nil, err
		}
		if zeroHolds, err = holds(fd, zeroValue(fd), op, lit); err != nil {
			return nil, err
		}
	}
	s := &Schema{Required: []string{path[0]}, Properties: map[string]*Schema{path[0]: present}}
	if zeroHolds {
		return &Schema{AnyOf: []*Schema{s, {Not: &Schema{Required: []string{path[0]}}}}}, nil
	}
	return s, nil
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
	switch op {
	case operators.Equals:
		return c == 0, nil
	case operators.NotEquals:
		return c != 0, nil
	case operators.Less:
		return c < 0, nil
	case operators.LessEquals:
		return c <= 0, nil
	case operators.Greater:
		return c > 0, nil
	case operators.GreaterEquals:
		return c >= 0, nil
	}
	return false, errCELSubset
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

// valueTest is the schema of a present value of fd for which value op
// lit holds.
func valueTest(fd protoreflect.FieldDescriptor, op string, lit any) (*Schema, error) {
	if fd.Kind() == protoreflect.EnumKind {
		n, ok := lit.(int64)
		if !ok {
			return nil, errCELSubset
		}
		s := &Schema{}
		values := fd.Enum().Values()
		for i := 0; i < values.Len(); i++ {
			v := values.Get(i)
			if ok, _ := holds(fd, int64(v.Number()), op, n); ok {
				s.Enum = append(s.Enum, string(v.Name()))
			}
		}
		if len(s.Enum) == 0 {
			return &Schema{Nothing: true}, nil
		}
		return s, nil
	}
	if _, err := compare(zeroValue(fd), lit); err != nil {
		return nil, fmt.Errorf("%w: %s compared with %T", errCELSubset, fd.Name(), lit)
	}
	var value any
	switch l := lit.(type) {
	case string, bool:
		value = l
	case int64:
		value = json.Number(strconv.FormatInt(l, 10))
	case uint64:
		value = json.Number(strconv.FormatUint(l, 10))
	case float64:
		value = json.Number(strconv.FormatFloat(l, 'g', -1, 64))
	}
	switch op {
	case operators.Equals:
		return &Schema{Const: value}, nil
	case operators.NotEquals:
		return &Schema{Not: &Schema{Const: value}}, nil
	}
	n, ok := value.(json.Number)
	if !ok {
		return nil, errCELSubset
	}
	switch op {
	case operators.Less:
		return &Schema{ExclusiveMaximum: n}, nil
	case operators.LessEquals:
		return &Schema{Maximum: n}, nil
	case operators.Greater:
		return &Schema{ExclusiveMinimum: n}, nil
	}
	return &Schema{Minimum: n}, nil
}
