package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/examples"
	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/record"
)

// logLineBinary is the example log line in protobuf binary.
func logLineBinary(t *testing.T) []byte {
	t.Helper()
	var line logsv1.LogLine
	if err := protojson.Unmarshal(examples.LogLineJSON, &line); err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(&line)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// isLogLine reports whether a record's value is the example log line,
// whatever form it was sent in (the JSON transcoder need not order fields
// as proto.Marshal does).
func isLogLine(t *testing.T, value []byte) bool {
	t.Helper()
	var want, got logsv1.LogLine
	if err := protojson.Unmarshal(examples.LogLineJSON, &want); err != nil {
		t.Fatal(err)
	}
	return proto.Unmarshal(value, &got) == nil && proto.Equal(&got, &want)
}

// wirePosition is a result's position as REST prints it, read as JSON,
// not protojson: the names and forms on the wire (64-bit integers as
// strings).
type wirePosition struct {
	Kafka *struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Offset    string `json:"offset"`
	} `json:"kafka"`
	Spool *struct {
		Segment string `json:"segment"`
		Offset  string `json:"offset"`
	} `json:"spool"`
}

func restPositions(t *testing.T, body []byte) []wirePosition {
	t.Helper()
	var answer struct {
		Results []wirePosition `json:"results"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		t.Fatalf("answer %s: %v", body, err)
	}
	return answer.Results
}

// TestAnswerKafkaPosition: an event ACCEPTED with durability KAFKA is
// answered with its topic, partition and offset, over REST, unary gRPC
// and PublishStream, and the record a reader finds there is that event.
func TestAnswerKafkaPosition(t *testing.T) { testAnswerKafkaPosition(t, harnessOpts{}) }

func testAnswerKafkaPosition(t *testing.T, o harnessOpts) {
	h := newHarness(t, o)
	topic := h.topics[typeLog]
	value := logLineBinary(t)
	at := h.clock.Now()
	var answered []*ingestv1.EventResult

	// REST: three keys, so that the records spread over the partitions.
	var events []ev
	for i := range 3 {
		events = append(events, ev{ID: fmt.Sprintf("pos-rest-%d", i), Type: typeLog, Key: fmt.Sprintf("svc-%d", i), At: at, JSON: examples.LogLineJSON})
	}
	resp, body := h.postREST(keyAll, restBody(events...))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("REST %d %s", resp.StatusCode, body)
	}
	res := mustResults(t, body)
	wire := restPositions(t, body)
	for i, r := range res {
		k := r.GetKafka()
		if k == nil || wire[i].Kafka == nil || wire[i].Spool != nil {
			t.Fatalf("REST result %d: %s", i, body)
		}
		if w := wire[i].Kafka; w.Topic != k.GetTopic() || w.Partition != k.GetPartition() || w.Offset != fmt.Sprint(k.GetOffset()) {
			t.Fatalf("REST result %d on the wire %+v, protojson reads %v", i, *w, k)
		}
	}
	answered = append(answered, res...)

	out, err := h.publishGRPC(keyAll,
		ev{ID: "pos-grpc-bin", Type: typeLog, Key: "svc-0", At: at, Binary: value},
		ev{ID: "pos-grpc-json", Type: typeLog, Key: "svc-1", At: at, JSON: examples.LogLineJSON})
	if err != nil {
		t.Fatal(err)
	}
	answered = append(answered, out.GetResults()...)

	ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 15*time.Second)
	defer cancel()
	stream, err := h.client.PublishStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e := ev{ID: "pos-stream", Type: typeLog, Key: "svc-2", At: at, Binary: value}
	if err := stream.Send(&ingestv1.PublishStreamRequest{BatchId: 7, Events: []*ingestv1.Event{e.proto()}}); err != nil {
		t.Fatal(err)
	}
	sr, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.CloseSend()
	answered = append(answered, sr.GetResults()...)

	partitions := map[int32]bool{}
	for _, r := range answered {
		k := r.GetKafka()
		if r.GetOutcome() != ingestv1.Outcome_ACCEPTED || r.GetDurability() != ingestv1.Durability_KAFKA || k == nil || k.GetTopic() != topic {
			t.Fatalf("%s: %v, want ACCEPTED with a position in %s", r.GetId(), r, topic)
		}
		got := kafkatest.RecordAt(t, h.brokers, k.GetTopic(), k.GetPartition(), k.GetOffset())
		if id := header(got, record.HeaderEventID); id != r.GetId() || !isLogLine(t, got.Value) {
			t.Errorf("%s answered %s[%d]@%d; the record there is %s with value %x", r.GetId(), k.GetTopic(), k.GetPartition(), k.GetOffset(), id, got.Value)
		}
		partitions[k.GetPartition()] = true
	}
	if len(partitions) < 2 {
		t.Errorf("every record went to partition %v; the test needs more than one", partitions)
	}
}

// TestAnswerSpoolPosition: with every event spooled (spool_first) while
// Kafka refuses produce requests, an ACCEPTED event's answer says
// LOCAL_DISK and where in the spool, over REST, unary gRPC and
// PublishStream; a DUPLICATE of it says the same place; and the spool,
// opened anew, holds that event's record at each position.
func TestAnswerSpoolPosition(t *testing.T) {
	dir := t.TempDir()
	var spool *buffer.Spool
	var outage kafkaOutage
	h := newHarness(t, harnessOpts{
		spool: func(t testing.TB) *buffer.Spool {
			spool = spoolAt(dir, 1<<20)(t)
			return spool
		},
		admission: func(c *admission.Config) { c.SpoolFirst = true; c.DrainBackoffMax = 100 * time.Millisecond },
	})
	outage.install(h.cluster)
	outage.on.Store(true)
	value := logLineBinary(t)
	at := h.clock.Now()
	byID := map[string]*ingestv1.SpoolPosition{}
	accept := func(transport string, rs []*ingestv1.EventResult) {
		t.Helper()
		for _, r := range rs {
			p := r.GetSpool()
			if r.GetOutcome() != ingestv1.Outcome_ACCEPTED || r.GetDurability() != ingestv1.Durability_LOCAL_DISK || p == nil || r.GetKafka() != nil {
				t.Fatalf("%s: %v, want ACCEPTED LOCAL_DISK with a spool position", transport, r)
			}
			byID[r.GetId()] = p
		}
	}

	a := ev{ID: "spool-rest-0", Type: typeLog, Key: "svc-0", At: at, JSON: examples.LogLineJSON}
	b := ev{ID: "spool-rest-1", Type: typeLog, Key: "svc-1", At: at, JSON: examples.LogLineJSON}
	resp, body := h.postREST(keyAll, restBody(a, b))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("REST %d %s", resp.StatusCode, body)
	}
	accept("REST", mustResults(t, body))
	for i, w := range restPositions(t, body) {
		p := byID[[]string{a.ID, b.ID}[i]]
		if w.Spool == nil || w.Kafka != nil || w.Spool.Segment != fmt.Sprint(p.GetSegment()) || w.Spool.Offset != fmt.Sprint(p.GetOffset()) {
			t.Fatalf("REST result %d on the wire: %s", i, body)
		}
	}

	out, err := h.publishGRPC(keyAll, ev{ID: "spool-grpc", Type: typeLog, Key: "svc-2", At: at, Binary: value})
	if err != nil {
		t.Fatal(err)
	}
	accept("gRPC", out.GetResults())

	ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 15*time.Second)
	defer cancel()
	stream, err := h.client.PublishStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e := ev{ID: "spool-stream", Type: typeLog, Key: "svc-0", At: at, Binary: value}
	if err := stream.Send(&ingestv1.PublishStreamRequest{BatchId: 1, Events: []*ingestv1.Event{e.proto()}}); err != nil {
		t.Fatal(err)
	}
	sr, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.CloseSend()
	accept("PublishStream", sr.GetResults())

	// A duplicate says where the original is.
	if out, err = h.publishGRPC(keyAll, a); err != nil {
		t.Fatal(err)
	}
	if r := out.GetResults()[0]; r.GetOutcome() != ingestv1.Outcome_DUPLICATE || !proto.Equal(r.GetSpool(), byID[a.ID]) {
		t.Fatalf("duplicate of %s: %v, want the original's %v", a.ID, r, byID[a.ID])
	}

	// Nothing reached Kafka, so nothing is acknowledged: stop the drainer,
	// and read the spool as the next start would.
	h.admission.Close()
	outage.on.Store(false) // the producer flushes what the drainer gave it
	if err := spool.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := spoolAt(dir, 1<<20)(t)
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	held := map[buffer.Position]*kgo.Record{}
	for len(held) < len(byID) {
		es, err := reopened.Next(rctx, 100)
		if err != nil {
			t.Fatalf("Next after %d records: %v", len(held), err)
		}
		for _, e := range es {
			r, err := record.DecodeSpooled(e.Data)
			if err != nil {
				t.Fatal(err)
			}
			held[e.Pos] = r
		}
	}
	for id, p := range byID {
		r := held[buffer.Position{Segment: p.GetSegment(), Offset: p.GetOffset()}]
		if r == nil || header(r, record.HeaderEventID) != id || !isLogLine(t, r.Value) {
			t.Errorf("%s answered spool %d@%d, which holds %v", id, p.GetSegment(), p.GetOffset(), r)
		}
	}
}
