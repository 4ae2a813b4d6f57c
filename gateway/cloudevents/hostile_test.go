package cloudevents_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/gateway/cloudevents"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/clip"
)

const (
	malformed      = ingestv1.Reason_MALFORMED
	schema         = ingestv1.Reason_SCHEMA_VIOLATION
	eventTooLarge  = ingestv1.Reason_EVENT_TOO_LARGE
	batchTooLarge  = ingestv1.Reason_BATCH_TOO_LARGE
	okEvent        = ingestv1.Reason_REASON_UNSPECIFIED
	validStructure = `{"specversion":"1.0","id":"e-1","source":"/s","type":"com.example.t"%s}`
)

// structured is a valid event with more members.
func structured(more string) string { return fmt.Sprintf(validStructure, more) }

// binaryHeader is a valid binary-mode header with more headers.
func binaryHeader(more ...string) http.Header {
	h := http.Header{
		"Ce-Specversion": {"1.0"}, "Ce-Id": {"e-1"}, "Ce-Source": {"/s"}, "Ce-Type": {"com.example.t"},
		"Content-Type": {"application/json"},
	}
	set := map[string]bool{}
	for i := 0; i+1 < len(more); i += 2 {
		if k := more[i]; set[k] {
			h[k] = append(h[k], more[i+1])
		} else {
			h[k], set[k] = []string{more[i+1]}, true
		}
	}
	return h
}

func without(h http.Header, keys ...string) http.Header {
	for _, k := range keys {
		delete(h, k)
	}
	return h
}

// small are limits the hostile table reaches cheaply.
func small() cloudevents.Limits {
	return cloudevents.Limits{MaxEvents: 3, MaxBodyBytes: 1 << 20, MaxEventBytes: 64, MaxAttributes: 2, MaxContextBytes: 512}
}

