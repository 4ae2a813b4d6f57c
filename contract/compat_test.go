package contract_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	ct "github.com/sluicehq/sluice/internal/contracttest"
)

const (
	customerType = "examples.shop.v1.Customer"
	lineItemType = "examples.shop.v1.LineItem"
	addressType  = "examples.shop.v1.Address"
	consentType  = "examples.identity.v1.Consent"
	paymentEnum  = "examples.shop.v1.PaymentMethod"
	consentEnum  = "examples.identity.v1.ConsentSource"
)

var compareModes = []contract.Mode{contract.ModeBackward, contract.ModeForward, contract.ModeFull, contract.ModeNone}

// verdicts are a type's verdict under each of compareModes: true is
// compatible.
type verdicts [4]bool

var (
	compatible     = verdicts{true, true, true, true}
	breaksBoth     = verdicts{false, false, false, true}
	breaksForward  = verdicts{true, false, false, true}
	breaksBackward = verdicts{false, true, false, true}
)

// found is what a test asserts of a Finding.
type found struct{ path, rule, validateRule string }

// TestCompare holds each kind of change to its findings and to its
// verdict in every mode. Each row evolves the example contracts (base
// edits go into both images, edits into the new one only); its findings
// are the changed type's, all of them, and every other type must have
// none.
func TestCompare(t *testing.T) {
	tightened := func(path, rule string) found { return found{path, contract.RuleTightened, rule} }
	loosened := func(path, rule string) found { return found{path, contract.RuleLoosened, rule} }
	fieldRules := func(msg, field string, edit func(*validate.FieldRules)) ct.Edit {
		return ct.EditFieldRules(msg, field, edit)
	}
	for _, c := range []struct {
		name            string
		typ             string
		base, edits     []ct.Edit
		allowTightening bool
		want            []found
		verdict         verdicts
		sameFingerprint bool
	}{
		{
			name: "field number reused with another type",
			typ:  shopType,
			edits: []ct.Edit{ct.RemoveField(shopType, "note", false),
				ct.AddField(shopType, "gift_wrap", 8, descriptorpb.FieldDescriptorProto_TYPE_BOOL)},
			want: []found{{"note", contract.RuleFieldRenamed, ""}, {"note", contract.RuleFieldTypeChanged, ""},
				loosened("note", "string.max_len")},
			verdict: breaksBoth,
		},
		{
			name:    "singular to repeated",
			typ:     shopType,
			edits:   []ct.Edit{ct.SetLabel(shopType, "note", descriptorpb.FieldDescriptorProto_LABEL_REPEATED)},
			want:    []found{{"note", contract.RuleFieldCardinalityChanged, ""}},
			verdict: breaksBoth,
		},
		{
			name:    "map to repeated",
			typ:     logsType,
			edits:   []ct.Edit{ct.SetFieldType(logsType, "labels", descriptorpb.FieldDescriptorProto_TYPE_STRING, "")},
			want:    []found{{"labels", contract.RuleFieldCardinalityChanged, ""}},
			verdict: breaksBoth,
		},
		{
			name:    "scalar to message",
			typ:     shopType,
			edits:   []ct.Edit{ct.SetFieldType(shopType, "note", descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, addressType)},
			want:    []found{{"note", contract.RuleFieldTypeChanged, ""}},
			verdict: breaksBoth,
		},
		{
			name:    "message type name changed",
			typ:     shopType,
			edits:   []ct.Edit{ct.SetFieldType(shopType, "shipping_address", descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, customerType)},
			want:    []found{{"shipping_address", contract.RuleFieldTypeChanged, ""}},
			verdict: breaksBoth,
		},
		{
			name:    "wire form changed: string to int64",
			typ:     shopType,
			edits:   []ct.Edit{ct.SetFieldType(lineItemType, "sku", descriptorpb.FieldDescriptorProto_TYPE_INT64, "")},
			want:    []found{{"items.sku", contract.RuleFieldTypeChanged, ""}},
			verdict: breaksBoth,
		},
		{
			name:    "JSON form changed: string to bytes",
			typ:     shopType,
			edits:   []ct.Edit{ct.SetFieldType(customerType, "email", descriptorpb.FieldDescriptorProto_TYPE_BYTES, "")},
			want:    []found{{"customer.email", contract.RuleFieldTypeChanged, ""}},
			verdict: breaksBoth,
		},
		{
			name:    "JSON form changed: enum to int32",
			typ:     logsType,
			edits:   []ct.Edit{ct.SetFieldType(logsType, "severity", descriptorpb.FieldDescriptorProto_TYPE_INT32, "")},
			want:    []found{{"severity", contract.RuleFieldTypeChanged, ""}},
			verdict: breaksBoth,
		},
		{
			// The rules move to the wider kind with the same bounds: no
			// rule finding.
			name: "widened: uint32 to uint64",
			typ:  shopType,
			edits: []ct.Edit{ct.SetFieldType(lineItemType, "quantity", descriptorpb.FieldDescriptorProto_TYPE_UINT64, ""),
				fieldRules(lineItemType, "quantity", func(r *validate.FieldRules) {
					r.SetUint64(validate.UInt64Rules_builder{Gte: proto.Uint64(1), Lte: proto.Uint64(1000)}.Build())
				})},
			want:    []found{{"items.quantity", contract.RuleFieldTypeWidened, ""}},
			verdict: breaksForward,
		},
		{
			name: "narrowed: int64 to int32",
			typ:  shopType,
			edits: []ct.Edit{ct.SetFieldType(lineItemType, "unit_price_cents", descriptorpb.FieldDescriptorProto_TYPE_INT32, ""),
				fieldRules(lineItemType, "unit_price_cents", func(r *validate.FieldRules) {
					r.SetInt32(validate.Int32Rules_builder{Gte: proto.Int32(0)}.Build())
				})},
			want:    []found{{"items.unit_price_cents", contract.RuleFieldTypeNarrowed, ""}},
			verdict: breaksBackward,
		},
		{
			name:    "field removed, not reserved",
			typ:     shopType,
			edits:   []ct.Edit{ct.RemoveField(shopType, "note", false)},
			want:    []found{{"note", contract.RuleFieldRemoved, ""}},
			verdict: breaksBoth,
		},
		{
			name:    "field removed, number and name reserved",
			typ:     shopType,
			edits:   []ct.Edit{ct.RemoveField(shopType, "note", true)},
			want:    []found{{"note", contract.RuleFieldReserved, ""}},
			verdict: compatible,
		},
		{
			name:    "reserved number reused",
			typ:     shopType,
			base:    []ct.Edit{ct.RemoveField(shopType, "note", true)},
			edits:   []ct.Edit{ct.ClearReserved(shopType), ct.AddField(shopType, "remark", 8, descriptorpb.FieldDescriptorProto_TYPE_STRING)},
			want:    []found{{"remark", contract.RuleFieldReservedReused, ""}},
			verdict: breaksBoth,
		},
		{
			name:    "field renamed",
			typ:     shopType,
			edits:   []ct.Edit{ct.RenameField(shopType, "note", "remark")},
			want:    []found{{"note", contract.RuleFieldRenamed, ""}},
			verdict: breaksBoth,
		},
		{
			name:    "json_name changed",
			typ:     shopType,
			edits:   []ct.Edit{ct.SetJSONName(shopType, "total_cents", "total")},
			want:    []found{{"total_cents", contract.RuleJSONNameChanged, ""}},
			verdict: breaksBoth,
		},
		{
			name:    "field moved into a oneof",
			typ:     shopType,
			edits:   []ct.Edit{ct.MoveToOneof(shopType, "note", "remark")},
			want:    []found{{"note", contract.RuleFieldOneofChanged, ""}},
			verdict: breaksBoth,
		},
		{
			name:    "enum value removed, not reserved",
			typ:     shopType,
			edits:   []ct.Edit{ct.RemoveEnumValue(paymentEnum, "PAYMENT_METHOD_WALLET", false)},
			want:    []found{{"payment_method", contract.RuleEnumValueRemoved, ""}},
			verdict: breaksBackward,
		},
		{
			name:    "enum value removed, number and name reserved",
			typ:     shopType,
			edits:   []ct.Edit{ct.RemoveEnumValue(paymentEnum, "PAYMENT_METHOD_WALLET", true)},
			want:    []found{{"payment_method", contract.RuleEnumValueReserved, ""}},
			verdict: compatible,
		},
		{
			name:    "enum value renumbered",
			typ:     shopType,
			edits:   []ct.Edit{ct.RenumberEnumValue(paymentEnum, "PAYMENT_METHOD_WALLET", 4)},
			want:    []found{{"payment_method", contract.RuleEnumValueRenumbered, ""}},
			verdict: breaksBoth,
		},
		{
			name:    "enum value added",
			typ:     identityType,
			edits:   []ct.Edit{ct.AddEnumValue(consentEnum, "CONSENT_SOURCE_IMPORT", 4)},
			want:    []found{{"consent.source", contract.RuleEnumValueAdded, ""}},
			verdict: compatible,
		},
		{
			name:    "event message removed",
			typ:     logsType,
			edits:   []ct.Edit{ct.RemoveMessage(logsType)},
			want:    []found{{"", contract.RuleMessageRemoved, ""}},
			verdict: breaksBoth,
		},
		{
			name:    "field added",
			typ:     shopType,
			edits:   []ct.Edit{ct.AddField(shopType, "gift_wrap", 9, descriptorpb.FieldDescriptorProto_TYPE_BOOL)},
			want:    []found{{"gift_wrap", contract.RuleFieldAdded, ""}},
			verdict: compatible,
		},
		{
			name:    "required added",
			typ:     logsType,
			edits:   []ct.Edit{fieldRules(logsType, "source", func(r *validate.FieldRules) { r.SetRequired(true) })},
			want:    []found{tightened("source", "required")},
			verdict: breaksBackward,
		},
		{
			name: "enum defined_only added",
			typ:  identityType,
			base: []ct.Edit{ct.SetFieldRules(consentType, "source", nil)},
			edits: []ct.Edit{fieldRules(consentType, "source", func(r *validate.FieldRules) {
				r.SetEnum(validate.EnumRules_builder{DefinedOnly: proto.Bool(true)}.Build())
			})},
			want:    []found{tightened("consent.source", "enum.defined_only")},
			verdict: breaksBackward,
		},
		{
			name:    "oneof required added",
			typ:     shopType,
			base:    []ct.Edit{ct.MoveToOneof(shopType, "note", "remark")},
			edits:   []ct.Edit{ct.EditOneofRules(shopType, "remark", func(r *validate.OneofRules) { r.SetRequired(true) })},
			want:    []found{tightened("remark", "required")},
			verdict: breaksBackward,
		},
		{
			name:    "string min_len raised",
			typ:     shopType,
			edits:   []ct.Edit{fieldRules(customerType, "customer_id", func(r *validate.FieldRules) { r.GetString().SetMinLen(5) })},
			want:    []found{tightened("customer.customer_id", "string.min_len")},
			verdict: breaksBackward,
		},
		{
			name:            "string min_len raised, tightening allowed",
			typ:             shopType,
			edits:           []ct.Edit{fieldRules(customerType, "customer_id", func(r *validate.FieldRules) { r.GetString().SetMinLen(5) })},
			allowTightening: true,
			want:            []found{tightened("customer.customer_id", "string.min_len")},
			verdict:         compatible,
		},
		{
			name:    "int64 max lowered",
			typ:     shopType,
			edits:   []ct.Edit{fieldRules(shopType, "total_cents", func(r *validate.FieldRules) { r.GetInt64().SetLte(1000) })},
			want:    []found{tightened("total_cents", "int64.lte")},
			verdict: breaksBackward,
		},
		{
			name:    "int64 lower bound gte 0 to gt 0",
			typ:     shopType,
			edits:   []ct.Edit{fieldRules(shopType, "total_cents", func(r *validate.FieldRules) { r.GetInt64().SetGt(0) })},
			want:    []found{tightened("total_cents", "int64.gt")},
			verdict: breaksBackward,
		},
		{
			// gt: -1 admits exactly what gte: 0 does.
			name:    "int64 lower bound gte 0 to gt -1",
			typ:     shopType,
			edits:   []ct.Edit{fieldRules(shopType, "total_cents", func(r *validate.FieldRules) { r.GetInt64().SetGt(-1) })},
			verdict: compatible,
		},
		{
			name:    "pattern changed",
			typ:     shopType,
			edits:   []ct.Edit{fieldRules(shopType, "currency", func(r *validate.FieldRules) { r.GetString().SetPattern("^[A-Z]{3,4}$") })},
			want:    []found{tightened("currency", "string.pattern")},
			verdict: breaksBackward,
		},
		{
			name: "in list shrunk",
			typ:  identityType,
			edits: []ct.Edit{fieldRules(identityType, "changed_fields", func(r *validate.FieldRules) {
				s := r.GetRepeated().GetItems().GetString()
				s.SetIn(slices.DeleteFunc(s.GetIn(), func(v string) bool { return v == "consent" }))
			})},
			want:    []found{tightened("changed_fields", "repeated.items.string.in")},
			verdict: breaksBackward,
		},
		{
			name: "in list grown",
			typ:  identityType,
			edits: []ct.Edit{fieldRules(identityType, "changed_fields", func(r *validate.FieldRules) {
				s := r.GetRepeated().GetItems().GetString()
				s.SetIn(append(s.GetIn(), "nickname"))
			})},
			want:    []found{loosened("changed_fields", "repeated.items.string.in")},
			verdict: compatible,
		},
		{
			name: "not_in grown",
			typ:  shopType,
			edits: []ct.Edit{fieldRules(shopType, "payment_method", func(r *validate.FieldRules) {
				r.GetEnum().SetNotIn([]int32{0, 3})
			})},
			want:    []found{tightened("payment_method", "enum.not_in")},
			verdict: breaksBackward,
		},
		{
			name: "message CEL expression changed",
			typ:  shopType,
			edits: []ct.Edit{ct.EditMessageRules(shopType, func(r *validate.MessageRules) {
				r.GetCel()[0].SetExpression("this.total_cents > 0 || this.payment_method == 2 || this.note != ''")
			})},
			want:    []found{tightened("", "cel[order_placed.free_order_needs_invoice]")},
			verdict: breaksBackward,
		},
		{
			name: "message CEL message changed",
			typ:  shopType,
			edits: []ct.Edit{ct.EditMessageRules(shopType, func(r *validate.MessageRules) {
				r.GetCel()[0].SetMessage("a free order must be paid by invoice")
			})},
			want:    []found{{"", contract.RuleMessageChanged, "cel[order_placed.free_order_needs_invoice]"}},
			verdict: compatible,
		},
		{
			name: "message oneof rule added",
			typ:  shopType,
			edits: []ct.Edit{ct.EditMessageRules(shopType, func(r *validate.MessageRules) {
				r.SetOneof([]*validate.MessageOneofRule{validate.MessageOneofRule_builder{Fields: []string{"note", "currency"}}.Build()})
			})},
			want:    []found{tightened("", "oneof[note,currency]")},
			verdict: breaksBackward,
		},
		{
			name:    "rule loosened: max_len raised",
			typ:     shopType,
			edits:   []ct.Edit{fieldRules(addressType, "line2", func(r *validate.FieldRules) { r.GetString().SetMaxLen(400) })},
			want:    []found{loosened("shipping_address.line2", "string.max_len")},
			verdict: compatible,
		},
		{
			name:    "rule removed",
			typ:     shopType,
			edits:   []ct.Edit{ct.SetFieldRules(shopType, "note", nil)},
			want:    []found{loosened("note", "string.max_len")},
			verdict: compatible,
		},
		{
			name:            "comment changed",
			typ:             shopType,
			edits:           []ct.Edit{ct.RewriteComments("ISO 4217 code.", "ISO 4217 currency code, upper case.")},
			verdict:         compatible,
			sameFingerprint: true,
		},
		{
			// Customer holds a Customer: the walk ends, and reports the
			// change where it first meets it.
			name:    "recursive type",
			typ:     shopType,
			base:    []ct.Edit{ct.AddMessageField(customerType, "referrer", 3, customerType)},
			edits:   []ct.Edit{fieldRules(customerType, "customer_id", func(r *validate.FieldRules) { r.GetString().SetMinLen(5) })},
			want:    []found{tightened("customer.customer_id", "string.min_len")},
			verdict: breaksBackward,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			old := ct.Evolve(t, examples.Contracts, c.base...)
			next := ct.Evolve(t, old, c.edits...)
			for i, mode := range compareModes {
				report, err := contract.Compare(old, next, examples.Types,
					contract.Policies{Default: contract.Policy{Mode: mode, AllowTightening: c.allowTightening}})
				if err != nil {
					t.Fatal(err)
				}
				for _, tr := range report.Types {
					if tr.Type != c.typ {
						if len(tr.Findings) > 0 || !tr.Compatible || tr.Old != tr.New {
							t.Errorf("%s: untouched type %s: %+v", mode, tr.Type, tr)
						}
						continue
					}
					var got []found
					for _, f := range tr.Findings {
						got = append(got, found{f.Path, f.Rule, f.ValidateRule})
						if f.Type != c.typ || f.Reason == "" {
							t.Errorf("finding %+v: wrong type or no reason", f)
						}
						if f.Tightening != (f.Rule == contract.RuleTightened) ||
							(f.Rule == contract.RuleTightened && f.Breaks != contract.Backward) {
							t.Errorf("finding %+v: tightening and breaks disagree", f)
						}
					}
					if !slices.Equal(got, c.want) {
						t.Errorf("%s: findings\n%v\nwant\n%v\n%s", mode, got, c.want, tr.Findings)
					}
					if tr.Compatible != c.verdict[i] || report.Compatible() != c.verdict[i] || (report.Err() == nil) != c.verdict[i] {
						t.Errorf("%s: compatible %t (report %t, err %v), want %t", mode, tr.Compatible, report.Compatible(), report.Err(), c.verdict[i])
					}
					if tr.Policy.Mode != mode {
						t.Errorf("report's policy %+v, want mode %s", tr.Policy, mode)
					}
					if c.sameFingerprint && tr.Old != tr.New {
						t.Errorf("no findings, but fingerprint %s became %s", tr.Old, tr.New)
					}
				}
			}
		})
	}
}

