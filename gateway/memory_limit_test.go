package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// TestMemoryLimitConfig: a negative or tiny memory_limit is refused by
// name, and so is a dedup window that would not fit in a quarter of it;
// zero (no limit) and a bound with room pass. The runtime's soft limit
// leaves headroom below the bound.
func TestMemoryLimitConfig(t *testing.T) {
	for _, tc := range []struct {
		limit      int64
		maxEntries int
		field      string // "" when the config is valid
	}{
		{-1, 1_000_000, "memory_limit"},
		{64 << 20, 1_000_000, "memory_limit"},
		{0, 1_000_000, ""},
		{512 << 20, 1_000_000, ""},
		{256 << 20, 1_000_000, "dedup.max_entries"},
		{256 << 20, 500_000, ""},
	} {
		cfg := testConfig()
		cfg.MemoryLimit = tc.limit
		cfg.Dedup.MaxEntries = tc.maxEntries
		err := cfg.Validate()
		var ce *gateway.ConfigError
		if (tc.field == "") != (err == nil) || (err != nil && (!errors.As(err, &ce) || ce.Field != tc.field)) {
			t.Errorf("memory_limit %d, max_entries %d: got %v, want an error on %q", tc.limit, tc.maxEntries, err, tc.field)
		}
	}
	for _, tc := range []struct{ limit, want int64 }{
		{0, 0},
		{512 << 20, 512<<20 - (512<<20)/10},
		{200 << 20, 152 << 20},
	} {
		cfg := testConfig()
		cfg.MemoryLimit = tc.limit
		if got := cfg.RuntimeMemoryLimit(); got != tc.want {
			t.Errorf("RuntimeMemoryLimit(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
}

// TestRequestMemoryBudget: while requests hold their half of
// limits.request_memory_bytes (here one gRPC call whose message has not
// arrived holds all of it), a REST request and a gRPC call that would take
// it past its limit are refused UNAVAILABLE with unavailable_retry_after,
// unread, and counted; a stream batch, charged to the other half, is
// still answered. Once the call ends its charge is handed back, and
// requests are answered again and hand theirs back in turn.
func TestRequestMemoryBudget(t *testing.T) {
	// A request is charged twice its size and 64 KiB; a gRPC call, before
	// its message arrives, as a request of max_request_bytes.
	full := func(c gateway.Config) float64 { return float64(2*c.Limits.MaxRequestBytes + 64<<10) }
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) {
		c.Limits.RequestMemoryBytes = 2 * int64(full(*c)) // each half holds one such call
		// The budget as a whole, not the sources' shares of it.
		c.Limits.ReservedShare = 0
		c.Limits.MaxQueueWait = 100 * time.Millisecond
		c.Limits.ReceiveTimeout = time.Minute // the test ends the call itself
		c.UnavailableRetryAfter = 3 * time.Second
	}})
	held := func(pool string) float64 {
		t.Helper()
		mfs, err := h.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "sluice_request_memory_bytes" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if lp.GetName() == "pool" && lp.GetValue() == pool {
						return m.GetGauge().GetValue()
					}
				}
			}
		}
		t.Fatalf("no sluice_request_memory_bytes{pool=%q}", pool)
		return 0
	}
	event := func(id string) ev {
		return ev{ID: id, Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
	}
	refusals := func() float64 { return counterValue(t, h.reg, "sluice_request_memory_refusals_total", nil) }

	// A Publish call that sends its headers and not its message.
	ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 30*time.Second)
	defer cancel()
	stalled, err := h.conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true}, ingestv1.IngestService_Publish_FullMethodName)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stalled call to hold the requests' half", func() bool { return held("requests") == full(h.cfg) })

	resp, body := h.postREST(keyAll, restBody(event("mem-rest-1")))
	a := restAnswer(t, resp, body)
	if !a.whole || a.reason != "UNAVAILABLE" || !a.retryable || a.status != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "3" {
		t.Fatalf("REST past the budget: status %d, Retry-After %q, %s; want a retryable 503 UNAVAILABLE, Retry-After 3",
			resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if n := refusals(); n != 1 {
		t.Fatalf("sluice_request_memory_refusals_total %v, want 1", n)
	}
	_, err = h.publishGRPC(keyAll, event("mem-grpc-1"))
	if info := errorInfo(err); status.Code(err) != codes.Unavailable || info.GetReason() != "UNAVAILABLE" || info.GetMetadata()["retryable"] != "true" {
		t.Fatalf("gRPC past the budget: %v, want UNAVAILABLE with ErrorInfo", err)
	}
	if n := refusals(); n != 2 {
		t.Fatalf("sluice_request_memory_refusals_total %v, want 2", n)
	}

	// Stream batches have a half of their own.
	st, err := h.client.PublishStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&ingestv1.PublishStreamRequest{BatchId: 1, Events: []*ingestv1.Event{event("mem-stream-1").proto()}}); err != nil {
		t.Fatal(err)
	}
	if out, err := st.Recv(); err != nil {
		t.Fatalf("a stream batch while requests' half is full: %v", err)
	} else {
		wantOutcomes(t, out.GetResults(), ingestv1.Outcome_ACCEPTED)
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("stream end: %v", err)
	}

	// The call ends: its charge goes back, and requests are answered.
	cancel()
	_ = stalled.RecvMsg(new(ingestv1.PublishResponse))
	eventually(t, "the ended call's charge to be handed back", func() bool { return held("requests") == 0 })
	resp, body = h.postREST(keyAll, restBody(event("mem-rest-2")))
	if a := restAnswer(t, resp, body); a.status != http.StatusOK {
		t.Fatalf("REST with the budget back: status %d, %s", a.status, body)
	}
	if out, err := h.publishGRPC(keyAll, event("mem-grpc-2")); err != nil {
		t.Fatalf("gRPC with the budget back: %v", err)
	} else {
		wantOutcomes(t, out.GetResults(), ingestv1.Outcome_ACCEPTED)
	}
	eventually(t, "answered requests to hand their charges back", func() bool {
		return held("requests") == 0 && held("streams") == 0
	})
	if n := refusals(); n != 2 {
		t.Fatalf("sluice_request_memory_refusals_total %v, want still 2", n)
	}
}
