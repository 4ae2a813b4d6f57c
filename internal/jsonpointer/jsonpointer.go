package jsonpointer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrNotFound is a pointer that names no value of the document.
var ErrNotFound = errors.New("jsonpointer: no value at the pointer")

// errNotJSON is a document, or a part of one, that is not JSON.
var errNotJSON = errors.New("jsonpointer: not valid JSON")

// Check checks the syntax of an RFC 6901 JSON pointer.
func Check(p string) error {
	if p == "" {
		return nil
	}
	if p[0] != '/' {
		return fmt.Errorf("JSON pointer %q must be empty or start with /", p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return fmt.Errorf("JSON pointer %q: ~ must be followed by 0 or 1", p)
		}
	}
	return nil
}

// Lookup returns the raw JSON value that pointer p names in doc. Only the
// containers on the path are decoded.
func Lookup(doc []byte, p string) (json.RawMessage, error) {
	return lookup(nil, doc, p)
}

// Doc is one document that several pointers are looked up in: the
// containers decoded for one lookup are kept, by the pointer that names
// them, so the others do not decode them again. A Doc is not safe for
// concurrent use.
type Doc struct {
	text       []byte
	containers map[string]any
}

// NewDoc returns text as a Doc. text must not change while the Doc is in
// use.
func NewDoc(text []byte) *Doc {
	return &Doc{text: text, containers: make(map[string]any)}
}

// Lookup is Lookup in the Doc's text.
func (d *Doc) Lookup(p string) (json.RawMessage, error) {
	return lookup(d.containers, d.text, p)
}

// lookup is Lookup with the containers of doc memoized in c (nil: none).
func lookup(c map[string]any, doc []byte, p string) (json.RawMessage, error) {
	if err := Check(p); err != nil {
		return nil, err
	}
	cur := bytes.TrimSpace(doc)
	if p == "" {
		if !json.Valid(cur) {
			return nil, errNotJSON
		}
		return cur, nil
	}
	at := 0 // p[:at] names cur
	for at < len(p) {
		end := strings.IndexByte(p[at+1:], '/')
		if end < 0 {
			end = len(p)
		} else {
			end += at + 1
		}
		tok := strings.ReplaceAll(strings.ReplaceAll(p[at+1:end], "~1", "/"), "~0", "~")
		container, err := decodeContainer(c, p[:at], cur)
		if err != nil {
			return nil, err
		}
		switch v := container.(type) {
		case map[string]json.RawMessage:
			raw, ok := v[tok]
			if !ok {
				return nil, fmt.Errorf("%w: no member %q", ErrNotFound, tok)
			}
			cur = bytes.TrimSpace(raw)
		case []json.RawMessage:
			i, err := arrayIndex(tok, len(v))
			if err != nil {
				return nil, err
			}
			cur = bytes.TrimSpace(v[i])
		default:
			return nil, fmt.Errorf("%w: %q is below a scalar", ErrNotFound, tok)
		}
		at = end
	}
	// Members of a decoded container are valid JSON: decoding checked them.
	return cur, nil
}

// decodeContainer decodes the object or array v named by pointer at, or
// returns nil for a scalar.
func decodeContainer(c map[string]any, at string, v json.RawMessage) (any, error) {
	if got, ok := c[at]; ok {
		return got, nil
	}
	var out any
	switch {
	case len(v) > 0 && v[0] == '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(v, &obj); err != nil {
			return nil, fmt.Errorf("jsonpointer: decode object: %w", err)
		}
		out = obj
	case len(v) > 0 && v[0] == '[':
		var arr []json.RawMessage
		if err := json.Unmarshal(v, &arr); err != nil {
			return nil, fmt.Errorf("jsonpointer: decode array: %w", err)
		}
		out = arr
	default:
		if !json.Valid(v) {
			return nil, errNotJSON
		}
		return nil, nil
	}
	if c != nil {
		c[at] = out
	}
	return out, nil
}

// arrayIndex parses an array reference token: digits without a leading zero.
func arrayIndex(tok string, n int) (int, error) {
	if tok == "" || (len(tok) > 1 && tok[0] == '0') {
		return 0, fmt.Errorf("%w: %q is not an array index", ErrNotFound, tok)
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 {
		return 0, fmt.Errorf("%w: %q is not an array index", ErrNotFound, tok)
	}
	if i >= n {
		return 0, fmt.Errorf("%w: index %d of an array of %d", ErrNotFound, i, n)
	}
	return i, nil
}

// IsNull reports a missing-or-null value.
func IsNull(v json.RawMessage) bool { return len(v) == 0 || string(v) == "null" }

// ScalarString renders a JSON string or number as text. Numbers keep their
// literal form (no float rounding of large ids).
func ScalarString(v json.RawMessage) (string, error) {
	if len(v) == 0 {
		return "", ErrNotFound
	}
	switch c := v[0]; {
	case c == '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", err
		}
		return s, nil
	case c == '-' || (c >= '0' && c <= '9'):
		var n json.Number
		if err := json.Unmarshal(v, &n); err != nil {
			return "", err
		}
		return n.String(), nil
	}
	return "", fmt.Errorf("%s is not a string or a number", KindOf(v))
}

// KindOf names the kind of JSON value v is, for messages: "an object",
// "an array", "a boolean", "null", or "a value".
func KindOf(v json.RawMessage) string {
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a value"
}
