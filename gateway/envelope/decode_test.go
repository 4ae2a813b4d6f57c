package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/examples"
	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// testLimits are the limits the service decodes with by default.
// testMaxAttributes is the gateway's limit on attributes an event
// (maxAttributes in gateway/limits.go), which the gateway's limits keep
// one more than.
const testMaxAttributes = 16

// decodeJSON and decodeWire are the decoders with the batch as a pointer,
// nil with a failure, as the checks take it.
func decodeJSON(body []byte, lim Limits) (*Batch, *Failure) {
	return orFailure(DecodeJSONBatch(body, lim))
}

func decodeWire(msg []byte, stream bool, lim Limits) (*Batch, *Failure) {
	return orFailure(DecodeWireBatch(msg, stream, lim))
}

func orFailure(b Batch, f *Failure) (*Batch, *Failure) {
	if f != nil {
		return nil, f
	}
	return &b, nil
}

var testLimits = Limits{MaxEvents: 500, MaxAttributeKeys: testMaxAttributes + 1}

// noField stands for a refusal without a violation in decodeCase.refused.
const noField = "(no violation)"

// decodeCase is one request and what a decoder is to make of it.
type decodeCase struct {
	name string
	in   []byte
	lim  *Limits // testLimits when nil
	// fail is the whole-request failure's reason, field its violation's
	// field ("" for none). Unset, the request must decode.
	fail  ingestv1.Reason
	field string
	// events are the events decoded, refused the fields of the refused
	// ones by index (noField: a refusal with no violation).
	events  []*ingestv1.Event
	refused map[int]string
	batchID uint64
	// check, when set, replaces the comparison of events.
	check func(t *testing.T, b *Batch)
}

func (c decodeCase) run(t *testing.T, decode func([]byte, Limits) (*Batch, *Failure)) {
	lim := testLimits
	if c.lim != nil {
		lim = *c.lim
	}
	b, f := decode(c.in, lim)
	checkDecoded(t, b, f, len(c.in), lim)
	if c.fail != ingestv1.Reason_REASON_UNSPECIFIED {
		if f == nil {
			t.Fatalf("decoded %v, want a %s failure", b.Events, c.fail)
		}
		if f.Reason != c.fail || violationField(f.Violations) != orNoField(c.field) {
			t.Fatalf("failure %s at %q (%s), want %s at %q", f.Reason, violationField(f.Violations), f.Message, c.fail, c.field)
		}
		return
	}
	if f != nil {
		t.Fatalf("failure %+v", f)
	}
	for i := range b.Events {
		var r *ingestv1.Rejection
		if b.Refused != nil {
			r = b.Refused[i]
		}
		want, refused := c.refused[i]
		switch {
		case r == nil && refused:
			t.Errorf("event %d decoded, want it refused at %q", i, want)
		case r != nil && !refused:
			t.Errorf("event %d refused: %v", i, r)
		case r != nil && violationField(r.GetViolations()) != want:
			t.Errorf("event %d refused at %q (%s), want at %q", i, violationField(r.GetViolations()), r.GetMessage(), want)
		}
	}
	if len(c.refused) > len(b.Events) {
		t.Errorf("%d events, want %d refused", len(b.Events), len(c.refused))
	}
	if b.BatchID != c.batchID {
		t.Errorf("batch_id %d, want %d", b.BatchID, c.batchID)
	}
	if c.check != nil {
		c.check(t, b)
		return
	}
	got, want := &ingestv1.PublishRequest{Events: b.Events}, &ingestv1.PublishRequest{Events: c.events}
	if !proto.Equal(got, want) {
		t.Errorf("decoded\n%v\nwant\n%v", got, want)
	}
}

// checkDecoded fails t unless exactly one of b and f is set and each is
// typed as the decoders promise: whole refusals MALFORMED or
// BATCH_TOO_LARGE with a message and at most one sluice.decode violation,
// per-event refusals MALFORMED at the index of an event that is there, and
// everything kept marshals (its strings are UTF-8).
func checkDecoded(t *testing.T, b *Batch, f *Failure, size int, lim Limits) {
	t.Helper()
	if (b == nil) == (f == nil) {
		t.Fatalf("batch %v and failure %v: want exactly one", b, f)
	}
	if f != nil {
		if f.Reason != ingestv1.Reason_MALFORMED && f.Reason != ingestv1.Reason_BATCH_TOO_LARGE || f.Message == "" {
			t.Fatalf("failure %+v", f)
		}
		checkViolations(t, f.Violations)
		if _, err := proto.Marshal(&ingestv1.ErrorBody{Reason: f.Reason, Violations: f.Violations, Message: f.Message}); err != nil {
			t.Fatalf("failure %+v does not marshal: %v", f, err)
		}
		return
	}
	if b.Size != size {
		t.Fatalf("size %d, want %d", b.Size, size)
	}
	if len(b.Events) > lim.MaxEvents || cap(b.Events) > lim.MaxEvents {
		t.Fatalf("%d events (room for %d), over the limit of %d", len(b.Events), cap(b.Events), lim.MaxEvents)
	}
	if b.Refused != nil && len(b.Refused) != len(b.Events) {
		t.Fatalf("%d refusals for %d events", len(b.Refused), len(b.Events))
	}
	for i, ev := range b.Events {
		if ev == nil {
			t.Fatalf("event %d is nil", i)
		}
		if len(ev.GetAttributes()) > lim.MaxAttributeKeys {
			t.Fatalf("event %d keeps %d attributes", i, len(ev.GetAttributes()))
		}
		if _, err := proto.Marshal(ev); err != nil {
			t.Fatalf("event %d does not marshal: %v", i, err)
		}
	}
	for i, r := range b.Refused {
		if r == nil {
			continue
		}
		if r.GetReason() != ingestv1.Reason_MALFORMED || r.GetRetryable() || r.GetMessage() == "" {
			t.Fatalf("event %d: refusal %v", i, r)
		}
		checkViolations(t, r.GetViolations())
		if _, err := proto.Marshal(r); err != nil {
			t.Fatalf("event %d: refusal does not marshal: %v", i, err)
		}
	}
}

