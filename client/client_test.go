package client_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/waitfor"
)

// idPattern is the gateway's rule for event ids (ingest.proto).
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`)

// TestMixedBatch publishes a batch with bad events among good ones, on
// each transport: every good event lands in Kafka exactly once, and each
// bad one comes back as a *RejectionError after one request.
func TestMixedBatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []client.Opt
	}{
		{"unary", nil},
		{"stream", []client.Opt{client.UseStream()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := serve(t, nil)
			c := open(t, []string{g.Server.GRPCAddr()}, tc.opts...)
			events := []*ingestv1.Event{
				order("good-0"), badEmail("bad-email"), order("good-1"), order("good-2"),
				unknownType("bad-type"), order("good-3"), order("good-4"), order("good-5"),
			}
			wantReason := map[string]ingestv1.Reason{
				"bad-email": ingestv1.Reason_SCHEMA_VIOLATION,
				"bad-type":  ingestv1.Reason_UNKNOWN_EVENT_TYPE,
			}
			results, err := c.Publish(t.Context(), events...)
			if err != nil {
				t.Fatal(err)
			}
			var good []string
			for i, r := range results {
				if r.ID != events[i].GetId() || r.Attempts != 1 {
					t.Errorf("result %d: id %q attempts %d, want %q and 1", i, r.ID, r.Attempts, events[i].GetId())
				}
				want, bad := wantReason[r.ID]
				if !bad {
					good = append(good, r.ID)
					if r.Err != nil || r.Outcome != ingestv1.Outcome_ACCEPTED || r.Kafka.GetTopic() != orderTopic {
						t.Errorf("%s: %v %v %v, want ACCEPTED in %s", r.ID, r.Outcome, r.Kafka, r.Err, orderTopic)
					}
					continue
				}
				var rej *client.RejectionError
				if !errors.As(r.Err, &rej) {
					t.Fatalf("%s: err %v, want a *RejectionError", r.ID, r.Err)
				}
				if rej.ID != r.ID || rej.Reason != want || r.Outcome != ingestv1.Outcome_REJECTED {
					t.Errorf("%s: %+v outcome %v, want %v", r.ID, rej, r.Outcome, want)
				}
				if want == ingestv1.Reason_SCHEMA_VIOLATION && !slices.ContainsFunc(rej.Violations, func(v *ingestv1.FieldViolation) bool {
					return v.GetField() == "payload.customer.email"
				}) {
					t.Errorf("%s: violations %v, want one on payload.customer.email", r.ID, rej.Violations)
				}
			}
			ids := g.EventIDs(t, orderTopic, len(good))
			for _, id := range good {
				if ids[id] != 1 {
					t.Errorf("%s is in Kafka %d times, want 1", id, ids[id])
				}
			}
			if len(ids) != len(good) {
				t.Errorf("Kafka has %v, want exactly %v", ids, good)
			}
		})
	}
}

// TestRateLimited publishes more than a source's burst: the refused
// batches wait the retry_after they were given, so the requests are
// bounded by what the bucket allows, not by the client's backoff (5ms
// here, far shorter than the waits).
func TestRateLimited(t *testing.T) {
	const batch, batches = 10, 4
	g := serve(t, func(cfg *gateway.Config) {
		cfg.Limits.MaxEventsPerRequest = batch
		cfg.Sources[0].Rate, cfg.Sources[0].Burst = 50, batch
	})
	var n calls
	m := newRecorder()
	// MaxAttempts(1): a refusal that says when to come back does not use
	// up an attempt, so every batch gets through however often it waits.
	c := open(t, []string{g.Server.GRPCAddr()}, n.opt(), client.WithMetrics(m), client.MaxBatchEvents(batch), client.MaxAttempts(1))
	var events []*ingestv1.Event
	for range batch * batches {
		events = append(events, order(""))
	}
	results, err := c.Publish(t.Context(), events...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Err != nil || r.Outcome != ingestv1.Outcome_ACCEPTED {
			t.Fatalf("%s: %v %v", r.ID, r.Outcome, r.Err)
		}
	}
	waited := 0
	for _, r := range results {
		if r.Attempts > 1 {
			waited++
		}
	}
	if m.retried(ingestv1.Reason_RATE_LIMITED) == 0 || waited == 0 {
		t.Error("no batch was rate limited and sent again: the test proves nothing")
	}
	// Each round of waits lets one batch through, so the batches still
	// refused are sent again once per round: batches+(batches-1)+...+1,
	// and a round's worth more for a busy machine. A client that ignored
	// retry_after for its 5ms backoff would send dozens.
	if got, most := n.n.Load(), int64(batches*(batches+1)/2+batches); got > most {
		t.Errorf("%d requests for %d batches, want at most %d: retry_after was not waited for", got, batches, most)
	} else {
		t.Logf("%d requests for %d batches, %d events rate limited", got, batches, m.retried(ingestv1.Reason_RATE_LIMITED))
	}
	ids := g.EventIDs(t, orderTopic, len(events))
	for _, r := range results {
		if ids[r.ID] != 1 {
			t.Errorf("%s is in Kafka %d times", r.ID, ids[r.ID])
		}
	}
}

// TestRateLimitedPaced: a RATE_LIMITED answer holds every sender, not
// only the one refused: after the wait requests go one at a time until the
// bucket admits them in a row, so a refusal comes at most once per request
// admitted (and once for each sender that went out before the first). A
// client whose MaxInFlight senders each waited out only their own
// retry_after would meet the bucket another had just emptied: about
// MaxInFlight refusals per admission.
func TestRateLimitedPaced(t *testing.T) {
	const batch, batches, inFlight = 10, 20, 4
	g := serve(t, func(cfg *gateway.Config) {
		cfg.Limits.MaxEventsPerRequest = batch
		cfg.Sources[0].Rate, cfg.Sources[0].Burst = 100, batch
	})
	var n calls
	m := newRecorder()
	c := open(t, []string{g.Server.GRPCAddr()}, n.opt(), client.WithMetrics(m), client.MaxBatchEvents(batch), client.MaxInFlight(inFlight))
	var events []*ingestv1.Event
	for range batch * batches {
		events = append(events, order(""))
	}
	results, err := c.Publish(t.Context(), events...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.ID, r.Err)
		}
	}
	refused := m.retried(ingestv1.Reason_RATE_LIMITED) / batch
	if refused == 0 {
		t.Fatal("no batch was rate limited: the test proves nothing")
	}
	// About one refusal per admission: 2·batches, and the senders that
	// went out before the first refusal. Another batches' worth leaves
	// room for a slow machine, where a probe can find the bucket refilled
	// and let the senders go together too soon. Unpaced, it is about
	// inFlight·batches.
	if got, most := n.n.Load(), int64(3*batches+inFlight); got > most {
		t.Errorf("%d requests (%d refused) for %d batches, want at most %d: the senders were not held together", got, refused, batches, most)
	} else {
		t.Logf("%d requests (%d refused) for %d batches", got, refused, batches)
	}
}

// TestLostAnswer: the gateway accepts a request but its answer is lost
// (the call fails after reaching it). The retry carries the same ids and
// bytes, the gateway answers DUPLICATE with the original's position, and
// each event is in Kafka once. The caller's events, sent without id and
// occurred_at, are not changed.
func TestLostAnswer(t *testing.T) {
	g := serve(t, nil)
	n := calls{fail: func(n int64) (error, bool) {
		if n == 1 {
			return status.Error(codes.Unavailable, "answer lost"), false
		}
		return nil, false
	}}
	c := open(t, []string{g.Server.GRPCAddr()}, n.opt())
	var events, before []*ingestv1.Event
	for range 5 {
		ev := order("")
		ev.OccurredAt = nil
		events = append(events, ev)
		before = append(before, proto.Clone(ev).(*ingestv1.Event))
	}
	results, err := c.Publish(t.Context(), events...)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		if !proto.Equal(events[i], before[i]) {
			t.Errorf("event %d was changed: %v", i, events[i])
		}
		if r.Err != nil || r.Outcome != ingestv1.Outcome_DUPLICATE || r.Attempts != 2 || r.Kafka == nil {
			t.Errorf("%s: %v attempts %d at %v, err %v; want DUPLICATE after 2 with the original's position", r.ID, r.Outcome, r.Attempts, r.Kafka, r.Err)
		}
		if !idPattern.MatchString(r.ID) || r.Event.GetId() != r.ID || r.Event.GetOccurredAt() == nil {
			t.Errorf("result %d: id %q, event %v: want a filled id and occurred_at", i, r.ID, r.Event)
		}
	}
	ids := g.EventIDs(t, orderTopic, len(events))
	for _, r := range results {
		if ids[r.ID] != 1 {
			t.Errorf("%s is in Kafka %d times, want 1", r.ID, ids[r.ID])
		}
	}
}

// TestEventsKeptWhenComplete: an event with its id and occurred_at is sent
// as it is, not cloned.
func TestEventsKeptWhenComplete(t *testing.T) {
	g := serve(t, nil)
	c := open(t, []string{g.Server.GRPCAddr()})
	ev := order("complete-1")
	results, err := c.Publish(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if results[0].Event != ev || results[0].ID != "complete-1" || results[0].Err != nil {
		t.Errorf("result %+v: want the caller's event, accepted", results[0])
	}
}

// fastReconnect keeps gRPC's reconnection backoff short, so a gateway that
// comes back is found quickly.
var fastReconnect = client.WithDialOptions(grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.6, MaxDelay: 100 * time.Millisecond},
	MinConnectTimeout: time.Second,
}))

// TestGatewayRestart: events sent while the gateway is down are retried
// under their ids until a new server comes up on the same port, and land
// once; on each transport (a stream is opened again).
func TestGatewayRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []client.Opt
	}{
		{"unary", nil},
		{"stream", []client.Opt{client.UseStream()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeAddr(t)
			g := serve(t, func(cfg *gateway.Config) { cfg.GRPCAddr = addr })
			m := newRecorder()
			c := open(t, []string{addr}, append(tc.opts, client.WithMetrics(m), fastReconnect, client.MaxAttempts(1000))...)
			// One event before the outage, so a stream is open when it
			// starts.
			if _, err := c.Publish(t.Context(), order("restart-first")); err != nil {
				t.Fatal(err)
			}
			// An open stream holds a graceful stop until the drain's
			// deadline, which then cuts it off.
			drain, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			_ = g.Server.Shutdown(drain)
			rs := newResults(t)
			var ids []string
			for i := range 6 {
				ev := order("restart-" + string(rune('a'+i)))
				ids = append(ids, ev.GetId())
				if err := c.Send(t.Context(), ev, rs.done); err != nil {
					t.Fatal(err)
				}
			}
			waitfor.Condition(t, 10*time.Second, "retries while the gateway is down", func() bool {
				return m.retried(ingestv1.Reason_UNAVAILABLE) >= 2*len(ids)
			})
			srv, err := gateway.NewServer(g.Service)
			if err != nil {
				t.Fatal(err)
			}
			srv.Start()
			t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
			if err := c.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			inKafka := g.EventIDs(t, orderTopic, len(ids)+1)
			for _, id := range ids {
				r, _ := rs.get(id)
				if r.Err != nil || r.Outcome != ingestv1.Outcome_ACCEPTED || r.Attempts < 3 {
					t.Errorf("%s: %v after %d attempts, err %v; want ACCEPTED after retries", id, r.Outcome, r.Attempts, r.Err)
				}
				if inKafka[id] != 1 {
					t.Errorf("%s is in Kafka %d times, want 1", id, inKafka[id])
				}
			}
			// Before the cleanups: the server's graceful stop waits for
			// the client's stream to end.
			if err := c.Close(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestBufferBound: at MaxBufferedEvents, FailWhenFull refuses at once and
// the default waits until ctx ends, or until Close.
func TestBufferBound(t *testing.T) {
	dead := []string{freeAddr(t)} // nothing answers: events stay held
	t.Run("FailWhenFull", func(t *testing.T) {
		c := open(t, dead, client.FailWhenFull(), client.MaxBufferedEvents(2), client.MaxBatchEvents(1))
		for i := range 2 {
			if err := c.Send(t.Context(), order(""), nil); err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
		}
		if err := c.Send(t.Context(), order(""), nil); !errors.Is(err, client.ErrBufferFull) {
			t.Errorf("Send at the bound: %v, want ErrBufferFull", err)
		}
		abandon(t, c, 2)
	})
	t.Run("Block", func(t *testing.T) {
		c := open(t, dead, client.MaxBufferedEvents(2), client.MaxBatchEvents(1))
		for i := range 2 {
			if err := c.Send(t.Context(), order(""), nil); err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		if err := c.Send(ctx, order(""), nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Send at the bound: %v, want the ctx's end", err)
		}
		blocked := make(chan error, 1)
		go func() { blocked <- c.Send(t.Context(), order(""), nil) }()
		abandon(t, c, 2)
		if err := <-blocked; !errors.Is(err, client.ErrClosed) {
			t.Errorf("Send waiting at Close: %v, want ErrClosed", err)
		}
	})
}

// abandon closes c with a ctx that has ended and checks that it names n
// events.
func abandon(t *testing.T, c *client.Client, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var u *client.UndeliveredError
	if err := c.Close(ctx); !errors.As(err, &u) || len(u.IDs) != n {
		t.Errorf("Close: %v, want %d undelivered", err, n)
	}
}

// TestCloseDuringOutage: Close's ctx ends while the gateway is down; Close
// names exactly the events not delivered, and each gets its done once.
func TestCloseDuringOutage(t *testing.T) {
	g := serve(t, nil)
	m := newRecorder()
	c := open(t, []string{g.Server.GRPCAddr()}, client.WithMetrics(m))
	rs := newResults(t)
	var delivered, stranded []string
	for i := range 3 {
		ev := order("before-" + string(rune('a'+i)))
		delivered = append(delivered, ev.GetId())
		if err := c.Send(t.Context(), ev, rs.done); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.Server.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		ev := order("during-" + string(rune('a'+i)))
		stranded = append(stranded, ev.GetId())
		if err := c.Send(t.Context(), ev, rs.done); err != nil {
			t.Fatal(err)
		}
	}
	waitfor.Condition(t, 10*time.Second, "retries during the outage", func() bool {
		return m.retried(ingestv1.Reason_UNAVAILABLE) >= len(stranded)
	})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := c.Close(ctx)
	var u *client.UndeliveredError
	if !errors.As(err, &u) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Close: %v, want an *UndeliveredError for the ctx's end", err)
	}
	got := slices.Sorted(slices.Values(u.IDs))
	if !slices.Equal(got, stranded) {
		t.Errorf("Close names %v, want %v", got, stranded)
	}
	if rs.len() != len(delivered)+len(stranded) {
		t.Errorf("%d results, want %d", rs.len(), len(delivered)+len(stranded))
	}
	for _, id := range delivered {
		if r, _ := rs.get(id); r.Err != nil {
			t.Errorf("%s: %v, want delivered", id, r.Err)
		}
	}
	for _, id := range stranded {
		r, _ := rs.get(id)
		var ue *client.UndeliveredError
		if !errors.As(r.Err, &ue) || !slices.Equal(ue.IDs, []string{id}) || r.Outcome != ingestv1.Outcome_OUTCOME_UNSPECIFIED {
			t.Errorf("%s: %v %v, want its own *UndeliveredError", id, r.Outcome, r.Err)
		}
	}
	if err := c.Close(t.Context()); !errors.Is(err, client.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
	if err := c.Send(t.Context(), order(""), rs.done); !errors.Is(err, client.ErrClosed) {
		t.Errorf("Send after Close: %v, want ErrClosed", err)
	}
}

// TestPublishCancelled: Publish returns at its ctx's end with ctx.Err()
// for each event still without a final result.
func TestPublishCancelled(t *testing.T) {
	m := newRecorder()
	c := open(t, []string{freeAddr(t)}, client.WithMetrics(m))
	ctx, cancel := context.WithCancel(t.Context())
	type answer struct {
		results []client.Result
		err     error
	}
	done := make(chan answer, 1)
	go func() {
		rs, err := c.Publish(ctx, order(""), order("mine-1"))
		done <- answer{rs, err}
	}()
	waitfor.Condition(t, 10*time.Second, "a retry", func() bool { return m.retried(ingestv1.Reason_UNAVAILABLE) > 0 })
	cancel()
	a := <-done
	if !errors.Is(a.err, context.Canceled) {
		t.Fatalf("Publish: %v, want context.Canceled", a.err)
	}
	for i, r := range a.results {
		if !errors.Is(r.Err, context.Canceled) || !idPattern.MatchString(r.ID) {
			t.Errorf("result %d: %q %v, want an id and context.Canceled", i, r.ID, r.Err)
		}
	}
	if a.results[1].ID != "mine-1" {
		t.Errorf("id %q, want mine-1", a.results[1].ID)
	}
	abandon(t, c, 2)
}

// TestOneAddressDead: requests go round robin; those to the dead address
// fail and are sent again to the live one.
func TestOneAddressDead(t *testing.T) {
	g := serve(t, nil)
	m := newRecorder()
	c := open(t, []string{freeAddr(t), g.Server.GRPCAddr()}, client.WithMetrics(m), client.MaxBatchEvents(5), client.MaxAttempts(30))
	var events []*ingestv1.Event
	for range 20 {
		events = append(events, order(""))
	}
	results, err := c.Publish(t.Context(), events...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Err != nil {
			t.Errorf("%s: %v", r.ID, r.Err)
		}
	}
	if m.retried(ingestv1.Reason_UNAVAILABLE) == 0 {
		t.Error("no request went to the dead address")
	}
	ids := g.EventIDs(t, orderTopic, len(events))
	for _, r := range results {
		if ids[r.ID] != 1 {
			t.Errorf("%s is in Kafka %d times", r.ID, ids[r.ID])
		}
	}
}

// TestOutOfAttempts: an event whose every attempt fails ends as an
// *UndeliveredError carrying the last failure.
func TestOutOfAttempts(t *testing.T) {
	c := open(t, []string{freeAddr(t)}, client.MaxAttempts(3))
	results, err := c.Publish(t.Context(), order("doomed"))
	if err != nil {
		t.Fatal(err)
	}
	r := results[0]
	var u *client.UndeliveredError
	if !errors.As(r.Err, &u) || status.Code(u.Last) != codes.Unavailable || r.Attempts != 3 {
		t.Errorf("%v after %d attempts, want *UndeliveredError with the last Unavailable after 3", r.Err, r.Attempts)
	}
}

// TestSplitsTooLarge: a request over the gateway's events per request is
// split until each part passes; no retry is spent on it.
func TestSplitsTooLarge(t *testing.T) {
	g := serve(t, func(cfg *gateway.Config) { cfg.Limits.MaxEventsPerRequest = 4 })
	m := newRecorder()
	c := open(t, []string{g.Server.GRPCAddr()}, client.WithMetrics(m), client.MaxBatchEvents(16), client.MaxAttempts(1))
	var events []*ingestv1.Event
	for range 16 {
		events = append(events, order(""))
	}
	results, err := c.Publish(t.Context(), events...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Err != nil || r.Outcome != ingestv1.Outcome_ACCEPTED {
			t.Errorf("%s: %v %v", r.ID, r.Outcome, r.Err)
		}
	}
	if len(m.retries) != 0 {
		t.Errorf("retries %v, want none", m.retries)
	}
	ids := g.EventIDs(t, orderTopic, len(events))
	for _, r := range results {
		if ids[r.ID] != 1 {
			t.Errorf("%s is in Kafka %d times", r.ID, ids[r.ID])
		}
	}
}

// TestUnauthenticated: a wrong key is a permanent refusal of every event.
func TestUnauthenticated(t *testing.T) {
	g := serve(t, nil)
	for _, tc := range []struct {
		name string
		opts []client.Opt
	}{
		{"unary", nil},
		{"stream", []client.Opt{client.UseStream()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := open(t, []string{g.Server.GRPCAddr()}, append(tc.opts, client.WithAPIKey("wrong"))...)
			results, err := c.Publish(t.Context(), order(""), order(""))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				var rej *client.RejectionError
				if !errors.As(r.Err, &rej) || rej.Reason != ingestv1.Reason_UNAUTHENTICATED || rej.ID != r.ID || r.Attempts != 1 {
					t.Errorf("%s: %v after %d, want UNAUTHENTICATED after 1", r.ID, r.Err, r.Attempts)
				}
			}
		})
	}
}
