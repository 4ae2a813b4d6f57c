package contract_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sluicehq/sluice/contract"
)

// fuzzContracts returns the example contracts in a fixed order, for a fuzz
// input to pick one by index, then test.v1.Node: recursive, with a map,
// then test.v1.Doc, with Struct, Value, ListValue and a map of messages,
// at the default depth limit and at shallowDocDepth.
func fuzzContracts(f *testing.F) []*contract.Contract {
	r := loadExamples(f)
	types := r.Types()
	out := make([]*contract.Contract, len(types))
	for i, typ := range types {
		out[i] = lookup(f, r, typ)
	}
	nodes, err := contract.Load(setOf(f, nodeFile(nil)), []string{"test.v1.Node"})
	if err != nil {
		f.Fatal(err)
	}
	return append(out, lookup(f, nodes, "test.v1.Node"), docContract(f), docContract(f, contract.WithMaxDepth(shallowDocDepth)))
}

// Positions in fuzzContracts' order: test.v1.Node, test.v1.Doc and
// test.v1.Doc with a depth limit of shallowDocDepth.
const (
	nodeIndex       = 3
	docIndex        = 4
	shallowDocIndex = 5
	shallowDocDepth = 4
)

// addDocSeeds seeds a fuzz target with test.v1.Doc nested through each
// shape of nestings, up to and past both its contracts' limits: as JSON,
// or as binary.
func addDocSeeds(f *testing.F, binary bool) {
	c := docContract(f)
	for _, shape := range nestings() {
		for _, tc := range []struct {
			which uint8
			depth int
		}{{shallowDocIndex, shallowDocDepth}, {docIndex, contract.DefaultMaxDepth}} {
			for _, n := range []int{tc.depth - 1, tc.depth, tc.depth + 1} {
				if n < shape.least {
					continue
				}
				if binary {
					f.Add(tc.which, docBinary(f, c, shape.json(n)))
				} else {
					f.Add(tc.which, []byte(shape.json(n)))
				}
			}
		}
	}
	if binary {
		f.Add(uint8(docIndex), docBinary(f, c, `{"name":"far too long","tags":["a","b"],"kids":{"k":{}}}`))
	} else {
		f.Add(uint8(docIndex), []byte(`{"name":"far too long","tags":["a","b"],"kids":{"k":{}}}`))
		f.Add(uint8(shallowDocIndex), []byte(`{"v":{"a":[1,{"b":null}]},"vs":[[],{}],"attrs":{},"lv":[]}`))
	}
}

// indexOf is the position of typ in fuzzContracts' order.
func indexOf(typ string) uint8 {
	types := exampleTypes()
	slices.Sort(types)
	return uint8(slices.Index(types, typ))
}

// checkRefusal fails unless err is one of the two typed refusals: any other
// error is an internal one, which no input should provoke.
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	var merr *contract.MalformedError
	var verr *contract.ViolationError
	if !errors.As(err, &merr) && !errors.As(err, &verr) {
		t.Fatalf("got %T %v, want a MalformedError or a ViolationError", err, err)
	}
	if strings.Contains(err.Error(), "decoder panic") {
		t.Fatalf("the decoder panicked: %v", err)
	}
}

func FuzzCheckJSON(f *testing.F) {
	contracts := fuzzContracts(f)
	for typ, name := range fixtures() {
		f.Add(indexOf(typ), fixture(f, name))
	}
	for typ, m := range validExamples() {
		f.Add(indexOf(typ), toJSON(f, m))
	}
	for typ, cases := range violationCases() {
		for _, tc := range cases[:3] {
			f.Add(indexOf(typ), toJSON(f, tc.msg))
		}
	}
	f.Add(indexOf(shopType), []byte(`{"customer":{"email":[[[]]]}}`))
	f.Add(indexOf(logsType), []byte(`{"timestamp":"9999-12-31T23:59:59.999999999Z"}`))
	f.Add(uint8(nodeIndex), []byte(`{"child":{"name":"a"},"kids":{"k":{"kids":{"j":{}}}}}`))
	addDocSeeds(f, false)
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		c := contracts[int(which)%len(contracts)]
		out, err := c.CheckJSON(b)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		// What CheckJSON publishes is a valid binary payload of the contract.
		again, err := c.CheckBinary(out)
		if err != nil {
			t.Fatalf("CheckBinary refuses the output of CheckJSON: %v", err)
		}
		if !bytes.Equal(again, out) {
			t.Fatal("CheckBinary changed a valid payload")
		}
	})
}

func FuzzCheckBinary(f *testing.F) {
	contracts := fuzzContracts(f)
	addBinarySeeds(f, 3)
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		c := contracts[int(which)%len(contracts)]
		in := slices.Clone(b)
		out, err := c.CheckBinary(b)
		if !bytes.Equal(b, in) {
			t.Fatal("CheckBinary modified its input")
		}
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if !bytes.Equal(out, b) {
			t.Fatal("CheckBinary did not return its input")
		}
		// An event accepted as binary is accepted as JSON too, and both
		// forms decode to the same message.
		m := dynamicpb.NewMessage(c.Descriptor())
		if err := proto.Unmarshal(b, m); err != nil {
			t.Fatalf("accepted payload does not decode: %v", err)
		}
		js, err := protojson.Marshal(m)
		if err != nil {
			t.Fatalf("accepted payload has no JSON form: %v", err)
		}
		fromJSON, err := c.CheckJSON(js)
		if err != nil {
			t.Fatalf("CheckJSON refuses the JSON form of an accepted payload %s: %v", js, err)
		}
		m2 := dynamicpb.NewMessage(c.Descriptor())
		if err := proto.Unmarshal(fromJSON, m2); err != nil {
			t.Fatal(err)
		}
		// JSON writes every google.protobuf.NullValue as null, which reads
		// back as NULL_VALUE: the one thing the JSON form cannot carry.
		zeroNullValues(m)
		if !proto.Equal(m, m2) {
			t.Fatalf("binary and JSON forms differ: %v vs %v", m, m2)
		}
	})
}

// zeroNullValues sets every google.protobuf.NullValue in m, at any depth,
// to NULL_VALUE (0): a binary payload may hold another number in that open
// enum, and the JSON mapping writes them all as null.
func zeroNullValues(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if isNullValue(fd) {
					l.Set(i, protoreflect.ValueOfEnum(0))
				} else if fd.Message() != nil {
					zeroNullValues(l.Get(i).Message())
				}
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if isNullValue(fd.MapValue()) {
					v.Map().Set(k, protoreflect.ValueOfEnum(0))
				} else if fd.MapValue().Message() != nil {
					zeroNullValues(mv.Message())
				}
				return true
			})
		case isNullValue(fd):
			m.Set(fd, protoreflect.ValueOfEnum(0))
		case fd.Message() != nil:
			zeroNullValues(v.Message())
		}
		return true
	})
}

func isNullValue(fd protoreflect.FieldDescriptor) bool {
	return fd.Enum() != nil && fd.Enum().FullName() == "google.protobuf.NullValue"
}

// FuzzBinaryDecoders holds CheckBinary, which decodes with hyperpb, to the
// answers of the reflective dynamicpb decoder it replaced: both accept, or
// both refuse with the same kind of error and, for rules, the same
// violations.
func FuzzBinaryDecoders(f *testing.F) {
	contracts := append(fuzzContracts(f), treeContract(f))
	if d := contracts[len(contracts)-1].Decoders(); d.Binary != "hyperpb" {
		f.Fatalf("test.v1.Tree decodes with %+v, want hyperpb", d)
	}
	tree := uint8(len(contracts) - 1)
	leaf := str(2, "leaf")
	f.Add(tree, protowire.AppendBytes(protowire.AppendTag(leaf, 1, protowire.BytesType), leaf))
	f.Add(tree, protowire.AppendBytes(protowire.AppendTag(leaf, 3, protowire.BytesType), leaf))
	f.Add(tree, protowire.AppendBytes(protowire.AppendTag(nil, 4, protowire.BytesType), append(str(1, "k"), str(2, "v")...)))
	f.Add(tree, protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), protowire.AppendVarint(protowire.AppendVarint(nil, 1), 1<<40)))
	f.Add(tree, protowire.AppendVarint(protowire.AppendTag(nil, 8, protowire.VarintType), 7))
	f.Add(tree, protowire.AppendBytes(protowire.AppendTag(nil, 10, protowire.BytesType), protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1<<41)))
	addBinarySeeds(f, -1)
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		c := contracts[int(which)%len(contracts)]
		_, fast := c.CheckBinary(b)
		_, slow := c.DynamicCheckBinary(b)
		if fast == nil || slow == nil {
			if fast != slow {
				t.Fatalf("hyperpb: %v; dynamicpb: %v", fast, slow)
			}
			return
		}
		sameRefusal(t, "hyperpb", fast, "dynamicpb", slow)
	})
}

// addBinarySeeds seeds a binary fuzz target with the valid examples, whole
// and cut in half, each contract's first perType violation cases (all for
// -1), and payloads with unknown fields in a message and a map entry.
func addBinarySeeds(f *testing.F, perType int) {
	for typ, m := range validExamples() {
		b := marshal(f, m)
		f.Add(indexOf(typ), b)
		f.Add(indexOf(typ), b[:len(b)/2])
	}
	for typ, cases := range violationCases() {
		if perType >= 0 {
			cases = cases[:perType]
		}
		for _, tc := range cases {
			f.Add(indexOf(typ), marshal(f, tc.msg))
		}
	}
	f.Add(indexOf(shopType), append(marshal(f, validOrder()), unknownField()...))
	f.Add(indexOf(logsType), labelsEntry(str(1, "k"), str(2, "v"), str(3, "x")))
	kid := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), str(2, "leaf"))
	f.Add(uint8(nodeIndex), protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), append(str(1, "k"), kid...)))
	addDocSeeds(f, true)
}

// sameRefusal fails unless the fast path's refusal is typed and of the
// slow one's kind, and for rules lists the same violations.
func sameRefusal(t *testing.T, fastName string, fast error, slowName string, slow error) {
	t.Helper()
	checkRefusal(t, fast)
	var fv, sv *contract.ViolationError
	var fm, sm *contract.MalformedError
	switch {
	case errors.As(fast, &fv) && errors.As(slow, &sv):
		if fv.Partial != sv.Partial || !sameViolations(fv.Violations, sv.Violations) {
			t.Fatalf("%s: %v; %s: %v", fastName, fast, slowName, slow)
		}
	case errors.As(fast, &fm) && errors.As(slow, &sm):
	default:
		t.Fatalf("%s: %v; %s: %v", fastName, fast, slowName, slow)
	}
}

// sameViolations compares two reports as sets: the entries of one map
// field come in no set order.
func sameViolations(a, b []contract.Violation) bool {
	key := func(v contract.Violation) string { return v.Field + "\x00" + v.Rule + "\x00" + v.Message }
	ka := make([]string, len(a))
	kb := make([]string, len(b))
	for i := range a {
		ka[i] = key(a[i])
	}
	for i := range b {
		kb[i] = key(b[i])
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}

// treeContract loads test.v1.Tree.
func treeContract(f *testing.F) *contract.Contract {
	trees, err := contract.Load(setOf(f, treeFile()), []string{"test.v1.Tree"})
	if err != nil {
		f.Fatal(err)
	}
	return lookup(f, trees, "test.v1.Tree")
}

// treeFile is test.v1.Tree, a proto3 contract that hyperpb decodes, with
// what the examples lack: recursion through a field and a list, packed
// lists of every width, an enum, a oneof, a map with an integer key, bytes
// and the two well-known types the scan checks.
func treeFile() *descriptorpb.FileDescriptorProto {
	field := func(name string, num int32, typ descriptorpb.FieldDescriptorProto_Type, label descriptorpb.FieldDescriptorProto_Label, typeName string) *descriptorpb.FieldDescriptorProto {
		fd := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), JsonName: proto.String(name), Number: proto.Int32(num), Type: typ.Enum(), Label: label.Enum()}
		if typeName != "" {
			fd.TypeName = proto.String(typeName)
		}
		return fd
	}
	const (
		opt = descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
		rep = descriptorpb.FieldDescriptorProto_LABEL_REPEATED
	)
	entry := func(name string, key descriptorpb.FieldDescriptorProto_Type) *descriptorpb.DescriptorProto {
		return &descriptorpb.DescriptorProto{
			Name:    proto.String(name),
			Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
			Field: []*descriptorpb.FieldDescriptorProto{
				field("key", 1, key, opt, ""),
				field("value", 2, descriptorpb.FieldDescriptorProto_TYPE_STRING, opt, ""),
			},
		}
	}
	oneof := func(fd *descriptorpb.FieldDescriptorProto) *descriptorpb.FieldDescriptorProto {
		fd.OneofIndex = proto.Int32(0)
		return fd
	}
	return &descriptorpb.FileDescriptorProto{
		Name:       proto.String("test/v1/tree.proto"),
		Package:    proto.String("test.v1"),
		Syntax:     proto.String("proto3"),
		Dependency: []string{"google/protobuf/timestamp.proto", "google/protobuf/duration.proto"},
		EnumType: []*descriptorpb.EnumDescriptorProto{{
			Name: proto.String("Kind"),
			Value: []*descriptorpb.EnumValueDescriptorProto{
				{Name: proto.String("KIND_UNSPECIFIED"), Number: proto.Int32(0)},
				{Name: proto.String("KIND_LEAF"), Number: proto.Int32(1)},
			},
		}},
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Tree"),
			Field: []*descriptorpb.FieldDescriptorProto{
				field("child", 1, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, opt, ".test.v1.Tree"),
				field("name", 2, descriptorpb.FieldDescriptorProto_TYPE_STRING, opt, ""),
				field("kids", 3, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, rep, ".test.v1.Tree"),
				field("labels", 4, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, rep, ".test.v1.Tree.LabelsEntry"),
				field("nums", 5, descriptorpb.FieldDescriptorProto_TYPE_INT64, rep, ""),
				field("fixed", 6, descriptorpb.FieldDescriptorProto_TYPE_FIXED32, rep, ""),
				field("ratios", 7, descriptorpb.FieldDescriptorProto_TYPE_DOUBLE, rep, ""),
				field("kind", 8, descriptorpb.FieldDescriptorProto_TYPE_ENUM, opt, ".test.v1.Kind"),
				field("at", 9, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, opt, ".google.protobuf.Timestamp"),
				field("took", 10, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, opt, ".google.protobuf.Duration"),
				field("ranks", 11, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, rep, ".test.v1.Tree.RanksEntry"),
				oneof(field("text", 12, descriptorpb.FieldDescriptorProto_TYPE_STRING, opt, "")),
				oneof(field("blob", 13, descriptorpb.FieldDescriptorProto_TYPE_BYTES, opt, "")),
				field("flags", 14, descriptorpb.FieldDescriptorProto_TYPE_BOOL, rep, ""),
				field("delta", 15, descriptorpb.FieldDescriptorProto_TYPE_SINT32, opt, ""),
				field("ids", 16, descriptorpb.FieldDescriptorProto_TYPE_UINT64, rep, ""),
			},
			NestedType: []*descriptorpb.DescriptorProto{
				entry("LabelsEntry", descriptorpb.FieldDescriptorProto_TYPE_STRING),
				entry("RanksEntry", descriptorpb.FieldDescriptorProto_TYPE_INT32),
			},
			OneofDecl: []*descriptorpb.OneofDescriptorProto{{Name: proto.String("body")}},
		}},
	}
}

