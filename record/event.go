package record

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/utctime"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Header names of a sluice record. Times are RFC 3339 in UTC with nine
// fractional digits (utctime.Layout), so that they sort as strings.
const (
	HeaderEventID         = "sluice-event-id"
	HeaderEventType       = "sluice-event-type"
	HeaderSource          = "sluice-source"
	HeaderOccurredAt      = "sluice-occurred-at"
	HeaderIngestedAt      = "sluice-ingested-at"
	HeaderFingerprint     = "sluice-schema-fingerprint"
	HeaderTraceparent     = "traceparent"
	HeaderTracestate      = "tracestate"
	AttributeHeaderPrefix = "sluice-attr-"
	// HeaderReplayID and HeaderReplayActor are on a record an operator's
	// replay produced (WithReplay): the replay's id and who asked for it.
	// The gateway never writes them.
	HeaderReplayID    = "sluice-replay-id"
	HeaderReplayActor = "sluice-replay-actor"
	// HeaderWebhookScheme and HeaderWebhookBody are on an event a signed
	// webhook delivered: the scheme that verified it (standard, stripe,
	// github, shopify, hmac) and the body as received, byte for byte; each
	// header the scheme signs with follows as WebhookHeaderPrefix and its
	// name in lower case, so that a consumer can verify the signature
	// again.
	HeaderWebhookScheme = "sluice-webhook-scheme"
	// HeaderCloudEventsSource is on an event that came as a CloudEvent:
	// its CloudEvents source attribute, recorded beside sluice-source (the
	// authenticated source), never in its place.
	HeaderCloudEventsSource = "sluice-ce-source"
	HeaderWebhookBody       = "sluice-webhook-body"
	WebhookHeaderPrefix     = "sluice-webhook-header-"
)

// Bounds of the replay headers: a replay id is 1 to 64 letters, digits,
// '-' or '_'; an actor 1 to MaxReplayActorBytes of UTF-8 without control
// characters.
const (
	MaxReplayIDBytes    = 64
	MaxReplayActorBytes = 256
)

// Event is what the gateway knows about an accepted event; NewEvent turns
// it into a Kafka record.
type Event struct {
	Topic string
	// Key is the partition key; when empty, the record is keyed by ID.
	Key []byte
	// Value is the contract message in protobuf binary.
	Value []byte

	// ID is the event's idempotency key, Type its contract's event type,
	// Source the authenticated source or poller that sent it.
	ID, Type, Source       string
	OccurredAt, IngestedAt time.Time
	// Fingerprint identifies the schema Value was validated against.
	Fingerprint string
	// Traceparent and Tracestate are the W3C trace context the record
	// carries (the caller's, or the span of the event's publish when
	// tracing samples it); no header when empty.
	Traceparent, Tracestate string
	// Attributes become headers AttributeHeaderPrefix+key, sorted by key.
	Attributes map[string]string
	// Extra headers follow the attributes as they are: a webhook's
	// (HeaderWebhookScheme, HeaderWebhookBody, WebhookHeaderPrefix+name)
	// or the CloudEvents Kafka binding's ce_* headers. Not copied.
	Extra []kgo.RecordHeader
}

