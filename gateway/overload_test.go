package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// holdingPublisher holds the call with the event id "recv-held" in Admit
// until release is closed; entered is closed when it gets there.
type holdingPublisher struct {
	gateway.Admitter
	entered, release chan struct{}
}

func (p *holdingPublisher) Admit(ctx context.Context, recs []*kgo.Record) []admission.Admitted {
	for _, r := range recs {
		if string(r.Key) == "recv-held" {
			close(p.entered)
			<-p.release
		}
	}
	return p.Admitter.Admit(ctx, recs)
}

// TestReceivingBound: while limits.receiving_requests Publish calls are
// still arriving (headers in, message not), a new call is refused at once
// with UNAVAILABLE, ErrorInfo and RetryInfo, and counted. A call frees its
// place when its message is in (not when it is answered), and also when
// it ends without one.
func TestReceivingBound(t *testing.T) {
	held := &holdingPublisher{entered: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, harnessOpts{
		config: func(c *gateway.Config) {
			c.Limits.ReceivingRequests = 1
			c.UnavailableRetryAfter = 2 * time.Second
		},
		publisher: func(p gateway.Admitter) gateway.Admitter { held.Admitter = p; return held },
	})
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(held.release) }) }
	t.Cleanup(release) // before the harness shuts down, also on failure
	event := func(id string) ev {
		return ev{ID: id, Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
	}

	// A call waiting on Kafka is no longer arriving: it takes no place.
	heldDone := make(chan error, 1)
	go func() {
		e := event("recv-held")
		e.Key = "recv-held"
		_, err := h.publishGRPC(keyAll, e)
		heldDone <- err
	}()
	<-held.entered
	if out, err := h.publishGRPC(keyAll, event("recv-0")); err != nil {
		t.Fatalf("a call waiting on Kafka took the only place: %v", err)
	} else {
		wantOutcomes(t, out.GetResults(), ingestv1.Outcome_ACCEPTED)
	}
	release()
	if err := <-heldDone; err != nil {
		t.Fatal(err)
	}
	// stalled opens a Publish call and sends its headers, not its message.
	stalled := func() (grpc.ClientStream, context.CancelFunc) {
		ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 30*time.Second)
		cs, err := h.conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true}, ingestv1.IngestService_Publish_FullMethodName)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		return cs, cancel
	}
	// refusedWhileStalled retries until the stalled call's headers have
	// reached the server and a new call is refused, or the deadline passes.
	refusedWhileStalled := func(id string) {
		t.Helper()
		var err error
		eventually(t, "a call to be refused while one is arriving", func() bool {
			_, err = h.publishGRPC(keyAll, event(id))
			return err != nil
		})
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("refusal %v, want UNAVAILABLE", err)
		}
		var info, retry bool
		for _, d := range status.Convert(err).Details() {
			switch d := d.(type) {
			case *errdetails.ErrorInfo:
				info = d.GetReason() == ingestv1.Reason_UNAVAILABLE.String() && d.GetMetadata()["retryable"] == "true"
			case *errdetails.RetryInfo:
				retry = d.GetRetryDelay().AsDuration() == 2*time.Second
			}
		}
		if !info || !retry {
			t.Fatalf("refusal without ErrorInfo or RetryInfo of 2s: %v", status.Convert(err).Details())
		}
	}
	shed := func() float64 {
		n, err := testutil.GatherAndCount(h.reg, "sluice_requests_shed_total")
		if err != nil || n != 1 {
			t.Fatalf("sluice_requests_shed_total: %v", err)
		}
		mfs, _ := h.reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() == "sluice_requests_shed_total" {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return 0
	}

	// A call whose message comes late: others are refused meanwhile; once
	// its message is in it is judged, and the place is free again.
	cs, cancel := stalled()
	defer cancel()
	refusedWhileStalled("recv-1")
	if shed() < 1 {
		t.Fatal("the refusal was not counted")
	}
	if err := cs.SendMsg(&ingestv1.PublishRequest{Events: []*ingestv1.Event{event("recv-late").proto()}}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CloseSend(); err != nil {
		t.Fatal(err)
	}
	var out ingestv1.PublishResponse
	if err := cs.RecvMsg(&out); err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, out.GetResults(), ingestv1.Outcome_ACCEPTED)
	if out, err := h.publishGRPC(keyAll, event("recv-2")); err != nil {
		t.Fatalf("after the late message: %v", err)
	} else {
		wantOutcomes(t, out.GetResults(), ingestv1.Outcome_ACCEPTED)
	}

	// A call given up before its message: its place is freed too.
	_, cancel2 := stalled()
	refusedWhileStalled("recv-3")
	cancel2()
	eventually(t, "the place of a call given up to be freed", func() bool {
		_, err := h.publishGRPC(keyAll, event("recv-4"))
		return err == nil
	})
}

