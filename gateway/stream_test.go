package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// gatedPublisher holds every Publish until the test lets one through, and
// records how many were waiting at most. It stands in for a slow Kafka.
type gatedPublisher struct {
	next gateway.Admitter
	gate chan struct{}

	mu       sync.Mutex
	inFlight int
	max      int
	changed  chan struct{}
}

func newGated(next gateway.Admitter) *gatedPublisher {
	return &gatedPublisher{next: next, gate: make(chan struct{}), changed: make(chan struct{}, 100)}
}

func (g *gatedPublisher) Admit(ctx context.Context, recs []*kgo.Record) []admission.Admitted {
	g.mu.Lock()
	g.inFlight++
	g.max = max(g.max, g.inFlight)
	g.mu.Unlock()
	g.changed <- struct{}{}
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	select {
	case <-g.gate:
	case <-ctx.Done():
	}
	return g.next.Admit(ctx, recs)
}

// waitInFlight waits until n publishes are held, or fails at the deadline.
func (g *gatedPublisher) waitInFlight(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		g.mu.Lock()
		cur := g.inFlight
		g.mu.Unlock()
		if cur >= n {
			return
		}
		select {
		case <-g.changed:
		case <-deadline:
			t.Fatalf("%d publishes in flight, waited for %d", cur, n)
		}
	}
}

