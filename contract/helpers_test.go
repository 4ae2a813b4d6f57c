package contract_test

import (
	"os"
	"path/filepath"
	"testing"

	identityv1 "github.com/sluicehq/sluice/gen/examples/identity/v1"
	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	shopv1 "github.com/sluicehq/sluice/gen/examples/shop/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/contract"
)

const (
	imagePath    = "../examples/contracts.binpb"
	shopType     = "examples.shop.v1.OrderPlaced"
	identityType = "examples.identity.v1.UserProfileUpdated"
	logsType     = "examples.logs.v1.LogLine"
)

func exampleTypes() []string { return []string{shopType, identityType, logsType} }

func readImage(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile(imagePath)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func readSet(tb testing.TB) *descriptorpb.FileDescriptorSet {
	tb.Helper()
	set := new(descriptorpb.FileDescriptorSet)
	if err := proto.Unmarshal(readImage(tb), set); err != nil {
		tb.Fatal(err)
	}
	return set
}

func marshal(tb testing.TB, m proto.Message) []byte {
	tb.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func loadExamples(tb testing.TB, opts ...contract.Option) *contract.Registry {
	tb.Helper()
	r, err := contract.LoadFile(imagePath, exampleTypes(), opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

func lookup(tb testing.TB, r *contract.Registry, typ string) *contract.Contract {
	tb.Helper()
	c, ok := r.Lookup(typ)
	if !ok {
		tb.Fatalf("Lookup(%q): not found", typ)
	}
	return c
}

// fixture reads a JSON example from testdata.
func fixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// fixtures maps each example type to its JSON fixture.
func fixtures() map[string]string {
	return map[string]string{
		shopType:     "order_placed.json",
		identityType: "user_profile_updated.json",
		logsType:     "log_line.json",
	}
}

// The valid* functions build a valid event of each example contract with
// the generated types, for tests to break one rule at a time.

func validOrder() *shopv1.OrderPlaced {
	return &shopv1.OrderPlaced{
		OrderId:  "7f3c2a9e-5b1d-4c8e-9a6f-2d4b8e1c3f70",
		Customer: &shopv1.Customer{CustomerId: "cus_8HkQ2mZx", Email: "ada@example.com"},
		Items: []*shopv1.LineItem{
			{Sku: "BOOK-0451", Quantity: 2, UnitPriceCents: 1899},
			{Sku: "MUG-CLASSIC-12", Quantity: 1, UnitPriceCents: 1250},
		},
		Currency:   "EUR",
		TotalCents: 5048,
		ShippingAddress: &shopv1.Address{
			Line1: "12 Analytical Engine Way", City: "London", PostalCode: "NW1 6XE", CountryCode: "GB",
		},
		PaymentMethod: shopv1.PaymentMethod_PAYMENT_METHOD_CARD,
		Note:          "leave with the concierge",
	}
}

func validProfile() *identityv1.UserProfileUpdated {
	return &identityv1.UserProfileUpdated{
		UserId:        "3b8f6c1e-2a4d-4f9b-8e7a-1c5d9f0b6a24",
		Email:         "grace@example.org",
		DisplayName:   "Grace Hopper",
		Locale:        "en-US",
		Phone:         "+14155550123",
		ChangedFields: []string{"display_name", "consent"},
		Consent: &identityv1.Consent{
			EmailMarketing: true,
			SmsMarketing:   true,
			Source:         identityv1.ConsentSource_CONSENT_SOURCE_SETTINGS,
		},
	}
}

func validLogLine() *logsv1.LogLine {
	return &logsv1.LogLine{
		Service:   "checkout-api",
		Severity:  logsv1.Severity_SEVERITY_ERROR,
		Message:   "payment authorization failed",
		Timestamp: &timestamppb.Timestamp{Seconds: 1742000000, Nanos: 589000000},
		TraceId:   "4bf92f3577b34da6a3ce929d0e0e4736",
		SpanId:    "00f067aa0ba902b7",
		Host:      "10.0.3.17",
		Labels:    map[string]string{"region": "eu_west_1", "env": "production"},
		Source:    &logsv1.Source{File: "authorize.go", Line: 214, Function: "Authorize"},
	}
}

func validExamples() map[string]proto.Message {
	return map[string]proto.Message{
		shopType:     validOrder(),
		identityType: validProfile(),
		logsType:     validLogLine(),
	}
}

func toJSON(tb testing.TB, m proto.Message) []byte {
	tb.Helper()
	b, err := protojson.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
