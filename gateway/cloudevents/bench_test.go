package cloudevents_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/gateway/cloudevents"
)

// benchEvent is a structured event of about 1 KiB: the required and
// optional attributes, three extensions and a JSON object of data.
func benchEvent(i int) string {
	return fmt.Sprintf(`{"specversion":"1.0","id":"9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dc%03d","source":"https://shop.example.com/orders",`+
		`"type":"com.example.order.placed","subject":"order/%d","time":"2026-04-30T10:00:00.123Z",`+
		`"datacontenttype":"application/json","tenant":"acme","attempt":1,"partitionkey":"customer-42",`+
		`"data":{"order_id":"%d","customer":{"id":"customer-42","email":"ada@example.com","name":"Ada Lovelace"},`+
		`"items":[%s],"currency":"EUR","total":"129.90","note":"%s"}}`,
		i, i, i, strings.TrimSuffix(strings.Repeat(`{"sku":"SKU-000123","quantity":2,"price":"19.95"},`, 6), ","), strings.Repeat("n", 276))
}

// BenchmarkDecode decodes a structured event of about 1 KiB, a batch of
// ten of them, and the first as a binary-mode request.
func BenchmarkDecode(b *testing.B) {
	l := cloudevents.NewDefaultLimits()
	one := benchEvent(0)
	events := make([]string, 10)
	for i := range events {
		events[i] = benchEvent(i)
	}
	batch := "[" + strings.Join(events, ",") + "]"
	binaryHeader := http.Header{
		"Ce-Specversion": {"1.0"}, "Ce-Id": {"9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dc000"}, "Ce-Source": {"https://shop.example.com/orders"},
		"Ce-Type": {"com.example.order.placed"}, "Ce-Subject": {"order/0"}, "Ce-Time": {"2026-04-30T10:00:00.123Z"},
		"Ce-Tenant": {"acme"}, "Ce-Attempt": {"1"}, "Ce-Partitionkey": {"customer-42"}, "Content-Type": {"application/json"},
	}
	data := one[strings.Index(one, `"data":`)+len(`"data":`) : len(one)-1]
	for _, bc := range []struct {
		name   string
		header http.Header
		body   string
		events int
	}{
		{"structured", http.Header{"Content-Type": {"application/cloudevents+json"}}, one, 1},
		{"batch10", http.Header{"Content-Type": {"application/cloudevents-batch+json"}}, batch, 10},
		{"binary", binaryHeader, data, 1},
	} {
		body := []byte(bc.body)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				dec, refused := cloudevents.Decode(bc.header, body, l)
				if refused != nil || dec.Refused != nil || len(dec.Events) != bc.events {
					b.Fatalf("refused %v %v", refused, dec.Refused)
				}
			}
		})
	}
}
