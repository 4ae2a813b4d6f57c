package contract_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	shopv1 "github.com/sluicehq/sluice/gen/examples/shop/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/contract"
)

// fileByName returns the file of the set with that path.
func fileByName(tb testing.TB, set *descriptorpb.FileDescriptorSet, name string) *descriptorpb.FileDescriptorProto {
	tb.Helper()
	for _, f := range set.GetFile() {
		if f.GetName() == name {
			return f
		}
	}
	tb.Fatalf("no %s in the set", name)
	return nil
}

// withShopCoupon returns the example set with a field added to OrderPlaced.
func withShopCoupon(tb testing.TB) *descriptorpb.FileDescriptorSet {
	set := readSet(tb)
	shop := fileByName(tb, set, "examples/shop/v1/order_placed.proto")
	shop.MessageType[0].Field = append(shop.MessageType[0].Field, &descriptorpb.FieldDescriptorProto{
		Name:     proto.String("coupon"),
		JsonName: proto.String("coupon"),
		Number:   proto.Int32(9),
		Type:     descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
		Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
	})
	return set
}

// nodeFile is a proto3 file with one recursive message, test.v1.Node
// (child, name, and a map of kids), that may carry message-level rules.
func nodeFile(rules *validate.MessageRules, deps ...string) *descriptorpb.FileDescriptorProto {
	opts := new(descriptorpb.MessageOptions)
	if rules != nil {
		proto.SetExtension(opts, validate.E_Message, rules)
	}
	return &descriptorpb.FileDescriptorProto{
		Name:       proto.String("test/v1/node.proto"),
		Package:    proto.String("test.v1"),
		Syntax:     proto.String("proto3"),
		Dependency: deps,
		MessageType: []*descriptorpb.DescriptorProto{{
			Name:    proto.String("Node"),
			Options: opts,
			Field: []*descriptorpb.FieldDescriptorProto{
				{
					Name: proto.String("child"), JsonName: proto.String("child"), Number: proto.Int32(1),
					Type:     descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(),
					TypeName: proto.String(".test.v1.Node"),
					Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
				},
				{
					Name: proto.String("name"), JsonName: proto.String("name"), Number: proto.Int32(2),
					Type:  descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
					Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
				},
				{
					Name: proto.String("kids"), JsonName: proto.String("kids"), Number: proto.Int32(3),
					Type:     descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(),
					TypeName: proto.String(".test.v1.Node.KidsEntry"),
					Label:    descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(),
				},
			},
			NestedType: []*descriptorpb.DescriptorProto{{
				Name:    proto.String("KidsEntry"),
				Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
				Field: []*descriptorpb.FieldDescriptorProto{
					{
						Name: proto.String("key"), JsonName: proto.String("key"), Number: proto.Int32(1),
						Type:  descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
						Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
					},
					{
						Name: proto.String("value"), JsonName: proto.String("value"), Number: proto.Int32(2),
						Type:     descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(),
						TypeName: proto.String(".test.v1.Node"),
						Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
					},
				},
			}},
		}},
	}
}

func setOf(tb testing.TB, files ...*descriptorpb.FileDescriptorProto) []byte {
	tb.Helper()
	return marshal(tb, &descriptorpb.FileDescriptorSet{File: files})
}

