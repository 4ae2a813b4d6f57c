package record

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func testEvent() *Event {
	return &Event{
		Topic:       EventTopic("order.created"),
		Key:         []byte("customer-7"),
		Value:       []byte("\x0a\x03abc"),
		ID:          "01J9Z8",
		Type:        "order.created",
		Source:      "shop",
		OccurredAt:  time.Date(2026, 3, 1, 12, 0, 0, 5, time.FixedZone("CET", 3600)),
		IngestedAt:  time.Date(2026, 3, 1, 11, 0, 1, 0, time.UTC),
		Fingerprint: "sha256:abc",
		Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		Tracestate:  "rojo=00f067aa0ba902b7",
		Attributes:  map[string]string{"zone": "b", "channel": "web", "a": ""},
	}
}

func TestNewEvent(t *testing.T) {
	e := testEvent()
	r := NewEvent(e)
	want := []kgo.RecordHeader{
		{Key: "sluice-event-id", Value: []byte("01J9Z8")},
		{Key: "sluice-event-type", Value: []byte("order.created")},
		{Key: "sluice-source", Value: []byte("shop")},
		{Key: "sluice-occurred-at", Value: []byte("2026-03-01T11:00:00.000000005Z")},
		{Key: "sluice-ingested-at", Value: []byte("2026-03-01T11:00:01.000000000Z")},
		{Key: "sluice-schema-fingerprint", Value: []byte("sha256:abc")},
		{Key: "traceparent", Value: []byte(e.Traceparent)},
		{Key: "tracestate", Value: []byte("rojo=00f067aa0ba902b7")},
		{Key: "sluice-attr-a", Value: []byte("")},
		{Key: "sluice-attr-channel", Value: []byte("web")},
		{Key: "sluice-attr-zone", Value: []byte("b")},
	}
	if !reflect.DeepEqual(r.Headers, want) {
		t.Errorf("headers\n got %q\nwant %q", r.Headers, want)
	}
	if r.Topic != "ingest.order.created" || string(r.Key) != "customer-7" || string(r.Value) != string(e.Value) || !r.Timestamp.IsZero() {
		t.Errorf("record %+v", r)
	}
	// Deterministic: the same event gives the same headers every time,
	// whatever the map's iteration order.
	for range 20 {
		if got := NewEvent(e).Headers; !reflect.DeepEqual(got, want) {
			t.Fatalf("headers changed between calls: %q", got)
		}
	}
	// Header values do not share spare capacity: appending to one cannot
	// change the next.
	_ = append(r.Headers[0].Value, 'X')
	if string(r.Headers[1].Value) != "order.created" {
		t.Errorf("appending to a header value changed the next one: %q", r.Headers[1].Value)
	}
}

func TestNewEventMinimal(t *testing.T) {
	r := NewEvent(&Event{Topic: "t", ID: "id-1", Type: "x"})
	if string(r.Key) != "id-1" {
		t.Errorf("key %q, want the event id", r.Key)
	}
	for _, h := range r.Headers {
		if h.Key == HeaderTraceparent || h.Key == HeaderTracestate || strings.HasPrefix(h.Key, AttributeHeaderPrefix) {
			t.Errorf("unexpected header %q", h.Key)
		}
	}
	if len(r.Headers) != 6 {
		t.Errorf("%d headers, want 6: %q", len(r.Headers), r.Headers)
	}
}

func TestParseEventRoundTrip(t *testing.T) {
	for _, e := range []*Event{
		testEvent(),
		{Topic: "t", ID: "id", Type: "x"}, // zero times, no traceparent, no attributes
	} {
		h, err := ParseEvent(NewEvent(e))
		if err != nil {
			t.Fatalf("ParseEvent: %v", err)
		}
		want := EventHeaders{
			ID: e.ID, Type: e.Type, Source: e.Source,
			OccurredAt: e.OccurredAt.UTC(), IngestedAt: e.IngestedAt.UTC(),
			Fingerprint: e.Fingerprint, Traceparent: e.Traceparent, Tracestate: e.Tracestate, Attributes: e.Attributes,
		}
		if !reflect.DeepEqual(h, want) {
			t.Errorf("ParseEvent\n got %+v\nwant %+v", h, want)
		}
	}
}

