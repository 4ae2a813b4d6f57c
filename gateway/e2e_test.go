package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/examples"
	identityv1 "github.com/sluicehq/sluice/gen/examples/identity/v1"
	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	shopv1 "github.com/sluicehq/sluice/gen/examples/shop/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/record"
)

// contractOf returns an empty message of the example type and its JSON.
func contractOf(typ string) (proto.Message, []byte) {
	switch typ {
	case typeOrder:
		return &shopv1.OrderPlaced{}, examples.OrderPlacedJSON
	case typeProfile:
		return &identityv1.UserProfileUpdated{}, examples.UserProfileUpdatedJSON
	default:
		return &logsv1.LogLine{}, examples.LogLineJSON
	}
}

// TestEndToEnd publishes every example contract over REST (JSON payload)
// and gRPC (binary and JSON payloads) and reads the records back: key,
// value decoded as the contract, and every header.
func TestEndToEnd(t *testing.T) { testEndToEnd(t, harnessOpts{}) }

func testEndToEnd(t *testing.T, o harnessOpts) {
	h := newHarness(t, o)
	now := h.clock.Now()
	for _, typ := range examples.Types {
		t.Run(typ, func(t *testing.T) {
			msg, js := contractOf(typ)
			if err := protojson.Unmarshal(js, msg); err != nil {
				t.Fatal(err)
			}
			bin, err := proto.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			restEv := ev{ID: "rest-" + typ, Type: typ, Key: "entity-1", At: now, JSON: js, Attrs: map[string]string{"tenant": "acme"}}
			grpcBin := ev{ID: "grpc-bin-" + typ, Type: typ, Key: "entity-1", At: now, Binary: bin}
			grpcJSON := ev{ID: "grpc-json-" + typ, Type: typ, At: now, JSON: js} // no key: the id is the key

			resp, body := h.postREST(keyAll, restBody(restEv))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("REST %d %s", resp.StatusCode, body)
			}
			wantAccepted(t, mustResults(t, body), restEv.ID)

			ctx := metadata.AppendToOutgoingContext(withKey(context.Background(), keyAll),
				"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
			ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			out, err := h.client.Publish(ctx, &ingestv1.PublishRequest{Events: []*ingestv1.Event{grpcBin.proto(), grpcJSON.proto()}})
			if err != nil {
				t.Fatal(err)
			}
			wantAccepted(t, out.GetResults(), grpcBin.ID, grpcJSON.ID)

			recs := h.consume(h.topics[typ], 3)
			if len(recs) != 3 {
				t.Fatalf("%d records in Kafka, want 3", len(recs))
			}
			byID := map[string]*kgo.Record{}
			for _, r := range recs {
				byID[header(r, record.HeaderEventID)] = r
			}
			for _, c := range []struct {
				ev          ev
				key         string
				traceparent string
			}{
				{restEv, "entity-1", ""},
				{grpcBin, "entity-1", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
				{grpcJSON, grpcJSON.ID, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
			} {
				r := byID[c.ev.ID]
				if r == nil {
					t.Fatalf("no record for %s", c.ev.ID)
				}
				if string(r.Key) != c.key {
					t.Errorf("%s: key %q, want %q", c.ev.ID, r.Key, c.key)
				}
				got := msg.ProtoReflect().New().Interface()
				if err := proto.Unmarshal(r.Value, got); err != nil {
					t.Fatalf("%s: value does not decode as %s: %v", c.ev.ID, typ, err)
				}
				if !proto.Equal(got, msg) {
					t.Errorf("%s: value %v, want %v", c.ev.ID, got, msg)
				}
				hs, err := record.ParseEvent(r)
				if err != nil {
					t.Fatal(err)
				}
				if hs.Type != typ || hs.Source != "all" || !hs.OccurredAt.Equal(now) || !hs.IngestedAt.Equal(now) ||
					hs.Fingerprint == "" || hs.Traceparent != c.traceparent {
					t.Errorf("%s: headers %+v", c.ev.ID, hs)
				}
				if c.ev.Attrs != nil && hs.Attributes["tenant"] != "acme" {
					t.Errorf("%s: attributes %v", c.ev.ID, hs.Attributes)
				}
			}
		})
	}
}

// TestMixedBatch: valid events are published and answered ACCEPTED, the
// invalid ones are answered with their reasons and never reach Kafka.
func TestMixedBatch(t *testing.T) { testMixedBatch(t, harnessOpts{}) }

func testMixedBatch(t *testing.T, o harnessOpts) {
	h := newHarness(t, o)
	now := h.clock.Now()
	good1 := ev{ID: "mix-good-1", Type: typeLog, Key: "svc", At: now, JSON: examples.LogLineJSON}
	bad := ev{ID: "mix-bad", Type: typeLog, Key: "svc", At: now, JSON: setJSON(t, examples.LogLineJSON, "trace_id", "XYZ")}
	unknown := ev{ID: "mix-unknown", Type: "examples.nope.v1.Nope", At: now, JSON: []byte(`{}`)}
	good2 := ev{ID: "mix-good-2", Type: typeLog, Key: "svc", At: now, JSON: examples.LogLineJSON}

	resp, body := h.postREST(keyAll, restBody(good1, bad, unknown, good2))
	if resp.StatusCode != http.StatusMultiStatus {
		t.Fatalf("status %d, want 207: %s", resp.StatusCode, body)
	}
	res := mustResults(t, body)
	wantOutcomes(t, res, ingestv1.Outcome_ACCEPTED, ingestv1.Outcome_REJECTED, ingestv1.Outcome_REJECTED, ingestv1.Outcome_ACCEPTED)
	if r := res[1].GetRejection(); r.GetReason() != ingestv1.Reason_SCHEMA_VIOLATION || r.GetViolations()[0].GetField() != "payload.trace_id" {
		t.Errorf("result 1: %v", r)
	}
	if r := res[2].GetRejection(); r.GetReason() != ingestv1.Reason_UNKNOWN_EVENT_TYPE {
		t.Errorf("result 2: %v", r)
	}

	g1, g2, b2 := good1, good2, bad
	g1.ID, g2.ID, b2.ID = "mix-grpc-1", "mix-grpc-2", "mix-grpc-bad"
	out, err := h.publishGRPC(keyAll, g1, b2, g2)
	if err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, out.GetResults(), ingestv1.Outcome_ACCEPTED, ingestv1.Outcome_REJECTED, ingestv1.Outcome_ACCEPTED)

	recs := h.consume(h.topics[typeLog], 4)
	got := map[string]int{}
	for _, r := range recs {
		got[header(r, record.HeaderEventID)]++
	}
	want := map[string]int{"mix-good-1": 1, "mix-good-2": 1, "mix-grpc-1": 1, "mix-grpc-2": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records by id %v, want %v", got, want)
	}
}

// TestDuplicate: the same event twice is ACCEPTED then DUPLICATE and makes
// one record, over either transport, and the duplicate is answered with
// the original's Kafka position; after the window it is new again, at a
// position of its own.
func TestDuplicate(t *testing.T) { testDuplicate(t, harnessOpts{}) }

func testDuplicate(t *testing.T, o harnessOpts) {
	h := newHarness(t, o)
	e := ev{ID: "dup-1", Type: typeProfile, Key: "user-1", At: h.clock.Now(), JSON: examples.UserProfileUpdatedJSON}
	samePosition := func(what string, r *ingestv1.EventResult, want *ingestv1.KafkaPosition) {
		t.Helper()
		if !proto.Equal(r.GetKafka(), want) || r.GetSpool() != nil {
			t.Errorf("%s: %v, want the original's position %v", what, r, want)
		}
	}

	resp, body := h.postREST(keyAll, restBody(e))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	res := mustResults(t, body)
	wantOutcomes(t, res, ingestv1.Outcome_ACCEPTED)
	original := res[0].GetKafka()
	if original.GetTopic() != h.topics[typeProfile] {
		t.Fatalf("ACCEPTED without its position: %s", body)
	}
	resp, body = h.postREST(keyAll, restBody(e))
	if resp.StatusCode != 200 {
		t.Fatalf("a duplicate is a success, got %d %s", resp.StatusCode, body)
	}
	res = mustResults(t, body)
	wantOutcomes(t, res, ingestv1.Outcome_DUPLICATE)
	samePosition("REST duplicate", res[0], original)
	out, err := h.publishGRPC(keyAll, e)
	if err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, out.GetResults(), ingestv1.Outcome_DUPLICATE)
	samePosition("gRPC duplicate", out.GetResults()[0], original)

	// Another source's event with the same id is its own event.
	if out, err = h.publishGRPC(keySlow, e); err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, out.GetResults(), ingestv1.Outcome_ACCEPTED)

	// Repeated within one batch: the first is published, the rest are duplicates.
	e2 := e
	e2.ID = "dup-2"
	if out, err = h.publishGRPC(keyAll, e2, e2, e2); err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, out.GetResults(), ingestv1.Outcome_ACCEPTED, ingestv1.Outcome_DUPLICATE, ingestv1.Outcome_DUPLICATE)
	for _, r := range out.GetResults()[1:] {
		samePosition("duplicate in the batch", r, out.GetResults()[0].GetKafka())
	}

	// Past the window the id is forgotten with its position: the event is
	// published again, and answered where the new copy is.
	h.clock.Advance(h.cfg.Dedup.Window)
	if out, err = h.publishGRPC(keyAll, e); err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, out.GetResults(), ingestv1.Outcome_ACCEPTED)
	again := out.GetResults()[0].GetKafka()
	if again.GetTopic() != original.GetTopic() || again.GetPartition() != original.GetPartition() || again.GetOffset() <= original.GetOffset() {
		t.Errorf("after the window: %v, want a later offset than the original's %v", again, original)
	}

	recs := h.consume(h.topics[typeProfile], 4)
	count := map[string]int{}
	for _, r := range recs {
		count[header(r, record.HeaderSource)+"/"+header(r, record.HeaderEventID)]++
	}
	want := map[string]int{"all/dup-1": 2, "slow/dup-1": 1, "all/dup-2": 1}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		t.Errorf("records %v, want %v (dup-1 twice: once more after the window)", count, want)
	}
}