func TestLoadErrors(t *testing.T) {
	image := readImage(t)
	dup := readSet(t)
	dup.File = append(dup.File, dup.File[len(dup.File)-1])
	broken := nodeFile(nil)
	broken.MessageType[0].Field[0].TypeName = proto.String(".test.v1.Missing")
	badCEL := nodeFile(&validate.MessageRules{Cel: []*validate.Rule{{
		Id: proto.String("node.bad"), Expression: proto.String("this.nope > 0"),
	}}}, "buf/validate/validate.proto")
	tests := []struct {
		name    string
		image   []byte
		types   []string
		opts    []contract.Option
		mention string
	}{
		{name: "nil types", image: image, types: nil, mention: "no event types"},
		{name: "empty types", image: image, types: []string{}, mention: "no event types"},
		{name: "unknown type", image: image, types: []string{shopType, "examples.shop.v1.Nope"}, mention: `"examples.shop.v1.Nope"`},
		{name: "enum as type", image: image, types: []string{"examples.shop.v1.PaymentMethod"}, mention: `"examples.shop.v1.PaymentMethod"`},
		{name: "package as type", image: image, types: []string{"examples.shop.v1"}, mention: `"examples.shop.v1"`},
		{name: "garbage image", image: []byte("not a descriptor set"), types: []string{shopType}, mention: "decode descriptor set"},
		{name: "empty image", image: nil, types: []string{shopType}, mention: "no files"},
		{name: "file twice", image: marshal(t, dup), types: []string{shopType}, mention: "twice"},
		{name: "missing import", image: setOf(t, nodeFile(nil, "nope/missing.proto")), types: []string{"test.v1.Node"}, mention: `"nope/missing.proto"`},
		{name: "unresolved type", image: setOf(t, broken), types: []string{"test.v1.Node"}, mention: "test/v1/node.proto"},
		{name: "rule does not compile", image: setOf(t, badCEL), types: []string{"test.v1.Node"}, mention: "rules of test.v1.Node"},
		{name: "zero max depth", image: image, types: []string{shopType}, opts: []contract.Option{contract.WithMaxDepth(0)}, mention: "max depth"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := contract.Load(tc.image, tc.types, tc.opts...)
			if err == nil {
				t.Fatalf("Load succeeded with types %v", r.Types())
			}
			t.Log(err)
			if !strings.HasPrefix(err.Error(), "contract: ") || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %q: want the prefix \"contract: \" and a mention of %q", err, tc.mention)
			}
		})
	}
}

func TestLoadFileMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.binpb")
	if _, err := contract.LoadFile(path, []string{shopType}); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("got %v, want an error naming %s", err, path)
	}
}

func TestTypesAndLookup(t *testing.T) {
	r, err := contract.LoadFile(imagePath, []string{logsType, shopType, identityType, shopType})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{identityType, logsType, shopType}
	got := r.Types()
	if !slices.Equal(got, want) {
		t.Fatalf("Types() = %v, want %v", got, want)
	}
	got[0] = "changed"
	if r.Types()[0] != identityType {
		t.Fatal("Types() shares its slice with the registry")
	}
	for _, typ := range want {
		if c := lookup(t, r, typ); c.Type() != typ || string(c.Descriptor().FullName()) != typ {
			t.Errorf("Lookup(%q) = %q, %q", typ, c.Type(), c.Descriptor().FullName())
		}
	}
	// A message in the set that was not named is not an event type.
	if _, ok := r.Lookup("examples.shop.v1.Customer"); ok {
		t.Error("Lookup found a message that is not an event type")
	}
}

// TestDynamicMessagesAreValidated proves that the rules come from the set:
// the contract's descriptor is not the compiled-in one, and a rule on it is
// enforced on the dynamic message decoded with it.
func TestDynamicMessagesAreValidated(t *testing.T) {
	c := lookup(t, loadExamples(t), shopType)
	if c.Descriptor() == (&shopv1.OrderPlaced{}).ProtoReflect().Descriptor() {
		t.Fatal("the contract uses the compiled-in descriptor")
	}
	m := validOrder()
	m.Customer.Email = "ada-at-example.com"
	_, err := c.CheckBinary(marshal(t, m))
	var verr *contract.ViolationError
	if !errors.As(err, &verr) || len(verr.Violations) != 1 || verr.Violations[0].Field != "customer.email" {
		t.Fatalf("got %v, want the customer.email violation", err)
	}
}

func TestSetTakesPrecedenceOverCompiledIn(t *testing.T) {
	r, err := contract.Load(marshal(t, withShopCoupon(t)), []string{shopType})
	if err != nil {
		t.Fatal(err)
	}
	in := toJSON(t, validOrder())
	in = append(in[:len(in)-1], `,"coupon":"SPRING"}`...)
	if _, err := lookup(t, r, shopType).CheckJSON(in); err != nil {
		t.Fatalf("the field the set adds is refused: %v", err)
	}
}

func TestLoadTakesMissingImportsFromCompiledIn(t *testing.T) {
	// The shop file alone: buf/validate/validate.proto comes from the binary.
	set := readSet(t)
	shop := fileByName(t, set, "examples/shop/v1/order_placed.proto")
	r, err := contract.Load(setOf(t, shop), []string{shopType})
	if err != nil {
		t.Fatal(err)
	}
	c := lookup(t, r, shopType)
	if _, err := c.CheckBinary(marshal(t, validOrder())); err != nil {
		t.Fatalf("valid order: %v", err)
	}
	m := validOrder()
	m.Currency = "euro"
	var verr *contract.ViolationError
	if _, err := c.CheckBinary(marshal(t, m)); !errors.As(err, &verr) {
		t.Fatalf("got %v, want a violation", err)
	}
}

func TestFingerprint(t *testing.T) {
	format := regexp.MustCompile(`^sha256:[0-9a-f]{32}$`)
	first, second := loadExamples(t), loadExamples(t)
	seen := map[string]string{}
	for _, typ := range exampleTypes() {
		fp := lookup(t, first, typ).Fingerprint()
		if !format.MatchString(fp) {
			t.Errorf("%s: fingerprint %q is not sha256: and 32 hex digits", typ, fp)
		}
		if again := lookup(t, second, typ).Fingerprint(); again != fp {
			t.Errorf("%s: fingerprint %q on one load, %q on another", typ, fp, again)
		}
		if other, ok := seen[fp]; ok {
			t.Errorf("%s and %s share fingerprint %s", typ, other, fp)
		}
		seen[fp] = typ
		alone, err := contract.LoadFile(imagePath, []string{typ})
		if err != nil {
			t.Fatal(err)
		}
		if got := lookup(t, alone, typ).Fingerprint(); got != fp {
			t.Errorf("%s: fingerprint depends on the other types loaded", typ)
		}
	}

	// Comments and buf's image bookkeeping do not count.
	bare := readSet(t)
	for _, f := range bare.File {
		f.SourceCodeInfo = nil
		f.ProtoReflect().SetUnknown(nil)
	}
	r, err := contract.Load(marshal(t, bare), exampleTypes())
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range exampleTypes() {
		if lookup(t, r, typ).Fingerprint() != lookup(t, first, typ).Fingerprint() {
			t.Errorf("%s: fingerprint changed without source info", typ)
		}
	}

	// A schema change counts, for that contract only.
	r, err = contract.Load(marshal(t, withShopCoupon(t)), exampleTypes())
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range exampleTypes() {
		changed := lookup(t, r, typ).Fingerprint() != lookup(t, first, typ).Fingerprint()
		if changed != (typ == shopType) {
			t.Errorf("%s: fingerprint changed %v after a field was added to %s", typ, changed, shopType)
		}
	}
}

func TestRecursiveMessageDepth(t *testing.T) {
	r, err := contract.Load(setOf(t, nodeFile(nil)), []string{"test.v1.Node"}, contract.WithMaxDepth(4))
	if err != nil {
		t.Fatal(err)
	}
	c := lookup(t, r, "test.v1.Node")
	binary := func(depth int) []byte {
		b := protowire.AppendString(protowire.AppendTag(nil, 2, protowire.BytesType), "leaf")
		for range depth - 1 {
			b = protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), b)
		}
		return b
	}
	json := func(depth int) []byte {
		return []byte(strings.Repeat(`{"child":`, depth-1) + `{"name":"leaf"}` + strings.Repeat("}", depth-1))
	}
	for depth := 1; depth <= 6; depth++ {
		wantOK := depth <= 4
		if _, err := c.CheckBinary(binary(depth)); (err == nil) != wantOK {
			t.Errorf("binary depth %d: error %v, want ok %v", depth, err, wantOK)
		}
		if _, err := c.CheckJSON(json(depth)); (err == nil) != wantOK {
			t.Errorf("JSON depth %d: error %v, want ok %v", depth, err, wantOK)
		}
	}
}

