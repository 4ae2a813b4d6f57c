package pull

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// errNotFound is a pointer that names no value of the document.
var errNotFound = errors.New("pull: no value at the pointer")

// checkPointer checks the syntax of an RFC 6901 JSON pointer.
func checkPointer(p string) error {
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

// lookup returns the raw JSON value that pointer p names in doc. Only the
// containers on the path are decoded.
func lookup(doc json.RawMessage, p string) (json.RawMessage, error) {
	return lookupIn(nil, doc, p)
}

// containers memoizes the containers decoded for one document, by the
// pointer that names them, so several pointers into one item decode its
// shared containers once.
type containers map[string]any

// lookupIn is lookup with the containers of doc memoized in c (nil: none).
func lookupIn(c containers, doc json.RawMessage, p string) (json.RawMessage, error) {
	if err := checkPointer(p); err != nil {
		return nil, err
	}
	cur := bytes.TrimSpace(doc)
	if p == "" {
		if !json.Valid(cur) {
			return nil, errors.New("pull: not valid JSON")
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
				return nil, fmt.Errorf("%w: no member %q", errNotFound, tok)
			}
			cur = bytes.TrimSpace(raw)
		case []json.RawMessage:
			i, err := arrayIndex(tok, len(v))
			if err != nil {
				return nil, err
			}
			cur = bytes.TrimSpace(v[i])
		default:
			return nil, fmt.Errorf("%w: %q is below a scalar", errNotFound, tok)
		}
		at = end
	}
	// Members of a decoded container are valid JSON: decoding checked them.
	return cur, nil
}

// decodeContainer decodes the object or array v named by pointer at, or
// returns nil for a scalar.
func decodeContainer(c containers, at string, v json.RawMessage) (any, error) {
	if got, ok := c[at]; ok {
		return got, nil
	}
	var out any
	switch {
	case len(v) > 0 && v[0] == '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(v, &obj); err != nil {
			return nil, fmt.Errorf("pull: decode object: %w", err)
		}
		out = obj
	case len(v) > 0 && v[0] == '[':
		var arr []json.RawMessage
		if err := json.Unmarshal(v, &arr); err != nil {
			return nil, fmt.Errorf("pull: decode array: %w", err)
		}
		out = arr
	default:
		if !json.Valid(v) {
			return nil, errors.New("pull: not valid JSON")
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
		return 0, fmt.Errorf("%w: %q is not an array index", errNotFound, tok)
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 {
		return 0, fmt.Errorf("%w: %q is not an array index", errNotFound, tok)
	}
	if i >= n {
		return 0, fmt.Errorf("%w: index %d of an array of %d", errNotFound, i, n)
	}
	return i, nil
}

// isNull reports a missing-or-null value.
func isNull(v json.RawMessage) bool { return len(v) == 0 || string(v) == "null" }

// scalarString renders a JSON string or number as text. Numbers keep their
// literal form (no float rounding of large ids).
func scalarString(v json.RawMessage) (string, error) {
	if len(v) == 0 {
		return "", errNotFound
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
	return "", fmt.Errorf("%s is not a string or a number", kindOf(v))
}

func kindOf(v json.RawMessage) string {
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

// MappingError is an item that does not map to an event. It is the item's
// fault: the item is counted as rejected and the page goes on.
type MappingError struct {
	Index int    // the item's index in its page
	Field string // mapping field: id, occurred_at, partition_key, payload
	Err   error
}

func (e *MappingError) Error() string {
	return fmt.Sprintf("pull: item %d: %s: %v", e.Index, e.Field, e.Err)
}

func (e *MappingError) Unwrap() error { return e.Err }

// mapItem turns one item into an event; fetched is the page's fetch time,
// the event time when no occurred_at pointer is configured.
func mapItem(m MappingConfig, index int, item json.RawMessage, fetched time.Time) (*ingestv1.Event, error) {
	fail := func(field string, err error) error { return &MappingError{Index: index, Field: field, Err: err} }
	c := containers{}
	lookup := func(doc json.RawMessage, p string) (json.RawMessage, error) { return lookupIn(c, doc, p) }
	idRaw, err := lookup(item, m.ID)
	if err != nil {
		return nil, fail("id", err)
	}
	id, err := scalarString(idRaw)
	if err != nil {
		return nil, fail("id", err)
	}
	if id == "" {
		return nil, fail("id", errors.New("empty"))
	}
	ev := &ingestv1.Event{Id: id, Type: m.Type}
	at := fetched
	if m.OccurredAt != "" {
		raw, err := lookup(item, m.OccurredAt)
		if err != nil {
			return nil, fail("occurred_at", err)
		}
		if at, err = parseEventTime(raw); err != nil {
			return nil, fail("occurred_at", err)
		}
	}
	ev.OccurredAt = timestamppb.New(at)
	if m.PartitionKey != "" {
		raw, err := lookup(item, m.PartitionKey)
		switch {
		case errors.Is(err, errNotFound) || (err == nil && isNull(raw)):
		case err != nil:
			return nil, fail("partition_key", err)
		default:
			if ev.PartitionKey, err = scalarString(raw); err != nil {
				return nil, fail("partition_key", err)
			}
		}
	}
	payload, err := lookup(item, m.Payload)
	if err != nil {
		return nil, fail("payload", err)
	}
	if len(payload) == 0 || payload[0] != '{' {
		return nil, fail("payload", fmt.Errorf("%s is not a JSON object", kindOf(payload)))
	}
	ev.Payload = &ingestv1.Event_Json{Json: string(payload)}
	return ev, nil
}

// parseEventTime reads an RFC 3339 string or Unix seconds (fractions
// allowed).
func parseEventTime(v json.RawMessage) (time.Time, error) {
	s, err := scalarString(v)
	if err != nil {
		return time.Time{}, err
	}
	if v[0] == '"' {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time", s)
		}
		return t, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 253402300799 { // up to 9999-12-31
		return time.Time{}, fmt.Errorf("%s is not Unix seconds", s)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}

// pageItems returns the items of a page body; c memoizes the body's
// containers for the cursor's lookup.
func pageItems(c containers, body []byte, items string) ([]json.RawMessage, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	raw, err := lookupIn(c, body, items)
	if err != nil {
		return nil, fmt.Errorf("items: %w", err)
	}
	if isNull(raw) {
		return nil, nil
	}
	if raw[0] != '[' {
		return nil, fmt.Errorf("items: %s is not an array", kindOf(raw))
	}
	var out []json.RawMessage
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("items: %w", err)
	}
	return out, nil
}
