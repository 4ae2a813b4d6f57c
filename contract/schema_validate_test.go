package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// SchemaDocument is root with defs as "$defs", the refs' target, for
// jsonschematest.Compile.
func SchemaDocument(tb testing.TB, root *Schema, defs map[string]*Schema) []byte {
	tb.Helper()
	b, err := json.Marshal(map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"$defs":   defs,
		"allOf":   []*Schema{root},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// SoundJSONSchema is c's schema's sound twin (jsonSchema with sound), for
// the tests that hold it to soundness.
func SoundJSONSchema(c *Contract, defs map[string]*Schema, refPrefix string) (*Schema, error) {
	return c.jsonSchema(defs, refPrefix, true)
}

// JSONSchemaOf is c.JSONSchema as a function of c.
func JSONSchemaOf(c *Contract, defs map[string]*Schema, refPrefix string) (*Schema, error) {
	return c.JSONSchema(defs, refPrefix)
}

// IJSON reports whether b is one I-JSON text (decodeJSON).
func IJSON(b []byte) bool {
	_, ok := decodeJSON(b)
	return ok
}

// decodeJSON decodes b as one JSON text in the domain a schema speaks
// of, or reports that it is not one. A JSON text is UTF-8 (RFC 8259
// section 8.1), and encoding/json would hand on invalid bytes as U+FFFD, a
// document other than the one the contract reads. An object's names are
// unique: encoding/json keeps the last of a repeated name, the contract
// refuses the repetition, and a schema judges objects, not texts. And a
// string escapes no lone surrogate: encoding/json decodes "\ud800" as
// U+FFFD, the contract refuses it. These are I-JSON's rules (RFC 7493).
func decodeJSON(b []byte) (any, bool) {
	if !utf8.Valid(b) || hasLoneSurrogate(b) {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	v, err := decodeValue(d)
	if err != nil {
		return nil, false
	}
	if _, err := d.Token(); err != io.EOF { // one value, and nothing after it
		return nil, false
	}
	return v, true
}

// hasLoneSurrogate reports whether a \u escape in b names a UTF-16
// surrogate that is not half of a high-low pair. Outside strings a JSON
// text has no backslash, so b is read escape by escape.
func hasLoneSurrogate(b []byte) bool {
	surrogate := func(i int) (rune, bool) { // the \uXXXX at b[i:], if any
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		return rune(n), err == nil && utf16.IsSurrogate(rune(n))
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		r, ok := surrogate(i)
		if !ok {
			i++ // the escaped character, a backslash included
			continue
		}
		if r >= 0xdc00 { // a low half with no high half before it
			return true
		}
		low, ok := surrogate(i + 6)
		if !ok || low < 0xdc00 {
			return true
		}
		i += 11
	}
	return false
}

var errRepeatedName = errors.New("an object repeats a name")

// decodeValue reads one value from d token by token, as Decode would
// into an any, refusing an object that repeats a name.
func decodeValue(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch delim {
	case '{':
		obj := map[string]any{}
		for d.More() {
			name, err := d.Token()
			if err != nil {
				return nil, err
			}
			key := name.(string)
			if _, seen := obj[key]; seen {
				return nil, errRepeatedName
			}
			if obj[key], err = decodeValue(d); err != nil {
				return nil, err
			}
		}
		_, err = d.Token()
		return obj, err
	case '[':
		arr := []any{}
		for d.More() {
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err = d.Token()
		return arr, err
	}
	return nil, errors.New("unexpected " + delim.String())
}
