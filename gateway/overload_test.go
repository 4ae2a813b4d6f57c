package gateway_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
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
