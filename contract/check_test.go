package contract_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	identityv1 "github.com/sluicehq/sluice/gen/examples/identity/v1"
	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	shopv1 "github.com/sluicehq/sluice/gen/examples/shop/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/contract"
)

func TestCheckAcceptsValidEvents(t *testing.T) {
	r := loadExamples(t)
	for typ, want := range validExamples() {
		c := lookup(t, r, typ)
		t.Run(typ+"/fixture", func(t *testing.T) {
			out, err := c.CheckJSON(fixture(t, fixtures()[typ]))
			if err != nil {
				t.Fatalf("CheckJSON: %v", err)
			}
			// The output is the binary form, accepted as such.
			if _, err := c.CheckBinary(out); err != nil {
				t.Fatalf("CheckBinary(CheckJSON output): %v", err)
			}
		})
		t.Run(typ+"/json", func(t *testing.T) {
			out, err := c.CheckJSON(toJSON(t, want))
			if err != nil {
				t.Fatalf("CheckJSON: %v", err)
			}
			got := want.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(out, got); err != nil {
				t.Fatalf("output does not decode: %v", err)
			}
			if !proto.Equal(got, want) {
				t.Fatalf("output decodes to %v, want %v", got, want)
			}
			if !bytes.Equal(out, marshal(t, want)) {
				t.Fatal("output is not the deterministic binary of the message")
			}
		})
		t.Run(typ+"/binary", func(t *testing.T) {
			in := marshal(t, want)
			out, err := c.CheckBinary(in)
			if err != nil {
				t.Fatalf("CheckBinary: %v", err)
			}
			if len(out) != len(in) || &out[0] != &in[0] {
				t.Fatal("CheckBinary did not return its input")
			}
		})
	}
}

func TestCheckJSONAcceptsBothFieldNameForms(t *testing.T) {
	c := lookup(t, loadExamples(t), logsType)
	for _, field := range []string{"trace_id", "traceId"} {
		in := `{"service":"api","severity":"SEVERITY_INFO","message":"m","timestamp":"2025-01-01T00:00:00Z","host":"h","` +
			field + `":"4bf92f3577b34da6a3ce929d0e0e4736"}`
		if _, err := c.CheckJSON([]byte(in)); err != nil {
			t.Errorf("%s: %v", field, err)
		}
	}
}

// violationCase breaks exactly one rule of a valid event.
type violationCase struct {
	name  string
	msg   proto.Message
	field string
	rule  string
}