// TestHostile: each request is refused with its reason and field, the
// whole request or the one event, and nothing panics, hangs or quotes
// more than a bounded part of the input.
func TestHostile(t *testing.T) {
	many := func(n int, ev string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(ev+",", n), ",") + "]"
	}
	longName := strings.Repeat("x", 100_000)
	for _, tc := range []struct {
		name   string
		header http.Header
		body   string
		// whole is the request's refusal; else event is the refusal of
		// event index (okEvent: accepted).
		whole, event ingestv1.Reason
		field        string
		index        int
		lim          *cloudevents.Limits
	}{
		// The request as a whole.
		{name: "body over the limit", header: structuredHeader, body: structured(`,"x":"` + strings.Repeat("a", 1<<20) + `"`), whole: batchTooLarge},
		{name: "batch over the event limit", header: batchHeader(), body: many(4, structured("")), whole: batchTooLarge},
		{name: "batch over the limit stops before later garbage", header: batchHeader(), body: many(4, structured("")) + "garbage", whole: batchTooLarge},
		{name: "trailing garbage", header: structuredHeader, body: structured("") + "x", whole: malformed},
		{name: "garbage after a batch with a refused event", header: batchHeader(), body: "[0 ]0", whole: malformed},
		{name: "a second event after the first", header: structuredHeader, body: structured("") + structured(""), whole: malformed},
		{name: "invalid UTF-8", header: structuredHeader, body: structured(`,"x":"` + "\xff" + `"`), whole: malformed},
		{name: "byte order mark", header: structuredHeader, body: "\xef\xbb\xbf" + structured(""), whole: malformed},
		{name: "empty body", header: structuredHeader, body: "", whole: malformed},
		{name: "structured body is an array", header: structuredHeader, body: "[" + structured("") + "]", whole: malformed},
		{name: "batch body is an object", header: batchHeader(), body: structured(""), whole: malformed},
		{name: "syntax error inside a batch event", header: batchHeader(), body: "[" + structured("") + `,{"id":}]`, whole: malformed},
		{name: "unclosed deep nesting", header: structuredHeader, body: structured(`,"data":` + strings.Repeat("[", 200_000)), whole: malformed},
		{name: "not a CloudEvent", header: http.Header{"Content-Type": {"application/json"}}, body: `{}`, whole: malformed, field: "Content-Type"},
		{name: "another event format", header: http.Header{"Content-Type": {"application/cloudevents+avro"}}, body: `{}`, whole: malformed, field: "Content-Type"},
		{name: "another batch format", header: http.Header{"Content-Type": {"application/cloudevents-batch+protobuf"}}, body: `[]`, whole: malformed, field: "Content-Type"},
		{name: "charset not UTF-8", header: http.Header{"Content-Type": {"application/cloudevents+json; charset=latin1"}}, body: structured(""), whole: malformed, field: "Content-Type"},
		{name: "two Content-Types", header: http.Header{"Content-Type": {"application/cloudevents+json", "application/json"}}, body: structured(""), whole: malformed, field: "Content-Type"},

		// One event.
		{name: "no id", header: structuredHeader, body: `{"specversion":"1.0","source":"/s","type":"t"}`, event: malformed, field: "id"},
		{name: "empty id", header: structuredHeader, body: `{"specversion":"1.0","id":"","source":"/s","type":"t"}`, event: malformed, field: "id"},
		{name: "id not a string", header: structuredHeader, body: `{"specversion":"1.0","id":7,"source":"/s","type":"t"}`, event: malformed, field: "id"},
		{name: "no source", header: structuredHeader, body: `{"specversion":"1.0","id":"1","type":"t"}`, event: malformed, field: "source"},
		{name: "null type", header: structuredHeader, body: `{"specversion":"1.0","id":"1","source":"/s","type":null}`, event: malformed, field: "type"},
		{name: "specversion 0.3", header: structuredHeader, body: `{"specversion":"0.3","id":"1","source":"/s","type":"t","schemaurl":"x","datacontentencoding":"base64"}`, event: malformed, field: "specversion"},
		{name: "specversion 2.0 wins over other problems", header: structuredHeader, body: `{"id":7,"specversion":"2.0","BAD":1}`, event: malformed, field: "specversion"},
		{name: "no specversion", header: structuredHeader, body: `{"id":"1","source":"/s","type":"t"}`, event: malformed, field: "specversion"},
		{name: "specversion 1.0.0", header: structuredHeader, body: `{"specversion":"1.0.0","id":"1","source":"/s","type":"t"}`, event: malformed, field: "specversion"},
		{name: "binary specversion 0.3", header: binaryHeader("Ce-Specversion", "0.3"), body: `{}`, event: malformed, field: "specversion"},
		{name: "binary no ce-id", header: without(binaryHeader(), "Ce-Id"), body: `{}`, event: malformed, field: "id"},
		{name: "data_base64 not base64", header: structuredHeader, body: structured(`,"data_base64":"not base64!"`), event: malformed, field: "data_base64"},
		{name: "data_base64 not a string", header: structuredHeader, body: structured(`,"data_base64":{}`), event: malformed, field: "data_base64"},
		{name: "data and data_base64", header: structuredHeader, body: structured(`,"data":{},"data_base64":"AA=="`), event: malformed, field: "data_base64"},
		{name: "JSON data_base64 that is not JSON", header: structuredHeader, body: structured(`,"datacontenttype":"application/json","data_base64":"/w=="`), event: malformed, field: "data_base64"},
		{name: "protobuf in data, not data_base64", header: structuredHeader, body: structured(`,"datacontenttype":"application/protobuf","data":"CgQxMDAx"`), event: malformed, field: "data"},
		{name: "text data", header: structuredHeader, body: structured(`,"datacontenttype":"text/plain","data":"hello"`), event: malformed, field: "datacontenttype"},
		{name: "JSON data in UTF-16", header: structuredHeader, body: structured(`,"datacontenttype":"application/json; charset=utf-16","data":{}`), event: malformed, field: "datacontenttype"},
		{name: "not a media type", header: structuredHeader, body: structured(`,"datacontenttype":"json","data":{}`), event: malformed, field: "datacontenttype"},
		{name: "binary mode, Content-Type text/plain", header: binaryHeader("Content-Type", "text/plain"), body: "hello", event: malformed, field: "datacontenttype"},
		{name: "binary mode, Content-Type application/xml", header: binaryHeader("Content-Type", "application/xml"), body: "<a/>", event: malformed, field: "datacontenttype"},
		{name: "binary mode, no Content-Type: bytes for the contract", header: without(binaryHeader(), "Content-Type"), body: "\x0a\x01x", event: okEvent},
		{name: "binary mode, JSON type, protobuf body", header: binaryHeader(), body: "\x0a\x04\x31\x30\x30\x31\xff", event: malformed, field: "data"},
		{name: "binary mode, JSON type, body not JSON", header: binaryHeader(), body: "order=1001", event: malformed, field: "data"},
		{name: "binary mode, JSON type, two values", header: binaryHeader(), body: "{} {}", event: malformed, field: "data"},
		{name: "ce-id with invalid percent-encoding", header: binaryHeader("Ce-Id", "%zz"), body: `{}`, event: malformed, field: "id"},
		{name: "ce-subject overlong UTF-8", header: binaryHeader("Ce-Subject", "%C0%A0"), body: `{}`, event: malformed, field: "subject"},
		{name: "ce-datacontenttype", header: binaryHeader("Ce-Datacontenttype", "application/json"), body: `{}`, event: malformed, field: "datacontenttype"},
		{name: "ce-data", header: binaryHeader("Ce-Data", "x"), body: `{}`, event: malformed, field: "data"},
		{name: "ce header twice", header: binaryHeader("Ce-Tenant", "a", "Ce-Tenant", "b"), body: `{}`, event: malformed, field: "tenant"},
		{name: "ce header in two letter cases", header: binaryHeader("Ce-Tenant", "a", "ce-tenant", "b"), body: `{}`, event: malformed, field: "tenant"},
		{name: "ce header name not an attribute name", header: binaryHeader("Ce-My-Ext", "a"), body: `{}`, event: malformed, field: "my-ext"},
		{name: "huge extension name", header: structuredHeader, body: structured(`,"` + longName + `":"v"`), event: schema, field: clip.String(longName, 64)},
		{name: "huge invalid extension name", header: structuredHeader, body: structured(`,"X` + longName + `":"v"`), event: malformed, field: clip.String("X"+longName, 64)},
		{name: "binary header name over 64 characters", header: binaryHeader("Ce-"+longName[:100], "v"), body: `{}`, event: schema, field: clip.String(longName[:100], 64)},
		{name: "huge binary header name", header: binaryHeader("Ce-"+longName[:3000], "v"), body: `{}`, event: eventTooLarge},
		{name: "extension name with upper case", header: structuredHeader, body: structured(`,"myExt":"v"`), event: malformed, field: "myExt"},
		{name: "extension value over 256 characters", header: structuredHeader, body: structured(`,"ext":"` + strings.Repeat("é", 257) + `"`), event: schema, field: "ext", lim: &cloudevents.Limits{MaxEvents: 1, MaxBodyBytes: 1 << 20, MaxEventBytes: 64, MaxAttributes: 2, MaxContextBytes: 4096}},
		{name: "too many extensions", header: structuredHeader, body: structured(`,"a":"1","b":"2","c":"3"`), event: schema, field: "c"},
		{name: "too many extensions, nulls counted", header: structuredHeader, body: structured(`,"a":null,"b":null,"c":null`), event: schema, field: "c"},
		{name: "partitionkey is not counted", header: structuredHeader, body: structured(`,"a":"1","b":"2","partitionkey":"k"`), event: okEvent},
		{name: "too many binary headers", header: binaryHeader("Ce-A", "1", "Ce-B", "2", "Ce-C", "3", "Ce-D", "4", "Ce-E", "5", "Ce-F", "6", "Ce-G", "7"), body: `{}`, event: schema},
		{name: "binary headers over the context bytes", header: binaryHeader("Ce-A", strings.Repeat("%41", 600)), body: `{}`, event: eventTooLarge},
		{name: "extension object", header: structuredHeader, body: structured(`,"ext":{"a":1}`), event: malformed, field: "ext"},
		{name: "extension array", header: structuredHeader, body: structured(`,"ext":[1]`), event: malformed, field: "ext"},
		{name: "extension fraction", header: structuredHeader, body: structured(`,"ext":1.5`), event: malformed, field: "ext"},
		{name: "extension exponent", header: structuredHeader, body: structured(`,"ext":1e3`), event: malformed, field: "ext"},
		{name: "extension over 32 bits", header: structuredHeader, body: structured(`,"ext":2147483648`), event: malformed, field: "ext"},
		{name: "duplicate id", header: structuredHeader, body: structured(`,"id":"e-2"`), event: malformed, field: "id"},
		{name: "duplicate extension", header: structuredHeader, body: structured(`,"ext":"a","ext":"b"`), event: malformed, field: "ext"},
		{name: "duplicate extension after a null", header: structuredHeader, body: structured(`,"ext":null,"ext":"b"`), event: malformed, field: "ext"},
		{name: "duplicate data", header: structuredHeader, body: structured(`,"data":{},"data":{}`), event: malformed, field: "data"},
		{name: "duplicate by escape", header: structuredHeader, body: structured(`,"\u0069d":"e-2"`), event: malformed, field: "id"},
		{name: "upper-case core name", header: structuredHeader, body: structured(`,"ID":"e-2"`), event: malformed, field: "ID"},
		{name: "lone surrogate in id", header: structuredHeader, body: `{"specversion":"1.0","id":"\ud800","source":"/s","type":"t"}`, event: malformed, field: "id"},
		{name: "lone surrogate in a member name", header: structuredHeader, body: structured(`,"\udc00":"v"`), event: malformed},
		{name: "lone surrogate in an extension", header: structuredHeader, body: structured(`,"ext":"a\udc00"`), event: malformed, field: "ext"},
		{name: "control character in subject", header: structuredHeader, body: structured(`,"subject":"a\u0001b"`), event: malformed, field: "subject"},
		{name: "C1 control character", header: structuredHeader, body: structured(`,"ext":"a\u0085b"`), event: malformed, field: "ext"},
		{name: "noncharacter", header: structuredHeader, body: structured(`,"ext":"a\ufffeb"`), event: malformed, field: "ext"},
		{name: "time not RFC 3339", header: structuredHeader, body: structured(`,"time":"2018-04-05 17:31:00"`), event: malformed, field: "time"},
		{name: "datacontenttype not a media type, no data", header: structuredHeader, body: structured(`,"datacontenttype":"json"`), event: malformed, field: "datacontenttype"},
		{name: "Content-Type not a media type, no body", header: binaryHeader("Content-Type", "a/b; x"), body: ``, event: malformed, field: "datacontenttype"},
		{name: "time with a one-digit hour", header: structuredHeader, body: structured(`,"time":"0001-01-01T0:00:00Z"`), event: malformed, field: "time"},
		{name: "time in year 0 in UTC", header: structuredHeader, body: structured(`,"time":"0001-01-01T00:30:00+01:00"`), event: malformed, field: "time"},
		{name: "time in year 10000 in UTC", header: structuredHeader, body: structured(`,"time":"9999-12-31T23:30:00-01:00"`), event: malformed, field: "time"},
		{name: "time in year 0", header: structuredHeader, body: structured(`,"time":"0000-01-01T00:00:00Z"`), event: malformed, field: "time"},
		{name: "empty subject", header: structuredHeader, body: structured(`,"subject":""`), event: malformed, field: "subject"},
		{name: "relative dataschema", header: structuredHeader, body: structured(`,"dataschema":"/schemas/1"`), event: malformed, field: "dataschema"},
		{name: "data over the limit", header: structuredHeader, body: structured(`,"data":{"a":"` + strings.Repeat("x", 64) + `"}`), event: eventTooLarge, field: "data"},
		{name: "data_base64 over the limit", header: structuredHeader, body: structured(`,"datacontenttype":"application/protobuf","data_base64":"` + strings.Repeat("AAAA", 100) + `"`), event: eventTooLarge, field: "data_base64"},
		{name: "binary body over the limit", header: without(binaryHeader(), "Content-Type"), body: strings.Repeat("x", 65), event: eventTooLarge, field: "data"},
		{name: "context over the limit", header: structuredHeader, body: structured(`,"subject":"` + strings.Repeat("s", 600) + `"`), event: eventTooLarge},
		{name: "partitionkey over 256 characters", header: structuredHeader, body: structured(`,"partitionkey":"` + strings.Repeat("k", 257) + `"`), event: schema, field: "partitionkey", lim: &cloudevents.Limits{MaxEvents: 1, MaxBodyBytes: 1 << 20, MaxEventBytes: 64, MaxAttributes: 2, MaxContextBytes: 4096}},
		{name: "subject over 256 characters, no partitionkey", header: structuredHeader, body: structured(`,"subject":"` + strings.Repeat("s", 257) + `"`), event: schema, field: "subject", lim: &cloudevents.Limits{MaxEvents: 1, MaxBodyBytes: 1 << 20, MaxEventBytes: 64, MaxAttributes: 2, MaxContextBytes: 4096}},
		{name: "a batch element not an object", header: batchHeader(), body: "[" + structured("") + `,"x",` + structured("") + "]", event: malformed, index: 1},
		{name: "deep data decodes (the contract bounds depth)", header: structuredHeader, body: structured(`,"data":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)), event: okEvent, lim: &cloudevents.Limits{MaxEvents: 1, MaxBodyBytes: 1 << 20, MaxEventBytes: 1 << 20, MaxAttributes: 2, MaxContextBytes: 4096}},
	} {
		l := small()
		if tc.lim != nil {
			l = *tc.lim
		}
		dec, refused := cloudevents.Decode(tc.header, []byte(tc.body), l)
		checkBounded(t, tc.name, refused)
		for _, r := range dec.Refused {
			checkBounded(t, tc.name, r)
		}
		if tc.whole != okEvent {
			if refused == nil || refused.Reason != tc.whole || tc.field != "" && refused.Field != tc.field {
				t.Errorf("%s: refused %v, want the request refused %v on %q", tc.name, refused, tc.whole, tc.field)
			}
			if dec.Events != nil {
				t.Errorf("%s: %d events beside the request's refusal", tc.name, len(dec.Events))
			}
			continue
		}
		if refused != nil {
			t.Errorf("%s: the request refused: %v", tc.name, refused)
			continue
		}
		if tc.event == okEvent {
			if dec.Refused != nil {
				t.Errorf("%s: refused %v", tc.name, dec.Refused[0])
			}
			continue
		}
		if dec.Refused == nil || len(dec.Refused) != len(dec.Events) || dec.Refused[tc.index] == nil {
			t.Errorf("%s: no refusal at %d: %+v", tc.name, tc.index, dec)
			continue
		}
		if r := dec.Refused[tc.index]; r.Reason != tc.event || tc.field != "" && r.Field != tc.field {
			t.Errorf("%s: refused %v on %q, want %v on %q", tc.name, r.Reason, r.Field, tc.event, tc.field)
		}
		for i, r := range dec.Refused {
			if i != tc.index && r != nil {
				t.Errorf("%s: event %d refused too: %v", tc.name, i, r)
			}
		}
	}
}

// checkBounded fails t when a refusal quotes an unbounded part of the
// input.
func checkBounded(t *testing.T, name string, r *cloudevents.Refusal) {
	t.Helper()
	if r == nil {
		return
	}
	if len(r.Field) > 64 || len(r.Msg) > 512 {
		t.Errorf("%s: refusal of %d+%d bytes: %.200s", name, len(r.Field), len(r.Msg), r.Msg)
	}
}
