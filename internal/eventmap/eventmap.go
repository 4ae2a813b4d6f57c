package eventmap

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/textproto"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/jsonpointer"
)

// errMissing is a value the mapping reads that the document or the
// request does not have: a missing member, or a header that is absent or
// empty.
var errMissing = errors.New("eventmap: missing")

// FieldError is a document that does not map to an event. Field is the
// event field that could not be read: "id", "type", "occurred_at",
// "partition_key" or "payload". It is the document's fault: the same
// document always fails so.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return "eventmap: " + e.Field + ": " + e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

// UnknownTypeError is a provider type that Types does not map, in a
// mapping without a DefaultType. The gateway answers UNKNOWN_EVENT_TYPE.
// Map returns it inside a *FieldError for "type".
type UnknownTypeError struct {
	Type string // the provider's type, as read
}

func (e *UnknownTypeError) Error() string {
	return fmt.Sprintf("provider type %.200q maps to no contract type", e.Type)
}

// Input is one document to map and where it came from.
type Input struct {
	// Doc is the JSON document: a poller's item, a webhook's body.
	Doc []byte
	// Header is the request's header, for Sources that name a header; nil
	// for a document without one (a poller's item), where such a Source
	// finds nothing.
	Header http.Header
	// Time is the event time when the mapping has no OccurredAt Source.
	Time time.Time
}

// Mapping is a validated Config, ready to map documents. It is immutable
// and safe for concurrent use.
type Mapping struct {
	cfg Config
	// Header names, canonical, so a lookup does not canonicalize.
	idHeader, typeHeader, atHeader, keyHeader string
}

// New validates cfg and returns its Mapping.
func New(cfg Config) (*Mapping, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	canon := func(s Source) string {
		if s.Header == "" {
			return ""
		}
		return textproto.CanonicalMIMEHeaderKey(s.Header)
	}
	return &Mapping{cfg: cfg, idHeader: canon(cfg.ID), typeHeader: canon(cfg.Type.From),
		atHeader: canon(cfg.OccurredAt), keyHeader: canon(cfg.PartitionKey)}, nil
}

// Config is the Config the mapping was made of.
func (m *Mapping) Config() Config { return m.cfg }

// Map turns one document into an event, or returns a *FieldError.
func (m *Mapping) Map(in Input) (*ingestv1.Event, error) {
	fail := func(field string, err error) error { return &FieldError{Field: field, Err: err} }
	doc := jsonpointer.NewDoc(in.Doc)
	id, err := m.text(doc, in.Header, m.cfg.ID, m.idHeader)
	if err != nil {
		return nil, fail("id", err)
	}
	if id == "" {
		return nil, fail("id", errors.New("empty"))
	}
	ev := &ingestv1.Event{Id: id}
	if ev.Type, err = m.contractType(doc, in.Header); err != nil {
		return nil, fail("type", err)
	}
	at := in.Time
	switch src := m.cfg.OccurredAt; {
	case src.Pointer != "":
		raw, err := lookup(doc, src.Pointer)
		if err != nil {
			return nil, fail("occurred_at", err)
		}
		if at, err = parseEventTime(raw); err != nil {
			return nil, fail("occurred_at", err)
		}
	case src.Header != "":
		s, err := header(in.Header, m.atHeader)
		if err != nil {
			return nil, fail("occurred_at", err)
		}
		if at, err = parseTimeText(s); err != nil {
			return nil, fail("occurred_at", fmt.Errorf("header %s: %w", m.atHeader, err))
		}
	case at.IsZero():
		return nil, fail("occurred_at", errors.New("no source and no time given"))
	}
	ev.OccurredAt = timestamppb.New(at)
	if ev.PartitionKey, err = m.text(doc, in.Header, m.cfg.PartitionKey, m.keyHeader); err != nil {
		if !errors.Is(err, errMissing) {
			return nil, fail("partition_key", err)
		}
		ev.PartitionKey = ""
	}
	payload, err := doc.Lookup(m.cfg.Payload)
	if err != nil {
		return nil, fail("payload", err)
	}
	if len(payload) == 0 || payload[0] != '{' {
		return nil, fail("payload", fmt.Errorf("%s is not a JSON object", jsonpointer.KindOf(payload)))
	}
	ev.Payload = &ingestv1.Event_Json{Json: string(payload)}
	return ev, nil
}