// TestUnauthenticatedStreamsBounded is the repro: with
// limits.max_streams 4, 500 health Watch streams without a key over 10
// connections. The unauthenticated share holds: at most half of it is
// held by long-lived streams, and the rest are refused at their headers
// with UNAVAILABLE, ErrorInfo and RetryInfo, and counted. While they are
// held, a health Check without a key is still answered, a reflection
// stream without a key is refused as the Watch streams are, one with a
// key is served, and authenticated PublishStream streams get every one of
// their max_streams slots.
func TestUnauthenticatedStreamsBounded(t *testing.T) {
	const conns, perConn = 10, 50
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) {
		c.Limits.MaxStreams = 4
		c.UnavailableRetryAfter = 3 * time.Second
	}})
	share := h.cfg.Limits.UnauthenticatedStreams // the default
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dial := func() *grpc.ClientConn {
		cc, err := grpc.NewClient(h.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	// wantCapacityRefusal checks the refusal of a stream past a bound.
	wantCapacityRefusal := func(what string, err error) {
		t.Helper()
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("%s: %v, want UNAVAILABLE", what, err)
		}
		var info, retry bool
		for _, d := range status.Convert(err).Details() {
			switch d := d.(type) {
			case *errdetails.ErrorInfo:
				info = d.GetReason() == ingestv1.Reason_UNAVAILABLE.String() && d.GetDomain() == gateway.ErrorDomain &&
					d.GetMetadata()["retryable"] == "true"
			case *errdetails.RetryInfo:
				retry = d.GetRetryDelay().AsDuration() == 3*time.Second
			}
		}
		if !info || !retry {
			t.Fatalf("%s: refusal without ErrorInfo or RetryInfo of 3s: %v", what, status.Convert(err).Details())
		}
	}

	// watch opens a Watch without a key: held, or refused.
	watch := func(health healthpb.HealthClient) (context.CancelFunc, error) {
		wctx, wcancel := context.WithCancel(ctx)
		w, err := health.Watch(wctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		// The health service answers a Watch with the status at once.
		first, err := w.Recv()
		if err == nil && first.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("Watch: %v", first)
		}
		return wcancel, err
	}
	var held []context.CancelFunc
	refused := 0
	for range conns {
		health := healthpb.NewHealthClient(dial())
		for range perConn {
			wcancel, err := watch(health)
			if err == nil {
				held = append(held, wcancel)
				continue
			}
			wcancel()
			wantCapacityRefusal("a Watch past the unauthenticated share", err)
			refused++
		}
	}
	t.Logf("%d Watch streams held, %d refused", len(held), refused)
	if len(held) < 1 || len(held) > share/2 {
		t.Fatalf("%d of %d unauthenticated Watch streams held, want 1 to %d (half the share of %d)", len(held), conns*perConn, share/2, share)
	}
	if got := counterValue(t, h.reg, "sluice_unauthenticated_streams_refused_total", nil); got != float64(refused) {
		t.Errorf("sluice_unauthenticated_streams_refused_total %v, want %d", got, refused)
	}

	// A health Check without a key (a load balancer's probe) is answered.
	cctx, ccancel := context.WithTimeout(ctx, 15*time.Second)
	defer ccancel()
	if out, err := healthpb.NewHealthClient(dial()).Check(cctx, &healthpb.HealthCheckRequest{}); err != nil || out.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("a health Check without a key while the Watch streams are held: %v, %v", out, err)
	}

	// Reflection: without a key it is one more long-lived unauthenticated
	// stream, refused; with a key it is served, in an authenticated slot.
	listServices := func(sctx context.Context) error {
		rs, err := reflectionpb.NewServerReflectionClient(h.conn).ServerReflectionInfo(sctx)
		if err != nil {
			return err
		}
		if err := rs.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		_, err = rs.Recv()
		return err
	}
	rctx, rcancel := context.WithCancel(ctx)
	wantCapacityRefusal("reflection without a key", listServices(rctx))
	rcancel()
	rctx, rcancel = context.WithCancel(withKey(ctx, keyAll))
	if err := listServices(rctx); err != nil {
		t.Fatalf("reflection with a key: %v", err)
	}
	rcancel() // its slot frees once the server lets go of the stream

	// Every one of the max_streams slots is an authenticated caller's.
	open := func(id string) error {
		st, err := h.client.PublishStream(withKey(ctx, keyAll))
		if err != nil {
			return err
		}
		e := ev{ID: id, Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
		if err := st.Send(&ingestv1.PublishStreamRequest{BatchId: 1, Events: []*ingestv1.Event{e.proto()}}); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		_, err = st.Recv()
		return err
	}
	for i := range h.cfg.Limits.MaxStreams {
		id := fmt.Sprintf("auth-%d", i)
		var err error
		eventually(t, "an authenticated PublishStream to get a slot", func() bool {
			err = open(id)
			return err == nil
		})
	}
	wantCapacityRefusal("a PublishStream past max_streams", open("auth-past"))

	// The share frees as its streams end.
	for _, wcancel := range held {
		wcancel()
	}
	health := healthpb.NewHealthClient(dial())
	eventually(t, "a Watch without a key to be held once the others ended", func() bool {
		wcancel, err := watch(health)
		wcancel()
		return err == nil
	})
}