// TestStreamWindow: a stream whose Kafka is slow stops being read once
// StreamWindow batches are in flight, and answers in batch order.
func TestStreamWindow(t *testing.T) {
	var gated *gatedPublisher
	h := newHarness(t, harnessOpts{publisher: func(p gateway.Admitter) gateway.Admitter {
		gated = newGated(p)
		return gated
	}})
	window := h.cfg.Limits.StreamWindow
	ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 30*time.Second)
	defer cancel()
	stream, err := h.client.PublishStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const batches = 6
	for i := range batches {
		e := ev{ID: "s-" + string(rune('a'+i)), Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
		if err := stream.Send(&ingestv1.PublishStreamRequest{BatchId: uint64(100 + i), Events: []*ingestv1.Event{e.proto()}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	gated.waitInFlight(t, window)
	// Let the batches through one at a time. Each token goes to whichever
	// held publish takes it first, so the answers are read afterwards.
	for i := range batches {
		select {
		case gated.gate <- struct{}{}:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d batches reached Kafka", i, batches)
		}
	}
	for i := range batches {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetBatchId() != uint64(100+i) {
			t.Fatalf("response %d is for batch %d", i, resp.GetBatchId())
		}
		wantOutcomes(t, resp.GetResults(), ingestv1.Outcome_ACCEPTED)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last batch: %v, want EOF", err)
	}
	gated.mu.Lock()
	defer gated.mu.Unlock()
	if gated.max > window {
		t.Errorf("%d batches were published at once; the window is %d", gated.max, window)
	}
}

// TestStreamRefusals: a batch over the event limit, which decoding stops
// at, ends the stream with BATCH_TOO_LARGE once the batches before it are
// answered; an undecodable batch ends the stream with MALFORMED; a stream
// without a key is UNAUTHENTICATED.
func TestStreamRefusals(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 30*time.Second)
	defer cancel()
	stream, err := h.client.PublishStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	good := ev{ID: "st-1", Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
	var tooMany []*ingestv1.Event
	for range h.cfg.Limits.MaxEventsPerRequest + 1 {
		tooMany = append(tooMany, good.proto())
	}
	for i, events := range [][]*ingestv1.Event{{good.proto()}, tooMany} {
		if err := stream.Send(&ingestv1.PublishStreamRequest{BatchId: uint64(i), Events: events}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, resp.GetResults(), ingestv1.Outcome_ACCEPTED)
	_, err = stream.Recv()
	if status.Code(err) != codes.InvalidArgument || errorInfo(err).GetReason() != "BATCH_TOO_LARGE" {
		t.Fatalf("batch over the limit: %v, want INVALID_ARGUMENT with BATCH_TOO_LARGE", err)
	}
	// Undecodable: on a stream that sends raw bytes, a good batch is
	// answered and then field 2 (events) claiming 9 bytes and carrying 1
	// ends the stream with MALFORMED.
	raw, err := h.conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true},
		"/sluice.ingest.v1.IngestService/PublishStream", grpc.ForceCodec(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	goodBatch, err := proto.Marshal(&ingestv1.PublishStreamRequest{BatchId: 7, Events: []*ingestv1.Event{good.proto()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range [][]byte{goodBatch, {0x12, 0x09, 0x01}} {
		if err := raw.SendMsg(msg); err != nil {
			t.Fatal(err)
		}
	}
	var first []byte
	if err := raw.RecvMsg(&first); err != nil {
		t.Fatal(err)
	}
	resp = &ingestv1.PublishStreamResponse{}
	if err := proto.Unmarshal(first, resp); err != nil || resp.GetBatchId() != 7 {
		t.Fatalf("first response %v %v", resp, err)
	}
	wantOutcomes(t, resp.GetResults(), ingestv1.Outcome_DUPLICATE) // st-1 was accepted above
	var second []byte
	err = raw.RecvMsg(&second)
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("undecodable batch: %v, want INVALID_ARGUMENT", err)
	}
	if info := errorInfo(err); info.GetReason() != "MALFORMED" {
		t.Fatalf("undecodable batch: ErrorInfo %v", info)
	}

	noKey, err := h.client.PublishStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noKey.Recv(); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("no key: %v", err)
	}
}

func errorInfo(err error) *errdetails.ErrorInfo {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	return nil
}

// gaugeValue reads a gauge or counter from the harness's registry, summed
// over its labels.
func gaugeValue(t *testing.T, h *harness, name string) float64 {
	t.Helper()
	families, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		var sum float64
		for _, m := range f.GetMetric() {
			sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
		return sum
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func idleStreamConfig(c *gateway.Config) {
	c.PublishTimeout = 500 * time.Millisecond
	c.Limits.StreamIdleTimeout = time.Second
}

// TestStreamIdleClosed: a stream that sends nothing is ended, once
// limits.stream_idle_timeout passes, with UNAVAILABLE and ErrorInfo.
func TestStreamIdleClosed(t *testing.T) {
	h := newHarness(t, harnessOpts{config: idleStreamConfig})
	ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 20*time.Second)
	defer cancel()
	stream, err := h.client.PublishStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = stream.Recv()
	if status.Code(err) != codes.Unavailable || errorInfo(err).GetReason() != "UNAVAILABLE" {
		t.Fatalf("idle stream ended with %v, want UNAVAILABLE with ErrorInfo", err)
	}
	if n := gaugeValue(t, h, "sluice_streams_idle_closed_total"); n != 1 {
		t.Errorf("sluice_streams_idle_closed_total = %v, want 1", n)
	}
}

// TestStreamNeverReadFreed: a client that sends batches and never reads
// its answers fills its window and then is ended as idle; the memory its
// batches held is handed back.
func TestStreamNeverReadFreed(t *testing.T) {
	h := newHarness(t, harnessOpts{config: idleStreamConfig})
	// Fixed client windows: the answers it does not read stop the
	// gateway's sends once 64 KiB are unread.
	conn, err := grpc.NewClient(h.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 30*time.Second)
	defer cancel()
	stream, err := ingestv1.NewIngestServiceClient(conn).PublishStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() {
		for i := range 20000 {
			var events []*ingestv1.Event
			for j := range h.cfg.Limits.MaxEventsPerRequest {
				events = append(events, ev{ID: fmt.Sprintf("nr-%d-%d", i, j), Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}.proto())
			}
			if err := stream.Send(&ingestv1.PublishStreamRequest{BatchId: uint64(i), Events: events}); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	eventually(t, "the never-read stream to be ended as idle", func() bool {
		return gaugeValue(t, h, "sluice_streams_idle_closed_total") == 1
	})
	eventually(t, "the stream's memory to be handed back", func() bool {
		return gaugeValue(t, h, "sluice_request_memory_bytes") == 0
	})
	// The client, blocked on its own unread answers, learns nothing more;
	// its send ends with its context.
	cancel()
	if err := <-sent; err == nil {
		t.Fatal("every batch was sent: the gateway never stopped reading")
	}
}
