package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/contract"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/tracing"
)

// TestEnvelopeBoundsMatchTheContract: the bounds RecordLimits assumes are
// the rules of sluice.ingest.v1.Event, so a looser rule there cannot let a
// record outgrow the spool or a Kafka batch unnoticed.
func TestEnvelopeBoundsMatchTheContract(t *testing.T) {
	fields := (&ingestv1.Event{}).ProtoReflect().Descriptor().Fields()
	rules := func(name protoreflect.Name) *validate.FieldRules {
		t.Helper()
		fd := fields.ByName(name)
		r, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules)
		if r == nil {
			t.Fatalf("Event.%s has no rules", name)
		}
		return r
	}
	attrs := rules("attributes").GetMap()
	for _, c := range []struct {
		field     string
		got, want uint64
	}{
		{"id max_len", rules("id").GetString().GetMaxLen(), maxIDChars},
		{"type max_len", rules("type").GetString().GetMaxLen(), maxTypeChars},
		{"partition_key max_len", rules("partition_key").GetString().GetMaxLen(), maxPartitionKeyChars},
		{"attributes max_pairs", attrs.GetMaxPairs(), maxAttributes},
		{"attributes key max_len", attrs.GetKeys().GetString().GetMaxLen(), maxAttributeKeyChars},
		{"attributes value max_len", attrs.GetValues().GetString().GetMaxLen(), maxAttributeValueChars},
	} {
		if c.got != c.want {
			t.Errorf("Event %s is %d in the contract, %d in RecordLimits", c.field, c.got, c.want)
		}
	}
	// The ASCII patterns that let id and attribute keys count a byte a
	// character.
	for name, pattern := range map[protoreflect.Name]string{"id": "^[A-Za-z0-9][A-Za-z0-9._:-]*$"} {
		if got := rules(name).GetString().GetPattern(); got != pattern {
			t.Errorf("Event.%s pattern %q, RecordLimits assumes %q", name, got, pattern)
		}
	}
	if got := attrs.GetKeys().GetString().GetPattern(); got != "^[a-z0-9][a-z0-9._-]*$" {
		t.Errorf("attribute key pattern %q is not the ASCII one RecordLimits assumes", got)
	}
}

// TestTraceparentAcceptance: the traceparents the gateway passes on (and
// parents its spans on) are those it took before there was tracing.
func TestTraceparentAcceptance(t *testing.T) {
	const ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for v, want := range map[string]bool{
		ok: true,
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00": true,
		"": false,
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":       false, // version ff
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01":       false, // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01":       false, // zero parent id
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01":       false, // uppercase
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra": false,
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":       false,
		ok[:54] + "g":             false,
		strings.Repeat("a", 4096): false,
	} {
		if _, got := tracing.ParseTraceparent(v); got != want {
			t.Errorf("ParseTraceparent(%q) ok = %v, want %v", v, got, want)
		}
	}
}

// keepAll is acceptAll that keeps what it admitted.
type keepAll struct{ records []*kgo.Record }

func (a *keepAll) Admit(ctx context.Context, records []*kgo.Record) []admission.Admitted {
	a.records = append(a.records, records...)
	return acceptAll{}.Admit(ctx, records)
}

// TestBinaryFormWithinMaxEventBytes: JSON that is smaller than its binary
// form (a packed repeated double takes 8 bytes for "0,") is refused
// EVENT_TOO_LARGE when the binary form is over max_event_bytes, so no
// record outgrows what RecordLimits promises the spool and Kafka.
func TestBinaryFormWithinMaxEventBytes(t *testing.T) {
	fdp := &descriptorpb.FileDescriptorProto{
		Name: proto.String("t/doubles.proto"), Package: proto.String("t"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Doubles"),
			Field: []*descriptorpb.FieldDescriptorProto{{
				Name: proto.String("v"), JsonName: proto.String("v"), Number: proto.Int32(1),
				Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(),
				Type:  descriptorpb.FieldDescriptorProto_TYPE_DOUBLE.Enum(),
			}},
		}},
	}
	image, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{fdp}})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := contract.Load(image, []string{"t.Doubles"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewDefaultConfig()
	cfg.Limits.MaxEventBytes = 4096
	cfg.Sources = []SourceConfig{{Name: "src", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}}}
	kafka := &keepAll{}
	s, err := New(cfg, served(reg), kafka)
	if err != nil {
		t.Fatal(err)
	}
	zeros := func(n int) string { return `{"v":[` + strings.TrimSuffix(strings.Repeat("0,", n), ",") + `]}` }
	now := timestamppb.New(time.Now())
	events := []*ingestv1.Event{
		{Id: "fits", Type: "t.Doubles", OccurredAt: now, Payload: &ingestv1.Event_Json{Json: zeros(400)}},     // 3.2 KB binary
		{Id: "expands", Type: "t.Doubles", OccurredAt: now, Payload: &ingestv1.Event_Json{Json: zeros(1500)}}, // 3 KB JSON, 12 KB binary
	}
	res := s.Ingest(context.Background(), "src", events)
	if res[0].GetOutcome() != ingestv1.Outcome_ACCEPTED {
		t.Errorf("within the limit: %v", res[0])
	}
	if r := res[1].GetRejection(); r.GetReason() != ingestv1.Reason_EVENT_TOO_LARGE || r.GetRetryable() {
		t.Errorf("binary form over the limit: %v, want EVENT_TOO_LARGE, not retryable", res[1])
	}
	for _, r := range kafka.records {
		if len(r.Value) > cfg.Limits.MaxEventBytes {
			t.Errorf("a record's value of %d bytes reached Kafka", len(r.Value))
		}
	}
}
