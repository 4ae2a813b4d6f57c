package envelope

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/timestamppb"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/jsonscan"
)

// Rule is the FieldViolation rule of a decoding problem.
const Rule = "sluice.decode"

// Limits bounds what decoding one request builds.
type Limits struct {
	MaxEvents        int // the most events a request holds: event MaxEvents+1 stops decoding with BATCH_TOO_LARGE
	MaxAttributeKeys int // distinct attribute keys kept per event; callers pass one over what validation admits, so validation still refuses the event (map.max_pairs)
}

// Batch is one decoded request: the events, and for each event that did
// not decode, its refusal.
type Batch struct {
	BatchID uint64                // PublishStreamRequest's batch_id; 0 otherwise
	Events  []*ingestv1.Event     // never nil entries
	Refused []*ingestv1.Rejection // nil, or len(Events): non-nil at i when event i did not decode
	Size    int                   // bytes of the request as received
}

// Failure refuses a whole request: MALFORMED, with at most one violation
// under Rule, or BATCH_TOO_LARGE. The gateway answers it as its own
// Failure of the same reason, message and violations.
type Failure struct {
	Reason     ingestv1.Reason
	Message    string
	Violations []*ingestv1.FieldViolation
}

func (f *Failure) Error() string {
	return fmt.Sprintf("envelope: %s: %s", f.Reason, f.Message)
}

// add appends an event and its refusal, if any. The slices grow to at most
// limit, the most events a batch holds.
func (b *Batch) add(ev *ingestv1.Event, rej *ingestv1.Rejection, limit int) {
	if n := len(b.Events); n == cap(b.Events) {
		c := min(max(2*n, 8), limit)
		b.Events = append(make([]*ingestv1.Event, 0, c), b.Events...)
		if b.Refused != nil {
			b.Refused = append(make([]*ingestv1.Rejection, 0, c), b.Refused...)
		}
	}
	if rej != nil && b.Refused == nil {
		b.Refused = make([]*ingestv1.Rejection, len(b.Events), cap(b.Events))
	}
	b.Events = append(b.Events, ev)
	if b.Refused != nil {
		b.Refused = append(b.Refused, rej)
	}
}

// envelopeMalformed is a whole-request MALFORMED, blamed on field unless
// field is "".
func envelopeMalformed(field, msg string) *Failure {
	f := &Failure{Reason: ingestv1.Reason_MALFORMED, Message: msg}
	if field != "" {
		f.Violations = []*ingestv1.FieldViolation{{Field: field, Rule: Rule, Message: msg}}
	}
	return f
}

// malformedEvent is one event's MALFORMED refusal, not retryable.
func malformedEvent(msg string) *ingestv1.Rejection {
	return &ingestv1.Rejection{Reason: ingestv1.Reason_MALFORMED, Message: msg}
}

func tooManyEvents(limit int) *Failure {
	return &Failure{Reason: ingestv1.Reason_BATCH_TOO_LARGE,
		Message: fmt.Sprintf("more than %d events in one request", limit)}
}

// eventProblem is the first reason one event did not decode.
type eventProblem struct {
	set   bool
	blame bool   // field says where; otherwise the event as a whole
	field string // relative to the event: "id", `attributes["k"]`, ...
	msg   string
}

// at notes a problem with field, unless the event has one already.
func (p *eventProblem) at(field, msg string) {
	if !p.set {
		*p = eventProblem{set: true, blame: true, field: field, msg: msg}
	}
}

// whole notes a problem of the event as a whole, unless it has one already.
func (p *eventProblem) whole(msg string) {
	if !p.set {
		*p = eventProblem{set: true, msg: msg}
	}
}

func (p *eventProblem) rejection() *ingestv1.Rejection {
	if !p.set {
		return nil
	}
	r := malformedEvent(p.msg)
	if p.blame {
		r.Violations = []*ingestv1.FieldViolation{{Field: p.field, Rule: Rule, Message: p.msg}}
	}
	return r
}

func attributePath(key []byte) string {
	return fmt.Sprintf("attributes[%q]", key)
}

