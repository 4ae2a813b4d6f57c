package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/eventtest"
)

// legacyRESTEvent, legacyDecodeJSON and legacyStrictUnmarshal are the REST
// decoder as it was before DecodeJSONBatch: the reference the differential
// fuzz target holds the new decoder to. It is looser (encoding/json matches
// names case-insensitively, lets a later duplicate win, and reads a lone
// surrogate as U+FFFD), so what the new decoder accepts cleanly it must
// accept alike, not the other way round.

// legacyRESTEvent is an Event as REST sends it.
type legacyRESTEvent struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	OccurredAt   string            `json:"occurred_at"`
	PartitionKey string            `json:"partition_key"`
	Payload      json.RawMessage   `json:"payload"`
	Attributes   map[string]string `json:"attributes"`
}

// legacyDecodeJSON reads {"events": [...]} into req. The envelope is
// strict (unknown members are refused, so a misspelt field is not silently
// dropped); each payload must be a JSON object and is kept as text for its
// contract to decode, which judges it per event.
func legacyDecodeJSON(body []byte, maxDepth int, req *ingestv1.PublishRequest) *Failure {
	malformed := func(field, msg string) *Failure {
		f := &Failure{Reason: ingestv1.Reason_MALFORMED, Message: msg}
		if field != "" {
			f.Violations = []*ingestv1.FieldViolation{{Field: field, Rule: "sluice.decode", Message: msg}}
		}
		return f
	}
	if !utf8.Valid(body) {
		return malformed("", "body is not valid UTF-8")
	}
	// The envelope adds three levels above the payload: the request
	// object, the events array and the event object.
	if err := contract.CheckJSONDepth(body, maxDepth+3); err != nil {
		return malformed("", err.Error())
	}
	var envelope struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := legacyStrictUnmarshal(body, &envelope); err != nil {
		return malformed("", "body is not a publish request: "+err.Error())
	}
	req.Events = make([]*ingestv1.Event, len(envelope.Events))
	for i, raw := range envelope.Events {
		at := fmt.Sprintf("events[%d]", i)
		var re legacyRESTEvent
		if err := legacyStrictUnmarshal(raw, &re); err != nil {
			return malformed(at, at+": "+err.Error())
		}
		ev := &ingestv1.Event{Id: re.ID, Type: re.Type, PartitionKey: re.PartitionKey, Attributes: re.Attributes}
		if re.OccurredAt != "" {
			t, err := time.Parse(time.RFC3339Nano, re.OccurredAt)
			if err != nil {
				return malformed(at+".occurred_at", at+".occurred_at: not an RFC 3339 time: "+strconv.Quote(re.OccurredAt))
			}
			ev.OccurredAt = timestamppb.New(t)
		}
		if p := bytes.TrimSpace(re.Payload); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
			if p[0] != '{' {
				return malformed(at+".payload", at+".payload: must be a JSON object (the contract message)")
			}
			ev.Payload = &ingestv1.Event_Json{Json: string(p)}
		}
		req.Events[i] = ev
	}
	return nil
}

func legacyStrictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// fuzzLimits are the limits the fuzz targets decode with: few events, so
// the count is reached, and attributes as the service passes them.
var fuzzLimits = Limits{MaxEvents: 64, MaxAttributeKeys: testMaxAttributes + 1}

// jsonSeeds are realistic REST bodies and near misses.
func jsonSeeds() [][]byte {
	at := "2026-11-29T12:00:00.123456789Z"
	var logLine bytes.Buffer
	if err := json.Compact(&logLine, examples.LogLineJSON); err != nil {
		panic(err)
	}
	return append(eventtest.PublishBodies(),
		[]byte(`{"events":[{"id":"l-1","type":"examples.logs.v1.LogLine","occurred_at":"`+at+`","partition_key":"checkout-api","payload":`+logLine.String()+`,"attributes":{"env":"prod","region":"eu_west_1"}},{"id":"l-2","payload":null,"attributes":null,"occurred_at":null}]}`),
		[]byte(" {\t\"events\" :\r\n[ { \"id\" : \"a\\u00e9\\ud83d\\ude00\\n\" , \"payload\" : { \"a\" : [ 1 , -2.5e+3 , true , false , null , \"\\\"\" ] } } ] } \n"),
		[]byte(`{"events":[{"\u0069d":"a","type":"t"},5,null,{"payload":[1]}]}`),
		[]byte(`{"events":[{"id":"a","ID":"b","id":"c"}],"events":[]}`),
		[]byte(`{"events":[{"id":"a","attributes":{"k":"\ud800","j":5}}]}`),
		[]byte(`{"EVENTS":null}`),
		[]byte(`null`),
		[]byte(`{"events":[{"occurred_at":"0000-01-01T00:00:00Z"},{"occurred_at":"2026-02-30T00:00:00Z"}]}`),
	)
}

