package envelope

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// FuzzEnvelopeRules holds Valid to protovalidate's verdict on the
// Event message's rules, which it stands in for. attrs is split into keys
// and values at NUL bytes, pairs by pairs.
func FuzzEnvelopeRules(f *testing.F) {
	reg, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		f.Fatal(err)
	}
	long := func(c string, n int) string { return strings.Repeat(c, n) }
	for _, s := range []struct {
		id, typ, key string
		at           bool
		payload      uint8
		attrs        string
	}{
		{"ord-1", "examples.shop.v1.OrderPlaced", "", true, 1, ""},
		{"a.b_c:d-e", "t", long("k", 256), true, 2, "env\x00prod\x00region\x00eu"},
		{"evt_1NG8Du2eZvKYlo2CUI79vXWy", "stripe.v1.Event", "cus_9s6XKzkNRiz8i3", true, 2, ""},
		{"msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", "t", "", true, 2, ""},
		{"_evt_1", "t", "", true, 2, ""},
		{"evt_", "t", "", true, 1, ""},
		{"", "t", "", true, 1, ""},
		{"-x", "t", "", true, 1, ""},
		{"x y", "t", "", true, 1, ""},
		{long("a", 128), long("t", 200), "", true, 1, ""},
		{long("a", 129), "t", "", true, 1, ""},
		{"a", long("é", 200), long("é", 256), true, 1, ""},
		{"a", long("é", 201), "", true, 1, ""},
		{"a", "t", long("é", 257), true, 1, ""},
		{"a", "\xff", "\xff\xfe", true, 1, ""},
		{"a", "", "", true, 1, ""},
		{"a", "t", "", false, 1, ""},
		{"a", "t", "", true, 0, ""},
		{"a", "t", "", true, 1, "Env\x00x"},
		{"a", "t", "", true, 1, "\x00x"},
		{"a", "t", "", true, 1, "_x\x00x"},
		{"a", "t", "", true, 1, long("k", 64) + "\x00" + long("v", 256)},
		{"a", "t", "", true, 1, long("k", 65) + "\x00v"},
		{"a", "t", "", true, 1, "k\x00" + long("ü", 257)},
		{"a", "t", "", true, 1, strings.Repeat("k\x00v\x00", 17)},
	} {
		f.Add(s.id, s.typ, s.key, s.at, s.payload, s.attrs)
	}
	f.Fuzz(func(t *testing.T, id, typ, key string, at bool, payload uint8, attrs string) {
		ev := &ingestv1.Event{Id: id, Type: typ, PartitionKey: key}
		if at {
			ev.OccurredAt = &timestamppb.Timestamp{Seconds: 1767225600}
		}
		switch payload % 3 {
		case 1:
			ev.Payload = &ingestv1.Event_Binary{}
		case 2:
			ev.Payload = &ingestv1.Event_Json{Json: "{}"}
		}
		if attrs != "" {
			parts := strings.Split(attrs, "\x00")
			ev.Attributes = map[string]string{}
			for i := 0; i < len(parts); i += 2 {
				v := ""
				if i+1 < len(parts) {
					v = parts[i+1]
				}
				ev.Attributes[parts[i]] = v
			}
		}
		fast := Valid(ev)
		err := reg.Validate(ev)
		if fast != (err == nil) {
			t.Fatalf("Valid = %v, protovalidate: %v", fast, err)
		}
	})
}
