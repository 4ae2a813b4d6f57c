package loadgen_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/tools/loadgen"
)

// bufferFullService answers BUFFER_FULL, retryable after RetryAfter, to
// the first Refusals attempts of each event, then ACCEPTED.
type bufferFullService struct {
	ingestv1.UnimplementedIngestServiceServer
	refusals   int
	retryAfter time.Duration
	mu         sync.Mutex
	seen       map[string]int
}

func (s *bufferFullService) Publish(_ context.Context, req *ingestv1.PublishRequest) (*ingestv1.PublishResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*ingestv1.EventResult, len(req.GetEvents()))
	for i, ev := range req.GetEvents() {
		out[i] = &ingestv1.EventResult{Index: uint32(i), Id: ev.GetId(), Outcome: ingestv1.Outcome_ACCEPTED}
		if s.seen[ev.GetId()]++; s.seen[ev.GetId()] <= s.refusals {
			out[i].Outcome = ingestv1.Outcome_REJECTED
			out[i].Rejection = &ingestv1.Rejection{Reason: ingestv1.Reason_BUFFER_FULL, Retryable: true,
				RetryAfter: durationpb.New(s.retryAfter), Message: "spool full"}
		}
	}
	return &ingestv1.PublishResponse{Results: out}, nil
}

func serveIngest(t *testing.T, svc ingestv1.IngestServiceServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	ingestv1.RegisterIngestServiceServer(srv, svc)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return lis.Addr().String()
}

// TestClientTargetRetries: the client retries what the gateway says may be
// retried, and the report counts those retries; an event whose retries
// would outlast --timeout ends undelivered, a failure of one event typed
// client:UNDELIVERED, and is not in the ledger.
func TestClientTargetRetries(t *testing.T) {
	run := func(t *testing.T, refusals int, retryAfter, timeout time.Duration, concurrency int) (*loadgen.Report, []string) {
		addr := serveIngest(t, &bufferFullService{refusals: refusals, retryAfter: retryAfter, seen: map[string]int{}})
		cfg := loadgen.NewDefaultConfig()
		cfg.Target, cfg.Addr = loadgen.TargetClient, addr
		cfg.EventsPerRequest, cfg.Events, cfg.Concurrency = 5, 30, concurrency
		cfg.Duration, cfg.Timeout = time.Minute, timeout
		_, rep, led := runLedgered(t, cfg)
		return rep, ledgerLines(t, led)
	}
	t.Run("retried then accepted", func(t *testing.T) {
		// Refused once, accepted 100 ms later.
		rep, ledger := run(t, 1, 100*time.Millisecond, 2*time.Second, 2)
		if rep.Accepted != 30 || rep.Answered != 6 || rep.FailedEvents != 0 || len(ledger) != 30 {
			t.Fatalf("accepted %d answered %d failures %v, ledger %d; want all 30 accepted in 6 answered requests\nfirst error: %s",
				rep.Accepted, rep.Answered, rep.Failures, len(ledger), rep.FirstError)
		}
		if c := rep.Client; c == nil || c.Retried["BUFFER_FULL"] != 30 || c.RetriedEvents() != 30 || len(c.Undelivered) != 0 {
			t.Fatalf("client stats %+v; want 30 BUFFER_FULL retried, none undelivered", c)
		}
		var text strings.Builder
		if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "30 events sent again: BUFFER_FULL=30") {
			t.Fatalf("text report has no client line: %v\n%s", err, text.String())
		}
	})
	t.Run("undelivered", func(t *testing.T) {
		// Always refused, 300 ms each time, with a 500 ms timeout: an
		// event is sent at most twice, then ends undelivered about 200 ms
		// before its Publish's deadline. One worker, so no Publish waits
		// behind another's hold for its whole timeout.
		rep, ledger := run(t, 1000, 300*time.Millisecond, 500*time.Millisecond, 1)
		failed := rep.Failures["client:UNDELIVERED"]
		if rep.Accepted != 0 || len(ledger) != 0 || failed == 0 || rep.FailedEvents != failed || rep.Answered+rep.Timeouts != 6 {
			t.Fatalf("accepted %d, ledger %d, failures %v (%d events), answered %d, timeouts %d; want none accepted, the answered events all client:UNDELIVERED, 6 requests in all\nfirst error: %s",
				rep.Accepted, len(ledger), rep.Failures, rep.FailedEvents, rep.Answered, rep.Timeouts, rep.FirstError)
		}
		if c := rep.Client; c == nil || c.Retried["BUFFER_FULL"] == 0 || c.Undelivered["BUFFER_FULL"] != failed {
			t.Fatalf("client stats %+v; want BUFFER_FULL retries, and the %d undelivered events undelivered for BUFFER_FULL", c, failed)
		}
		if !strings.Contains(rep.FirstError, "BUFFER_FULL") {
			t.Fatalf("first error %q does not say why the event was undelivered", rep.FirstError)
		}
		var text strings.Builder
		if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "events sent again: BUFFER_FULL=") {
			t.Fatalf("text report has no client line: %v\n%s", err, text.String())
		}
	})
}
