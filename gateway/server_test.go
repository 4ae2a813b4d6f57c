package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// TestOperability: gRPC health and reflection answer, and the admin
// listener's /metrics (not the API's) counts events by source, type,
// outcome and reason.
func TestOperability(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	hc, err := healthpb.NewHealthClient(h.conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "sluice.ingest.v1.IngestService"})
	if err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v", hc, err)
	}
	rs, err := reflectionpb.NewServerReflectionClient(h.conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := rs.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.String(), "sluice.ingest.v1.IngestService") {
		t.Errorf("reflection lists %v", resp.GetListServicesResponse())
	}

	e := ev{ID: "m-1", Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
	bad := ev{ID: "m-2", Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: setJSON(t, examples.LogLineJSON, "host", "not a host")}
	if _, err := h.publishGRPC(keyAll, e, bad); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get("http://" + h.srv.HTTPAddr() + "/metrics"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("the API listener serves /metrics: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	mresp, err := http.Get("http://" + h.admin.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{
		`sluice_events_total{outcome="ACCEPTED",reason="",source="all",type="examples.logs.v1.LogLine"} 1`,
		`sluice_events_total{outcome="REJECTED",reason="SCHEMA_VIOLATION",source="all",type="examples.logs.v1.LogLine"} 1`,
		`sluice_requests_total{result="ok",transport="grpc"} 1`,
		`sluice_request_duration_seconds_count{transport="grpc"} 1`,
		`sluice_dedup_entries 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestShutdownDrains: a request in flight when shutdown starts is still
// answered after Kafka acknowledges it, and new requests are refused.
func TestShutdownDrains(t *testing.T) {
	var gated *gatedPublisher
	h := newHarness(t, harnessOpts{publisher: func(p gateway.Admitter) gateway.Admitter {
		gated = newGated(p)
		return gated
	}})
	e := ev{ID: "drain-1", Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
	answered := make(chan *ingestv1.PublishResponse, 1)
	failed := make(chan error, 1)
	go func() {
		out, err := h.publishGRPC(keyAll, e)
		if err != nil {
			failed <- err
			return
		}
		answered <- out
	}()
	gated.waitInFlight(t, 1)

	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	watch, err := healthpb.NewHealthClient(h.conn).Watch(wctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if hc, err := watch.Recv(); err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health before shutdown: %v %v", hc, err)
	}

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		shut <- h.srv.Shutdown(ctx)
	}()
	// Shutting down: health turns NOT_SERVING while the request drains.
	if hc, err := watch.Recv(); err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health during shutdown: %v %v", hc, err)
	}
	wcancel() // a watch is an RPC too: graceful stop waits for it
	gated.gate <- struct{}{}
	select {
	case out := <-answered:
		wantOutcomes(t, out.GetResults(), ingestv1.Outcome_ACCEPTED)
	case err := <-failed:
		t.Fatalf("in-flight request failed: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("in-flight request not answered")
	}
	if err := <-shut; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := http.Get("http://" + h.srv.HTTPAddr() + "/v1/events"); err == nil {
		t.Error("REST still accepts connections after shutdown")
	}
}

// A server shut down without being started frees its addresses.
func TestShutdownBeforeStartClosesListeners(t *testing.T) {
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	cfg := gateway.NewDefaultConfig()
	cfg.GRPCAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Dedup.Window = 0
	cfg.Sources = []gateway.SourceConfig{{Name: "s", KeyHashes: []string{gateway.HashKey("k")}, EventTypes: []string{"*"}}}
	svc, err := gateway.New(cfg, gateway.Served(registry), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gateway.NewServer(svc)
	if err != nil {
		t.Fatal(err)
	}
	grpcAddr, httpAddr := srv.GRPCAddr(), srv.HTTPAddr()
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{grpcAddr, httpAddr} {
		lis, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("%s still bound after Shutdown: %v", addr, err)
			continue
		}
		lis.Close()
	}
}

// TestShutdownEndsIdleStreams: a PublishStream that has been answered and
// sends nothing more does not hold a shutdown to its deadline, which is
// far beyond the stream's idle bound here: the stream ends UNAVAILABLE,
// with a retry delay, saying the gateway is shutting down, and the
// shutdown is graceful (nil), not cut off at its deadline.
func TestShutdownEndsIdleStreams(t *testing.T) {
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) { c.Limits.StreamIdleTimeout = 10 * time.Minute }})
	ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), time.Minute)
	defer cancel()
	stream, err := h.client.PublishStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e := ev{ID: "drain-stream-1", Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
	if err := stream.Send(&ingestv1.PublishStreamRequest{BatchId: 1, Events: []*ingestv1.Event{e.proto()}}); err != nil {
		t.Fatal(err)
	}
	out, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, out.GetResults(), ingestv1.Outcome_ACCEPTED)

	shutCtx, shutCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer shutCancel()
	shut := make(chan error, 1)
	go func() { shut <- h.srv.Shutdown(shutCtx) }()
	_, err = stream.Recv()
	if status.Code(err) != codes.Unavailable || errorInfo(err).GetReason() != "UNAVAILABLE" ||
		!strings.Contains(status.Convert(err).Message(), "shutting down") || retryDelay(err) <= 0 {
		t.Fatalf("idle stream at shutdown ended with %v, want UNAVAILABLE, shutting down, with a retry delay", err)
	}
	if err := <-shut; err != nil || shutCtx.Err() != nil {
		t.Fatalf("shutdown: %v (its deadline: %v), want it graceful", err, shutCtx.Err())
	}
}

// retryDelay is the RetryInfo delay of a gRPC error; 0 without one.
func retryDelay(err error) time.Duration {
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	return 0
}
