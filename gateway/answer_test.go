package gateway

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// FuzzAnswerJSON holds appendAnswer to the protojson text it replaces:
// the same bytes, or both refusing. The input is a PublishResponse in
// protobuf binary; inputs that do not decode are skipped.
func FuzzAnswerJSON(f *testing.F) {
	kafka, disk := ingestv1.Durability_KAFKA, ingestv1.Durability_LOCAL_DISK
	for _, resp := range []*ingestv1.PublishResponse{
		{},
		{Results: []*ingestv1.EventResult{{Index: 0, Id: "a", Outcome: ingestv1.Outcome_ACCEPTED, Durability: &kafka}}},
		{Results: []*ingestv1.EventResult{
			{Index: 0, Id: "a", Outcome: ingestv1.Outcome_ACCEPTED, Durability: &kafka, Position: &ingestv1.EventResult_Kafka{
				Kafka: &ingestv1.KafkaPosition{Topic: "ingest.examples.logs.v1.LogLine", Partition: 2, Offset: 1 << 40}}},
			{Index: 1, Id: "b", Outcome: ingestv1.Outcome_ACCEPTED, Durability: &disk, Position: &ingestv1.EventResult_Spool{
				Spool: &ingestv1.SpoolPosition{Segment: 1<<64 - 1, Offset: 24}}},
			{Index: 2, Id: "c", Outcome: ingestv1.Outcome_DUPLICATE, Position: &ingestv1.EventResult_Kafka{
				Kafka: &ingestv1.KafkaPosition{Topic: "t\u00e9\"", Partition: -1, Offset: -9}}},
			{Index: 3, Id: "d", Outcome: ingestv1.Outcome_DUPLICATE, Position: &ingestv1.EventResult_Kafka{Kafka: &ingestv1.KafkaPosition{}}},
			{Index: 4, Id: "e", Outcome: ingestv1.Outcome_DUPLICATE, Position: &ingestv1.EventResult_Spool{Spool: &ingestv1.SpoolPosition{}}},
		}},
		{Results: []*ingestv1.EventResult{
			{Index: 1, Id: "b\"\\\n\x01\u2028é\ufffd", Outcome: ingestv1.Outcome_DUPLICATE, Durability: &disk},
			{Index: 2, Outcome: ingestv1.Outcome_REJECTED, Rejection: &ingestv1.Rejection{
				Reason: ingestv1.Reason_SCHEMA_VIOLATION, Message: "2 contract rule(s) failed",
				Violations: []*ingestv1.FieldViolation{{Field: "payload.x", Rule: "string.min_len", Message: "must be <b>"}, {}},
			}},
			{Index: 3, Outcome: ingestv1.Outcome_REJECTED, Rejection: &ingestv1.Rejection{
				Reason: ingestv1.Reason_UNAVAILABLE, Retryable: true, RetryAfter: durationpb.New(1500_000_000)}},
			{Index: 4, Outcome: 9, Rejection: &ingestv1.Rejection{Reason: 99, RetryAfter: &durationpb.Duration{Seconds: -3, Nanos: -1}}},
			{Index: 5, Rejection: &ingestv1.Rejection{RetryAfter: &durationpb.Duration{Seconds: 1, Nanos: -1}}},
		}},
		{Results: []*ingestv1.EventResult{
			{Index: 1, Id: "c", Outcome: ingestv1.Outcome_REJECTED, Rejection: &ingestv1.Rejection{
				Reason: ingestv1.Reason_IDEMPOTENCY_CONFLICT, Message: "accepted with another payload",
				Conflict: &ingestv1.PayloadConflict{Fingerprint: "sha256:00ff", AcceptedFingerprint: "sha256:\u2028\""}}},
			{Index: 2, Outcome: ingestv1.Outcome_REJECTED, Rejection: &ingestv1.Rejection{Conflict: &ingestv1.PayloadConflict{}}},
			{Index: 3, Outcome: ingestv1.Outcome_REJECTED, Rejection: &ingestv1.Rejection{Conflict: &ingestv1.PayloadConflict{AcceptedFingerprint: "x"}}},
		}},
	} {
		b, err := proto.Marshal(resp)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// results[0].id = "bad \xff", which proto.Marshal would refuse to write.
	f.Add([]byte("\x0a\x07\x12\x05bad \xff"))
	f.Fuzz(func(t *testing.T, in []byte) {
		resp := new(ingestv1.PublishResponse)
		if proto.Unmarshal(in, resp) != nil {
			return
		}
		fast, ok := appendAnswer(nil, resp)
		slow, err := reflectAnswer(resp)
		if ok != (err == nil) {
			t.Fatalf("appendAnswer ok %v, protojson error %v", ok, err)
		}
		if ok && !bytes.Equal(fast, slow) {
			t.Fatalf("appendAnswer:\n%s\nprotojson:\n%s", fast, slow)
		}
	})
}