// timestampProblem says why a Timestamp is not one protobuf accepts, or
// returns "".
func timestampProblem(ts *timestamppb.Timestamp) string {
	if ts.CheckValid() == nil {
		return ""
	}
	if n := ts.GetNanos(); n < 0 || n > 999_999_999 {
		return fmt.Sprintf("occurred_at: nanos %d is out of range", n)
	}
	return fmt.Sprintf("occurred_at: seconds %d is out of range (years 1 to 9999)", ts.GetSeconds())
}

// JSON.

// DecodeJSONBatch decodes a REST body, {"events": [...]}, by RFC 8259 with
// exact, case-sensitive field names. Each payload must be a JSON object and
// is kept as its text, from '{' to '}', in Event_Json.
func DecodeJSONBatch(body []byte, lim Limits) (Batch, *Failure) {
	if !utf8.Valid(body) {
		return Batch{}, envelopeMalformed("", "body is not valid UTF-8")
	}
	if bytes.HasPrefix(body, []byte("\xef\xbb\xbf")) {
		return Batch{}, envelopeMalformed("", "body is not a publish request: it starts with a byte order mark")
	}
	d := &jsonDecoder{Scanner: jsonscan.Scanner{Buf: body}, lim: lim, elem: -1}
	b, err := d.request()
	switch err := err.(type) {
	case nil:
		return b, nil
	case *Failure:
		return Batch{}, err
	default:
		at := d.path()
		msg := err.Error()
		if at != "" {
			msg = at + ": " + msg
		}
		return Batch{}, envelopeMalformed(at, msg)
	}
}

// jsonDecoder reads one body with the shared tokenizer.
type jsonDecoder struct {
	jsonscan.Scanner
	lim Limits
	// elem is the event being read, for the path of a syntax error: -1
	// outside "events", -2 in it between elements.
	elem int
}

func (d *jsonDecoder) path() string {
	switch {
	case d.elem >= 0:
		return "events[" + strconv.Itoa(d.elem) + "]"
	case d.elem == -2:
		return "events"
	}
	return ""
}

func (d *jsonDecoder) request() (Batch, error) {
	b := Batch{Size: len(d.Buf)}
	notRequest := func(what string) error {
		return envelopeMalformed("", "body is not a publish request: "+what)
	}
	switch d.Peek() {
	case '{':
	case '[':
		return Batch{}, notRequest("it is an array")
	case '"':
		return Batch{}, notRequest("it is a string")
	case 'n':
		return Batch{}, notRequest("it is null")
	case 't', 'f':
		return Batch{}, notRequest("it is a boolean")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return Batch{}, notRequest("it is a number")
	default:
		if d.Pos == len(d.Buf) {
			return Batch{}, notRequest("the body is empty")
		}
		return Batch{}, d.Unexpected("a JSON object")
	}
	d.Pos++
	if d.Peek() == '}' {
		d.Pos++
	} else {
		seen := false
		for {
			keyAt := d.Pos
			k, err := d.ReadString()
			if err != nil {
				return Batch{}, err
			}
			if k.Lone {
				return Batch{}, envelopeMalformed("", fmt.Sprintf("the key at offset %d is not Unicode text: it has a lone surrogate", keyAt))
			}
			if name := d.Key(k); string(name) != "events" {
				return Batch{}, envelopeMalformed(string(name), fmt.Sprintf("unknown field %q", name))
			}
			if seen {
				return Batch{}, envelopeMalformed("events", `duplicate key "events"`)
			}
			seen = true
			if err := d.Expect(':', "':'"); err != nil {
				return Batch{}, err
			}
			switch d.Peek() {
			case 'n':
				err = d.Literal("null")
			case '[':
				err = d.events(&b)
			default:
				return Batch{}, envelopeMalformed("events", "events: must be an array or null")
			}
			if err != nil {
				return Batch{}, err
			}
			if c := d.Peek(); c == '}' {
				d.Pos++
				break
			} else if c != ',' {
				return Batch{}, d.Unexpected("',' or '}'")
			}
			d.Pos++
		}
	}
	if d.Ws(); d.Pos != len(d.Buf) {
		return Batch{}, &jsonscan.SyntaxError{Offset: d.Pos, Msg: "data after the top value"}
	}
	return b, nil
}