// contractType is the event's contract type: the fixed one, or the
// provider's type through Types and DefaultType.
func (m *Mapping) contractType(doc *jsonpointer.Doc, h http.Header) (string, error) {
	if m.cfg.Type.Contract != "" {
		return m.cfg.Type.Contract, nil
	}
	provider, err := m.text(doc, h, m.cfg.Type.From, m.typeHeader)
	if err != nil {
		return "", err
	}
	if provider == "" {
		return "", fmt.Errorf("%w: the provider's type is empty", errMissing)
	}
	if typ, ok := m.cfg.Types[provider]; ok {
		return typ, nil
	}
	if m.cfg.DefaultType != "" {
		return m.cfg.DefaultType, nil
	}
	return "", &UnknownTypeError{Type: provider}
}

// text reads src as text: a JSON string or number at its pointer, or its
// header's value. errMissing when the member is missing or null, or the
// header absent or empty; nothing at all for the zero Source.
func (m *Mapping) text(doc *jsonpointer.Doc, h http.Header, src Source, canonHeader string) (string, error) {
	switch {
	case src.Pointer != "":
		raw, err := lookup(doc, src.Pointer)
		if err != nil {
			return "", err
		}
		if jsonpointer.IsNull(raw) {
			return "", fmt.Errorf("%w: null at %s", errMissing, src.Pointer)
		}
		return jsonpointer.ScalarString(raw)
	case src.Header != "":
		return header(h, canonHeader)
	}
	return "", errMissing
}

// lookup is doc.Lookup with a missing value wrapped as errMissing too.
func lookup(doc *jsonpointer.Doc, p string) (json.RawMessage, error) {
	raw, err := doc.Lookup(p)
	if errors.Is(err, jsonpointer.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", errMissing, err)
	}
	return raw, err
}

// header is the one value of header name (canonical) in h.
func header(h http.Header, name string) (string, error) {
	vs := h[name]
	switch {
	case len(vs) > 1:
		return "", fmt.Errorf("header %s appears %d times", name, len(vs))
	case len(vs) == 0 || vs[0] == "":
		return "", fmt.Errorf("%w: header %s", errMissing, name)
	}
	return vs[0], nil
}

// parseEventTime reads a JSON value as an event time: an RFC 3339 string,
// or Unix seconds as a number (fractions allowed).
func parseEventTime(v json.RawMessage) (time.Time, error) {
	s, err := jsonpointer.ScalarString(v)
	if err != nil {
		return time.Time{}, err
	}
	if v[0] == '"' {
		return parseRFC3339(s)
	}
	return parseUnixSeconds(s)
}

// parseTimeText reads a header's value as an event time: Unix seconds
// when it is a number (a digit or '-' first, and no 'T' or ':' as every
// RFC 3339 time has), else RFC 3339.
func parseTimeText(s string) (time.Time, error) {
	if looksNumeric(s) {
		return parseUnixSeconds(s)
	}
	return parseRFC3339(s)
}

func parseRFC3339(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%.64q is not an RFC 3339 time", s)
	}
	return t, nil
}

func parseUnixSeconds(s string) (time.Time, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 253402300799 { // up to 9999-12-31
		return time.Time{}, fmt.Errorf("%.64s is not Unix seconds", s)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}

func looksNumeric(s string) bool {
	if s == "" || !(s[0] == '-' || '0' <= s[0] && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 'T' || s[i] == 't' || s[i] == ':' {
			return false
		}
	}
	return true
}