// NewEvent builds the record for e. Headers come in a fixed order: event
// id, type, source, occurred-at, ingested-at, schema fingerprint,
// traceparent and tracestate (each when set), then the attributes sorted by
// key. Key and Value
// are not copied.
//
// The record's timestamp is left unset: the client stamps it when Publish
// hands the record over. franz-go measures Config.DeliveryTimeout from the
// record's timestamp, so a record stamped with an older time (the event's
// ingestion time, when the spool replays it) would be failed at once.
func NewEvent(e *Event) *kgo.Record {
	attrKeys := make([]string, 0, len(e.Attributes))
	for k := range e.Attributes {
		attrKeys = append(attrKeys, k)
	}
	slices.Sort(attrKeys)

	// One allocation holds every header value and one every attribute
	// header name; the three-index slices keep a value from growing into
	// the next.
	size := len(e.ID) + len(e.Type) + len(e.Source) + 2*len(utctime.Layout) + len(e.Fingerprint) + len(e.Traceparent) + len(e.Tracestate)
	nameSize := 0
	for _, k := range attrKeys {
		size += len(e.Attributes[k])
		nameSize += len(AttributeHeaderPrefix) + len(k)
	}
	buf := make([]byte, 0, size)
	value := func(s string) []byte {
		start := len(buf)
		buf = append(buf, s...)
		return buf[start:len(buf):len(buf)]
	}
	timeValue := func(t time.Time) []byte {
		start := len(buf)
		buf = utctime.Append(buf, t)
		return buf[start:len(buf):len(buf)]
	}

	n := 6 + len(attrKeys) + len(e.Extra)
	if e.Traceparent != "" {
		n++
	}
	if e.Tracestate != "" {
		n++
	}
	// The record and its headers are one allocation when they fit.
	r := new(recordWithHeaders)
	headers := r.headers[:0]
	if n > len(r.headers) {
		headers = make([]kgo.RecordHeader, 0, n)
	}
	id := value(e.ID)
	key := e.Key
	if len(key) == 0 {
		key = id // the ID header's bytes, which nothing writes to
	}
	headers = append(headers,
		kgo.RecordHeader{Key: HeaderEventID, Value: id},
		kgo.RecordHeader{Key: HeaderEventType, Value: value(e.Type)},
		kgo.RecordHeader{Key: HeaderSource, Value: value(e.Source)},
		kgo.RecordHeader{Key: HeaderOccurredAt, Value: timeValue(e.OccurredAt)},
		kgo.RecordHeader{Key: HeaderIngestedAt, Value: timeValue(e.IngestedAt)},
		kgo.RecordHeader{Key: HeaderFingerprint, Value: value(e.Fingerprint)},
	)
	if e.Traceparent != "" {
		headers = append(headers, kgo.RecordHeader{Key: HeaderTraceparent, Value: value(e.Traceparent)})
	}
	if e.Tracestate != "" {
		headers = append(headers, kgo.RecordHeader{Key: HeaderTracestate, Value: value(e.Tracestate)})
	}
	if len(attrKeys) > 0 {
		var names strings.Builder
		names.Grow(nameSize)
		for _, k := range attrKeys {
			names.WriteString(AttributeHeaderPrefix)
			names.WriteString(k)
		}
		all, off := names.String(), 0
		for _, k := range attrKeys {
			end := off + len(AttributeHeaderPrefix) + len(k)
			headers = append(headers, kgo.RecordHeader{Key: all[off:end], Value: value(e.Attributes[k])})
			off = end
		}
	}

	headers = append(headers, e.Extra...)
	r.Record = kgo.Record{Topic: e.Topic, Key: key, Value: e.Value, Headers: headers}
	return &r.Record
}

// recordWithHeaders holds a record and room for the headers of an event
// with the traceparent and one attribute.
type recordWithHeaders struct {
	kgo.Record
	headers [8]kgo.RecordHeader
}

// EventHeaders are the sluice headers of a record, as ParseEvent reads them.
type EventHeaders struct {
	ID, Type, Source       string
	OccurredAt, IngestedAt time.Time // in UTC
	Fingerprint            string
	Traceparent            string            // empty when the record has none
	Tracestate             string            // empty when the record has none
	Attributes             map[string]string // nil when the record has none
	// ReplayID and ReplayActor are the replay's that produced the record
	// (WithReplay); empty for a record the gateway published.
	ReplayID, ReplayActor string
}

// HeaderError is a missing, repeated or garbled sluice header.
type HeaderError struct {
	Header string
	Err    error
}

func (e *HeaderError) Error() string {
	return fmt.Sprintf("record: header %s: %v", e.Header, e.Err)
}

func (e *HeaderError) Unwrap() error { return e.Err }

var (
	errHeaderMissing  = errors.New("missing")
	errHeaderRepeated = errors.New("repeated")
	errHeaderEmpty    = errors.New("empty")
)