func TestParseEventErrors(t *testing.T) {
	valid := NewEvent(testEvent()).Headers
	without := func(name string) []kgo.RecordHeader {
		var hs []kgo.RecordHeader
		for _, h := range valid {
			if h.Key != name {
				hs = append(hs, h)
			}
		}
		return hs
	}
	with := func(name, value string) []kgo.RecordHeader {
		return append(without(name), kgo.RecordHeader{Key: name, Value: []byte(value)})
	}
	for _, tc := range []struct {
		name    string
		headers []kgo.RecordHeader
		header  string
		err     error
	}{
		{"no headers", nil, HeaderEventID, errHeaderMissing},
		{"missing id", without(HeaderEventID), HeaderEventID, errHeaderMissing},
		{"missing type", without(HeaderEventType), HeaderEventType, errHeaderMissing},
		{"missing source", without(HeaderSource), HeaderSource, errHeaderMissing},
		{"missing occurred-at", without(HeaderOccurredAt), HeaderOccurredAt, errHeaderMissing},
		{"missing ingested-at", without(HeaderIngestedAt), HeaderIngestedAt, errHeaderMissing},
		{"missing fingerprint", without(HeaderFingerprint), HeaderFingerprint, errHeaderMissing},
		{"empty id", with(HeaderEventID, ""), HeaderEventID, errHeaderEmpty},
		{"empty type", with(HeaderEventType, ""), HeaderEventType, errHeaderEmpty},
		{"repeated id", append(valid[:len(valid):len(valid)], kgo.RecordHeader{Key: HeaderEventID, Value: []byte("other")}), HeaderEventID, errHeaderRepeated},
		{"repeated traceparent", append(valid[:len(valid):len(valid)], kgo.RecordHeader{Key: HeaderTraceparent}), HeaderTraceparent, errHeaderRepeated},
		{"repeated attribute", append(valid[:len(valid):len(valid)], kgo.RecordHeader{Key: "sluice-attr-zone"}), "sluice-attr-zone", errHeaderRepeated},
		{"garbled occurred-at", with(HeaderOccurredAt, "yesterday"), HeaderOccurredAt, nil},
		{"garbled ingested-at", with(HeaderIngestedAt, "2026-13-01T00:00:00Z"), HeaderIngestedAt, nil},
		{"occurred-at before year 0 in UTC", with(HeaderOccurredAt, "0000-01-01T00:00:00+00:01"), HeaderOccurredAt, errTimeRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEvent(&kgo.Record{Headers: tc.headers})
			var he *HeaderError
			if !errors.As(err, &he) || he.Header != tc.header {
				t.Fatalf("got %v, want a *HeaderError for %s", err, tc.header)
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("got %v, want %v", err, tc.err)
			}
		})
	}
}

func TestParseEventIgnoresOthers(t *testing.T) {
	r := NewEvent(testEvent())
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: "dlq-error-class", Value: []byte("permanent")})
	if _, err := ParseEvent(r); err != nil {
		t.Fatalf("ParseEvent with a foreign header: %v", err)
	}
}