// Per-type policies override the default, and ModeNone reports without
// judging.
func TestComparePolicies(t *testing.T) {
	next := ct.Evolve(t, examples.Contracts, ct.RemoveField(shopType, "note", false), ct.RemoveField(logsType, "host", false))
	p := contract.Policies{
		Default: contract.Policy{Mode: contract.ModeFull},
		Types:   map[string]contract.Policy{logsType: {Mode: contract.ModeNone}},
	}
	report, err := contract.Compare(examples.Contracts, next, examples.Types, p)
	if err != nil {
		t.Fatal(err)
	}
	verdict := map[string]bool{}
	for _, tr := range report.Types {
		verdict[tr.Type] = tr.Compatible
		if tr.Type == logsType && (len(tr.Findings) != 1 || len(tr.Breaking()) != 0) {
			t.Errorf("mode none: findings %v, breaking %v; want the finding reported, none breaking", tr.Findings, tr.Breaking())
		}
	}
	if verdict[shopType] || !verdict[logsType] || !verdict[identityType] {
		t.Errorf("verdicts %v", verdict)
	}
	var ie *contract.IncompatibleError
	if err := report.Err(); !errors.As(err, &ie) || len(ie.Findings) != 1 || ie.Findings[0].Path != "note" {
		t.Fatalf("Err() = %v, want an *IncompatibleError with the shop finding", err)
	}
	if got := p.For(identityType); got.Mode != contract.ModeFull {
		t.Errorf("For(%s) = %+v, want the default", identityType, got)
	}
	if got := (contract.Policies{}).For(shopType); got != (contract.Policy{Mode: contract.ModeBackward}) {
		t.Errorf("the zero Policies give %+v, want backward", got)
	}
}