// ParseEvent reads the sluice headers of r, the inverse of NewEvent and
// WithReplay. The event id, type, source, occurred-at, ingested-at and
// schema fingerprint headers are required, each exactly once; id and type
// must not be empty and the times must be RFC 3339 within the years 0000
// to 9999 in UTC. The replay headers are optional, at most once each, both
// or neither, within their bounds (CheckReplay). Other headers are
// ignored. The error is a *HeaderError naming the first bad header.
func ParseEvent(r *kgo.Record) (EventHeaders, error) {
	var (
		h EventHeaders
		// known are the headers ParseEvent reads, the required ones
		// first; seen marks the ones met, by index in known.
		known = [...]string{HeaderEventID, HeaderEventType, HeaderSource, HeaderOccurredAt, HeaderIngestedAt, HeaderFingerprint,
			HeaderTraceparent, HeaderTracestate, HeaderReplayID, HeaderReplayActor}
		seen [len(known)]bool
	)
	const nRequired = len(known) - 4
	for _, rh := range r.Headers {
		idx := slices.Index(known[:], rh.Key)
		if idx < 0 {
			if attr, ok := strings.CutPrefix(rh.Key, AttributeHeaderPrefix); ok {
				if _, dup := h.Attributes[attr]; dup {
					return EventHeaders{}, &HeaderError{rh.Key, errHeaderRepeated}
				}
				if h.Attributes == nil {
					h.Attributes = make(map[string]string)
				}
				h.Attributes[attr] = string(rh.Value)
			}
			continue
		}
		if seen[idx] {
			return EventHeaders{}, &HeaderError{rh.Key, errHeaderRepeated}
		}
		seen[idx] = true
		v := string(rh.Value)
		var err error
		switch rh.Key {
		case HeaderEventID:
			h.ID = v
		case HeaderEventType:
			h.Type = v
		case HeaderSource:
			h.Source = v
		case HeaderOccurredAt:
			h.OccurredAt, err = parseTime(v)
		case HeaderIngestedAt:
			h.IngestedAt, err = parseTime(v)
		case HeaderFingerprint:
			h.Fingerprint = v
		case HeaderTraceparent:
			h.Traceparent = v
		case HeaderTracestate:
			h.Tracestate = v
		case HeaderReplayID:
			h.ReplayID, err = v, checkReplayID(v)
		case HeaderReplayActor:
			h.ReplayActor, err = v, checkReplayActor(v)
		}
		if err != nil {
			return EventHeaders{}, &HeaderError{rh.Key, err}
		}
	}
	for i, name := range known[:nRequired] {
		if !seen[i] {
			return EventHeaders{}, &HeaderError{name, errHeaderMissing}
		}
	}
	switch {
	case h.ID == "":
		return EventHeaders{}, &HeaderError{HeaderEventID, errHeaderEmpty}
	case h.Type == "":
		return EventHeaders{}, &HeaderError{HeaderEventType, errHeaderEmpty}
	case h.ReplayID != "" && h.ReplayActor == "":
		return EventHeaders{}, &HeaderError{HeaderReplayActor, errHeaderMissing}
	case h.ReplayActor != "" && h.ReplayID == "":
		return EventHeaders{}, &HeaderError{HeaderReplayID, errHeaderMissing}
	}
	return h, nil
}

// WithReplay returns headers with the replay headers of the replay id, by
// actor, in place of any it had (a record replayed again names the last
// replay only). It fails as ParseEvent would on what it writes: id and
// actor must be within their bounds (CheckReplay). headers is not
// modified.
func WithReplay(headers []kgo.RecordHeader, id, actor string) ([]kgo.RecordHeader, error) {
	if err := CheckReplay(id, actor); err != nil {
		return nil, err
	}
	out := make([]kgo.RecordHeader, 0, len(headers)+2)
	for _, h := range headers {
		if h.Key != HeaderReplayID && h.Key != HeaderReplayActor {
			out = append(out, h)
		}
	}
	return append(out,
		kgo.RecordHeader{Key: HeaderReplayID, Value: []byte(id)},
		kgo.RecordHeader{Key: HeaderReplayActor, Value: []byte(actor)},
	), nil
}

// CheckReplay returns a *HeaderError unless id and actor may name a
// replay: an id of 1 to MaxReplayIDBytes letters, digits, '-' or '_', and
// an actor of 1 to MaxReplayActorBytes of valid UTF-8 without control
// characters.
func CheckReplay(id, actor string) error {
	if err := checkReplayID(id); err != nil {
		return &HeaderError{HeaderReplayID, err}
	}
	if err := checkReplayActor(actor); err != nil {
		return &HeaderError{HeaderReplayActor, err}
	}
	return nil
}