// TestConcurrentDuplicates: many callers send one event at once; exactly
// one is ACCEPTED and one record is written.
func TestConcurrentDuplicates(t *testing.T) { testConcurrentDuplicates(t, harnessOpts{}) }

func testConcurrentDuplicates(t *testing.T, o harnessOpts) {
	h := newHarness(t, o)
	e := ev{ID: "race-1", Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
	const callers = 16
	outcomes := make(chan ingestv1.Outcome, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				out, err := h.publishGRPC(keyAll, e)
				if err != nil {
					t.Error(err)
					return
				}
				outcomes <- out.GetResults()[0].GetOutcome()
				return
			}
			_, body := h.postREST(keyAll, restBody(e))
			outcomes <- mustResults(t, body)[0].GetOutcome()
		}()
	}
	wg.Wait()
	close(outcomes)
	got := map[ingestv1.Outcome]int{}
	for o := range outcomes {
		got[o]++
	}
	if got[ingestv1.Outcome_ACCEPTED] != 1 || got[ingestv1.Outcome_DUPLICATE] != callers-1 {
		t.Errorf("outcomes %v, want 1 ACCEPTED and %d DUPLICATE", got, callers-1)
	}
	if recs := h.consume(h.topics[typeLog], 1); len(recs) != 1 {
		t.Errorf("%d records, want 1", len(recs))
	}
}

