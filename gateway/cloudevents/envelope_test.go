package cloudevents

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// TestEnvelopeRulesMatchTheContract: the attribute and partition key
// bounds the decoder refuses past are the rules of sluice.ingest.v1.Event,
// and the default MaxAttributes its max_pairs; a CloudEvents attribute
// name is always an attribute key by the key's pattern.
func TestEnvelopeRulesMatchTheContract(t *testing.T) {
	fields := (&ingestv1.Event{}).ProtoReflect().Descriptor().Fields()
	rules := func(name protoreflect.Name) *validate.FieldRules {
		t.Helper()
		r, _ := proto.GetExtension(fields.ByName(name).Options(), validate.E_Field).(*validate.FieldRules)
		if r == nil {
			t.Fatalf("Event.%s has no rules", name)
		}
		return r
	}
	attrs := rules("attributes").GetMap()
	for _, c := range []struct {
		what      string
		got, want uint64
	}{
		{"attributes key max_len", attrs.GetKeys().GetString().GetMaxLen(), maxAttributeKeyChars},
		{"attributes value max_len", attrs.GetValues().GetString().GetMaxLen(), maxAttributeValueChars},
		{"attributes max_pairs", attrs.GetMaxPairs(), uint64(NewDefaultLimits().MaxAttributes)},
		{"partition_key max_len", rules("partition_key").GetString().GetMaxLen(), maxPartitionKeyChars},
	} {
		if c.got != c.want {
			t.Errorf("Event %s is %d in the contract, %d here", c.what, c.got, c.want)
		}
	}
	if got := attrs.GetKeys().GetString().GetPattern(); got != "^[a-z0-9][a-z0-9._-]*$" {
		t.Errorf("attribute key pattern %q: CloudEvents names ([a-z0-9]+) may not all match it", got)
	}
}

// TestEnvelope: an accepted event maps to an envelope the envelope's own
// rules (protovalidate on sluice.ingest.v1.Event) accept, field by field.
func TestEnvelope(t *testing.T) {
	received := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	l := NewDefaultLimits()
	h := http.Header{"Content-Type": {"application/cloudevents+json"}}
	for _, tc := range []struct {
		name, body string
		want       *ingestv1.Event
	}{
		{
			name: "every attribute",
			body: `{"specversion":"1.0","id":"o-1","source":"https://shop.example.com","type":"com.example.order.placed",
				"subject":"order/1","time":"2026-04-30T10:00:00.5+02:00","dataschema":"https://schemas.example.com/o.json",
				"tenant":"acme","attempt":3,"replay":false,"partitionkey":"customer-7","data":{"order_id":"1"}}`,
			want: &ingestv1.Event{Id: "o-1", Type: "examples.shop.v1.OrderPlaced",
				OccurredAt: tsOf(time.Date(2026, 4, 30, 8, 0, 0, 500_000_000, time.UTC)), PartitionKey: "customer-7",
				Payload:    &ingestv1.Event_Json{Json: `{"order_id":"1"}`},
				Attributes: map[string]string{"tenant": "acme", "attempt": "3", "replay": "false"}},
		},
		{
			name: "no time: the receipt time; subject is the key",
			body: `{"specversion":"1.0","id":"o-2","source":"/s","type":"t","subject":"order/2","data_base64":"CgExEAI="}`,
			want: &ingestv1.Event{Id: "o-2", Type: "examples.shop.v1.OrderPlaced", OccurredAt: tsOf(received),
				PartitionKey: "order/2", Payload: &ingestv1.Event_Binary{Binary: []byte{0x0a, 0x01, 0x31, 0x10, 0x02}}},
		},
		{
			name: "as many extensions as an envelope holds",
			body: `{"specversion":"1.0","id":"o-3","source":"/s","type":"t","data":{},"partitionkey":"k",` + extensions(16, 256) + `}`,
		},
	} {
		dec, refused := Decode(h, []byte(tc.body), l)
		if refused != nil || dec.Refused != nil {
			t.Fatalf("%s: refused %v %v", tc.name, refused, dec.Refused)
		}
		ev := dec.Events[0].Envelope("examples.shop.v1.OrderPlaced", received)
		if err := protovalidate.Validate(ev); err != nil {
			t.Errorf("%s: the envelope's rules refuse %v: %v", tc.name, ev, err)
		}
		if tc.want != nil && !proto.Equal(ev, tc.want) {
			t.Errorf("%s: envelope\n%v\nwant\n%v", tc.name, ev, tc.want)
		}
	}
}

// extensions is n extension members e0..e(n-1), each a value of chars
// characters (two bytes each in UTF-8).
func extensions(n, chars int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"e` + string(rune('a'+i)) + `":"` + strings.Repeat("é", chars) + `"`
	}
	return strings.Join(parts, ",")
}

func tsOf(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }
