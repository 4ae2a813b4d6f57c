package contract

import (
	"os"
	"slices"
	"sync"
	"testing"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

func loadEverything(t *testing.T) *Contract {
	t.Helper()
	img, err := os.ReadFile("testdata/rules/rules.binpb")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Load(img, []string{"sluice.testrules.v1.Everything"})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := r.Lookup("sluice.testrules.v1.Everything")
	return c
}

// TestRulesChoice: each field's rules go to the compiled checks or to
// protovalidate as the rules allow, and protovalidate's filter skips
// exactly the compiled ones.
func TestRulesChoice(t *testing.T) {
	c := loadEverything(t)
	choice := make(map[string]FieldRules)
	for _, f := range c.Rules() {
		choice[f.Field] = f
	}
	const pkg = "sluice.testrules.v1."
	for _, name := range []string{"Everything.s_len", "Everything.s_pattern", "Everything.s_email", "Everything.i32_excl",
		"Everything.fl_range", "Everything.color_const", "Everything.r_items", "Everything.m_patterns",
		"Everything.inner_required", "Everything.choice_a", "Mixed.lo", "Pick.a", "Inner.tags", "Everything.ts_range", "Everything.dur_required", "Everything.r_times"} {
		if f, ok := choice[pkg+name]; !ok || !f.Compiled {
			t.Errorf("%s: %+v, want compiled", name, f)
		}
	}
	for name, reason := range map[string]string{
		"Everything.cel_field":     "CEL",
		"Everything.by_len":        "bytes rules not compiled",
		"Everything.ts_now":        "lt_now not compiled",
		"Everything.f_email_false": "email = false not compiled",
		"Mixed.code":               "CEL",
		"Node.children":            "recursive message",
	} {
		if f := choice[pkg+name]; f.Compiled || f.Reason != reason {
			t.Errorf("%s: %+v, want left to protovalidate because %q", name, f, reason)
		}
	}
	if c.rules.native {
		t.Error("Everything has CEL rules but its plan does without protovalidate")
	}
	md := c.Descriptor()
	filter := c.rules.filter
	if len(filter) != 1 {
		t.Fatalf("filter options: %d", len(filter))
	}
	skip := ruleFilter(c.rules.skip)
	if skip.ShouldValidate(nil, md.Fields().ByName("s_len")) || !skip.ShouldValidate(nil, md.Fields().ByName("cel_field")) {
		t.Error("filter does not skip exactly the compiled fields")
	}
	if skip.ShouldValidate(nil, md.Fields().ByName("pick").Message()) {
		t.Error("filter does not skip Pick's compiled message oneof rules")
	}
	if skip.ShouldValidate(nil, md.Oneofs().ByName("choice")) {
		t.Error("filter does not skip the compiled oneof")
	}
}

// TestRulesRun: the compiled checks themselves report the fields they
// cover, in protovalidate's order, and stop at the first with fail-fast.
func TestRulesRun(t *testing.T) {
	c := loadEverything(t)
	msg := dynamicpb.NewMessage(c.Descriptor())
	js := `{"sLen":"ab","sIn":"b","sPattern":"UP","i32Range":11,"rItems":["a"],"inner":{"count":11},"mPatterns":{"Bad":"0b3f9c1e-5a8d-4e2b-9f61-2c7d8e4a1b90"},"celField":"a b","choiceA":"ab"}`
	if err := protojson.Unmarshal([]byte(js), msg); err != nil {
		t.Fatal(err)
	}
	var got []string
	all, _ := c.rules.run(msg, false)
	for _, kv := range all {
		got = append(got, kv.v.Field+" "+kv.v.Rule)
	}
	for _, want := range []string{"s_len string.len", "s_in string.in", "s_pattern string.pattern", "i32_range int32.gt_lte",
		"r_items[0] string.min_len", "inner.count uint32.lte", `m_patterns["Bad"] string.pattern`} {
		if !slices.Contains(got, want) {
			t.Errorf("compiled checks lack %q: %q", want, got)
		}
	}
	for _, g := range got {
		if g == "cel_field cel_field.no_spaces" {
			t.Errorf("compiled checks report a CEL rule: %q", got)
		}
	}
	if i, j := slices.Index(got, "s_len string.len"), slices.Index(got, "i32_range int32.gt_lte"); i > j {
		t.Errorf("out of field order: %q", got)
	}
	if first, _ := c.rules.run(msg, true); len(first) != 1 || first[0].v.Field != "s_len" {
		t.Errorf("fail-fast: %+v, want s_len's only", first)
	}
}

// BenchmarkRulesFilter prices protovalidate's per-call filter: the same
// validation with no filter, with a filter that skips nothing, and with
// the compiled fields skipped (the compiled checks not run).
func BenchmarkRulesFilter(b *testing.B) {
	img, err := os.ReadFile("../examples/contracts.binpb")
	if err != nil {
		b.Fatal(err)
	}
	r, err := Load(img, []string{"examples.shop.v1.OrderPlaced"})
	if err != nil {
		b.Fatal(err)
	}
	c, _ := r.Lookup("examples.shop.v1.OrderPlaced")
	js, err := os.ReadFile("testdata/order_placed.json")
	if err != nil {
		b.Fatal(err)
	}
	msg := dynamicpb.NewMessage(c.Descriptor())
	if err := protojson.Unmarshal(js, msg); err != nil {
		b.Fatal(err)
	}
	none := []protovalidate.ValidationOption{protovalidate.WithFilter(ruleFilter(nil))}
	for _, bc := range []struct {
		name string
		opts []protovalidate.ValidationOption
	}{{"none", nil}, {"pass_all", none}, {"skip_compiled", c.rules.filter}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := r.failFast.Validate(msg, bc.opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRulesConcurrent: the compiled checks share nothing mutable between
// calls (run it with -race): concurrent runs report what one run does.
func TestRulesConcurrent(t *testing.T) {
	c := loadEverything(t)
	msg := dynamicpb.NewMessage(c.Descriptor())
	js := `{"sLen":"ab","rItems":["a","b"],"mBounds":{"a":-1},"inners":[{},{}],"pick":{"a":"x","b":"y"}}`
	if err := protojson.Unmarshal([]byte(js), msg); err != nil {
		t.Fatal(err)
	}
	want, _ := c.rules.run(msg, false)
	if len(want) < 5 {
		t.Fatalf("compiled checks report %d violations", len(want))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for range 4 {
		wg.Go(func() {
			for range 200 {
				got, _ := c.rules.run(msg, false)
				if len(got) != len(want) {
					errs <- "different reports"
					return
				}
				for i := range got {
					if got[i].v != want[i].v {
						errs <- got[i].v.String() + " != " + want[i].v.String()
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestItemZero: an item is empty at protovalidate's zero, which for a
// proto2 enum is its first value, not 0.
func TestItemZero(t *testing.T) {
	fdp := &descriptorpb.FileDescriptorProto{
		Name:   proto.String("zero.proto"),
		Syntax: proto.String("proto2"),
		EnumType: []*descriptorpb.EnumDescriptorProto{{
			Name:  proto.String("Level"),
			Value: []*descriptorpb.EnumValueDescriptorProto{{Name: proto.String("HIGH"), Number: proto.Int32(5)}, {Name: proto.String("LOW"), Number: proto.Int32(0)}},
		}},
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("M"),
			Field: []*descriptorpb.FieldDescriptorProto{{
				Name: proto.String("levels"), Number: proto.Int32(1), JsonName: proto.String("levels"),
				Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_ENUM.Enum(),
				TypeName: proto.String(".Level"),
			}},
		}},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if z := itemZero(fd.Messages().Get(0).Fields().Get(0)); z.Enum() != 5 {
		t.Errorf("zero of a proto2 enum item: %v, want its first value 5", z.Enum())
	}
}