// events reads the events array, from its '['.
func (d *jsonDecoder) events(b *Batch) error {
	d.Pos++
	d.elem = -2
	if d.Peek() == ']' {
		d.Pos++
		d.elem = -1
		return nil
	}
	for {
		n := len(b.Events)
		if n >= d.lim.MaxEvents {
			return tooManyEvents(d.lim.MaxEvents)
		}
		d.elem = n
		ev, rej, err := d.event()
		if err != nil {
			return err
		}
		b.add(ev, rej, d.lim.MaxEvents)
		d.elem = -2
		if c := d.Peek(); c == ']' {
			d.Pos++
			d.elem = -1
			return nil
		} else if c != ',' {
			return d.Unexpected("',' or ']'")
		}
		d.Pos++
	}
}

// The fields of an event, a bit each.
const (
	jsonID = 1 << iota
	jsonType
	jsonOccurredAt
	jsonPartitionKey
	jsonPayload
	jsonAttributes
)

func eventFieldBit(name []byte) uint8 {
	switch string(name) {
	case "id":
		return jsonID
	case "type":
		return jsonType
	case "occurred_at":
		return jsonOccurredAt
	case "partition_key":
		return jsonPartitionKey
	case "payload":
		return jsonPayload
	case "attributes":
		return jsonAttributes
	}
	return 0
}

// event reads one element of events. A problem inside the event refuses it
// and the rest of it is still read, for its syntax and for what else
// decodes (its id, to answer it by).
func (d *jsonDecoder) event() (*ingestv1.Event, *ingestv1.Rejection, error) {
	ev := &ingestv1.Event{}
	if d.Peek() != '{' {
		if err := d.Skip(); err != nil {
			return nil, nil, err
		}
		return ev, malformedEvent("event is not a JSON object"), nil
	}
	d.Pos++
	var p eventProblem
	if d.Peek() == '}' {
		d.Pos++
		return ev, nil, nil
	}
	var seen uint8
	for {
		k, err := d.ReadString()
		if err != nil {
			return nil, nil, err
		}
		if err := d.Expect(':', "':'"); err != nil {
			return nil, nil, err
		}
		if k.Lone {
			if !p.set {
				p.at(string(k.Raw), fmt.Sprintf("the key %q is not Unicode text: it has a lone surrogate", k.Raw))
			}
			err = d.Skip()
		} else {
			name := d.Key(k)
			switch bit := eventFieldBit(name); {
			case bit == 0:
				if !p.set {
					p.at(string(name), fmt.Sprintf("unknown field %q", name))
				}
				err = d.Skip()
			case seen&bit != 0:
				if !p.set {
					p.at(string(name), fmt.Sprintf("duplicate key %q", name))
				}
				err = d.Skip()
			default:
				seen |= bit
				err = d.eventField(bit, ev, &p)
			}
		}
		if err != nil {
			return nil, nil, err
		}
		if c := d.Peek(); c == '}' {
			d.Pos++
			return ev, p.rejection(), nil
		} else if c != ',' {
			return nil, nil, d.Unexpected("',' or '}'")
		}
		d.Pos++
	}
}

// eventField reads the value of one field of an event; null is absent.
func (d *jsonDecoder) eventField(bit uint8, ev *ingestv1.Event, p *eventProblem) error {
	switch bit {
	case jsonID:
		return d.stringField("id", &ev.Id, p)
	case jsonType:
		return d.stringField("type", &ev.Type, p)
	case jsonPartitionKey:
		return d.stringField("partition_key", &ev.PartitionKey, p)
	case jsonOccurredAt:
		s, ok, err := d.stringValue("occurred_at", p)
		if !ok || err != nil {
			return err
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			p.at("occurred_at", "occurred_at: not an RFC 3339 time: "+strconv.Quote(s))
			return nil
		}
		ts := timestamppb.New(t)
		if msg := timestampProblem(ts); msg != "" {
			p.at("occurred_at", msg)
			return nil
		}
		ev.OccurredAt = ts
		return nil
	case jsonPayload:
		switch d.Peek() {
		case 'n':
			return d.Literal("null")
		case '{':
			start := d.Pos
			if err := d.Skip(); err != nil {
				return err
			}
			ev.Payload = &ingestv1.Event_Json{Json: string(d.Buf[start:d.Pos])}
			return nil
		}
		p.at("payload", "payload: must be a JSON object (the contract message)")
		return d.Skip()
	}
	return d.attributes(ev, p)
}