// FuzzJSONDecoders holds CheckJSON, which transcodes JSON to binary and
// checks that as CheckBinary does, to the protojson path it replaced: both
// accept with the same bytes to publish, or both refuse with the same kind
// of error and, for rules, the same violations. The decode step is held
// so on its own too (DecodeJSON, the rules not run), and what is accepted
// decodes again as binary, on the fast path and the reflective one.
//
// CheckJSONAllowUnknown is held so to protojson with DiscardUnknown; it
// takes what CheckJSON takes, with the same bytes, and what it publishes
// CheckBinary takes: no unknown field is left in it.
func FuzzJSONDecoders(f *testing.F) {
	contracts := append(fuzzContracts(f), treeContract(f))
	for typ, name := range fixtures() {
		f.Add(indexOf(typ), fixture(f, name))
	}
	for typ, m := range validExamples() {
		f.Add(indexOf(typ), toJSON(f, m))
	}
	for typ, cases := range violationCases() {
		for _, tc := range cases {
			f.Add(indexOf(typ), toJSON(f, tc.msg))
		}
	}
	tree := uint8(len(contracts) - 1)
	f.Add(tree, []byte(`{"child":{"name":"a","kids":[{}]},"labels":{"k":"v"},"nums":["1",2],"fixed":[3],"ratios":["NaN",-0.0,1e300],"kind":"KIND_LEAF"}`))
	f.Add(tree, []byte(`{"at":"2026-12-01T10:00:00.5+01:00","took":"-1.000000001s","ranks":{"-3":"x"},"blob":"_-8=","flags":[true],"delta":-7,"ids":["18446744073709551615"]}`))
	f.Add(tree, []byte(`{"text":"a","blob":"AA=="}`))
	f.Add(uint8(nodeIndex), []byte(`{"child":{"name":"a"},"kids":{"k":{"kids":{"j":{}}}}}`))
	f.Add(tree, []byte(`{"child":{"name":"a","extra":{"b":[1,"x",null]}},"kind":"KIND_TREE","labels":{"k":"v"},"new":true}`))
	f.Add(uint8(docIndex), []byte(`{"name":"n","unknown":[[{"a":{}}]],"kids":{"k":{"more":1}}}`))
	f.Add(indexOf(shopType), []byte(`{"orderId":"x","paymentMethod":"PAYMENT_METHOD_CRYPTO","[buf.validate.field]":1}`))
	addDocSeeds(f, false)
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		c := contracts[int(which)%len(contracts)]
		in := slices.Clone(b)
		fast, ferr := c.CheckJSON(b)
		if !bytes.Equal(b, in) {
			t.Fatal("CheckJSON modified its input") // the gateway hands it a string's bytes
		}
		slow, serr := c.ReflectCheckJSON(b)
		sameAnswer(t, "CheckJSON", fast, ferr, slow, serr)
		lenient, lerr := c.CheckJSONAllowUnknown(b)
		if !bytes.Equal(b, in) {
			t.Fatal("CheckJSONAllowUnknown modified its input")
		}
		slowLenient, slerr := c.ReflectCheckJSONAllowUnknown(b)
		sameAnswer(t, "CheckJSONAllowUnknown", lenient, lerr, slowLenient, slerr)
		if ferr == nil && (lerr != nil || !bytes.Equal(lenient, fast)) {
			t.Fatalf("CheckJSON takes %q, CheckJSONAllowUnknown: %x, %v", b, lenient, lerr)
		}
		if lerr == nil {
			if _, err := c.CheckBinary(lenient); err != nil {
				t.Fatalf("CheckBinary refuses what CheckJSONAllowUnknown publishes for %q: %v", b, err)
			}
		}
		fastDecoded, ferr := c.DecodeJSON(b)
		slowDecoded, serr := c.ReflectDecodeJSON(b)
		sameAnswer(t, "DecodeJSON", fastDecoded, ferr, slowDecoded, serr)
		if ferr != nil {
			return
		}
		// What JSON decodes to nests within the limit as binary too.
		for name, decode := range map[string]func([]byte) ([]byte, error){
			"DecodeBinary": c.DecodeBinary, "DynamicCheckBinary": c.DynamicCheckBinary, "CheckBinary": c.CheckBinary,
		} {
			_, err := decode(fastDecoded)
			if _, broke := errors.AsType[*contract.ViolationError](err); err != nil && !(broke && name != "DecodeBinary") {
				t.Fatalf("%s refuses what DecodeJSON returns for %q: %v", name, b, err)
			}
		}
	})
}

// sameAnswer fails unless the transcoder's path and protojson's both
// accept with the same bytes, or refuse alike (sameRefusal).
func sameAnswer(t *testing.T, what string, fast []byte, ferr error, slow []byte, serr error) {
	t.Helper()
	if ferr == nil || serr == nil {
		if ferr != serr || !bytes.Equal(fast, slow) {
			t.Fatalf("%s: transcoder: %x, %v; protojson: %x, %v", what, fast, ferr, slow, serr)
		}
		return
	}
	sameRefusal(t, what+": transcoder", ferr, "protojson", serr)
}
