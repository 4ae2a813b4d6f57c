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
	for _, tc := range []struct {
		name       string
		refusals   int
		retryAfter time.Duration
		accepted   int64 // of 30
		retried    int64
	}{
		// Refused once, accepted 100 ms later.
		{name: "retried then accepted", refusals: 1, retryAfter: 100 * time.Millisecond, accepted: 30, retried: 30},
		// Retried once after 1.2 s; the next wait would pass the 2 s timeout.
		{name: "undelivered", refusals: 100, retryAfter: 1200 * time.Millisecond, accepted: 0, retried: 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := serveIngest(t, &bufferFullService{refusals: tc.refusals, retryAfter: tc.retryAfter, seen: map[string]int{}})
			cfg := loadgen.NewDefaultConfig()
			cfg.Target, cfg.Addr = loadgen.TargetClient, addr
			cfg.EventsPerRequest, cfg.Events, cfg.Concurrency = 5, 30, 2
			cfg.Duration, cfg.Timeout = time.Minute, 2*time.Second
			_, rep, led := runLedgered(t, cfg)
			undelivered := 30 - tc.accepted
			if rep.Accepted != tc.accepted || rep.Answered != 6 || rep.Failures["client:UNDELIVERED"] != undelivered || rep.FailedEvents != undelivered {
				t.Fatalf("accepted %d answered %d failures %v (%d events); want %d accepted of 6 answered requests, %d undelivered\nfirst error: %s",
					rep.Accepted, rep.Answered, rep.Failures, rep.FailedEvents, tc.accepted, undelivered, rep.FirstError)
			}
			if got := int64(len(ledgerLines(t, led))); got != tc.accepted {
				t.Fatalf("ledger has %d ids, want %d", got, tc.accepted)
			}
			c := rep.Client
			if c == nil || c.Retried["BUFFER_FULL"] != tc.retried || c.RetriedEvents() != tc.retried || c.Undelivered["BUFFER_FULL"] != undelivered {
				t.Fatalf("client stats %+v; want %d BUFFER_FULL retried, %d undelivered", c, tc.retried, undelivered)
			}
			if undelivered > 0 && !strings.Contains(rep.FirstError, "BUFFER_FULL") {
				t.Fatalf("first error %q does not say why the event was undelivered", rep.FirstError)
			}
			var text strings.Builder
			if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "30 events sent again: BUFFER_FULL=30") {
				t.Fatalf("text report has no client line: %v\n%s", err, text.String())
			}
		})
	}
}