// stringField reads a string or null into dst.
func (d *jsonDecoder) stringField(name string, dst *string, p *eventProblem) error {
	s, ok, err := d.stringValue(name, p)
	if ok {
		*dst = s
	}
	return err
}

// stringValue reads a string or null; ok is whether it was a string of
// Unicode text.
func (d *jsonDecoder) stringValue(name string, p *eventProblem) (string, bool, error) {
	switch d.Peek() {
	case 'n':
		return "", false, d.Literal("null")
	case '"':
		s, err := d.ReadString()
		if err != nil {
			return "", false, err
		}
		if s.Lone {
			p.at(name, name+": not Unicode text: a \\u escape is a lone surrogate")
			return "", false, nil
		}
		return d.Text(s), true, nil
	}
	p.at(name, name+": must be a string")
	return "", false, d.Skip()
}

// attributes reads an object of strings, or null. It keeps the first
// lim.MaxAttributeKeys distinct keys; later keys are read and checked but
// not kept, so what is built stays bounded.
func (d *jsonDecoder) attributes(ev *ingestv1.Event, p *eventProblem) error {
	switch d.Peek() {
	case 'n':
		return d.Literal("null")
	case '{':
	default:
		p.at("attributes", "attributes: must be an object of strings")
		return d.Skip()
	}
	d.Pos++
	if d.Peek() == '}' {
		d.Pos++
		return nil
	}
	var m map[string]string
	for {
		k, err := d.ReadString()
		if err != nil {
			return err
		}
		if err := d.Expect(':', "':'"); err != nil {
			return err
		}
		key := d.Key(k)
		if d.Peek() != '"' {
			if !p.set {
				if k.Lone {
					p.at("attributes", "attributes: a key is not Unicode text: it has a lone surrogate")
				} else {
					at := attributePath(key)
					p.at(at, at+": must be a string")
				}
			}
			if err := d.Skip(); err != nil {
				return err
			}
		} else {
			v, err := d.ReadString()
			if err != nil {
				return err
			}
			_, dup := m[string(key)]
			switch {
			case k.Lone:
				p.at("attributes", "attributes: a key is not Unicode text: it has a lone surrogate")
			case v.Lone:
				if !p.set {
					at := attributePath(key)
					p.at(at, at+": not Unicode text: a \\u escape is a lone surrogate")
				}
			case dup:
				if !p.set {
					p.at(attributePath(key), "duplicate key "+strconv.Quote(string(key))+" in attributes")
				}
			case len(m) < d.lim.MaxAttributeKeys:
				if m == nil {
					m = make(map[string]string)
				}
				m[string(key)] = d.Text(v)
			}
		}
		if c := d.Peek(); c == '}' {
			d.Pos++
			break
		} else if c != ',' {
			return d.Unexpected("',' or '}'")
		}
		d.Pos++
	}
	if len(m) > 0 {
		ev.Attributes = m
	}
	return nil
}

// Protobuf.

// DecodeWireBatch decodes a PublishRequest, or with stream a
// PublishStreamRequest, as protobuf's binary format, refusing what
// proto.Unmarshal would keep as unknown fields. For what it accepts it
// builds what proto.Unmarshal would.
func DecodeWireBatch(msg []byte, stream bool, lim Limits) (Batch, *Failure) {
	eventsField := protowire.Number(1)
	if stream {
		eventsField = 2
	}
	b := Batch{Size: len(msg)}
	for off := 0; off < len(msg); {
		num, typ, n := protowire.ConsumeTag(msg[off:])
		if n < 0 {
			return Batch{}, envelopeMalformed("", fmt.Sprintf("invalid tag at offset %d: %s", off, wireError(n)))
		}
		off += n
		switch {
		case num == eventsField:
			if typ != protowire.BytesType {
				return Batch{}, envelopeMalformed("events", fmt.Sprintf("field %d (events): wire type %s, want bytes", num, wireTypeName(typ)))
			}
			if len(b.Events) >= lim.MaxEvents {
				return Batch{}, tooManyEvents(lim.MaxEvents)
			}
			v, n := protowire.ConsumeBytes(msg[off:])
			if n < 0 {
				at := "events[" + strconv.Itoa(len(b.Events)) + "]"
				return Batch{}, envelopeMalformed(at, fmt.Sprintf("%s: field %d (events) at offset %d: %s", at, num, off, wireError(n)))
			}
			off += n
			ev, rej := decodeWireEvent(v, lim)
			b.add(ev, rej, lim.MaxEvents)
		case stream && num == 1:
			if typ != protowire.VarintType {
				return Batch{}, envelopeMalformed("batch_id", fmt.Sprintf("field 1 (batch_id): wire type %s, want varint", wireTypeName(typ)))
			}
			v, n := protowire.ConsumeVarint(msg[off:])
			if n < 0 {
				return Batch{}, envelopeMalformed("batch_id", fmt.Sprintf("field 1 (batch_id) at offset %d: %s", off, wireError(n)))
			}
			off += n
			b.BatchID = v
		default:
			return Batch{}, envelopeMalformed("", fmt.Sprintf("unknown field %d", num))
		}
	}
	return b, nil
}

