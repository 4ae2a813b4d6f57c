package client

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// TestPrepareCopiesEveryField: the copy prepare makes of an event without
// an id or occurred_at holds every other field of the Event message as
// the caller set it, so a field added to the API later is not dropped in
// silence, and the caller's event is left as it was.
func TestPrepareCopiesEveryField(t *testing.T) {
	c := &Client{cfg: newCfg()}
	c.ids = func() string { return "filled" }
	ev := &ingestv1.Event{Type: "t", PartitionKey: "k", Payload: &ingestv1.Event_Binary{Binary: []byte{1}},
		Attributes: map[string]string{"a": "b"}}
	fields := ev.ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		switch f.Name() {
		case "id", "occurred_at", "json": // filled by prepare; json is binary's oneof twin
			continue
		}
		if !ev.ProtoReflect().Has(f) {
			t.Fatalf("the test's event leaves %s unset: set it, so the copy is checked for it", f.Name())
		}
	}
	before := proto.Clone(ev)
	got := c.prepare(ev)
	if !proto.Equal(ev, before) {
		t.Fatalf("prepare changed the caller's event: %v", ev)
	}
	if got.GetId() != "filled" || got.GetOccurredAt() == nil {
		t.Fatalf("prepare filled id %q, occurred_at %v", got.GetId(), got.GetOccurredAt())
	}
	got.ProtoReflect().Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if f.Name() != "id" && f.Name() != "occurred_at" && !v.Equal(ev.ProtoReflect().Get(f)) {
			t.Errorf("%s: copied as %v, want %v", f.Name(), v, ev.ProtoReflect().Get(f))
		}
		return true
	})
	if n, want := countSet(got), countSet(ev)+2; n != want {
		t.Errorf("the copy sets %d fields, want %d: the caller's and id and occurred_at", n, want)
	}
}

func countSet(m proto.Message) int {
	n := 0
	m.ProtoReflect().Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool { n++; return true })
	return n
}