func TestIncompatibleErrorIsBounded(t *testing.T) {
	var edits []ct.Edit
	for _, f := range []string{"order_id", "customer", "items", "currency", "total_cents", "shipping_address", "payment_method", "note"} {
		edits = append(edits, ct.RemoveField(shopType, f, false))
	}
	report, err := contract.Compare(examples.Contracts, ct.Evolve(t, examples.Contracts, edits...), examples.Types, contract.Policies{})
	if err != nil {
		t.Fatal(err)
	}
	var ie *contract.IncompatibleError
	if err := report.Err(); !errors.As(err, &ie) || len(ie.Findings) != 8 {
		t.Fatalf("Err() = %v, want 8 findings", err)
	}
	msg := ie.Error()
	if !strings.HasPrefix(msg, "contract: incompatible: 8 findings: examples.shop.v1.OrderPlaced currency: field_removed: ") ||
		!strings.HasSuffix(msg, "; and 5 more") || len(msg) > 1500 {
		t.Errorf("message %q", msg)
	}
}

func TestCompareErrors(t *testing.T) {
	garbage := []byte("not a descriptor set")
	for _, c := range []struct {
		name     string
		old, new []byte
		types    []string
		p        contract.Policies
		want     string
	}{
		{"old does not decode", garbage, examples.Contracts, examples.Types, contract.Policies{}, "contract: old image: decode descriptor set"},
		{"new does not decode", examples.Contracts, garbage, examples.Types, contract.Policies{}, "contract: new image: decode descriptor set"},
		{"new has no files", examples.Contracts, nil, examples.Types, contract.Policies{}, "contract: new image: descriptor set has no files"},
		{"old lacks the type", examples.Contracts, examples.Contracts, []string{"examples.shop.v1.Nope"}, contract.Policies{}, `"examples.shop.v1.Nope": not a message of the old descriptor set`},
		{"unknown mode", examples.Contracts, examples.Contracts, examples.Types,
			contract.Policies{Types: map[string]contract.Policy{logsType: {Mode: "sideways"}}}, `policy of examples.logs.v1.LogLine: compatibility mode "sideways": must be backward`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := contract.Compare(c.old, c.new, c.types, c.p)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Compare: %v, %v; want an error containing %q", r, err, c.want)
			}
		})
	}
}