func mustResults(t *testing.T, body []byte) []*ingestv1.EventResult {
	t.Helper()
	var pr ingestv1.PublishResponse
	if err := protojson.Unmarshal(body, &pr); err != nil {
		t.Fatalf("response %s: %v", body, err)
	}
	return pr.GetResults()
}

func wantAccepted(t *testing.T, res []*ingestv1.EventResult, ids ...string) {
	t.Helper()
	if len(res) != len(ids) {
		t.Fatalf("%d results, want %d", len(res), len(ids))
	}
	for i, r := range res {
		if r.GetOutcome() != ingestv1.Outcome_ACCEPTED || r.GetDurability() != ingestv1.Durability_KAFKA ||
			r.GetKafka().GetTopic() == "" || r.GetId() != ids[i] || int(r.GetIndex()) != i {
			t.Errorf("result %d: %v", i, r)
		}
	}
}

func wantOutcomes(t *testing.T, res []*ingestv1.EventResult, want ...ingestv1.Outcome) {
	t.Helper()
	if len(res) != len(want) {
		t.Fatalf("%d results, want %d: %v", len(res), len(want), res)
	}
	for i, r := range res {
		if r.GetOutcome() != want[i] || int(r.GetIndex()) != i {
			t.Errorf("result %d: %v, want %v", i, r, want[i])
		}
	}
}

// TestIntegrationKafka runs the end-to-end tests against the real Kafka
// named by SLUICE_KAFKA_BROKERS, each on topics of its own.
func TestIntegrationKafka(t *testing.T) {
	real := harnessOpts{realKafka: true}
	t.Run("EndToEnd", func(t *testing.T) { testEndToEnd(t, real) })
	t.Run("MixedBatch", func(t *testing.T) { testMixedBatch(t, real) })
	t.Run("Duplicate", func(t *testing.T) { testDuplicate(t, real) })
	t.Run("ConcurrentDuplicates", func(t *testing.T) { testConcurrentDuplicates(t, real) })
	t.Run("AnswerKafkaPosition", func(t *testing.T) { testAnswerKafkaPosition(t, real) })
}