func TestRegistryValidatesCompiledInMessages(t *testing.T) {
	r := loadExamples(t)
	valid := func() *ingestv1.Event {
		return &ingestv1.Event{
			Id:         "evt-1",
			Type:       shopType,
			OccurredAt: timestamppb.Now(),
			Payload:    &ingestv1.Event_Json{Json: "{}"},
		}
	}
	if err := r.Validate(valid()); err != nil {
		t.Fatalf("valid event: %v", err)
	}
	tests := []struct {
		name        string
		mutate      func(*ingestv1.Event)
		field, rule string
	}{
		{"bad id", func(e *ingestv1.Event) { e.Id = "-x" }, "id", "string.pattern"},
		{"no payload", func(e *ingestv1.Event) { e.Payload = nil }, "payload", "required"},
		{"no occurred_at", func(e *ingestv1.Event) { e.OccurredAt = nil }, "occurred_at", "required"},
		{"bad attribute key", func(e *ingestv1.Event) { e.Attributes = map[string]string{"UP": "v"} }, `attributes["UP"]`, "string.pattern"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := valid()
			tc.mutate(e)
			var verr *contract.ViolationError
			if err := r.Validate(e); !errors.As(err, &verr) {
				t.Fatalf("got %v, want a *ViolationError", err)
			}
			if len(verr.Violations) != 1 || verr.Violations[0].Field != tc.field || verr.Violations[0].Rule != tc.rule {
				t.Fatalf("got %v, want field %q rule %q", verr.Violations, tc.field, tc.rule)
			}
		})
	}
}

func TestViolationsIgnoresOtherErrors(t *testing.T) {
	if vs, ok := contract.Violations(errors.New("other")); ok || vs != nil {
		t.Fatalf("Violations(other) = %v, %v", vs, ok)
	}
}

// TestProto2Contract covers what proto3 decoding does not check itself:
// required fields, and UTF-8 in the strings of a proto2 file.
func TestProto2Contract(t *testing.T) {
	file := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("test/v1/ping.proto"),
		Package: proto.String("test.v1"),
		Syntax:  proto.String("proto2"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Ping"),
			Field: []*descriptorpb.FieldDescriptorProto{
				{
					Name: proto.String("id"), JsonName: proto.String("id"), Number: proto.Int32(1),
					Type:  descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
					Label: descriptorpb.FieldDescriptorProto_LABEL_REQUIRED.Enum(),
				},
				{
					Name: proto.String("note"), JsonName: proto.String("note"), Number: proto.Int32(2),
					Type:  descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
					Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
				},
			},
		}},
	}
	r, err := contract.Load(setOf(t, file), []string{"test.v1.Ping"})
	if err != nil {
		t.Fatal(err)
	}
	c := lookup(t, r, "test.v1.Ping")
	tests := []struct {
		name    string
		json    string
		binary  []byte
		mention string // empty when the payload is valid
	}{
		{name: "binary valid", binary: str(1, "p-1")},
		{name: "json valid", json: `{"id":"p-1","note":"ok"}`},
		{name: "binary without required", binary: str(2, "n"), mention: "lacks a required field"},
		{name: "json without required", json: `{"note":"n"}`, mention: "lacks a required field"},
		{name: "binary invalid utf-8", binary: append(str(1, "p-1"), str(2, "\xc3")...), mention: "invalid UTF-8 at note"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.json != "" {
				_, err = c.CheckJSON([]byte(tc.json))
			} else {
				_, err = c.CheckBinary(tc.binary)
			}
			if tc.mention == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var merr *contract.MalformedError
			if !errors.As(err, &merr) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("got %v, want a MalformedError mentioning %q", err, tc.mention)
			}
		})
	}
}