func checkViolations(t *testing.T, vs []*ingestv1.FieldViolation) {
	t.Helper()
	if len(vs) > 1 {
		t.Fatalf("%d violations, want at most one", len(vs))
	}
	for _, v := range vs {
		if v.GetRule() != Rule || v.GetMessage() == "" {
			t.Fatalf("violation %v", v)
		}
	}
}

// clean reports whether a request decoded with no event refused.
func clean(b *Batch, f *Failure) bool {
	return f == nil && b.Refused == nil
}

func violationField(vs []*ingestv1.FieldViolation) string {
	if len(vs) == 0 {
		return noField
	}
	return vs[0].GetField()
}

func orNoField(field string) string {
	if field == "" {
		return noField
	}
	return field
}

var testAt = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// fullJSON is an event with every field, fullEvent what it decodes to.
const fullJSON = `{"id":"a-1","type":"examples.logs.v1.LogLine","occurred_at":"2026-11-29T12:00:00Z",` +
	`"partition_key":"k","payload":{"x": [1, {"y": null}]},"attributes":{"env":"prod","region":"eu"}}`

func fullEvent() *ingestv1.Event {
	return &ingestv1.Event{
		Id: "a-1", Type: "examples.logs.v1.LogLine", OccurredAt: timestamppb.New(testAt), PartitionKey: "k",
		Payload:    &ingestv1.Event_Json{Json: `{"x": [1, {"y": null}]}`},
		Attributes: map[string]string{"env": "prod", "region": "eu"},
	}
}

func body(events ...string) []byte {
	return []byte(`{"events":[` + strings.Join(events, ",") + `]}`)
}

func emptyEvents(n int) string {
	return strings.TrimSuffix(strings.Repeat("{},", n), ",")
}

func manyAttributesJSON(n int) []byte {
	return body(`{"id":"a","attributes":{` + manyAttributesJSONMembers(n) + `}}`)
}

// manyAttributesJSONMembers is n attributes, "k0":"v" to "k<n-1>":"v".
func manyAttributesJSONMembers(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":"v"`, i)
	}
	return b.String()
}

// manyAttributesWire is n attributes entries, k0=v to k<n-1>=v.
func manyAttributesWire(n int) [][]byte {
	var out [][]byte
	for i := range n {
		out = append(out, wireAttribute("k"+strconv.Itoa(i), "v"))
	}
	return out
}

func keepsAttributes(n int) func(t *testing.T, b *Batch) {
	return func(t *testing.T, b *Batch) {
		if len(b.Events) != 1 || len(b.Events[0].GetAttributes()) != n || b.Events[0].GetId() != "a" {
			t.Fatalf("decoded %d events, the first with %d attributes, want 1 with %d", len(b.Events), len(b.Events[0].GetAttributes()), n)
		}
	}
}

func hasEvents(n int) func(t *testing.T, b *Batch) {
	return func(t *testing.T, b *Batch) {
		if len(b.Events) != n {
			t.Fatalf("%d events, want %d", len(b.Events), n)
		}
	}
}