func TestCompareRegistries(t *testing.T) {
	old, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	next, err := contract.Load(ct.Evolve(t, examples.Contracts, ct.AddField(shopType, "gift_wrap", 9, descriptorpb.FieldDescriptorProto_TYPE_BOOL)), examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	report, err := contract.CompareRegistries(old, next, contract.Policies{})
	if err != nil || report.Err() != nil || len(report.Types) != 3 {
		t.Fatalf("%+v, %v", report, err)
	}
	oc, _ := old.Lookup(shopType)
	nc, _ := next.Lookup(shopType)
	i := slices.IndexFunc(report.Types, func(tr contract.TypeReport) bool { return tr.Type == shopType })
	if tr := report.Types[i]; tr.Old != oc.Fingerprint() || tr.New != nc.Fingerprint() || len(tr.Findings) != 1 {
		t.Errorf("report of %s: %+v", shopType, tr)
	}
}

func TestParseModeAndDirection(t *testing.T) {
	for in, want := range map[string]contract.Mode{"": contract.ModeBackward, "backward": contract.ModeBackward,
		"forward": contract.ModeForward, "full": contract.ModeFull, "none": contract.ModeNone} {
		if got, err := contract.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := contract.ParseMode("Backward"); err == nil || !strings.Contains(err.Error(), "backward, forward, full or none") {
		t.Errorf("ParseMode(Backward): %v, want the valid modes named", err)
	}
	for d, want := range map[contract.Direction]string{0: "none", contract.Backward: "backward", contract.Forward: "forward",
		contract.Backward | contract.Forward: "backward+forward"} {
		if d.String() != want {
			t.Errorf("%d.String() = %q, want %q", d, d, want)
		}
	}
}

// TestCompareRuleSemantics holds each kind of leaf rule to the way its
// change is judged: the old rules go on a field in both images, the new
// ones replace them in the new image.
func TestCompareRuleSemantics(t *testing.T) {
	type rules = validate.FieldRules_builder
	str := func(b validate.StringRules_builder) *validate.FieldRules { return rules{String: b.Build()}.Build() }
	dur := func(b validate.DurationRules_builder) *validate.FieldRules { return rules{Duration: b.Build()}.Build() }
	dbl := func(b validate.DoubleRules_builder) *validate.FieldRules { return rules{Double: b.Build()}.Build() }
	i32 := func(b validate.Int32Rules_builder) *validate.FieldRules { return rules{Int32: b.Build()}.Build() }
	rep := func(b validate.RepeatedRules_builder) *validate.FieldRules { return rules{Repeated: b.Build()}.Build() }
	tightened := func(rule string) found { return found{"note", contract.RuleTightened, rule} }
	loosened := func(rule string) found { return found{"note", contract.RuleLoosened, rule} }
	ignore := func(i validate.Ignore) *validate.FieldRules { return rules{Ignore: &i}.Build() }
	headerName, headerValue, unspecifiedRegex := validate.KnownRegex_KNOWN_REGEX_HTTP_HEADER_NAME, validate.KnownRegex_KNOWN_REGEX_HTTP_HEADER_VALUE, validate.KnownRegex_KNOWN_REGEX_UNSPECIFIED
	unknown := new(validate.FieldRules)
	unknown.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 999, protowire.VarintType), 1))
	for _, c := range []struct {
		name     string
		old, new *validate.FieldRules
		want     []found
	}{
		{"prefix shortened", str(validate.StringRules_builder{Prefix: proto.String("ab")}), str(validate.StringRules_builder{Prefix: proto.String("a")}), []found{loosened("string.prefix")}},
		{"prefix lengthened", str(validate.StringRules_builder{Prefix: proto.String("a")}), str(validate.StringRules_builder{Prefix: proto.String("ab")}), []found{tightened("string.prefix")}},
		{"prefix replaced", str(validate.StringRules_builder{Prefix: proto.String("a")}), str(validate.StringRules_builder{Prefix: proto.String("b")}), []found{tightened("string.prefix")}},
		{"suffix shortened", str(validate.StringRules_builder{Suffix: proto.String("xy")}), str(validate.StringRules_builder{Suffix: proto.String("y")}), []found{loosened("string.suffix")}},
		{"contains a substring", str(validate.StringRules_builder{Contains: proto.String("abc")}), str(validate.StringRules_builder{Contains: proto.String("b")}), []found{loosened("string.contains")}},
		{"contains more", str(validate.StringRules_builder{Contains: proto.String("b")}), str(validate.StringRules_builder{Contains: proto.String("abc")}), []found{tightened("string.contains")}},
		{"not_contains more", str(validate.StringRules_builder{NotContains: proto.String("b")}), str(validate.StringRules_builder{NotContains: proto.String("abc")}), []found{loosened("string.not_contains")}},
		{"len changed", str(validate.StringRules_builder{Len: proto.Uint64(5)}), str(validate.StringRules_builder{Len: proto.Uint64(6)}), []found{tightened("string.len")}},
		{"format switched", str(validate.StringRules_builder{Email: proto.Bool(true)}), str(validate.StringRules_builder{Hostname: proto.Bool(true)}),
			[]found{loosened("string.email"), tightened("string.hostname")}},
		{"format false is no rule", str(validate.StringRules_builder{Email: proto.Bool(false)}), nil, nil},
		{"ignore if zero", nil, ignore(validate.Ignore_IGNORE_IF_ZERO_VALUE), []found{loosened("ignore")}},
		{"ignore always dropped", ignore(validate.Ignore_IGNORE_ALWAYS), ignore(validate.Ignore_IGNORE_IF_ZERO_VALUE), []found{tightened("ignore")}},
		{"min_items lowered, max_items added", rep(validate.RepeatedRules_builder{MinItems: proto.Uint64(1)}), rep(validate.RepeatedRules_builder{MaxItems: proto.Uint64(10)}),
			[]found{loosened("repeated.min_items"), tightened("repeated.max_items")}},
		{"unique added", nil, rep(validate.RepeatedRules_builder{Unique: proto.Bool(true)}), []found{tightened("repeated.unique")}},
		{"int gt 0 is gte 1", i32(validate.Int32Rules_builder{Gt: proto.Int32(0)}), i32(validate.Int32Rules_builder{Gte: proto.Int32(1)}), nil},
		{"int32 rules to int64 rules", i32(validate.Int32Rules_builder{In: []int32{1, 2}}), rules{Int64: validate.Int64Rules_builder{In: []int64{1, 2, 3}}.Build()}.Build(),
			[]found{loosened("int64.in")}},
		{"double gt to gte", dbl(validate.DoubleRules_builder{Gt: proto.Float64(0)}), dbl(validate.DoubleRules_builder{Gte: proto.Float64(0)}), []found{loosened("double.gte")}},
		{"double gte to gt", dbl(validate.DoubleRules_builder{Gte: proto.Float64(0)}), dbl(validate.DoubleRules_builder{Gt: proto.Float64(0)}), []found{tightened("double.gt")}},
		{"double upper bound added", nil, dbl(validate.DoubleRules_builder{Lt: proto.Float64(1)}), []found{tightened("double.lt")}},
		{"duration gt 1s is gte 1s+1ns", dur(validate.DurationRules_builder{Gt: durationpb.New(time.Second)}), dur(validate.DurationRules_builder{Gte: durationpb.New(time.Second + 1)}), nil},
		{"duration lt lowered", dur(validate.DurationRules_builder{Lt: durationpb.New(10 * time.Second)}), dur(validate.DurationRules_builder{Lt: durationpb.New(5 * time.Second)}), []found{tightened("duration.lt")}},
		{"exclusive range changed", i32(validate.Int32Rules_builder{Gt: proto.Int32(10), Lt: proto.Int32(5)}), i32(validate.Int32Rules_builder{Gt: proto.Int32(9), Lt: proto.Int32(5)}), []found{tightened("int32.gt")}},
		{"timestamp within raised", rules{Timestamp: validate.TimestampRules_builder{Within: durationpb.New(time.Hour)}.Build()}.Build(),
			rules{Timestamp: validate.TimestampRules_builder{Within: durationpb.New(2 * time.Hour)}.Build()}.Build(), []found{loosened("timestamp.within")}},
		{"cel_expression added", nil, rules{CelExpression: []string{"this.size() > 1"}}.Build(), []found{tightened("cel_expression[this.size() > 1]")}},
		{"field CEL rule added", nil, rules{Cel: []*validate.Rule{validate.Rule_builder{Id: proto.String("note.short"), Expression: proto.String("this.size() < 9")}.Build()}}.Build(),
			[]found{tightened("cel[note.short]")}},
		{"rules of another kind", str(validate.StringRules_builder{MaxLen: proto.Uint64(5)}), rules{Int64: validate.Int64Rules_builder{Gte: proto.Int64(0)}.Build()}.Build(),
			[]found{loosened("string.max_len"), tightened("int64.gte")}},
		{"unknown rule", nil, unknown, []found{tightened("(unknown fields)")}},
		// Each rule is read as protovalidate reads it, an unset rule by
		// protovalidate's default: strict unset is strict.
		{"strict false removed from a header regex", str(validate.StringRules_builder{WellKnownRegex: &headerName, Strict: proto.Bool(false)}),
			str(validate.StringRules_builder{WellKnownRegex: &headerName}), []found{tightened("string.strict")}},
		{"strict false set on a header regex", str(validate.StringRules_builder{WellKnownRegex: &headerValue}),
			str(validate.StringRules_builder{WellKnownRegex: &headerValue, Strict: proto.Bool(false)}), []found{loosened("string.strict")}},
		{"strict true written out", str(validate.StringRules_builder{WellKnownRegex: &headerName}),
			str(validate.StringRules_builder{WellKnownRegex: &headerName, Strict: proto.Bool(true)}), nil},
		{"strict without a header regex decides nothing", str(validate.StringRules_builder{Strict: proto.Bool(false)}), nil, nil},
		{"header regex unspecified is no rule", nil, str(validate.StringRules_builder{WellKnownRegex: &unspecifiedRegex}), nil},
		{"header name to header value", str(validate.StringRules_builder{WellKnownRegex: &headerName}),
			str(validate.StringRules_builder{WellKnownRegex: &headerValue}), []found{loosened("string.well_known_regex")}},
		{"header value to header name", str(validate.StringRules_builder{WellKnownRegex: &headerValue}),
			str(validate.StringRules_builder{WellKnownRegex: &headerName}), []found{tightened("string.well_known_regex")}},
		{"strict header name to loose header value", str(validate.StringRules_builder{WellKnownRegex: &headerName}),
			str(validate.StringRules_builder{WellKnownRegex: &headerValue, Strict: proto.Bool(false)}), []found{loosened("string.well_known_regex")}},
		{"loose header name to strict header value", str(validate.StringRules_builder{WellKnownRegex: &headerName, Strict: proto.Bool(false)}),
			str(validate.StringRules_builder{WellKnownRegex: &headerValue}), []found{tightened("string.well_known_regex")}},
		{"header regex added", nil, str(validate.StringRules_builder{WellKnownRegex: &headerValue, Strict: proto.Bool(false)}), []found{tightened("string.well_known_regex")}},
		{"header regex removed", str(validate.StringRules_builder{WellKnownRegex: &headerName}), nil, []found{loosened("string.well_known_regex")}},
		{"empty prefix is no rule", nil, str(validate.StringRules_builder{Prefix: proto.String("")}), nil},
		{"prefix emptied", str(validate.StringRules_builder{Prefix: proto.String("a")}), str(validate.StringRules_builder{Prefix: proto.String("")}), []found{loosened("string.prefix")}},
		{"empty suffix is no rule", str(validate.StringRules_builder{Suffix: proto.String("")}), nil, nil},
		{"empty contains is no rule", nil, str(validate.StringRules_builder{Contains: proto.String("")}), nil},
		{"empty bytes prefix is no rule", nil, rules{Bytes: validate.BytesRules_builder{Prefix: []byte{}}.Build()}.Build(), nil},
		{"empty pattern is no rule", nil, str(validate.StringRules_builder{Pattern: proto.String("")}), nil},
		{"pattern emptied", str(validate.StringRules_builder{Pattern: proto.String("^a")}), str(validate.StringRules_builder{Pattern: proto.String("")}), []found{loosened("string.pattern")}},
		{"empty not_contains refuses every value", nil, str(validate.StringRules_builder{NotContains: proto.String("")}), []found{tightened("string.not_contains")}},
		{"min_len 0 is no rule", nil, str(validate.StringRules_builder{MinLen: proto.Uint64(0)}), nil},
		{"max_len 0 is a rule", nil, str(validate.StringRules_builder{MaxLen: proto.Uint64(0)}), []found{tightened("string.max_len")}},
		{"len 0 is a rule", nil, str(validate.StringRules_builder{Len: proto.Uint64(0)}), []found{tightened("string.len")}},
		{"empty const is a rule", nil, str(validate.StringRules_builder{Const: proto.String("")}), []found{tightened("string.const")}},
		{"required false is no rule", nil, rules{Required: proto.Bool(false)}.Build(), nil},
		{"ignore unspecified is no rule", nil, ignore(validate.Ignore_IGNORE_UNSPECIFIED), nil},
		{"empty in list is no rule", nil, str(validate.StringRules_builder{In: []string{}}), nil},
		{"field mask in: a parent path admits its children", rules{FieldMask: validate.FieldMaskRules_builder{In: []string{"a.b"}}.Build()}.Build(),
			rules{FieldMask: validate.FieldMaskRules_builder{In: []string{"a"}}.Build()}.Build(), []found{loosened("field_mask.in")}},
		{"field mask in: a child path admits less", rules{FieldMask: validate.FieldMaskRules_builder{In: []string{"a"}}.Build()}.Build(),
			rules{FieldMask: validate.FieldMaskRules_builder{In: []string{"a.b", "a.c"}}.Build()}.Build(), []found{tightened("field_mask.in")}},
		{"field mask not_in: a child of a path refused already", rules{FieldMask: validate.FieldMaskRules_builder{NotIn: []string{"a"}}.Build()}.Build(),
			rules{FieldMask: validate.FieldMaskRules_builder{NotIn: []string{"a", "a.b"}}.Build()}.Build(), nil},
		{"field mask not_in: a parent refuses more", rules{FieldMask: validate.FieldMaskRules_builder{NotIn: []string{"a.b"}}.Build()}.Build(),
			rules{FieldMask: validate.FieldMaskRules_builder{NotIn: []string{"a"}}.Build()}.Build(), []found{tightened("field_mask.not_in")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			old := ct.Evolve(t, examples.Contracts, ct.SetFieldRules(shopType, "note", c.old))
			report, err := contract.Compare(old, ct.Evolve(t, old, ct.SetFieldRules(shopType, "note", c.new)), []string{shopType}, contract.Policies{})
			if err != nil {
				t.Fatal(err)
			}
			var got []found
			for _, f := range report.Types[0].Findings {
				got = append(got, found{f.Path, f.Rule, f.ValidateRule})
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("findings\n%v\nwant\n%v\n%s", got, c.want, report.Types[0].Findings)
			}
		})
	}
}

