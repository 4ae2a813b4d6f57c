package publish

import (
	"bytes"
	"context"
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
		Topic:       DefaultTopic("order.created"),
		Key:         []byte("customer-7"),
		Value:       []byte("\x0a\x03abc"),
		ID:          "01J9Z8",
		Type:        "order.created",
		Source:      "shop",
		OccurredAt:  time.Date(2026, 3, 1, 12, 0, 0, 5, time.FixedZone("CET", 3600)),
		IngestedAt:  time.Date(2026, 3, 1, 11, 0, 1, 0, time.UTC),
		Fingerprint: "sha256:abc",
		Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		Attributes:  map[string]string{"zone": "b", "channel": "web", "a": ""},
	}
}

func TestDefaultTopic(t *testing.T) {
	if got := DefaultTopic("order.created"); got != "ingest.order.created" {
		t.Errorf("DefaultTopic = %q", got)
	}
}

func TestNewRecord(t *testing.T) {
	e := testEvent()
	r := NewRecord(e)
	want := []kgo.RecordHeader{
		{Key: "sluice-event-id", Value: []byte("01J9Z8")},
		{Key: "sluice-event-type", Value: []byte("order.created")},
		{Key: "sluice-source", Value: []byte("shop")},
		{Key: "sluice-occurred-at", Value: []byte("2026-03-01T11:00:00.000000005Z")},
		{Key: "sluice-ingested-at", Value: []byte("2026-03-01T11:00:01.000000000Z")},
		{Key: "sluice-schema-fingerprint", Value: []byte("sha256:abc")},
		{Key: "traceparent", Value: []byte(e.Traceparent)},
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
		if got := NewRecord(e).Headers; !reflect.DeepEqual(got, want) {
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

func TestNewRecordMinimal(t *testing.T) {
	r := NewRecord(&Event{Topic: "t", ID: "id-1", Type: "x"})
	if string(r.Key) != "id-1" {
		t.Errorf("key %q, want the event id", r.Key)
	}
	for _, h := range r.Headers {
		if h.Key == HeaderTraceparent || strings.HasPrefix(h.Key, AttributeHeaderPrefix) {
			t.Errorf("unexpected header %q", h.Key)
		}
	}
	if len(r.Headers) != 6 {
		t.Errorf("%d headers, want 6: %q", len(r.Headers), r.Headers)
	}
}

func TestParseHeadersRoundTrip(t *testing.T) {
	for _, e := range []*Event{
		testEvent(),
		{Topic: "t", ID: "id", Type: "x"}, // zero times, no traceparent, no attributes
	} {
		h, err := ParseHeaders(NewRecord(e))
		if err != nil {
			t.Fatalf("ParseHeaders: %v", err)
		}
		want := EventHeaders{
			ID: e.ID, Type: e.Type, Source: e.Source,
			OccurredAt: e.OccurredAt.UTC(), IngestedAt: e.IngestedAt.UTC(),
			Fingerprint: e.Fingerprint, Traceparent: e.Traceparent, Attributes: e.Attributes,
		}
		if !reflect.DeepEqual(h, want) {
			t.Errorf("ParseHeaders\n got %+v\nwant %+v", h, want)
		}
	}
}

func TestParseHeadersErrors(t *testing.T) {
	valid := NewRecord(testEvent()).Headers
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
			_, err := ParseHeaders(&kgo.Record{Headers: tc.headers})
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

func TestParseHeadersIgnoresOthers(t *testing.T) {
	r := NewRecord(testEvent())
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: "dlq-error-class", Value: []byte("permanent")})
	if _, err := ParseHeaders(r); err != nil {
		t.Fatalf("ParseHeaders with a foreign header: %v", err)
	}
}

// FuzzParseHeaders checks that ParseHeaders never panics and that what it
// accepts survives NewRecord unchanged.
func FuzzParseHeaders(f *testing.F) {
	f.Add("id", "type", "src", "2026-03-01T11:00:00.000000005Z", "2026-03-01T11:00:00Z", "fp", "tp", "k", "v")
	f.Add("", "", "", "", "", "", "", "", "")
	f.Add("id", "t", "s", "2026-03-01T11:00:00+01:00", "0001-01-01T00:00:00Z", "", "", "", "")
	f.Fuzz(func(t *testing.T, id, typ, src, occurred, ingested, fp, tp, attrKey, attrValue string) {
		r := &kgo.Record{Headers: []kgo.RecordHeader{
			{Key: HeaderEventID, Value: []byte(id)},
			{Key: HeaderEventType, Value: []byte(typ)},
			{Key: HeaderSource, Value: []byte(src)},
			{Key: HeaderOccurredAt, Value: []byte(occurred)},
			{Key: HeaderIngestedAt, Value: []byte(ingested)},
			{Key: HeaderFingerprint, Value: []byte(fp)},
			{Key: HeaderTraceparent, Value: []byte(tp)},
			{Key: AttributeHeaderPrefix + attrKey, Value: []byte(attrValue)},
		}}
		h, err := ParseHeaders(r)
		if err != nil {
			return
		}
		if tp == "" {
			h.Traceparent = "" // NewRecord omits an empty traceparent; so does the comparison.
		}
		again, err := ParseHeaders(NewRecord(&Event{
			ID: h.ID, Type: h.Type, Source: h.Source, OccurredAt: h.OccurredAt, IngestedAt: h.IngestedAt,
			Fingerprint: h.Fingerprint, Traceparent: h.Traceparent, Attributes: h.Attributes,
		}))
		if err != nil {
			t.Fatalf("re-encoded headers do not parse: %v", err)
		}
		if !reflect.DeepEqual(again, h) {
			t.Fatalf("round trip\n got %+v\nwant %+v", again, h)
		}
	})
}

// TestRecordSizes: a record with every field at its limit takes no more
// than RecordLimits.Sizes says, in the client's count, in the spool and in
// a batch: a producer whose BatchMaxBytes is exactly Sizes().Batch
// produces it.
func TestRecordSizes(t *testing.T) {
	const topic = "ingest.limits"
	l := RecordLimits{Value: 8 << 10, ID: 128, Type: 800, Key: 1024, Source: 64, Topic: len(topic),
		Fingerprint: 39, Traceparent: 55, Attributes: 16, AttributeKey: 64, AttributeValue: 1024}
	fill := func(n int, c byte) string { return strings.Repeat(string(c), n) }
	attrs := map[string]string{}
	for i := range l.Attributes {
		attrs[fmt.Sprintf("%02d", i)+fill(l.AttributeKey-2, 'k')] = fill(l.AttributeValue, 'v')
	}
	rec := NewRecord(&Event{
		Topic: topic, Key: []byte(fill(l.Key, 'p')), Value: make([]byte, l.Value),
		ID: fill(l.ID, 'i'), Type: fill(l.Type, 't'), Source: fill(l.Source, 's'),
		OccurredAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), IngestedAt: time.Now(),
		Fingerprint: fill(l.Fingerprint, 'f'), Traceparent: fill(l.Traceparent, '0'), Attributes: attrs,
	})
	sz := l.Sizes()
	if got := recordSize(rec); got > int64(sz.Client) {
		t.Errorf("client size %d, bound %d", got, sz.Client)
	}
	if got := len(AppendSpooled(nil, rec)); got > sz.Spooled || got < sz.Spooled-512 {
		t.Errorf("spooled size %d, bound %d: over it, or far off", got, sz.Spooled)
	}
	c := newCluster(t, []string{topic})
	p := newTestProducer(t, c.ListenAddrs(), func(c *Config) {
		c.BatchMaxBytes, c.Compression = int32(sz.Batch), "none"
	})
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if err := p.Publish(ctx, []*kgo.Record{rec})[0]; err != nil {
		t.Fatalf("a record at every limit, BatchMaxBytes %d: %v", sz.Batch, err)
	}
}

// FuzzAppendTime holds appendTime to time.Time.AppendFormat with
// timeLayout, which it replaces on the hot path, for any instant and zone.
func FuzzAppendTime(f *testing.F) {
	for _, s := range []struct{ sec, nsec, zone int64 }{
		{0, 0, 0},
		{1767225600, 123456789, 3600},
		{-62135596800, 0, 0},          // 0001-01-01
		{253402300799, 999999999, 0},  // 9999-12-31T23:59:59.999999999
		{253402300800, 0, 0},          // year 10000
		{-62167219200 - 1, 0, -19800}, // before year 0
		{951782400, 1, -36000},        // 2000-02-29
	} {
		f.Add(s.sec, s.nsec, s.zone)
	}
	f.Fuzz(func(t *testing.T, sec, nsec, zone int64) {
		at := time.Unix(sec, nsec%1e9).In(time.FixedZone("z", int(zone%(18*3600))))
		want := at.UTC().AppendFormat([]byte("x"), timeLayout)
		if got := appendTime([]byte("x"), at); !bytes.Equal(got, want) {
			t.Fatalf("appendTime(%v) = %q, want %q", at, got, want)
		}
	})
}