func checkReplayID(v string) error {
	if v == "" {
		return errHeaderEmpty
	}
	if len(v) > MaxReplayIDBytes {
		return fmt.Errorf("longer than %d bytes", MaxReplayIDBytes)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return errors.New("not letters, digits, '-' and '_'")
		}
	}
	return nil
}

func checkReplayActor(v string) error {
	if v == "" {
		return errHeaderEmpty
	}
	if len(v) > MaxReplayActorBytes {
		return fmt.Errorf("longer than %d bytes", MaxReplayActorBytes)
	}
	if !utf8.ValidString(v) {
		return errors.New("not valid UTF-8")
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return errors.New("holds a control character")
		}
	}
	return nil
}

var errTimeRange = errors.New("outside years 0000 to 9999 in UTC")

// parseTime reads an RFC 3339 time. It refuses times whose UTC form has no
// four-digit year (RFC 3339 has none), so that what it accepts NewEvent
// writes back unchanged.
func parseTime(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, err
	}
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return time.Time{}, errTimeRange
	}
	return t, nil
}

// Limits bound, in bytes, what an event puts into its record, so that
// the most a record can take is known before any is built: the spool's
// record limit and the producer's batch limit must hold it, or an event
// the gateway accepts could never be spooled or produced.
type Limits struct {
	// Value bounds the contract message in binary.
	Value int
	// ID, Type, Key, Source, Topic, Fingerprint, Traceparent and
	// Tracestate bound those fields; Key is the partition key, and the ID when that is
	// longer (the record is keyed by the id when the event has no key).
	ID, Type, Key, Source, Topic, Fingerprint, Traceparent, Tracestate int
	// Attributes bounds their number; AttributeKey and AttributeValue
	// each one's key and value.
	Attributes, AttributeKey, AttributeValue int
	// Extra bounds the Extra headers: ExtraHeaders of them, of
	// ExtraBytes in all, keys and values.
	ExtraHeaders, ExtraBytes int
}

// Sizes are the most bytes a record within Limits takes.
type Sizes struct {
	// Client is what franz-go counts of it against its buffer: key, value,
	// header keys and values.
	Client int
	// Batch is a record batch holding it alone, as a produce request
	// carries it: Config.BatchMaxBytes must be at least this.
	Batch int
	// Spooled is its spooled form (AppendSpooled): the spool's
	// MaxRecordBytes must be at least this.
	Spooled int
}

// Bounds of the record batch format (Kafka's v2 message format): the
// batch header, and what framing one record and each of its headers add at
// most (varint lengths of at most five bytes, a timestamp delta of at most
// ten).
const (
	batchHeaderBytes     = 61
	recordFramingBytes   = 1 + 5 + 1 + 10 + 5 + 5 + 5 + 5 // length, attributes, timestamp and offset deltas, key and value lengths, header count
	headerFramingBytes   = 5 + 5
	spooledFramingBytes  = 1 + 5 + 5 + 5 + 5 // version, topic, key and value lengths, header count
	spooledHeaderFraming = 5 + 5
)

// Sizes returns the most bytes a record within l takes.
func (l Limits) Sizes() Sizes {
	key := max(l.Key, l.ID)
	headers := 6 + 2 + l.Attributes + l.ExtraHeaders
	client := key + l.Value + l.ExtraBytes +
		len(HeaderEventID) + l.ID +
		len(HeaderEventType) + l.Type +
		len(HeaderSource) + l.Source +
		len(HeaderOccurredAt) + len(utctime.Layout) +
		len(HeaderIngestedAt) + len(utctime.Layout) +
		len(HeaderFingerprint) + l.Fingerprint +
		len(HeaderTraceparent) + l.Traceparent +
		len(HeaderTracestate) + l.Tracestate +
		l.Attributes*(len(AttributeHeaderPrefix)+l.AttributeKey+l.AttributeValue)
	return Sizes{
		Client:  client,
		Batch:   batchHeaderBytes + recordFramingBytes + headers*headerFramingBytes + client,
		Spooled: spooledFramingBytes + l.Topic + headers*spooledHeaderFraming + client,
	}
}
