package cloudevents_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	kafkasarama "github.com/cloudevents/sdk-go/protocol/kafka_sarama/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/gateway/cloudevents"
)

// readKafka reads a record's headers and value as the CloudEvents Go SDK's
// Kafka binding does: kafka_sarama.NewMessage is what its consumer builds
// from each record (NewMessageFromConsumerMessage, less the sarama type).
func readKafka(t *testing.T, hs []kgo.RecordHeader, value []byte) *event.Event {
	t.Helper()
	m := make(map[string][]byte, len(hs))
	var contentType string
	for _, h := range hs {
		k := strings.ToLower(h.Key)
		if k == "content-type" {
			contentType = string(h.Value)
		}
		m[k] = h.Value
	}
	msg := kafkasarama.NewMessage(value, contentType, m)
	if msg.ReadEncoding() != binding.EncodingBinary {
		t.Fatalf("the SDK reads the record as %v, not binary mode", msg.ReadEncoding())
	}
	e, err := binding.ToEvent(context.Background(), msg)
	if err != nil {
		t.Fatalf("the SDK does not read the record: %v", err)
	}
	return e
}

// TestRecordHeadersReadBySDK: the ce_* headers RecordHeaders gives an
// event read back, by the CloudEvents Go SDK's Kafka binding, as the same
// event, its data the record's value (the contract message in protobuf
// binary).
func TestRecordHeadersReadBySDK(t *testing.T) {
	l := cloudevents.NewDefaultLimits()
	value := []byte{0x0a, 0x04, 0x31, 0x30, 0x30, 0x31} // what the gateway publishes
	for _, tc := range []struct {
		name   string
		header http.Header
		body   string
	}{
		{"structured, every attribute", http.Header{"Content-Type": {"application/cloudevents+json"}},
			`{"specversion":"1.0","id":"o-1","source":"https://shop.example.com/orders","type":"com.example.order.placed",
			"subject":"order/1001","time":"2026-04-30T10:00:00.123456789+02:00","dataschema":"https://schemas.example.com/o.json",
			"datacontenttype":"application/json","tenant":"acme","attempt":3,"replay":false,"partitionkey":"customer-42",
			"note":"ünïcode, 100%","data":{"order_id":"1001"}}`},
		{"binary, the minimum", http.Header{"Ce-Specversion": {"1.0"}, "Ce-Id": {"b-1"}, "Ce-Source": {"/s"},
			"Ce-Type": {"com.example.t"}, "Content-Type": {"application/protobuf"}}, "\x0a\x01x"},
	} {
		dec, refused := cloudevents.Decode(tc.header, []byte(tc.body), l)
		if refused != nil || dec.Refused != nil {
			t.Fatalf("%s: refused %v %v", tc.name, refused, dec.Refused)
		}
		e := &dec.Events[0]
		hs := cloudevents.RecordHeaders(e)
		n := 0
		for _, h := range hs {
			n += len(h.Key) + len(h.Value)
		}
		if n > l.RecordHeaderBytes() {
			t.Errorf("%s: %d header bytes, over the bound %d", tc.name, n, l.RecordHeaderBytes())
		}
		got := readKafka(t, hs, value)
		if err := got.Validate(); err != nil {
			t.Errorf("%s: the SDK calls the event invalid: %v", tc.name, err)
		}
		if got.SpecVersion() != "1.0" || got.ID() != e.ID || got.Source() != e.Source || got.Type() != e.Type ||
			got.Subject() != e.Subject || got.DataSchema() != e.DataSchema || !got.Time().Equal(e.Time) {
			t.Errorf("%s: the SDK read\n%v\nfrom the headers of\n%+v", tc.name, got, *e)
		}
		if got.DataContentType() != "application/protobuf" || !bytes.Equal(got.Data(), value) {
			t.Errorf("%s: data %q as %q, want the record's value as application/protobuf", tc.name, got.Data(), got.DataContentType())
		}
		exts := got.Extensions()
		if len(exts) != len(e.Extensions) {
			t.Errorf("%s: extensions %v, want %v", tc.name, exts, e.Extensions)
		}
		for k, v := range e.Extensions {
			s, err := types.Format(exts[k])
			if err != nil || s != v {
				t.Errorf("%s: extension %s %q (%v), want %q", tc.name, k, s, err, v)
			}
		}
	}
}

// TestRecordHeadersSpecExample: the Kafka binding's own binary-mode
// example (section 3.2.5), decoded from the HTTP binding and given its
// ce_* headers, has the example's headers.
func TestRecordHeadersSpecExample(t *testing.T) {
	h := http.Header{
		"Ce-Specversion": {"1.0"}, "Ce-Type": {"com.example.someevent"}, "Ce-Source": {"/mycontext/subcontext"},
		"Ce-Id": {"1234-1234-1234"}, "Ce-Time": {"2018-04-05T03:56:24Z"}, "Content-Type": {"application/protobuf"},
	}
	dec, refused := cloudevents.Decode(h, []byte{0x08, 0x01}, cloudevents.NewDefaultLimits())
	if refused != nil || dec.Refused != nil {
		t.Fatalf("refused %v %v", refused, dec.Refused)
	}
	want := []string{
		"ce_specversion", "1.0",
		"ce_id", "1234-1234-1234",
		"ce_source", "/mycontext/subcontext",
		"ce_type", "com.example.someevent",
		"ce_time", "2018-04-05T03:56:24Z",
		"content-type", "application/protobuf",
	}
	hs := cloudevents.RecordHeaders(&dec.Events[0])
	if len(hs) != len(want)/2 {
		t.Fatalf("headers %v, want %v", hs, want)
	}
	for i, h := range hs {
		if h.Key != want[2*i] || string(h.Value) != want[2*i+1] {
			t.Errorf("header %d: %s=%q, want %s=%q", i, h.Key, h.Value, want[2*i], want[2*i+1])
		}
	}
}