func violationCases() map[string][]violationCase {
	order := func(f func(*shopv1.OrderPlaced)) proto.Message { m := validOrder(); f(m); return m }
	profile := func(f func(*identityv1.UserProfileUpdated)) proto.Message { m := validProfile(); f(m); return m }
	logLine := func(f func(*logsv1.LogLine)) proto.Message { m := validLogLine(); f(m); return m }
	return map[string][]violationCase{
		shopType: {
			{"bad email", order(func(m *shopv1.OrderPlaced) { m.Customer.Email = "not-an-email" }), "customer.email", "string.email"},
			{"no items", order(func(m *shopv1.OrderPlaced) { m.Items = nil }), "items", "repeated.min_items"},
			{"lower-case currency", order(func(m *shopv1.OrderPlaced) { m.Currency = "eur" }), "currency", "string.pattern"},
			{"free order by card", order(func(m *shopv1.OrderPlaced) { m.TotalCents = 0 }), "", "order_placed.free_order_needs_invoice"},
			{"bad sku in second item", order(func(m *shopv1.OrderPlaced) { m.Items[1].Sku = "x" }), "items[1].sku", "string.pattern"},
			{"no customer", order(func(m *shopv1.OrderPlaced) { m.Customer = nil }), "customer", "required"},
			{"order id not a uuid", order(func(m *shopv1.OrderPlaced) { m.OrderId = "42" }), "order_id", "string.uuid"},
			{"payment unspecified", order(func(m *shopv1.OrderPlaced) { m.PaymentMethod = 0 }), "payment_method", "enum.not_in"},
			{"payment undefined", order(func(m *shopv1.OrderPlaced) { m.PaymentMethod = 9 }), "payment_method", "enum.defined_only"},
			{"quantity zero", order(func(m *shopv1.OrderPlaced) { m.Items[0].Quantity = 0 }), "items[0].quantity", "uint32.gte_lte"},
		},
		identityType: {
			{"user id not a uuid", profile(func(m *identityv1.UserProfileUpdated) { m.UserId = "nope" }), "user_id", "string.uuid"},
			{"changed fields repeat", profile(func(m *identityv1.UserProfileUpdated) { m.ChangedFields = []string{"email", "email"} }), "changed_fields", "repeated.unique"},
			{"sms consent without phone", profile(func(m *identityv1.UserProfileUpdated) { m.Phone = "" }), "", "user_profile_updated.sms_consent_needs_phone"},
			{"changed field not allowed", profile(func(m *identityv1.UserProfileUpdated) { m.ChangedFields = []string{"password"} }), "changed_fields[0]", "string.in"},
			{"no changed fields", profile(func(m *identityv1.UserProfileUpdated) { m.ChangedFields = nil }), "changed_fields", "repeated.min_items"},
			{"bad locale", profile(func(m *identityv1.UserProfileUpdated) { m.Locale = "english" }), "locale", "string.pattern"},
			{"consent source undefined", profile(func(m *identityv1.UserProfileUpdated) { m.Consent.Source = 42 }), "consent.source", "enum.defined_only"},
		},
		logsType: {
			{"severity unspecified", logLine(func(m *logsv1.LogLine) { m.Severity = 0 }), "severity", "enum.not_in"},
			{"severity undefined", logLine(func(m *logsv1.LogLine) { m.Severity = 42 }), "severity", "enum.defined_only"},
			{"trace id upper-case", logLine(func(m *logsv1.LogLine) { m.TraceId = strings.ToUpper(m.TraceId) }), "trace_id", "string.pattern"},
			{"label key with dash", logLine(func(m *logsv1.LogLine) { m.Labels["Bad-Key"] = "v" }), `labels["Bad-Key"]`, "string.pattern"},
			{"no timestamp", logLine(func(m *logsv1.LogLine) { m.Timestamp = nil }), "timestamp", "required"},
			{"host not an address", logLine(func(m *logsv1.LogLine) { m.Host = "not a host!" }), "host", "string.address"},
			{"source line too big", logLine(func(m *logsv1.LogLine) { m.Source.Line = 20000000 }), "source.line", "uint32.lte"},
			{"empty message", logLine(func(m *logsv1.LogLine) { m.Message = "" }), "message", "string.min_len"},
		},
	}
}

func TestCheckReportsViolations(t *testing.T) {
	r := loadExamples(t)
	for typ, cases := range violationCases() {
		c := lookup(t, r, typ)
		for _, tc := range cases {
			forms := map[string]func() ([]byte, error){
				"json":   func() ([]byte, error) { return c.CheckJSON(toJSON(t, tc.msg)) },
				"binary": func() ([]byte, error) { return c.CheckBinary(marshal(t, tc.msg)) },
			}
			for form, check := range forms {
				t.Run(typ+"/"+tc.name+"/"+form, func(t *testing.T) {
					out, err := check()
					if out != nil {
						t.Errorf("got output %q with an error", out)
					}
					var verr *contract.ViolationError
					if !errors.As(err, &verr) {
						t.Fatalf("got %v, want a *ViolationError", err)
					}
					if len(verr.Violations) != 1 {
						t.Fatalf("got violations %v, want exactly one", verr.Violations)
					}
					v := verr.Violations[0]
					if v.Field != tc.field || v.Rule != tc.rule {
						t.Fatalf("got field %q rule %q, want field %q rule %q", v.Field, v.Rule, tc.field, tc.rule)
					}
					if v.Message == "" {
						t.Error("violation has no message")
					}
				})
			}
		}
	}
}

