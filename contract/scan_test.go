package contract

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/examples"
)

// TestScanPlans: the scan after decoding visits only fields that can hold
// what it looks for. In proto3 LogLine that is the Timestamp, not its
// strings or its map<string, string>, whose UTF-8 the decoder checked, nor
// the Source message, which holds nothing the scan looks for once the wire
// walk has refused unknown fields; without the walk, Source is visited
// too. In proto2 strings are visited; a type open to extensions is scanned
// whole.
func TestScanPlans(t *testing.T) {
	r, err := Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := r.Lookup("examples.logs.v1.LogLine")
	if !ok {
		t.Fatal("LogLine not loaded")
	}
	var names []string
	for _, fd := range c.scanPlans[c.desc] {
		names = append(names, string(fd.Name()))
	}
	if !slices.Equal(names, []string{"timestamp"}) {
		t.Errorf("LogLine plan visits %v, want [timestamp]", names)
	}
	names = nil
	for _, fd := range newScanPlans(c.desc, false)[c.desc] {
		names = append(names, string(fd.Name()))
	}
	if !slices.Equal(names, []string{"timestamp", "source"}) {
		t.Errorf("LogLine plan without the walk visits %v, want [timestamp source]", names)
	}
	src := c.desc.Fields().ByName("source").Message()
	if plan, ok := c.scanPlans[src]; !ok || len(plan) != 0 {
		t.Errorf("Source plan %v (planned %v), want an empty plan", plan, ok)
	}

	// descriptorpb's messages are proto2 with extension ranges.
	md := (&descriptorpb.FileOptions{}).ProtoReflect().Descriptor()
	plans := newScanPlans(md, true)
	if _, ok := plans[md]; ok {
		t.Error("a type open to extensions got a plan")
	}
	// A proto2 string is visited: the decoder does not check its UTF-8.
	var fdp protoreflect.MessageDescriptor = (&descriptorpb.FileDescriptorProto{}).ProtoReflect().Descriptor()
	plan, ok := newScanPlans(fdp, true)[fdp]
	if !ok || !slices.ContainsFunc(plan, func(fd protoreflect.FieldDescriptor) bool { return fd.Name() == "package" }) {
		t.Errorf("FileDescriptorProto plan %v (planned %v) lacks its proto2 string package", plan, ok)
	}
}