// wireError says what a negative protowire length means, without the
// "proto:" prefix protowire gives it.
func wireError(n int) string {
	msg := strings.TrimPrefix(protowire.ParseError(n).Error(), "proto:")
	return strings.TrimLeft(msg, " \u00a0")
}

func wireTypeName(t protowire.Type) string {
	switch t {
	case protowire.VarintType:
		return "varint"
	case protowire.Fixed32Type:
		return "fixed32"
	case protowire.Fixed64Type:
		return "fixed64"
	case protowire.BytesType:
		return "bytes"
	case protowire.StartGroupType:
		return "start group"
	case protowire.EndGroupType:
		return "end group"
	}
	return strconv.Itoa(int(t))
}

// eventFieldNames are the Event's fields by number; each is
// length-delimited.
var eventFieldNames = [...]string{1: "id", 2: "type", 3: "occurred_at", 4: "partition_key", 5: "binary", 6: "json", 7: "attributes"}

// wireTimestamp is an occurred_at merged from its occurrences.
type wireTimestamp struct {
	set     bool
	seconds int64
	nanos   int32
}

// decodeWireEvent decodes one Event. Its scalars keep their last
// occurrence, as protobuf does, and are copied out once it ends.
func decodeWireEvent(b []byte, lim Limits) (*ingestv1.Event, *ingestv1.Rejection) {
	ev := &ingestv1.Event{}
	var p eventProblem
	var id, typ, key, payload []byte
	var payloadField protowire.Number
	var ts wireTimestamp
	for off := 0; off < len(b); {
		num, wt, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			p.whole(fmt.Sprintf("invalid tag at offset %d of the event: %s", off, wireError(n)))
			break
		}
		off += n
		if num >= protowire.Number(len(eventFieldNames)) || eventFieldNames[num] == "" || wt != protowire.BytesType {
			if !p.set {
				if num < protowire.Number(len(eventFieldNames)) && eventFieldNames[num] != "" {
					p.whole(fmt.Sprintf("field %d (%s): wire type %s, want bytes", num, eventFieldNames[num], wireTypeName(wt)))
				} else {
					p.whole(fmt.Sprintf("unknown field %d", num))
				}
			}
			if n = skipWireValue(wt, b[off:]); n < 0 {
				break
			}
			off += n
			continue
		}
		v, n := protowire.ConsumeBytes(b[off:])
		if n < 0 {
			p.whole(fmt.Sprintf("field %d (%s) at offset %d of the event: %s", num, eventFieldNames[num], off, wireError(n)))
			break
		}
		off += n
		switch num {
		case 1, 2, 4, 6:
			if !utf8.Valid(v) {
				if !p.set {
					p.at(eventFieldNames[num], eventFieldNames[num]+": not valid UTF-8")
				}
				continue
			}
			switch num {
			case 1:
				id = v
			case 2:
				typ = v
			case 4:
				key = v
			case 6:
				payload, payloadField = v, 6
			}
		case 5:
			payload, payloadField = v, 5
		case 3:
			ts.merge(v, &p)
		case 7:
			addWireAttribute(v, ev, lim, &p)
		}
	}
	if id != nil {
		ev.Id = string(id)
	}
	if typ != nil {
		ev.Type = string(typ)
	}
	if key != nil {
		ev.PartitionKey = string(key)
	}
	switch payloadField {
	case 5:
		ev.Payload = &ingestv1.Event_Binary{Binary: bytes.Clone(payload)}
	case 6:
		ev.Payload = &ingestv1.Event_Json{Json: string(payload)}
	}
	if ts.set {
		at := &timestamppb.Timestamp{Seconds: ts.seconds, Nanos: ts.nanos}
		if msg := timestampProblem(at); msg != "" {
			p.at("occurred_at", msg)
		} else {
			ev.OccurredAt = at
		}
	}
	return ev, p.rejection()
}