func TestViolationErrorListsAll(t *testing.T) {
	c := lookup(t, loadExamples(t), shopType)
	m := validOrder()
	m.Currency = "eur"
	m.Customer.Email = "nope"
	_, err := c.CheckBinary(marshal(t, m))
	var verr *contract.ViolationError
	if !errors.As(err, &verr) || len(verr.Violations) != 2 {
		t.Fatalf("got %v, want two violations", err)
	}
	for _, want := range []string{"customer.email", "currency", "string.email", "string.pattern"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// unknownField is field 99 as a varint.
func unknownField() []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1)
}

// str is a string field on the wire.
func str(num protowire.Number, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
}

// labelsEntry is a LogLine with one labels entry made of the given fields.
func labelsEntry(fields ...[]byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, 8, protowire.BytesType), bytes.Join(fields, nil))
}

func TestCheckRejectsMalformed(t *testing.T) {
	r := loadExamples(t)
	deep := `{"customer":{"email":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}}`
	validBinary := marshal(t, validOrder())
	withUnknown := func(f func(*shopv1.OrderPlaced)) []byte {
		m := validOrder()
		f(m)
		return marshal(t, m)
	}
	tests := []struct {
		name    string
		typ     string
		json    string // JSON input; binary is used when empty
		binary  []byte
		mention string // the error message mentions this
	}{
		{name: "json truncated", typ: shopType, json: `{"orderId": `},
		{name: "json unknown field", typ: shopType, json: `{"orderId":"x","bogus":1}`, mention: "bogus"},
		{name: "json unknown nested field", typ: shopType, json: `{"customer":{"email":"a@b.c","age":3}}`, mention: "age"},
		{name: "json wrong type", typ: shopType, json: `{"customer":"ada"}`},
		{name: "json number for string", typ: shopType, json: `{"currency":978}`},
		{name: "json unknown enum name", typ: logsType, json: `{"severity":"LOUD"}`},
		{name: "json bad timestamp", typ: logsType, json: `{"timestamp":"yesterday"}`},
		{name: "json duplicate field", typ: shopType, json: `{"currency":"EUR","currency":"USD"}`},
		{name: "json trailing data", typ: shopType, json: `{} {}`},
		{name: "json too deep", typ: shopType, json: deep, mention: "deeper than 32"},
		{name: "json array", typ: shopType, json: `[]`, mention: "not a JSON object"},
		{name: "json number", typ: shopType, json: `1`, mention: "not a JSON object"},
		{name: "json null", typ: shopType, json: `null`, mention: "not a JSON object"},
		{name: "json string", typ: shopType, json: `"{}"`, mention: "not a JSON object"},
		{name: "json empty", typ: shopType, json: " \n", mention: "not a JSON object"},
		{name: "json invalid utf-8", typ: shopType, json: "{\"note\":\"caf\xe9\"}"},
		{name: "binary truncated", typ: shopType, binary: validBinary[:len(validBinary)-3]},
		{name: "binary garbage", typ: shopType, binary: []byte{0xff, 0xff, 0xff}},
		{name: "binary invalid utf-8", typ: shopType,
			binary: protowire.AppendString(protowire.AppendTag(nil, 4, protowire.BytesType), "E\xffR")},
		{name: "binary unknown field", typ: shopType, binary: append(marshal(t, validOrder()), unknownField()...), mention: "unknown field 99"},
		{name: "binary unknown nested field", typ: shopType,
			binary:  withUnknown(func(m *shopv1.OrderPlaced) { m.Customer.ProtoReflect().SetUnknown(unknownField()) }),
			mention: "at customer in"},
		{name: "binary unknown field in list element", typ: shopType,
			binary:  withUnknown(func(m *shopv1.OrderPlaced) { m.Items[1].ProtoReflect().SetUnknown(unknownField()) }),
			mention: "at items[1] in"},
		{name: "binary wrong wire type", typ: shopType, // order_id as a varint
			binary: protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 7), mention: "field order_id has wire type 0"},
		{name: "binary map key repeated with wrong wire type", typ: logsType, // panics google.golang.org/protobuf v1.36.12
			binary:  labelsEntry(str(1, "k"), str(2, "v"), protowire.AppendFixed64(protowire.AppendTag(nil, 1, protowire.Fixed64Type), 0)),
			mention: "map entry key has wire type 1"},
		{name: "binary map value with wrong wire type", typ: logsType,
			binary:  labelsEntry(str(1, "k"), protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 1)),
			mention: "map entry value has wire type 0"},
		{name: "binary map entry unknown field", typ: logsType,
			binary:  labelsEntry(str(1, "k"), str(2, "v"), str(3, "x")),
			mention: "map entry has unknown field 3 at labels in"},
		{name: "binary map invalid utf-8 key", typ: logsType,
			binary: labelsEntry(str(1, "\xff"), str(2, "v"))},
		{name: "binary timestamp nanos out of range", typ: logsType,
			binary:  marshal(t, &logsv1.LogLine{Timestamp: &timestamppb.Timestamp{Nanos: 1e9}}),
			mention: "timestamp"},
		{name: "binary timestamp seconds out of range", typ: logsType,
			binary:  marshal(t, &logsv1.LogLine{Timestamp: &timestamppb.Timestamp{Seconds: 1 << 40}}),
			mention: "timestamp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := lookup(t, r, tc.typ)
			var (
				out []byte
				err error
			)
			if tc.json != "" {
				out, err = c.CheckJSON([]byte(tc.json))
			} else {
				out, err = c.CheckBinary(tc.binary)
			}
			if out != nil {
				t.Errorf("got output %q with an error", out)
			}
			var merr *contract.MalformedError
			if !errors.As(err, &merr) {
				t.Fatalf("got %v, want a *MalformedError", err)
			}
			t.Log(err)
			if !strings.HasPrefix(err.Error(), "contract: malformed payload: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			if tc.mention != "" && !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

func TestMalformedErrorUnwraps(t *testing.T) {
	c := lookup(t, loadExamples(t), shopType)
	_, err := c.CheckBinary([]byte{0xff})
	var merr *contract.MalformedError
	if !errors.As(err, &merr) || merr.Err == nil || !errors.Is(err, merr.Err) {
		t.Fatalf("got %v, want a MalformedError that unwraps to the decoder's error", err)
	}
}

// TestMaxDepth checks the limit at its boundary in both forms, with the
// valid order: order → items array → item object is depth 3, in JSON and
// in binary, whose depth is its JSON form's.
func TestMaxDepth(t *testing.T) {
	order := validOrder()
	tests := []struct {
		depth      int
		jsonOK     bool
		binaryOK   bool
		wantLoadOK bool
	}{
		{depth: 0},
		{depth: -1},
		{depth: 1, wantLoadOK: true},
		{depth: 2, wantLoadOK: true},
		{depth: 3, wantLoadOK: true, binaryOK: true, jsonOK: true},
	}
	for _, tc := range tests {
		r, err := contract.LoadFile(imagePath, []string{shopType}, contract.WithMaxDepth(tc.depth))
		if (err == nil) != tc.wantLoadOK {
			t.Fatalf("WithMaxDepth(%d): Load error %v, want ok %v", tc.depth, err, tc.wantLoadOK)
		}
		if err != nil {
			continue
		}
		c := lookup(t, r, shopType)
		if _, err := c.CheckJSON(toJSON(t, order)); (err == nil) != tc.jsonOK {
			t.Errorf("WithMaxDepth(%d): CheckJSON error %v, want ok %v", tc.depth, err, tc.jsonOK)
		}
		if _, err := c.CheckBinary(marshal(t, order)); (err == nil) != tc.binaryOK {
			t.Errorf("WithMaxDepth(%d): CheckBinary error %v, want ok %v", tc.depth, err, tc.binaryOK)
		}
	}
}

func TestCheckConcurrent(t *testing.T) {
	r := loadExamples(t)
	type input struct {
		c          *contract.Contract
		json, weak []byte // a valid JSON event; a binary one that breaks a rule
	}
	var inputs []input
	for typ, m := range validExamples() {
		inputs = append(inputs, input{
			c:    lookup(t, r, typ),
			json: toJSON(t, m),
			weak: marshal(t, violationCases()[typ][0].msg),
		})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8*2*len(inputs))
	for range 8 {
		wg.Go(func() {
			for _, in := range inputs {
				if _, err := in.c.CheckJSON(in.json); err != nil {
					errs <- err
				}
				if _, err := in.c.CheckBinary(in.weak); err == nil {
					errs <- errors.New(in.c.Type() + ": violation accepted")
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestViolationReportIsBounded: a small message lists every failed rule; a
// message over FullReportBytes, which could make protovalidate build a
// violation for every few bytes, reports its first failed rule only.
func TestViolationReportIsBounded(t *testing.T) {
	c := lookup(t, loadExamples(t), logsType)
	withBadLabels := func(n int) *logsv1.LogLine {
		m := validLogLine()
		m.Labels = map[string]string{}
		for i := range n {
			m.Labels[fmt.Sprintf("K%d", i)] = ""
		}
		return m
	}
	for _, tc := range []struct {
		name        string
		labels      int
		wantPartial bool
	}{
		{"small: every rule", 40, false},
		{"over the bound: the first rule", 20000, true},
	} {
		m := withBadLabels(tc.labels)
		forms := map[string]func() ([]byte, error){
			"json":   func() ([]byte, error) { return c.CheckJSON(toJSON(t, m)) },
			"binary": func() ([]byte, error) { return c.CheckBinary(marshal(t, m)) },
		}
		for form, check := range forms {
			t.Run(tc.name+"/"+form, func(t *testing.T) {
				_, err := check()
				var verr *contract.ViolationError
				if !errors.As(err, &verr) {
					t.Fatalf("got %v, want a *ViolationError", err)
				}
				if verr.Partial != tc.wantPartial {
					t.Fatalf("Partial = %v, want %v", verr.Partial, tc.wantPartial)
				}
				// 40 bad keys and max_pairs 32: one violation per key and
				// the map's own.
				want := tc.labels + 1
				if tc.wantPartial {
					want = 1
				}
				if len(verr.Violations) != want {
					t.Fatalf("got %d violations, want %d", len(verr.Violations), want)
				}
			})
		}
	}
}

// TestRefusalOutlivesInput: a refusal does not point into the payload it
// refuses or the arena that decoded it, so the caller may reuse its buffer
// as soon as Check returns: a rule whose message is the field's own value
// still reads the same after the payload is overwritten and another
// payload decoded.
func TestRefusalOutlivesInput(t *testing.T) {
	rules := &validate.MessageRules{Cel: []*validate.Rule{{
		Id: proto.String("node.name"), Expression: proto.String("this.name.startsWith('ok') ? '' : this.name"),
	}}}
	file := nodeFile(rules, "buf/validate/validate.proto")
	file.MessageType[0].Field = file.MessageType[0].Field[:2] // no map of messages: hyperpb decodes it
	r, err := contract.Load(setOf(t, file), []string{"test.v1.Node"})
	if err != nil {
		t.Fatal(err)
	}
	c := lookup(t, r, "test.v1.Node")
	if d := c.Decoders(); d.Binary != "hyperpb" || d.JSON != "transcoder" {
		t.Fatalf("decoders %+v", d)
	}
	name := strings.Repeat("n", 40)
	for _, form := range []struct {
		name  string
		check func([]byte) ([]byte, error)
		in    func(string) []byte
	}{
		{"binary", c.CheckBinary, func(s string) []byte { return str(2, s) }},
		{"json", c.CheckJSON, func(s string) []byte { return []byte(`{"name":"` + s + `"}`) }},
	} {
		in := form.in(name)
		_, err := form.check(in)
		for i := range in {
			in[i] = 'x'
		}
		if _, again := form.check(form.in(strings.Repeat("m", 40))); again == nil {
			t.Fatalf("%s: the second payload passed", form.name)
		}
		var verr *contract.ViolationError
		if !errors.As(err, &verr) || len(verr.Violations) != 1 || verr.Violations[0].Message != name {
			t.Errorf("%s: after the payload is reused, the refusal reads %v", form.name, err)
		}
	}
}

// TestCheckJSONAllowUnknown: a provider's payload with fields the
// contract lacks, at any depth, is published as the contract's fields
// alone; everything else is judged as CheckJSON judges it.
func TestCheckJSONAllowUnknown(t *testing.T) {
	c := lookup(t, loadExamples(t), shopType)
	clean := fixture(t, "order_placed.json")
	want, err := c.CheckJSON(clean)
	if err != nil {
		t.Fatal(err)
	}
	// The fixture, its text cut before the closing brace, with more.
	withMore := func(s string) []byte {
		b := bytes.TrimRight(clean, " \n")
		return append(append(bytes.Clone(b[:len(b)-1]), s...), '}')
	}
	deepUnknown := `,"livemode":false,"x":` + strings.Repeat("[", contract.DefaultMaxDepth-2) + strings.Repeat("]", contract.DefaultMaxDepth-2)
	for _, tc := range []struct {
		name string
		in   []byte
		// want: nil to publish the clean fixture's bytes; else the kind of refusal.
		malformed, violation bool
	}{
		{"top-level fields", withMore(`,"livemode":false,"request":{"id":null,"idempotency_key":"k"},"pending_webhooks":1`), false, false},
		{"nested fields", bytes.Replace(clean, []byte(`"city": "London",`), []byte(`"city": "London", "geo": {"lat": 51.5, "lon": -0.1},`), 1), false, false},
		{"in a list's messages", bytes.Replace(clean, []byte(`"quantity": 2,`), []byte(`"quantity": 2, "tax_rates": [], "discountable": true,`), 1), false, false},
		{"the same unknown name twice", withMore(`,"x":1,"x":2`), false, false},
		{"skipped to the depth limit", withMore(deepUnknown), false, false},
		{"skipped past the depth limit", withMore(deepUnknown + `,"y":` + strings.Repeat("{\"a\":", contract.DefaultMaxDepth) + "1" + strings.Repeat("}", contract.DefaultMaxDepth)), true, false},
		{"skipped value not JSON", withMore(`,"x":{"a" 1}`), true, false},
		{"skipped string not UTF-8", withMore(",\"x\":\"\xff\""), true, false},
		{"known field twice", withMore(`,"x":1,"note":"again"`), true, false},
		{"known field of the wrong type", withMore(`,"x":1,"totalCents":"many"`), true, false},
		{"an extension's name", withMore(`,"[buf.validate.field]":{}`), true, false},
		{"a rule broken", bytes.Replace(withMore(`,"x":1`), []byte(`"EUR"`), []byte(`"eur"`), 1), false, true},
		// An enum name the contract lacks is dropped, and the field's
		// rules judge it unset: payment_method must not be 0.
		{"enum name unknown", bytes.Replace(clean, []byte(`"PAYMENT_METHOD_CARD"`), []byte(`"PAYMENT_METHOD_CRYPTO"`), 1), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.CheckJSONAllowUnknown(tc.in)
			_, strictErr := c.CheckJSON(tc.in)
			switch {
			case tc.malformed:
				if _, ok := errors.AsType[*contract.MalformedError](err); !ok {
					t.Fatalf("got %x, %v; want a MalformedError", got, err)
				}
			case tc.violation:
				if _, ok := errors.AsType[*contract.ViolationError](err); !ok {
					t.Fatalf("got %x, %v; want a ViolationError", got, err)
				}
			case err != nil:
				t.Fatal(err)
			case !bytes.Equal(got, want):
				t.Fatalf("published %x, want the clean payload's %x", got, want)
			case strictErr == nil:
				t.Fatal("CheckJSON takes it too")
			}
		})
	}
}
