package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// positionedKafka stands in for Kafka at the edge, as acceptAll does, and
// answers each record at an offset of its own, as Kafka would.
type positionedKafka struct{ next int64 }

func (k *positionedKafka) Admit(_ context.Context, recs []*kgo.Record) []admission.Admitted {
	out := make([]admission.Admitted, len(recs))
	for i := range out {
		out[i] = admission.Admitted{Durability: admission.DurabilityKafka, Partition: int32(i % 3), Offset: k.next}
		k.next++
	}
	return out
}

// BenchmarkIngest prices the gateway's own work per event, without a
// transport or Kafka: a batch of 100 log lines (~300 bytes of protobuf
// each, the gRPC workload's) judged against their contract and accepted
// at once by the Admitter, and its answer built.
//   - results: the per-event results (Service.Ingest);
//   - grpc: and the answer in protobuf binary, as the server codec writes
//     it for gRPC;
//   - rest: and the answer as REST's JSON (appendAnswer).
//
// Dedup is off here (BenchmarkDedup prices it). Read ns/event, B/op and
// allocs/op (a batch's); cpu-ns/event is the process's CPU time (user and
// system, the GC's too), which other load on the machine sways less than
// the wall time.
func BenchmarkIngest(b *testing.B) {
	registry, payload, _ := benchLogLine(b)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cfg := NewDefaultConfig()
	cfg.Dedup.Window = 0
	cfg.Sources = []SourceConfig{{Name: "bench", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}}}
	s, err := New(cfg, served(registry), &positionedKafka{}, WithClock(func() time.Time { return now }))
	if err != nil {
		b.Fatal(err)
	}
	const perBatch = 100
	events := make([]*ingestv1.Event, perBatch)
	for j := range events {
		events[j] = &ingestv1.Event{Id: fmt.Sprintf("b-%d", j), Type: "examples.logs.v1.LogLine",
			OccurredAt: timestamppb.New(now), PartitionKey: fmt.Sprintf("svc-%d", j%16), Payload: &ingestv1.Event_Binary{Binary: payload}}
	}
	ctx := context.Background()
	codec := newServerCodec(cfg.Limits)
	for _, answer := range []string{"results", "grpc", "rest"} {
		b.Run(answer, func(b *testing.B) {
			b.ReportAllocs()
			cpu := processCPU(b)
			for b.Loop() {
				results := s.Ingest(ctx, "bench", events)
				resp := &ingestv1.PublishResponse{Results: results}
				switch answer {
				case "grpc": // as the server codec writes it
					data, err := codec.Marshal(resp)
					if err != nil {
						b.Fatal(err)
					}
					data.Free()
				case "rest": // as writeAnswer writes it
					if _, ok := appendAnswer(make([]byte, 0, answerBytes(results)), resp); !ok {
						b.Fatal("answer not written")
					}
				}
				if results[perBatch-1].GetOutcome() != ingestv1.Outcome_ACCEPTED {
					b.Fatalf("result %v", results[perBatch-1])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perBatch), "ns/event")
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N*perBatch), "cpu-ns/event")
		})
	}
}

// BenchmarkIngestDedup is BenchmarkIngest's "results" with the dedup
// window on, as it is by default: every event's id is new (a claim, a
// settle and the payload's fingerprint), for a batch of binary payloads
// (the gRPC workload's) and one of JSON payloads (REST's). The ids of 64
// batches are sent in turn, and the clock passes the window between
// rounds, so each is new again.
func BenchmarkIngestDedup(b *testing.B) {
	registry, payload, js := benchLogLine(b)
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	now := start
	cfg := NewDefaultConfig()
	cfg.Sources = []SourceConfig{{Name: "bench", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}}}
	s, err := New(cfg, served(registry), &positionedKafka{}, WithClock(func() time.Time { return now }))
	if err != nil {
		b.Fatal(err)
	}
	const perBatch, batches = 100, 64
	for _, form := range []string{"binary", "json"} {
		b.Run(form, func(b *testing.B) {
			all := make([][]*ingestv1.Event, batches)
			for i := range all {
				all[i] = make([]*ingestv1.Event, perBatch)
				for j := range all[i] {
					ev := &ingestv1.Event{Id: fmt.Sprintf("%s-%d-%d", form, i, j), Type: "examples.logs.v1.LogLine",
						OccurredAt: timestamppb.New(start), PartitionKey: fmt.Sprintf("svc-%d", j%16)}
					if form == "binary" {
						ev.Payload = &ingestv1.Event_Binary{Binary: payload}
					} else {
						ev.Payload = &ingestv1.Event_Json{Json: string(js)}
					}
					all[i][j] = ev
				}
			}
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i%batches == 0 {
					now = now.Add(cfg.Dedup.Window)
				}
				results := s.Ingest(ctx, "bench", all[i%batches])
				if results[perBatch-1].GetOutcome() != ingestv1.Outcome_ACCEPTED {
					b.Fatalf("result %v", results[perBatch-1])
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perBatch), "ns/event")
		})
	}
}

// benchLogLine is the example contracts and the example log line in
// protobuf binary (as proto.Marshal writes it) and as JSON.
func benchLogLine(b *testing.B) (registry *contract.Registry, binary, js []byte) {
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		b.Fatal(err)
	}
	var line logsv1.LogLine
	if err := protojson.Unmarshal(examples.LogLineJSON, &line); err != nil {
		b.Fatal(err)
	}
	if binary, err = proto.Marshal(&line); err != nil {
		b.Fatal(err)
	}
	if js, err = protojson.Marshal(&line); err != nil {
		b.Fatal(err)
	}
	return registry, binary, js
}
