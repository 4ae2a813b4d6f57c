package gateway

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// FuzzAnswerWire holds marshalAnswer to proto.Marshal: the same bytes, or
// marshalAnswer leaving the message to it. The input is a
// PublishStreamResponse in protobuf binary, also read as a
// PublishResponse (its results are field 2, not 1), without unknown
// fields, which the gateway's answers never have; inputs that decode as
// neither are skipped.
func FuzzAnswerWire(f *testing.F) {
	kafka, disk := ingestv1.Durability_KAFKA, ingestv1.Durability_LOCAL_DISK
	results := []*ingestv1.EventResult{
		{Index: 0, Id: "a", Outcome: ingestv1.Outcome_ACCEPTED, Durability: &kafka, Position: &ingestv1.EventResult_Kafka{
			Kafka: &ingestv1.KafkaPosition{Topic: "ingest.examples.logs.v1.LogLine", Partition: 2, Offset: 1 << 40}}},
		{Index: 1, Id: "b", Outcome: ingestv1.Outcome_ACCEPTED, Durability: &disk, Position: &ingestv1.EventResult_Spool{
			Spool: &ingestv1.SpoolPosition{Segment: 1<<64 - 1, Offset: 24}}},
		{Index: 2, Id: "c", Outcome: ingestv1.Outcome_DUPLICATE, Position: &ingestv1.EventResult_Kafka{
			Kafka: &ingestv1.KafkaPosition{Topic: "t\u00e9", Partition: -1, Offset: -9}}},
		{Index: 3, Outcome: ingestv1.Outcome_DUPLICATE, Position: &ingestv1.EventResult_Kafka{Kafka: &ingestv1.KafkaPosition{}}},
		{Index: 4, Outcome: ingestv1.Outcome_DUPLICATE, Position: &ingestv1.EventResult_Spool{Spool: &ingestv1.SpoolPosition{}}},
		{Index: 5, Id: "d", Outcome: ingestv1.Outcome_REJECTED, Rejection: &ingestv1.Rejection{
			Reason: ingestv1.Reason_SCHEMA_VIOLATION, Message: "2 contract rule(s) failed",
			Violations: []*ingestv1.FieldViolation{{Field: "payload.x", Rule: "string.min_len", Message: "must be <b>"}, {}},
		}},
		{Index: 6, Outcome: ingestv1.Outcome_REJECTED, Rejection: &ingestv1.Rejection{
			Reason: ingestv1.Reason_UNAVAILABLE, Retryable: true, RetryAfter: durationpb.New(1500_000_000)}},
		{Index: 7, Outcome: -3, Durability: new(ingestv1.Durability), Rejection: &ingestv1.Rejection{Reason: -99, RetryAfter: &durationpb.Duration{Seconds: -3, Nanos: -1}}},
		{Index: 8, Id: "e", Outcome: ingestv1.Outcome_REJECTED, Rejection: &ingestv1.Rejection{
			Reason: ingestv1.Reason_IDEMPOTENCY_CONFLICT, Message: "accepted with another payload",
			Conflict: &ingestv1.PayloadConflict{Fingerprint: "sha256:00ff", AcceptedFingerprint: "sha256:0f"}}},
		{Index: 9, Rejection: &ingestv1.Rejection{Conflict: &ingestv1.PayloadConflict{}}},
		{},
	}
	for _, m := range []proto.Message{
		&ingestv1.PublishStreamResponse{},
		&ingestv1.PublishStreamResponse{BatchId: 7, Results: results},
		&ingestv1.PublishStreamResponse{BatchId: 1<<64 - 1, Results: results[:1]},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, m := range []proto.Message{new(ingestv1.PublishStreamResponse), new(ingestv1.PublishResponse)} {
			if (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(in, m) != nil {
				continue
			}
			data, ok := marshalAnswer(m)
			if !ok {
				continue
			}
			fast := data.Materialize()
			data.Free()
			slow, err := proto.Marshal(m)
			if err != nil {
				t.Fatalf("marshalAnswer wrote %T that proto.Marshal refuses: %v", m, err)
			}
			if !bytes.Equal(fast, slow) {
				t.Fatalf("%T: marshalAnswer\n%x\nproto.Marshal\n%x", m, fast, slow)
			}
		}
	})
}

// TestAnswerWireTakesTheGatewaysResults: the results the gateway builds
// are written by marshalAnswer, not left to proto.Marshal.
func TestAnswerWireTakesTheGatewaysResults(t *testing.T) {
	kafka := ingestv1.Durability_KAFKA
	accepted := make([]kafkaResult, 2)
	var results []*ingestv1.EventResult
	for i := range accepted {
		r := &accepted[i].result
		r.Index, r.Id, r.Outcome, r.Durability = uint32(i), "e", ingestv1.Outcome_ACCEPTED, &kafka
		results = append(results, accepted[i].set("ingest.t", 1, 42))
	}
	results = append(results, rejected(2, "f", reject(ingestv1.Reason_MALFORMED, "bad")))
	for _, m := range []proto.Message{&ingestv1.PublishResponse{Results: results}, &ingestv1.PublishStreamResponse{BatchId: 3, Results: results}} {
		data, ok := marshalAnswer(m)
		if !ok {
			t.Fatalf("%T left to proto.Marshal", m)
		}
		slow, _ := proto.Marshal(m)
		if got := data.Materialize(); !bytes.Equal(got, slow) {
			t.Fatalf("%T: %x, want %x", m, got, slow)
		}
		data.Free()
	}
}