func TestDecodeJSONBatch(t *testing.T) {
	malformed, tooLarge := ingestv1.Reason_MALFORMED, ingestv1.Reason_BATCH_TOO_LARGE
	one := &Limits{MaxEvents: 1, MaxAttributeKeys: 2}
	deep := strings.Repeat(`{"a":[`, 100_000) + strings.Repeat(`]}`, 100_000)
	cases := []decodeCase{
		// Requests that decode.
		{name: "full event", in: body(fullJSON), events: []*ingestv1.Event{fullEvent()}},
		{name: "no members", in: []byte(`{}`)},
		{name: "events null", in: []byte(`{"events":null}`)},
		{name: "events empty", in: []byte(` {"events" : [ ] } `)},
		{name: "RFC 8259 whitespace", in: []byte("\t{\r\n\"events\"\n:\t[\r{ \"id\" :\"a\" } ]\n}\r\n"), events: []*ingestv1.Event{{Id: "a"}}},
		{name: "null fields are absent", in: body(`{"id":null,"type":null,"occurred_at":null,"partition_key":null,"payload":null,"attributes":null}`), events: []*ingestv1.Event{{}}},
		{name: "escaped keys and values", in: body(`{"\u0069d":"a\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t","attributes":{"\u006b":"\u0076"}}`),
			events: []*ingestv1.Event{{Id: "a\u00e9\U0001F600\"\\/\b\f\n\r\t", Attributes: map[string]string{"k": "v"}}}},
		{name: "nanoseconds and offsets", in: body(`{"occurred_at":"2026-11-29T13:00:00.000000001+01:00"}`),
			events: []*ingestv1.Event{{OccurredAt: timestamppb.New(testAt.Add(time.Nanosecond))}}},
		{name: "payload nested deeper than anything recurses", in: body(`{"payload":` + deep + `}`),
			events: []*ingestv1.Event{{Payload: &ingestv1.Event_Json{Json: deep}}}},
		{name: "500 events", in: body(emptyEvents(500)), check: hasEvents(500)},
		{name: "only MaxAttributeKeys of 300000 kept", in: manyAttributesJSON(300_000), check: keepsAttributes(testMaxAttributes + 1)},

		// Whole-request failures.
		{name: "events twice", in: []byte(`{"events":[` + fullJSON + `],"events":[]}`), fail: malformed, field: "events"},
		{name: "events twice, null", in: []byte(`{"events":null,"events":null}`), fail: malformed, field: "events"},
		{name: "EVENTS", in: []byte(`{"EVENTS":[]}`), fail: malformed, field: "EVENTS"},
		{name: "Events", in: []byte(`{"Events":[` + fullJSON + `]}`), fail: malformed, field: "Events"},
		{name: "unknown top-level field", in: []byte(`{"events":[],"batch_id":1}`), fail: malformed, field: "batch_id"},
		{name: "whole failure after a refused event", in: []byte(`{"events":[{"ID":1}],"x":1}`), fail: malformed, field: "x"},
		{name: "body null", in: []byte(`null`), fail: malformed},
		{name: "body array", in: []byte(`[{"events":[]}]`), fail: malformed},
		{name: "body string", in: []byte(`"events"`), fail: malformed},
		{name: "body number", in: []byte(`5`), fail: malformed},
		{name: "body true", in: []byte(`true`), fail: malformed},
		{name: "body empty", in: []byte(``), fail: malformed},
		{name: "body whitespace", in: []byte(" \n"), fail: malformed},
		{name: "byte order mark", in: []byte("\xef\xbb\xbf{}"), fail: malformed},
		{name: "not UTF-8", in: []byte("{\"events\":[{\"id\":\"\xff\"}]}"), fail: malformed},
		{name: "trailing garbage byte", in: []byte(`{"events":[]}x`), fail: malformed},
		{name: "two top values", in: []byte(`{}{}`), fail: malformed},
		{name: "form feed is not whitespace", in: []byte("{\f}"), fail: malformed},
		{name: "events a string", in: []byte(`{"events":"[]"}`), fail: malformed, field: "events"},
		{name: "events an object", in: []byte(`{"events":{}}`), fail: malformed, field: "events"},
		{name: "lone surrogate in a top-level key", in: []byte(`{"\ud800":[]}`), fail: malformed},
		{name: "syntax error in a payload", in: body(`{"id":"a"}`, `{"payload":{"a":}}`), fail: malformed, field: "events[1]"},
		{name: "mismatched brackets in a payload", in: body(`{"payload":{"a":[1}}`), fail: malformed, field: "events[0]"},
		{name: "syntax error in a skipped value", in: body(`{"ID":[1,]}`), fail: malformed, field: "events[0]"},
		{name: "missing comma between events", in: body(`{} {}`), fail: malformed, field: "events"},
		{name: "unterminated events", in: []byte(`{"events":[{}`), fail: malformed, field: "events"},
		{name: "unterminated string", in: []byte(`{"events":[{"id":"a`), fail: malformed, field: "events[0]"},
		{name: "raw control character in a string", in: body("{\"id\":\"a\tb\"}"), fail: malformed, field: "events[0]"},
		{name: "bad escape", in: body(`{"id":"\x41"}`), fail: malformed, field: "events[0]"},
		{name: "short \\u escape", in: body(`{"id":"\u41"}`), fail: malformed, field: "events[0]"},
		{name: "leading zero", in: body(`{"payload":{"n":01}}`), fail: malformed, field: "events[0]"},
		{name: "bare minus", in: body(`{"payload":{"n":-}}`), fail: malformed, field: "events[0]"},
		{name: "no fraction digits", in: body(`{"payload":{"n":1.}}`), fail: malformed, field: "events[0]"},
		{name: "no exponent digits", in: body(`{"payload":{"n":1e+}}`), fail: malformed, field: "events[0]"},
		{name: "bad literal", in: body(`{"id":nul}`), fail: malformed, field: "events[0]"},
		{name: "element 501", in: body(emptyEvents(501)), fail: tooLarge},
		{name: "element 2 of 1, not read", in: []byte(`{"events":[{},{`), lim: one, fail: tooLarge},

		// Events refused one by one; the others still decode.
		{name: "id twice", in: body(`{"id":"a","id":"b"}`), refused: map[int]string{0: "id"}, events: []*ingestv1.Event{{Id: "a"}}},
		{name: "null id twice", in: body(`{"id":null,"id":null}`), refused: map[int]string{0: "id"}, events: []*ingestv1.Event{{}}},
		{name: "payload twice", in: body(`{"payload":{},"payload":{"a":1}}`), refused: map[int]string{0: "payload"},
			events: []*ingestv1.Event{{Payload: &ingestv1.Event_Json{Json: `{}`}}}},
		{name: "ID", in: body(`{"ID":"a","id":"b"}`), refused: map[int]string{0: "ID"}, events: []*ingestv1.Event{{Id: "b"}}},
		{name: "Payload", in: body(`{"id":"a","Payload":{}}`), refused: map[int]string{0: "Payload"}, events: []*ingestv1.Event{{Id: "a"}}},
		{name: "occurredAt", in: body(`{"id":"a","occurredAt":"2026-11-29T12:00:00Z"}`), refused: map[int]string{0: "occurredAt"}, events: []*ingestv1.Event{{Id: "a"}}},
		{name: "the first problem is kept", in: body(`{"ID":1,"id":"a","id":"b","type":5}`), refused: map[int]string{0: "ID"}, events: []*ingestv1.Event{{Id: "a"}}},
		{name: "lone high surrogate in partition_key", in: body(`{"id":"a","partition_key":"\ud800"}`), refused: map[int]string{0: "partition_key"}, events: []*ingestv1.Event{{Id: "a"}}},
		{name: "high surrogate then a letter", in: body(`{"partition_key":"\ud800\u0041"}`), refused: map[int]string{0: "partition_key"}, events: []*ingestv1.Event{{}}},
		{name: "lone low surrogate in type", in: body(`{"type":"x\udc00"}`), refused: map[int]string{0: "type"}, events: []*ingestv1.Event{{}}},
		{name: "lone surrogate in an attribute value", in: body(`{"id":"a","attributes":{"k":"\ud800"}}`), refused: map[int]string{0: `attributes["k"]`}, events: []*ingestv1.Event{{Id: "a"}}},
		{name: "lone surrogate in an attribute key", in: body(`{"id":"a","attributes":{"\udfff":"v"}}`), refused: map[int]string{0: "attributes"}, events: []*ingestv1.Event{{Id: "a"}}},
		{name: "lone surrogate in an event key", in: body(`{"\ud800":1}`), refused: map[int]string{0: `\ud800`}, events: []*ingestv1.Event{{}}},
		{name: "payload a number, a good event after", in: body(`{"id":"a","payload":5}`, fullJSON), refused: map[int]string{0: "payload"}, events: []*ingestv1.Event{{Id: "a"}, fullEvent()}},
		{name: "payload a string, a good event after", in: body(`{"id":"a","payload":"x"}`, fullJSON), refused: map[int]string{0: "payload"}, events: []*ingestv1.Event{{Id: "a"}, fullEvent()}},
		{name: "payload an array, a good event after", in: body(`{"id":"a","payload":[1]}`, fullJSON), refused: map[int]string{0: "payload"}, events: []*ingestv1.Event{{Id: "a"}, fullEvent()}},
		{name: "payload true", in: body(`{"payload":true}`), refused: map[int]string{0: "payload"}, events: []*ingestv1.Event{{}}},
		{name: "events not objects", in: body(`null`, `5`, `[{"id":"a"}]`, `"x"`, fullJSON), refused: map[int]string{0: noField, 1: noField, 2: noField, 3: noField},
			events: []*ingestv1.Event{{}, {}, {}, {}, fullEvent()}},
		{name: "id a number", in: body(`{"id":5}`), refused: map[int]string{0: "id"}, events: []*ingestv1.Event{{}}},
		{name: "type an object", in: body(`{"id":"a","type":{"a":"b"}}`), refused: map[int]string{0: "type"}, events: []*ingestv1.Event{{Id: "a"}}},
		{name: "occurred_at not RFC 3339", in: body(`{"id":"a","occurred_at":"x"}`), refused: map[int]string{0: "occurred_at"}, events: []*ingestv1.Event{{Id: "a"}}},
		{name: "occurred_at empty", in: body(`{"occurred_at":""}`), refused: map[int]string{0: "occurred_at"}, events: []*ingestv1.Event{{}}},
		{name: "occurred_at a number", in: body(`{"occurred_at":1764417600}`), refused: map[int]string{0: "occurred_at"}, events: []*ingestv1.Event{{}}},
		{name: "occurred_at in year 0", in: body(`{"occurred_at":"0000-12-31T00:00:00Z"}`), refused: map[int]string{0: "occurred_at"}, events: []*ingestv1.Event{{}}},
		{name: "attributes an array", in: body(`{"attributes":["k","v"]}`), refused: map[int]string{0: "attributes"}, events: []*ingestv1.Event{{}}},
		{name: "attribute a number", in: body(`{"attributes":{"a":"b","k":5}}`), refused: map[int]string{0: `attributes["k"]`},
			events: []*ingestv1.Event{{Attributes: map[string]string{"a": "b"}}}},
		{name: "attribute null", in: body(`{"attributes":{"k":null}}`), refused: map[int]string{0: `attributes["k"]`}, events: []*ingestv1.Event{{}}},
		{name: "attribute twice", in: body(`{"attributes":{"k":"a","\u006b":"b"}}`), refused: map[int]string{0: `attributes["k"]`},
			events: []*ingestv1.Event{{Attributes: map[string]string{"k": "a"}}}},
		{name: "attribute twice among those kept", in: body(`{"attributes":{"a":"1","b":"2","c":"3","a":"4"}}`), lim: &Limits{MaxEvents: 1, MaxAttributeKeys: 2},
			refused: map[int]string{0: `attributes["a"]`}, events: []*ingestv1.Event{{Attributes: map[string]string{"a": "1", "b": "2"}}}},
		{name: "attribute past those kept is still checked", in: body(`{"attributes":{"a":"1","b":"2","c":3}}`), lim: &Limits{MaxEvents: 1, MaxAttributeKeys: 2},
			refused: map[int]string{0: `attributes["c"]`}, events: []*ingestv1.Event{{Attributes: map[string]string{"a": "1", "b": "2"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, decodeJSON) })
	}
}

// Protobuf messages, built field by field.

func wireBytes(num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
}

func wireVarint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func wireCat(parts ...[]byte) []byte {
	return bytes.Join(parts, nil)
}

func wireEvent(fields ...[]byte) []byte {
	return wireBytes(1, wireCat(fields...))
}

func wireTime(seconds int64, nanos int32) []byte {
	return wireBytes(3, wireCat(wireVarint(1, uint64(seconds)), wireVarint(2, uint64(nanos))))
}

func wireAttribute(k, v string) []byte {
	return wireBytes(7, wireCat(wireBytes(1, []byte(k)), wireBytes(2, []byte(v))))
}

func marshal(t testing.TB, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeWireBatch(t *testing.T) {
	malformed, tooLarge := ingestv1.Reason_MALFORMED, ingestv1.Reason_BATCH_TOO_LARGE
	full := &ingestv1.Event{
		Id: "a-1", Type: "examples.logs.v1.LogLine", OccurredAt: timestamppb.New(testAt.Add(5)), PartitionKey: "k",
		Payload: &ingestv1.Event_Binary{Binary: []byte{0x0a, 0x01, 'x'}}, Attributes: map[string]string{"env": "prod", "region": "eu"},
	}
	id := wireBytes(1, []byte("a"))
	emptyEvent := []byte{0x0a, 0x00}
	manyAttributes := append([][]byte{id}, manyAttributesWire(300_000)...)
	type wireCase struct {
		decodeCase
		stream bool
	}
	cases := []wireCase{
		// Requests that decode.
		{decodeCase: decodeCase{name: "full event", in: marshal(t, &ingestv1.PublishRequest{Events: []*ingestv1.Event{full}}), events: []*ingestv1.Event{full}}},
		{decodeCase: decodeCase{name: "empty message", in: nil}},
		{decodeCase: decodeCase{name: "empty events", in: bytes.Repeat(emptyEvent, 3), events: []*ingestv1.Event{{}, {}, {}}}},
		{decodeCase: decodeCase{name: "last scalar wins", in: wireEvent(id, wireBytes(1, []byte("b")), wireBytes(2, []byte("t")), wireBytes(2, nil)), events: []*ingestv1.Event{{Id: "b"}}}},
		{decodeCase: decodeCase{name: "oneof takes the last", in: wireEvent(wireBytes(6, []byte("{}")), wireBytes(5, []byte{1}), wireBytes(6, []byte(`{"a":1}`))),
			events: []*ingestv1.Event{{Payload: &ingestv1.Event_Json{Json: `{"a":1}`}}}}},
		{decodeCase: decodeCase{name: "empty binary is set", in: wireEvent(wireBytes(5, nil)), events: []*ingestv1.Event{{Payload: &ingestv1.Event_Binary{Binary: []byte{}}}}}},
		{decodeCase: decodeCase{name: "occurred_at merges field by field", in: wireEvent(wireBytes(3, wireVarint(1, 10)), wireBytes(3, wireVarint(2, 7)), wireBytes(3, nil)),
			events: []*ingestv1.Event{{OccurredAt: &timestamppb.Timestamp{Seconds: 10, Nanos: 7}}}}},
		{decodeCase: decodeCase{name: "empty occurred_at is the epoch", in: wireEvent(wireBytes(3, nil)), events: []*ingestv1.Event{{OccurredAt: &timestamppb.Timestamp{}}}}},
		{decodeCase: decodeCase{name: "a later attribute entry replaces", in: wireEvent(wireAttribute("k", "a"), wireAttribute("k", "b"), wireBytes(7, nil)),
			events: []*ingestv1.Event{{Attributes: map[string]string{"k": "b", "": ""}}}}},
		{decodeCase: decodeCase{name: "500 events", in: bytes.Repeat(emptyEvent, 500), check: hasEvents(500)}},
		{decodeCase: decodeCase{name: "only MaxAttributeKeys of 300000 kept", in: wireEvent(manyAttributes...), check: keepsAttributes(testMaxAttributes + 1)}},
		{decodeCase: decodeCase{name: "batch_id read for streams", in: wireCat(wireVarint(1, 3), wireBytes(2, id), wireVarint(1, 1<<63)),
			batchID: 1 << 63, events: []*ingestv1.Event{{Id: "a"}}}, stream: true},

		// Whole-request failures.
		{decodeCase: decodeCase{name: "events a varint", in: wireVarint(1, 1), fail: malformed, field: "events"}},
		{decodeCase: decodeCase{name: "stream events a varint", in: wireVarint(2, 1), fail: malformed, field: "events"}, stream: true},
		{decodeCase: decodeCase{name: "batch_id outside a stream", in: wireVarint(1, 7), fail: malformed, field: "events"}},
		{decodeCase: decodeCase{name: "batch_id as bytes", in: wireBytes(1, nil), fail: malformed, field: "batch_id"}, stream: true},
		{decodeCase: decodeCase{name: "unknown top-level field", in: wireCat(wireEvent(id), wireVarint(9, 1)), fail: malformed}},
		{decodeCase: decodeCase{name: "top-level group", in: protowire.AppendTag(protowire.AppendTag(nil, 1, protowire.StartGroupType), 1, protowire.EndGroupType), fail: malformed, field: "events"}},
		{decodeCase: decodeCase{name: "field number 0", in: []byte{0x02, 0x00}, fail: malformed}},
		{decodeCase: decodeCase{name: "truncated tag", in: []byte{0x8a}, fail: malformed}},
		{decodeCase: decodeCase{name: "truncated batch_id", in: []byte{0x08, 0xff}, fail: malformed, field: "batch_id"}, stream: true},
		{decodeCase: decodeCase{name: "event longer than the message", in: wireCat(emptyEvent, []byte{0x0a, 0x05, 0x0a, 0x01}), fail: malformed, field: "events[1]"}},
		{decodeCase: decodeCase{name: "element 501", in: bytes.Repeat(emptyEvent, 501), fail: tooLarge}},
		{decodeCase: decodeCase{name: "4 million empty events", in: bytes.Repeat(emptyEvent, 4_000_000), fail: tooLarge}},

		// Events refused one by one; the others still decode.
		{decodeCase: decodeCase{name: "nanos -1", in: wireCat(wireEvent(id, wireTime(1, -1)), wireEvent(id)), refused: map[int]string{0: "occurred_at"},
			events: []*ingestv1.Event{{Id: "a"}, {Id: "a"}}}},
		{decodeCase: decodeCase{name: "nanos 1e9", in: wireEvent(wireTime(1, 1e9)), refused: map[int]string{0: "occurred_at"}, events: []*ingestv1.Event{{}}}},
		{decodeCase: decodeCase{name: "seconds past 9999", in: wireEvent(wireTime(253402300800, 0)), refused: map[int]string{0: "occurred_at"}, events: []*ingestv1.Event{{}}}},
		{decodeCase: decodeCase{name: "unknown occurred_at field", in: wireEvent(wireBytes(3, wireVarint(3, 1))), refused: map[int]string{0: "occurred_at"}, events: []*ingestv1.Event{{OccurredAt: &timestamppb.Timestamp{}}}}},
		{decodeCase: decodeCase{name: "seconds as bytes", in: wireEvent(wireBytes(3, wireBytes(1, nil))), refused: map[int]string{0: "occurred_at"}, events: []*ingestv1.Event{{OccurredAt: &timestamppb.Timestamp{}}}}},
		{decodeCase: decodeCase{name: "unknown event field", in: wireEvent(wireVarint(9, 1), id), refused: map[int]string{0: noField}, events: []*ingestv1.Event{{Id: "a"}}}},
		{decodeCase: decodeCase{name: "group in an event is skipped", in: wireEvent(protowire.AppendTag(wireCat(protowire.AppendTag(nil, 9, protowire.StartGroupType), wireVarint(1, 1),
			protowire.AppendTag(nil, 8, protowire.StartGroupType), protowire.AppendTag(nil, 8, protowire.EndGroupType)), 9, protowire.EndGroupType), id),
			refused: map[int]string{0: noField}, events: []*ingestv1.Event{{Id: "a"}}}},
		{decodeCase: decodeCase{name: "id as a varint", in: wireEvent(wireVarint(1, 1), wireBytes(2, []byte("t"))), refused: map[int]string{0: noField}, events: []*ingestv1.Event{{Type: "t"}}}},
		{decodeCase: decodeCase{name: "truncated inside an event", in: wireCat(wireEvent(id, []byte{0x12, 0x09, 'x'}), wireEvent(id)), refused: map[int]string{0: noField},
			events: []*ingestv1.Event{{Id: "a"}, {Id: "a"}}}},
		{decodeCase: decodeCase{name: "invalid UTF-8 in an id", in: wireEvent(wireBytes(1, []byte{'a', 0xff})), refused: map[int]string{0: "id"}, events: []*ingestv1.Event{{}}}},
		{decodeCase: decodeCase{name: "invalid UTF-8 in a partition_key", in: wireEvent(id, wireBytes(4, []byte{0xed, 0xa0, 0x80})), refused: map[int]string{0: "partition_key"}, events: []*ingestv1.Event{{Id: "a"}}}},
		{decodeCase: decodeCase{name: "invalid UTF-8 in json", in: wireEvent(id, wireBytes(6, []byte{'{', 0xc0, '}'})), refused: map[int]string{0: "json"}, events: []*ingestv1.Event{{Id: "a"}}}},
		{decodeCase: decodeCase{name: "invalid UTF-8 in an attribute value", in: wireEvent(id, wireAttribute("k", "\xff")), refused: map[int]string{0: `attributes["k"]`}, events: []*ingestv1.Event{{Id: "a"}}}},
		{decodeCase: decodeCase{name: "invalid UTF-8 in an attribute key", in: wireEvent(id, wireAttribute("\xff", "v")), refused: map[int]string{0: "attributes"}, events: []*ingestv1.Event{{Id: "a"}}}},
		{decodeCase: decodeCase{name: "unknown attribute entry field", in: wireEvent(id, wireBytes(7, wireVarint(3, 1))), refused: map[int]string{0: "attributes"}, events: []*ingestv1.Event{{Id: "a"}}}},
		{decodeCase: decodeCase{name: "attribute key as a varint", in: wireEvent(id, wireBytes(7, wireVarint(1, 1))), refused: map[int]string{0: "attributes"}, events: []*ingestv1.Event{{Id: "a"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, func(msg []byte, lim Limits) (*Batch, *Failure) { return decodeWire(msg, c.stream, lim) })
		})
	}
}

// TestDecodeWireBatchCopies: what is kept does not alias the message,
// which gRPC reuses once the handler has it.
func TestDecodeWireBatchCopies(t *testing.T) {
	ev := &ingestv1.Event{Id: "a", Type: "t", PartitionKey: "k", Payload: &ingestv1.Event_Binary{Binary: []byte("payload")}, Attributes: map[string]string{"k": "v"}}
	msg := marshal(t, &ingestv1.PublishRequest{Events: []*ingestv1.Event{ev, {Payload: &ingestv1.Event_Json{Json: "{}"}}}})
	b, f := decodeWire(msg, false, testLimits)
	if f != nil {
		t.Fatal(f)
	}
	clear(msg)
	if want := []*ingestv1.Event{ev, {Payload: &ingestv1.Event_Json{Json: "{}"}}}; !proto.Equal(&ingestv1.PublishRequest{Events: b.Events}, &ingestv1.PublishRequest{Events: want}) {
		t.Fatalf("after the message is cleared: %v", b.Events)
	}
}

// TestDecodeBoundsWhatItBuilds: what a request costs is bounded by the
// limits, not by its length: millions of events cost what MaxEvents of
// them do, and an event of millions of fields what one field does.
func TestDecodeBoundsWhatItBuilds(t *testing.T) {
	const n = 4_000_000
	wire := func(b []byte, l Limits) (*Batch, *Failure) { return decodeWire(b, false, l) }
	// A decoded event is one allocation, its refusal four; the batch's
	// slices add a few as they grow.
	for _, c := range []struct {
		name      string
		in        []byte
		decode    func([]byte, Limits) (*Batch, *Failure)
		tooLarge  bool
		refused   bool // the one event of the request
		maxAllocs int
	}{
		{"wire events", bytes.Repeat([]byte{0x0a, 0x00}, n), wire, true, false, testLimits.MaxEvents + 20},
		{"json events", body(emptyEvents(n)), decodeJSON, true, false, testLimits.MaxEvents + 20},
		{"wire ids not UTF-8", wireEvent(bytes.Repeat(wireBytes(1, []byte{0xff}), n/3)), wire, false, true, 20},
		{"wire attributes past the limit", wireEvent(append(manyAttributesWire(testLimits.MaxAttributeKeys), slices.Repeat([][]byte{wireAttribute("x", "v"), wireAttribute("y", "w")}, n/10)...)...),
			wire, false, false, 60},
		{"wire occurred_at truncated", wireEvent(bytes.Repeat(wireBytes(3, []byte{0x08}), n/3)), wire, false, true, 20},
		{"json unknown fields", body("{" + strings.Repeat(`"X":1,`, n/6) + `"id":"a"}`), decodeJSON, false, true, 20},
		{"json attributes not strings", body(`{"attributes":{` + strings.Repeat(`"k":1,`, n/6) + `"k":"v"}}`), decodeJSON, false, true, 20},
		{"json escaped attributes past the limit", body(`{"attributes":{` + manyAttributesJSONMembers(testLimits.MaxAttributeKeys) + strings.Repeat(`,"\u0078":"v","\u0079":"w"`, n/24) + `}}`),
			decodeJSON, false, false, 60},
	} {
		t.Run(c.name, func(t *testing.T) {
			decode := func() {
				b, f := c.decode(c.in, testLimits)
				if c.tooLarge != (f != nil && f.Reason == ingestv1.Reason_BATCH_TOO_LARGE) ||
					!c.tooLarge && (f != nil || len(b.Events) != 1 || c.refused != (b.Refused != nil)) {
					t.Fatalf("decoded %v, %v", b, f)
				}
			}
			if allocs := testing.AllocsPerRun(3, decode); allocs > float64(c.maxAllocs) {
				t.Errorf("%.0f allocations for a request of %d bytes", allocs, len(c.in))
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			decode()
			runtime.ReadMemStats(&after)
			if bytes := after.TotalAlloc - before.TotalAlloc; bytes > 256<<10 {
				t.Errorf("%d bytes allocated for a request of %d bytes", bytes, len(c.in))
			}
		})
	}
}

// logLineBatch is a 100-event batch of log lines as REST and gRPC send it.
func logLineBatch(t testing.TB) (restBody, grpcMsg []byte) {
	var line logsv1.LogLine
	if err := protojson.Unmarshal(examples.LogLineJSON, &line); err != nil {
		t.Fatal(err)
	}
	binary := marshal(t, &line)
	var compact bytes.Buffer
	if err := json.Compact(&compact, examples.LogLineJSON); err != nil {
		t.Fatal(err)
	}
	req := &ingestv1.PublishRequest{}
	var events []string
	for i := range 100 {
		id, key := fmt.Sprintf("log-%d", i), fmt.Sprintf("svc-%d", i%16)
		at := testAt.Add(time.Duration(i) * time.Millisecond)
		req.Events = append(req.Events, &ingestv1.Event{
			Id: id, Type: "examples.logs.v1.LogLine", OccurredAt: timestamppb.New(at), PartitionKey: key,
			Payload: &ingestv1.Event_Binary{Binary: binary}, Attributes: map[string]string{"env": "prod"},
		})
		events = append(events, fmt.Sprintf(`{"id":%q,"type":"examples.logs.v1.LogLine","occurred_at":%q,"partition_key":%q,"payload":%s,"attributes":{"env":"prod"}}`,
			id, at.Format(time.RFC3339Nano), key, compact.Bytes()))
	}
	return body(events...), marshal(t, req)
}

// TestLogLineBatchDecodes: the benchmarks' batch decodes cleanly.
func TestLogLineBatchDecodes(t *testing.T) {
	rest, grpc := logLineBatch(t)
	for name, decode := range map[string]func() (*Batch, *Failure){
		"json": func() (*Batch, *Failure) { return decodeJSON(rest, testLimits) },
		"wire": func() (*Batch, *Failure) { return decodeWire(grpc, false, testLimits) },
	} {
		if b, f := decode(); !clean(b, f) || len(b.Events) != 100 {
			t.Errorf("%s: %v %v", name, b, f)
		}
	}
}

// BenchmarkDecodeJSONBatch is DecodeJSONBatch against the REST decoder it
// replaces (with that one's depth check), on logLineBatch's REST body.
func BenchmarkDecodeJSONBatch(b *testing.B) {
	rest, _ := logLineBatch(b)
	b.Run("decodeJSONBatch", func(b *testing.B) {
		b.SetBytes(int64(len(rest)))
		b.ReportAllocs()
		for b.Loop() {
			if _, f := DecodeJSONBatch(rest, testLimits); f != nil {
				b.Fatal(f)
			}
		}
	})
	b.Run("legacy", func(b *testing.B) {
		b.SetBytes(int64(len(rest)))
		b.ReportAllocs()
		for b.Loop() {
			var req ingestv1.PublishRequest
			if f := legacyDecodeJSON(rest, 32, &req); f != nil {
				b.Fatal(f)
			}
		}
	})
}

// BenchmarkDecodeWireBatch is DecodeWireBatch against proto.Unmarshal, on
// logLineBatch's gRPC message.
func BenchmarkDecodeWireBatch(b *testing.B) {
	_, grpc := logLineBatch(b)
	b.Run("decodeWireBatch", func(b *testing.B) {
		b.SetBytes(int64(len(grpc)))
		b.ReportAllocs()
		for b.Loop() {
			if _, f := DecodeWireBatch(grpc, false, testLimits); f != nil {
				b.Fatal(f)
			}
		}
	})
	b.Run("proto.Unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(grpc)))
		b.ReportAllocs()
		for b.Loop() {
			var req ingestv1.PublishRequest
			if err := proto.Unmarshal(grpc, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