// FuzzDecodeJSONBatch: DecodeJSONBatch answers every body with a batch or
// a typed failure and never panics; its syntax is RFC 8259 as
// encoding/json reads it; it is never looser than the decoder it
// replaces; and a repeated or case-folded field name is never accepted.
func FuzzDecodeJSONBatch(f *testing.F) {
	for _, s := range jsonSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		b, fail := decodeJSON(body, fuzzLimits)
		checkDecoded(t, b, fail, len(body), fuzzLimits)
		// encoding/json's scanner is the reference for the syntax.
		if valid := json.Valid(body); !valid && fail == nil {
			t.Fatalf("accepted JSON encoding/json finds invalid: %q", body)
		} else if valid && fail != nil && strings.Contains(fail.Message, "invalid JSON") {
			t.Fatalf("%s, for JSON encoding/json finds valid: %q", fail.Message, body)
		}
		if !clean(b, fail) {
			return
		}
		for _, ev := range b.Events {
			if len(ev.GetAttributes()) > testMaxAttributes {
				return
			}
		}
		var legacy ingestv1.PublishRequest
		if lf := legacyDecodeJSON(body, len(body), &legacy); lf != nil {
			t.Fatalf("accepted a body the legacy decoder refuses (%v): %q", lf, body)
		}
		got := &ingestv1.PublishRequest{Events: b.Events}
		if !proto.Equal(got, &legacy) {
			t.Fatalf("decoded\n%v\nthe legacy decoder\n%v\nfor %q", got, &legacy, body)
		}
		for _, m := range jsonMutations(t, body) {
			if b, f := decodeJSON(m, fuzzLimits); clean(b, f) {
				t.Fatalf("accepted %q", m)
			}
		}
	})
}

// jsonMutations inserts into an accepted body fields that must refuse it:
// a repeated "events", a case-folded "events", and in the first event a
// repeated field and case-folded field names. The places to insert them
// are found with encoding/json's tokenizer, not the decoder under test.
func jsonMutations(t *testing.T, body []byte) [][]byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	token := func() json.Token {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("encoding/json cannot read an accepted body %q: %v", body, err)
		}
		return tok
	}
	insert := func(at int, members string, empty bool) []byte {
		if !empty {
			members += ","
		}
		return append(append(append([]byte{}, body[:at]...), members...), body[at:]...)
	}
	token() // {
	top, topEmpty := int(dec.InputOffset()), !dec.More()
	out := [][]byte{
		insert(top, `"events":null,"events":null`, topEmpty),
		insert(top, `"Events":[]`, topEmpty),
		insert(top, `"EVENTS":null`, topEmpty),
	}
	if topEmpty {
		return out
	}
	token() // "events"
	if tok := token(); tok != json.Delim('[') || !dec.More() {
		return out
	}
	if tok := token(); tok != json.Delim('{') {
		return out
	}
	first, firstEmpty := int(dec.InputOffset()), !dec.More()
	out = append(out, insert(first, `"type":null,"type":null`, firstEmpty))
	for _, k := range []string{"ID", "Type", "Occurred_At", "occurredAt", "PARTITION_KEY", "partitionKey", "Payload", "Attributes"} {
		out = append(out, insert(first, `"`+k+`":null`, firstEmpty))
	}
	return out
}

// wireSeeds are realistic gRPC messages, each a PublishRequest and a
// PublishStreamRequest.
func wireSeeds(t testing.TB) [][]byte {
	var line logsv1.LogLine
	if err := protojson.Unmarshal(examples.LogLineJSON, &line); err != nil {
		t.Fatal(err)
	}
	payload, err := proto.Marshal(&line)
	if err != nil {
		t.Fatal(err)
	}
	at := timestamppb.New(time.Date(2026, 11, 29, 12, 0, 0, 123, time.UTC))
	reqs := []*ingestv1.PublishRequest{
		{Events: []*ingestv1.Event{{
			Id: "l-1", Type: "examples.logs.v1.LogLine", OccurredAt: at, PartitionKey: "checkout-api",
			Payload: &ingestv1.Event_Binary{Binary: payload}, Attributes: map[string]string{"env": "prod", "region": "eu"},
		}}},
		{Events: []*ingestv1.Event{
			{Id: "o-1", Type: "examples.shop.v1.OrderPlaced", OccurredAt: at, Payload: &ingestv1.Event_Json{Json: string(examples.OrderPlacedJSON)}},
			{Id: "u-1", Type: "examples.identity.v1.UserProfileUpdated", OccurredAt: &timestamppb.Timestamp{}, Payload: &ingestv1.Event_Binary{}},
			{},
		}},
		{},
	}
	var out [][]byte
	for _, r := range reqs {
		m, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		s, err := proto.Marshal(&ingestv1.PublishStreamRequest{BatchId: 7, Events: r.GetEvents()})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m, s)
	}
	return out
}

// FuzzDecodeWireBatch: DecodeWireBatch answers every message with a batch
// or a typed failure and never panics; what it accepts cleanly
// proto.Unmarshal reads alike, with no unknown fields; and what
// proto.Unmarshal refuses it does not accept cleanly.
func FuzzDecodeWireBatch(f *testing.F) {
	for i, s := range wireSeeds(f) {
		f.Add(s, i%2 == 1)
	}
	f.Fuzz(func(t *testing.T, msg []byte, stream bool) {
		b, fail := decodeWire(msg, stream, fuzzLimits)
		checkDecoded(t, b, fail, len(msg), fuzzLimits)
		var ref interface {
			proto.Message
			GetEvents() []*ingestv1.Event
		} = &ingestv1.PublishRequest{}
		if stream {
			ref = &ingestv1.PublishStreamRequest{}
		}
		err := proto.UnmarshalOptions{}.Unmarshal(msg, ref)
		if err != nil {
			if clean(b, fail) {
				t.Fatalf("accepted a message proto.Unmarshal refuses (%v): %x", err, msg)
			}
			return
		}
		if fail != nil && fail.Reason == ingestv1.Reason_BATCH_TOO_LARGE && len(ref.GetEvents()) <= fuzzLimits.MaxEvents {
			t.Fatalf("%d events refused as too many: %x", len(ref.GetEvents()), msg)
		}
		if !clean(b, fail) {
			return
		}
		for _, ev := range b.Events {
			if len(ev.GetAttributes()) >= fuzzLimits.MaxAttributeKeys {
				return
			}
		}
		if len(ref.ProtoReflect().GetUnknown()) > 0 {
			t.Fatalf("accepted a message with unknown fields: %x", msg)
		}
		for i, ev := range ref.GetEvents() {
			if len(ev.ProtoReflect().GetUnknown()) > 0 || ev.GetOccurredAt() != nil && len(ev.GetOccurredAt().ProtoReflect().GetUnknown()) > 0 {
				t.Fatalf("accepted event %d with unknown fields: %x", i, msg)
			}
		}
		var got proto.Message = &ingestv1.PublishRequest{Events: b.Events}
		if stream {
			got = &ingestv1.PublishStreamRequest{BatchId: b.BatchID, Events: b.Events}
		} else if b.BatchID != 0 {
			t.Fatalf("batch_id %d outside a stream", b.BatchID)
		}
		if !proto.Equal(got, ref) {
			t.Fatalf("decoded\n%v\nproto.Unmarshal\n%v\nfor %x", got, ref, msg)
		}
	})
}