// FuzzCompare: no new image panics Compare, and one that builds gets a
// report of every type asked for.
func FuzzCompare(f *testing.F) {
	f.Add(examples.Contracts)
	f.Add(ct.Evolve(f, examples.Contracts, ct.RemoveField(shopType, "note", false),
		ct.SetFieldType(lineItemType, "quantity", descriptorpb.FieldDescriptorProto_TYPE_UINT64, ""),
		ct.RemoveEnumValue(paymentEnum, "PAYMENT_METHOD_WALLET", false),
		ct.EditFieldRules(shopType, "total_cents", func(r *validate.FieldRules) { r.GetInt64().SetGt(5) })))
	f.Fuzz(func(t *testing.T, next []byte) {
		r, err := contract.Compare(examples.Contracts, next, examples.Types, contract.Policies{})
		if err == nil && len(r.Types) != len(examples.Types) {
			t.Fatalf("%d type reports, want %d", len(r.Types), len(examples.Types))
		}
	})
}

// enumsFile is an editions file whose enums are open or closed by the
// enum_type feature, and enumsLegacyFile a proto2 one, whose enums are
// closed.
func enumsFiles() []*descriptorpb.FileDescriptorProto {
	enum := func(name string, closed bool, values ...string) *descriptorpb.EnumDescriptorProto {
		e := &descriptorpb.EnumDescriptorProto{Name: proto.String(name)}
		for i, v := range values {
			e.Value = append(e.Value, &descriptorpb.EnumValueDescriptorProto{Name: proto.String(v), Number: proto.Int32(int32(i))})
		}
		if closed {
			e.Options = &descriptorpb.EnumOptions{Features: &descriptorpb.FeatureSet{EnumType: descriptorpb.FeatureSet_CLOSED.Enum()}}
		}
		return e
	}
	enumField := func(name string, num int32, typ string) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{Name: proto.String(name), JsonName: proto.String(name), Number: proto.Int32(num),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_ENUM.Enum(), TypeName: proto.String(typ)}
	}
	return []*descriptorpb.FileDescriptorProto{{
		Name:    proto.String("test/v1/paint.proto"),
		Package: proto.String("test.v1"),
		Syntax:  proto.String("editions"),
		Edition: descriptorpb.Edition_EDITION_2023.Enum(),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name:  proto.String("Paint"),
			Field: []*descriptorpb.FieldDescriptorProto{enumField("color", 1, ".test.v1.Color"), enumField("finish", 2, ".test.v1.Finish")},
		}},
		EnumType: []*descriptorpb.EnumDescriptorProto{
			enum("Color", false, "COLOR_UNSPECIFIED", "COLOR_RED"),
			enum("Finish", true, "FINISH_UNSPECIFIED", "FINISH_MATTE", "FINISH_GLOSS"),
		},
	}, {
		Name:    proto.String("test/v1/legacy_paint.proto"),
		Package: proto.String("test.v1"),
		Syntax:  proto.String("proto2"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name:  proto.String("LegacyPaint"),
			Field: []*descriptorpb.FieldDescriptorProto{enumField("tone", 1, ".test.v1.Tone")},
		}},
		EnumType: []*descriptorpb.EnumDescriptorProto{enum("Tone", false, "TONE_LOW", "TONE_HIGH")},
	}}
}