// merge decodes one occurrence of a google.protobuf.Timestamp into ts,
// field by field.
func (ts *wireTimestamp) merge(b []byte, p *eventProblem) {
	ts.set = true
	for off := 0; off < len(b); {
		num, wt, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			if !p.set {
				p.at("occurred_at", "occurred_at: invalid tag: "+wireError(n))
			}
			return
		}
		off += n
		if (num != 1 && num != 2) || wt != protowire.VarintType {
			if !p.set {
				if num == 1 || num == 2 {
					p.at("occurred_at", fmt.Sprintf("occurred_at: field %d: wire type %s, want varint", num, wireTypeName(wt)))
				} else {
					p.at("occurred_at", fmt.Sprintf("occurred_at: unknown field %d", num))
				}
			}
			if n = skipWireValue(wt, b[off:]); n < 0 {
				return
			}
			off += n
			continue
		}
		v, n := protowire.ConsumeVarint(b[off:])
		if n < 0 {
			if !p.set {
				p.at("occurred_at", fmt.Sprintf("occurred_at: field %d: %s", num, wireError(n)))
			}
			return
		}
		off += n
		if num == 1 {
			ts.seconds = int64(v)
		} else {
			ts.nanos = int32(v)
		}
	}
}

// addWireAttribute decodes one attributes map entry into ev. A later entry
// for a key kept replaces it; once lim.MaxAttributeKeys keys are kept, new
// keys are checked and dropped.
func addWireAttribute(b []byte, ev *ingestv1.Event, lim Limits, p *eventProblem) {
	var k, v []byte
	for off := 0; off < len(b); {
		num, wt, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			if !p.set {
				p.at("attributes", fmt.Sprintf("attributes: invalid tag in an entry: %s", wireError(n)))
			}
			return
		}
		off += n
		if (num != 1 && num != 2) || wt != protowire.BytesType {
			if !p.set {
				if num == 1 || num == 2 {
					p.at("attributes", fmt.Sprintf("attributes: entry field %d: wire type %s, want bytes", num, wireTypeName(wt)))
				} else {
					p.at("attributes", fmt.Sprintf("attributes: unknown entry field %d", num))
				}
			}
			return
		}
		s, n := protowire.ConsumeBytes(b[off:])
		if n < 0 {
			if !p.set {
				p.at("attributes", fmt.Sprintf("attributes: entry field %d: %s", num, wireError(n)))
			}
			return
		}
		off += n
		if num == 1 {
			k = s
		} else {
			v = s
		}
	}
	if !utf8.Valid(k) {
		p.at("attributes", "attributes: a key is not valid UTF-8")
		return
	}
	if !utf8.Valid(v) {
		if !p.set {
			at := attributePath(k)
			p.at(at, at+": not valid UTF-8")
		}
		return
	}
	if _, kept := ev.Attributes[string(k)]; !kept && len(ev.Attributes) >= lim.MaxAttributeKeys {
		return
	}
	if ev.Attributes == nil {
		ev.Attributes = make(map[string]string)
	}
	ev.Attributes[string(k)] = string(v)
}

// skipWireValue returns the length of a value of wire type wt at the start
// of b, or a negative protowire error code. A group is skipped to its end
// by counting the starts and ends within, without recursion; end numbers
// are not matched, the field being refused already.
func skipWireValue(wt protowire.Type, b []byte) int {
	switch wt {
	case protowire.StartGroupType:
	case protowire.EndGroupType:
		return -1
	default:
		return protowire.ConsumeFieldValue(1, wt, b)
	}
	off := 0
	for depth := 1; depth > 0; {
		num, t, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			return n
		}
		off += n
		switch t {
		case protowire.StartGroupType:
			depth++
		case protowire.EndGroupType:
			depth--
		default:
			if n = protowire.ConsumeFieldValue(num, t, b[off:]); n < 0 {
				return n
			}
			off += n
		}
	}
	return off
}
