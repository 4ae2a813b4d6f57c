// Package jsonschematest validates JSON against a JSON Schema with a
// validator that is not sluice's own, for the tests that hold the served
// OpenAPI description to what the gateway accepts.
//
// The validator is santhosh-tekuri/jsonschema (draft 2020-12, the dialect
// of OpenAPI 3.1). Compile reads a schema three ways, as the clients a
// description is written for read it: its patterns by Go's RE2, its
// patterns by ECMA-262 with the u flag (the dialect JSON Schema names,
// through dlclark/regexp2), and with "format" asserted as well, as a
// validator that checks formats does. A schema that promises to admit a
// value must admit it all three ways.
package jsonschematest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dlclark/regexp2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Validator is a schema compiled one way; Name says which.
type Validator struct {
	Name   string
	schema *jsonschema.Schema
}

// Compile compiles the schema at the JSON pointer ptr ("" for the root)
// of the JSON document doc, the three ways the package doc names.
func Compile(tb testing.TB, doc []byte, ptr string) []Validator {
	tb.Helper()
	var out []Validator
	for _, mode := range []string{"re2", "ecma", "re2+formats"} {
		parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
		if err != nil {
			tb.Fatalf("jsonschematest: the schema is not JSON: %v", err)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		switch mode {
		case "ecma":
			c.UseRegexpEngine(ecmaCompile)
		case "re2+formats":
			c.AssertFormat()
		}
		const url = "mem:///schema.json"
		if err := c.AddResource(url, parsed); err != nil {
			tb.Fatalf("jsonschematest: %v", err)
		}
		s, err := c.Compile(url + "#" + ptr)
		if err != nil {
			tb.Fatalf("jsonschematest: %s: the schema does not compile: %v", mode, err)
		}
		out = append(out, Validator{Name: mode, schema: s})
	}
	return out
}

// Validate returns nil when the JSON text b is valid under the schema,
// and otherwise an error naming the innermost reasons, a few of them,
// each with where in b it arose.
func (v Validator) Validate(b []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s: the instance is not JSON: %w", v.Name, err)
	}
	err = v.schema.Validate(inst)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return fmt.Errorf("%s: %w", v.Name, err)
	}
	var leaves []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, fmt.Sprintf("at /%s: %s", strings.Join(e.InstanceLocation, "/"),
				e.ErrorKind.LocalizedString(message.NewPrinter(language.English))))
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(verr)
	if len(leaves) > 8 {
		leaves = append(leaves[:8], fmt.Sprintf("and %d more", len(leaves)-8))
	}
	return fmt.Errorf("%s: %s", v.Name, strings.Join(leaves, "; "))
}

// ValidateAll is Validate by each validator; the errors joined.
func ValidateAll(vs []Validator, b []byte) error {
	var errs []error
	for _, v := range vs {
		errs = append(errs, v.Validate(b))
	}
	return errors.Join(errs...)
}

type ecmaRegexp regexp2.Regexp

func (re *ecmaRegexp) MatchString(s string) bool {
	ok, err := (*regexp2.Regexp)(re).MatchString(s)
	return err == nil && ok
}

func (re *ecmaRegexp) String() string { return (*regexp2.Regexp)(re).String() }

func ecmaCompile(s string) (jsonschema.Regexp, error) {
	re, err := regexp2.Compile(s, regexp2.ECMAScript|regexp2.Unicode)
	if err != nil {
		return nil, err
	}
	return (*ecmaRegexp)(re), nil
}