// TestNestedMapEntries checks map entries inside map values: a map is
// one level of nesting and its value another, as in the JSON form (a
// value missing from its entry is an empty message, {}), and a bad entry
// is found at any depth.
func TestNestedMapEntries(t *testing.T) {
	r, err := contract.Load(setOf(t, nodeFile(nil)), []string{"test.v1.Node"}, contract.WithMaxDepth(5))
	if err != nil {
		t.Fatal(err)
	}
	c := lookup(t, r, "test.v1.Node")
	kids := func(key string, value ...[]byte) []byte { // one entry of kids, value is a Node's fields
		entry := append(str(1, key), protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), bytes.Join(value, nil))...)
		return protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), entry)
	}
	wrongKey := protowire.AppendFixed64(protowire.AppendTag(nil, 1, protowire.Fixed64Type), 0)
	badEntry := protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), append(str(1, "k"), wrongKey...))
	tests := []struct {
		name    string
		binary  []byte
		json    string
		mention string // empty when valid
	}{
		{name: "two levels of maps", binary: kids("a", kids("b", str(2, "leaf")))},
		{name: "two levels of maps as JSON", json: `{"kids":{"a":{"kids":{"b":{"name":"leaf"}}}}}`},
		{name: "three levels of maps", binary: kids("a", kids("b", kids("c"))), mention: "depth limit of 5"},
		{name: "three levels of maps as JSON", json: `{"kids":{"a":{"kids":{"b":{"kids":{"c":{}}}}}}}`, mention: "deeper than 5"},
		{name: "bad entry in a nested map", binary: kids("a", badEntry), mention: "map entry key has wire type 1, which does not match its type string at kids.kids in"},
		{name: "bad entry under a child", binary: protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), badEntry), mention: "at child.kids in"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.json != "" {
				_, err = c.CheckJSON([]byte(tc.json))
			} else {
				_, err = c.CheckBinary(tc.binary)
			}
			if tc.mention == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var merr *contract.MalformedError
			if !errors.As(err, &merr) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("got %v, want a MalformedError mentioning %q", err, tc.mention)
			}
		})
	}
}

// TestDecodersChosenAtLoad: binary payloads decode with hyperpb where the
// differential fuzz holds it to protobuf-go, and with dynamicpb, for a
// stated reason, where it does not: a map with message values, a file
// that is not proto3. JSON goes through the transcoder where it covers the
// contract (the examples do not reach what it leaves to protojson).
func TestDecodersChosenAtLoad(t *testing.T) {
	r := loadExamples(t)
	for _, typ := range exampleTypes() {
		if d := lookup(t, r, typ).Decoders(); d != (contract.Decoders{Binary: "hyperpb", JSON: "transcoder"}) {
			t.Errorf("%s: %+v, want hyperpb and the transcoder", typ, d)
		}
	}
	nodes, err := contract.Load(setOf(t, nodeFile(nil)), []string{"test.v1.Node"})
	if err != nil {
		t.Fatal(err)
	}
	if d := lookup(t, nodes, "test.v1.Node").Decoders(); d.Binary != "dynamicpb" || !strings.Contains(d.BinaryReason, "test.v1.Node.kids is a map with message values") {
		t.Errorf("test.v1.Node: %+v, want dynamicpb for its map of messages", d)
	}
	proto2 := nodeFile(nil)
	proto2.Syntax = proto.String("proto2")
	proto2.MessageType[0].Field = proto2.MessageType[0].Field[1:2] // name only
	proto2.MessageType[0].NestedType = nil
	r2, err := contract.Load(setOf(t, proto2), []string{"test.v1.Node"})
	if err != nil {
		t.Fatal(err)
	}
	if d := lookup(t, r2, "test.v1.Node").Decoders(); d.Binary != "dynamicpb" || !strings.Contains(d.BinaryReason, "not in a proto3 file") {
		t.Errorf("proto2 test.v1.Node: %+v, want dynamicpb", d)
	}
}
