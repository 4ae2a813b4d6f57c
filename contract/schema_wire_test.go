package contract

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/jsonschematest"
)

const (
	logType      = "examples.logs.v1.LogLine"
	orderType    = "examples.shop.v1.OrderPlaced"
	profileType  = "examples.identity.v1.UserProfileUpdated"
	readmeLogTS  = "2026-12-01T10:00:00Z"
	orderPayload = `"order_id":"7c9e6679-7425-40de-944b-e07fc1f90ae7","items":[{"sku":"BOOK-0451","quantity":2,"unit_price_cents":1999}],` +
		`"currency":"EUR","shipping_address":{"line1":"12 Harbour Lane","city":"Lisbon","postal_code":"1100-148","country_code":"PT"},"payment_method":"PAYMENT_METHOD_CARD"`
)

// TestJSONSchemaAdmitsWhatTheContractTakes: payloads of the example
// contracts that CheckJSON accepts are valid under their schemas, as three
// real validators read them. The first is the README's first event, whose
// host is an IP address; then a Timestamp on each day past the 28th, an
// upper-case email, and protojson's other spellings of the same values.
func TestJSONSchemaAdmitsWhatTheContractTakes(t *testing.T) {
	r, err := Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	logLine := func(fields string) string {
		return `{"service":"checkout-api","severity":"SEVERITY_INFO","message":"hello",` + fields + `}`
	}
	order := func(fields string) string { return `{` + orderPayload + `,` + fields + `}` }
	profile := func(fields string) string {
		return `{"user_id":"0b3f9c1e-5a8d-4e2b-9f61-2c7d8e4a1b90","email":"grace@example.org","display_name":"Grace H.","locale":"en-GB","changed_fields":["display_name"],` + fields + `}`
	}
	for _, tc := range []struct{ name, typ, payload string }{
		{"the README's first event", logType, logLine(`"timestamp":"` + readmeLogTS + `","host":"127.0.0.1"`)},
		{"host an IPv6 address", logType, logLine(`"timestamp":"` + readmeLogTS + `","host":"::1"`)},
		{"host an IPv6 address with a zone", logType, logLine(`"timestamp":"` + readmeLogTS + `","host":"fe80::1%eth0"`)},
		{"host upper case, a trailing dot", logType, logLine(`"timestamp":"` + readmeLogTS + `","host":"Checkout-API.Internal."`)},
		{"host a long label", logType, logLine(`"timestamp":"` + readmeLogTS + `","host":"` + strings.Repeat("a", 63) + `.example"`)},
		{"the 29th", logType, logLine(`"timestamp":"2026-01-29T08:15:02Z","host":"h"`)},
		{"the 30th, nanoseconds", logType, logLine(`"timestamp":"2026-04-30T23:59:59.123456789Z","host":"h"`)},
		{"the 31st, an offset", logType, logLine(`"timestamp":"2026-12-31T10:00:00+02:00","host":"h"`)},
		{"a leap day", logType, logLine(`"timestamp":"2024-02-29T00:00:00Z","host":"h"`)},
		{"a one-digit hour, a comma", logType, logLine(`"timestamp":"2026-01-02T3:04:05,5Z","host":"h"`)},
		{"JSON names, numbers as strings, an enum by number", logType,
			`{"service":"s","severity":4,"message":"m","timestamp":"` + readmeLogTS + `","host":"h","traceId":"4bf92f3577b34da6a3ce929d0e0e4736","source":{"line":"212"}}`},
		{"null for absent", logType, logLine(`"timestamp":"` + readmeLogTS + `","host":"h","labels":null,"source":null,"trace_id":null`)},
		{"a message of 3000 characters", logType,
			`{"service":"s","severity":"SEVERITY_INFO","message":"` + strings.Repeat("x", 3000) + `","timestamp":"` + readmeLogTS + `","host":"h"}`},
		{"an upper-case email", orderType, order(`"customer":{"customer_id":"c1","email":"Ada.Lovelace@Example.COM"},"total_cents":5248`)},
		{"an email the HTML standard allows", orderType, order(`"customer":{"customer_id":"c1","email":"a..b+tag@localhost"},"total_cents":5248`)},
		{"int64 as a string, in JSON names", orderType, order(`"customer":{"customerId":"c1","email":"a@b.c"},"totalCents":"5248"`)},
		{"int64 with an exponent, an enum number", orderType,
			`{"order_id":"7c9e6679-7425-40de-944b-e07fc1f90ae7","customer":{"customer_id":"c1","email":"a@b.c"},"items":[{"sku":"BOOK-0451","quantity":"2"}],` +
				`"currency":"EUR","total_cents":5.248e3,"shipping_address":{"line1":"l","city":"c","postal_code":"12","country_code":"PT"},"paymentMethod":1}`},
		{"an upper-case UUID, a URN", profileType,
			`{"user_id":"0B3F9C1E-5A8D-4E2B-9F61-2C7D8E4A1B90","email":"grace@example.org","display_name":"G","locale":"en","changed_fields":["email"],"avatar_url":"urn:isbn:0451450523"}`},
		{"empty and null where the rule ignores zero", profileType, profile(`"phone":"","avatarUrl":null,"consent":null`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := r.Lookup(tc.typ)
			if _, err := c.CheckJSON([]byte(tc.payload)); err != nil {
				t.Fatalf("the contract refuses %s; the case is wrong: %v", tc.payload, err)
			}
			defs := map[string]*Schema{}
			root, err := c.JSONSchema(defs, "#/$defs/")
			if err != nil {
				t.Fatalf("JSONSchema: %v", err)
			}
			for _, v := range jsonschematest.Compile(t, SchemaDocument(t, root, defs), "") {
				if err := v.Validate([]byte(tc.payload)); err != nil {
					t.Errorf("the schema refuses %s, which the contract accepts: %v", shorten(tc.payload), err)
				}
			}
		})
	}
}

// shorten shortens a payload for a message.
func shorten(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