// TestCompareEnumTypes: a closed enum refuses a number it does not define
// (protobuf keeps it as an unknown field, the gateway and the consumer
// refuse it), so whether an enum is open or closed decides what its
// changes break.
func TestCompareEnumTypes(t *testing.T) {
	const (
		paint  = "test.v1.Paint"
		legacy = "test.v1.LegacyPaint"
		color  = "test.v1.Color"  // open
		finish = "test.v1.Finish" // closed
		tone   = "test.v1.Tone"   // closed: proto2
	)
	types := []string{legacy, paint}
	image := marshal(t, &descriptorpb.FileDescriptorSet{File: enumsFiles()})
	for _, c := range []struct {
		name    string
		typ     string
		edits   []ct.Edit
		want    []found
		verdict verdicts
	}{
		{"value added to an open enum", paint, []ct.Edit{ct.AddEnumValue(color, "COLOR_BLUE", 2)},
			[]found{{"color", contract.RuleEnumValueAdded, ""}}, compatible},
		{"value added to a closed enum", paint, []ct.Edit{ct.AddEnumValue(finish, "FINISH_SATIN", 3)},
			[]found{{"finish", contract.RuleEnumValueAdded, ""}}, breaksForward},
		{"value added to a proto2 enum", legacy, []ct.Edit{ct.AddEnumValue(tone, "TONE_MID", 2)},
			[]found{{"tone", contract.RuleEnumValueAdded, ""}}, breaksForward},
		{"open enum closed", paint, []ct.Edit{ct.SetEnumType(color, true)},
			[]found{{"color", contract.RuleEnumClosed, ""}}, breaksBackward},
		{"closed enum opened", paint, []ct.Edit{ct.SetEnumType(finish, false)},
			[]found{{"finish", contract.RuleEnumOpened, ""}}, breaksForward},
		{"open enum closed, a value added", paint, []ct.Edit{ct.SetEnumType(color, true), ct.AddEnumValue(color, "COLOR_BLUE", 2)},
			[]found{{"color", contract.RuleEnumClosed, ""}, {"color", contract.RuleEnumValueAdded, ""}}, breaksBackward},
		{"closed enum opened, a value added", paint, []ct.Edit{ct.SetEnumType(finish, false), ct.AddEnumValue(finish, "FINISH_SATIN", 3)},
			[]found{{"finish", contract.RuleEnumOpened, ""}, {"finish", contract.RuleEnumValueAdded, ""}}, breaksForward},
		{"value removed from an open enum, reserved", paint, []ct.Edit{ct.RemoveEnumValue(color, "COLOR_RED", true)},
			[]found{{"color", contract.RuleEnumValueReserved, ""}}, compatible},
		{"value removed from a closed enum, reserved", paint, []ct.Edit{ct.RemoveEnumValue(finish, "FINISH_GLOSS", true)},
			[]found{{"finish", contract.RuleEnumValueReserved, ""}}, breaksBackward},
		{"value removed from a closed enum", paint, []ct.Edit{ct.RemoveEnumValue(finish, "FINISH_GLOSS", false)},
			[]found{{"finish", contract.RuleEnumValueRemoved, ""}}, breaksBackward},
	} {
		t.Run(c.name, func(t *testing.T) {
			next := ct.Evolve(t, image, c.edits...)
			for i, mode := range compareModes {
				report, err := contract.Compare(image, next, types, contract.Policies{Default: contract.Policy{Mode: mode}})
				if err != nil {
					t.Fatal(err)
				}
				for _, tr := range report.Types {
					if tr.Type != c.typ {
						if len(tr.Findings) > 0 || !tr.Compatible {
							t.Errorf("%s: untouched type %s: %+v", mode, tr.Type, tr)
						}
						continue
					}
					var got []found
					for _, f := range tr.Findings {
						got = append(got, found{f.Path, f.Rule, f.ValidateRule})
						if f.Reason == "" {
							t.Errorf("finding %+v has no reason", f)
						}
					}
					if !slices.Equal(got, c.want) {
						t.Errorf("%s: findings\n%v\nwant\n%v\n%s", mode, got, c.want, tr.Findings)
					}
					if tr.Compatible != c.verdict[i] {
						t.Errorf("%s: compatible %t, want %t: %s", mode, tr.Compatible, c.verdict[i], tr.Findings)
					}
				}
			}
		})
	}
}