// FuzzParseEvent checks that ParseEvent never panics and that what it
// accepts survives NewEvent unchanged.
func FuzzParseEvent(f *testing.F) {
	f.Add("id", "type", "src", "2026-03-01T11:00:00.000000005Z", "2026-03-01T11:00:00Z", "fp", "tp", "ts", "k", "v")
	f.Add("", "", "", "", "", "", "", "", "", "")
	f.Add("id", "t", "s", "2026-03-01T11:00:00+01:00", "0001-01-01T00:00:00Z", "", "", "", "", "")
	f.Fuzz(func(t *testing.T, id, typ, src, occurred, ingested, fp, tp, ts, attrKey, attrValue string) {
		r := &kgo.Record{Headers: []kgo.RecordHeader{
			{Key: HeaderEventID, Value: []byte(id)},
			{Key: HeaderEventType, Value: []byte(typ)},
			{Key: HeaderSource, Value: []byte(src)},
			{Key: HeaderOccurredAt, Value: []byte(occurred)},
			{Key: HeaderIngestedAt, Value: []byte(ingested)},
			{Key: HeaderFingerprint, Value: []byte(fp)},
			{Key: HeaderTraceparent, Value: []byte(tp)},
			{Key: HeaderTracestate, Value: []byte(ts)},
			{Key: AttributeHeaderPrefix + attrKey, Value: []byte(attrValue)},
		}}
		h, err := ParseEvent(r)
		if err != nil {
			return
		}
		if tp == "" {
			h.Traceparent = "" // NewEvent omits an empty traceparent; so does the comparison.
		}
		again, err := ParseEvent(NewEvent(&Event{
			ID: h.ID, Type: h.Type, Source: h.Source, OccurredAt: h.OccurredAt, IngestedAt: h.IngestedAt,
			Fingerprint: h.Fingerprint, Traceparent: h.Traceparent, Tracestate: h.Tracestate, Attributes: h.Attributes,
		}))
		if err != nil {
			t.Fatalf("re-encoded headers do not parse: %v", err)
		}
		if !reflect.DeepEqual(again, h) {
			t.Fatalf("round trip\n got %+v\nwant %+v", again, h)
		}
	})
}

// TestSizes: a record with every field at its limit takes no more
// than Limits.Sizes says in the client's count and in the spool.
// publish's TestBatchMaxBytesHoldsSizes produces it in a batch of
// exactly Sizes().Batch.
func TestSizes(t *testing.T) {
	const topic = "ingest.limits"
	// A webhook's extra headers: the scheme, the body and one signature
	// header.
	sigName := WebhookHeaderPrefix + "stripe-signature"
	l := Limits{Value: 8 << 10, ID: 128, Type: 800, Key: 1024, Source: 64, Topic: len(topic),
		Fingerprint: 39, Traceparent: 55, Tracestate: 512, Attributes: 16, AttributeKey: 64, AttributeValue: 1024,
		ExtraHeaders: 3, ExtraBytes: len(HeaderWebhookScheme) + 6 + len(HeaderWebhookBody) + 16<<10 + len(sigName) + 200}
	fill := func(n int, c byte) string { return strings.Repeat(string(c), n) }
	extra := []kgo.RecordHeader{
		{Key: HeaderWebhookScheme, Value: []byte("stripe")},
		{Key: HeaderWebhookBody, Value: make([]byte, 16<<10)},
		{Key: sigName, Value: []byte(fill(200, 'x'))},
	}
	attrs := map[string]string{}
	for i := range l.Attributes {
		attrs[fmt.Sprintf("%02d", i)+fill(l.AttributeKey-2, 'k')] = fill(l.AttributeValue, 'v')
	}
	rec := NewEvent(&Event{
		Topic: topic, Key: []byte(fill(l.Key, 'p')), Value: make([]byte, l.Value),
		ID: fill(l.ID, 'i'), Type: fill(l.Type, 't'), Source: fill(l.Source, 's'),
		OccurredAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), IngestedAt: time.Now(),
		Fingerprint: fill(l.Fingerprint, 'f'), Traceparent: fill(l.Traceparent, '0'), Tracestate: fill(l.Tracestate, 'r'), Attributes: attrs, Extra: extra,
	})
	if n := len(rec.Headers); n != 6+2+l.Attributes+len(extra) || rec.Headers[n-1].Key != sigName {
		t.Fatalf("%d headers, the last %q: the extra headers come last", n, rec.Headers[n-1].Key)
	}
	if _, err := ParseEvent(rec); err != nil {
		t.Fatalf("ParseEvent of a record with extra headers: %v", err)
	}
	sz := l.Sizes()
	got := 0
	for _, h := range rec.Headers {
		got += len(h.Key) + len(h.Value)
	}
	if got += len(rec.Key) + len(rec.Value); got > sz.Client {
		t.Errorf("client size %d, bound %d", got, sz.Client)
	}
	if got := len(AppendSpooled(nil, rec)); got > sz.Spooled || got < sz.Spooled-512 {
		t.Errorf("spooled size %d, bound %d: over it, or far off", got, sz.Spooled)
	}
}
