package faultsuite

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/client"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

const (
	// clientSource is the source the client scenarios send as, but for
	// client-rate-limited's limitedSource, whose bucket holds limitedBurst
	// events and fills at limitedRate a second (the gateway wants the
	// burst at least max_events_per_request, 100).
	clientSource  = "faults-client"
	clientKey     = "faults-key-client"
	limitedSource = "faults-client-limited"
	limitedKey    = "faults-key-limited"
	limitedRate   = 300.0
	limitedBurst  = 100
	// clientBatch is the clients' MaxBatchEvents: under the gateway's
	// max_events_per_request and limitedBurst.
	clientBatch = 50
)

// clientLoad is the traffic of a client scenario: instances clients of
// package client over gRPC, each with callers goroutines; an even one
// hands its events over one at a time with Send, an odd one (every one,
// with publishOnly) a batch at a time with Publish, and waits for the
// results. A caller hands over batch events (one in badEvery breaking the
// contract), then pauses pace, until duration. The events have no id: the
// client gives each one, and the ledger records it from the result.
type clientLoad struct {
	duration    time.Duration
	instances   int           // default 2
	callers     int           // per instance; default 2
	batch       int           // default 20
	pace        time.Duration // default 80ms; 0 with noPace
	noPace      bool
	badEvery    int // default invalidEvery
	publishOnly bool
	limited     bool // send as limitedSource
	opts        []client.Opt
	// closeWithin is Close's deadline once the scenario's fault asks for
	// it (closeClients); a client otherwise closes when its callers are
	// done, within two minutes.
	closeWithin time.Duration
	// addrs, when set, are the addresses each client is given, read when
	// the clients are made; the suite's gateway otherwise.
	addrs func(s *system) []string
}

// clientTally is what the clients of a scenario were told, beside the
// ledger's acked, rejected and unanswered (undelivered) by identity.
type clientTally struct {
	handed     int // events Send or Publish took
	notTaken   int // events Send or Publish did not take (ErrClosed once Close began)
	accepted   int
	duplicate  int
	rejected   int
	localDisk  int            // successes with Durability LOCAL_DISK
	multi      int            // results with Attempts > 1
	badRetried int            // contract-breaking events rejected with Attempts != 1
	final      map[string]int // event id -> results it had (must be 1)
	// undelivered are the ids whose result was an *UndeliveredError;
	// closeIDs those the clients' Close calls named.
	undelivered, closeIDs map[string]bool
	closeErrs             []string // Close's errors other than *UndeliveredError
	// misjudged counts results that break the client's contract: a good
	// event refused, a bad one accepted or refused without violations, an
	// outcome that disagrees with Err, an error that is not final.
	misjudged      int
	firstMisjudged []string
	metrics        *clientMetrics
	wire           *wireLog
	// closeNow, closed by the fault (closeClients), stops the callers and
	// closes every client with closeWithin; closed is closed once all are.
	closeNow, closed chan struct{}
}

func newClientTally() *clientTally {
	return &clientTally{
		final: map[string]int{}, undelivered: map[string]bool{}, closeIDs: map[string]bool{},
		metrics:  &clientMetrics{retries: map[ingestv1.Reason]int{}},
		wire:     &wireLog{sends: map[string][]wireSend{}},
		closeNow: make(chan struct{}), closed: make(chan struct{}),
	}
}

func (c *clientTally) misjudge(format string, args ...any) {
	c.misjudged++
	if len(c.firstMisjudged) < 5 {
		c.firstMisjudged = append(c.firstMisjudged, fmt.Sprintf(format, args...))
	}
}

// clientMetrics is the client.Metrics the scenarios count with.
type clientMetrics struct {
	mu            sync.Mutex
	requests      int
	requestErrors int
	retries       map[ingestv1.Reason]int // events, by reason
	finals        int
}

func (m *clientMetrics) Request(events int, d time.Duration, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests++
	if err != nil {
		m.requestErrors++
	}
}

func (m *clientMetrics) Final(outcome ingestv1.Outcome, reason ingestv1.Reason, attempts int, sinceEnqueue time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finals++
}

func (m *clientMetrics) Retry(reason ingestv1.Reason, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.retries[reason] += n
}

func (m *clientMetrics) Buffered(events, bytes int) {}

func (m *clientMetrics) retried(reason ingestv1.Reason) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.retries[reason]
}

// wireLog watches the clients' requests from a unary interceptor: each
// event's attempts, when each began and ended and the wait its answer
// asked for, so the checker can hold the client to retry_after without
// trusting what the client says of itself.
type wireLog struct {
	mu       sync.Mutex
	requests int
	sends    map[string][]wireSend // event id -> its attempts, in the order they began
	// answered counts requests answered per event; limited those refused
	// whole RATE_LIMITED, and minLimitedWait the shortest wait one asked.
	answered, limited int
	minLimitedWait    time.Duration
}

type wireSend struct {
	start, end time.Time
	wait       time.Duration // retry_after of the answer, 0 without one
}

func (w *wireLog) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	end := time.Now()
	pr, ok := req.(*ingestv1.PublishRequest)
	if !ok {
		return err
	}
	waits := make([]time.Duration, len(pr.GetEvents()))
	limited := false
	if err != nil {
		var wait time.Duration
		for _, d := range status.Convert(err).Details() {
			switch d := d.(type) {
			case *errdetails.RetryInfo:
				wait = d.GetRetryDelay().AsDuration()
			case *errdetails.ErrorInfo:
				limited = d.GetReason() == ingestv1.Reason_RATE_LIMITED.String()
			}
		}
		for i := range waits {
			waits[i] = wait
		}
	} else if resp, ok := reply.(*ingestv1.PublishResponse); ok {
		for _, r := range resp.GetResults() {
			if rej := r.GetRejection(); rej.GetRetryable() && int(r.GetIndex()) < len(waits) {
				waits[r.GetIndex()] = rej.GetRetryAfter().AsDuration()
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.requests++
	switch {
	case err == nil:
		w.answered++
	case limited:
		w.limited++
		if w.minLimitedWait == 0 || waits[0] < w.minLimitedWait {
			w.minLimitedWait = waits[0]
		}
	}
	for i, ev := range pr.GetEvents() {
		w.sends[ev.GetId()] = append(w.sends[ev.GetId()], wireSend{start: start, end: end, wait: waits[i]})
	}
	return err
}

// early counts attempts that began before the wait the answer to the
// attempt before asked for was over, and returns the first few.
func (w *wireLog) early() (n int, first []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, sends := range w.sends {
		sort.Slice(sends, func(i, j int) bool { return sends[i].start.Before(sends[j].start) })
		for i := 1; i < len(sends); i++ {
			prev := sends[i-1]
			if due := prev.end.Add(prev.wait); sends[i].start.Before(due) {
				n++
				if len(first) < 5 {
					first = append(first, fmt.Sprintf("%s: attempt %d began %v after the answer that asked for %v", id, i+1, sends[i].start.Sub(prev.end), prev.wait))
				}
			}
		}
	}
	return n, first
}

// recordClient records r, the final result of an event a caller handed
// over (bad: one that breaks the contract), or an event the client did
// not take.
func (l *ledger) recordClient(source string, bad bool, r client.Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.client
	if r.ID == "" || errors.Is(r.Err, client.ErrClosed) {
		// Publish after Close began: not handed over.
		c.notTaken++
		return
	}
	c.final[r.ID]++
	if c.final[r.ID] > 1 {
		c.misjudge("%s: a result again (%v, err %v)", r.ID, r.Outcome, r.Err)
		return
	}
	l.ids[r.ID] = true
	l.sent++
	c.handed++
	if r.Attempts > 1 {
		c.multi++
	}
	key := identity(source, r.ID)
	var rej *client.RejectionError
	var und *client.UndeliveredError
	switch {
	case r.Err == nil && (r.Outcome == ingestv1.Outcome_ACCEPTED || r.Outcome == ingestv1.Outcome_DUPLICATE):
		l.acked[key] = true
		at, placed := kafkaPositionOf(r.Kafka)
		l.writes.acknowledged(key, "", at, placed) // the client's events' keys are not in its results
		if r.Outcome == ingestv1.Outcome_ACCEPTED {
			c.accepted++
		} else {
			c.duplicate++
		}
		if r.Durability == ingestv1.Durability_LOCAL_DISK {
			c.localDisk++
		}
		switch {
		case r.Outcome == ingestv1.Outcome_DUPLICATE && (r.Kafka != nil) == (r.Spool != nil),
			r.Outcome == ingestv1.Outcome_ACCEPTED && r.Durability == ingestv1.Durability_KAFKA && (r.Kafka.GetTopic() == "" || r.Spool != nil),
			r.Outcome == ingestv1.Outcome_ACCEPTED && r.Durability == ingestv1.Durability_LOCAL_DISK && (r.Spool == nil || r.Kafka != nil):
			l.unplaced++
		}
		if bad {
			c.misjudge("%s: breaks the contract, answered %v", r.ID, r.Outcome)
		}
	case errors.As(r.Err, &rej):
		l.rejected[key] = rej.Reason.String()
		c.rejected++
		switch {
		case r.Outcome != ingestv1.Outcome_REJECTED || rej.ID != r.ID:
			c.misjudge("%s: a RejectionError for %q with outcome %v", r.ID, rej.ID, r.Outcome)
		case !bad:
			c.misjudge("%s: a good event refused %v: %s", r.ID, rej.Reason, rej.Message)
		case rej.Reason != ingestv1.Reason_SCHEMA_VIOLATION || len(rej.Violations) == 0:
			c.misjudge("%s: refused %v with %d violations, want SCHEMA_VIOLATION with its violations", r.ID, rej.Reason, len(rej.Violations))
		}
		if r.Attempts != 1 {
			c.badRetried++
		}
	case errors.As(r.Err, &und):
		c.undelivered[r.ID] = true
		l.unanswered++
		if !slices.Contains(und.IDs, r.ID) {
			c.misjudge("%s: an UndeliveredError that does not name it (%d ids)", r.ID, len(und.IDs))
		}
	default:
		c.misjudge("%s: outcome %v, err %v: neither a success, a rejection nor undelivered", r.ID, r.Outcome, r.Err)
	}
}

// clientEvent is a LogLine without an id, a broken one (severity
// UNSPECIFIED: SCHEMA_VIOLATION) when bad.
func clientEvent(n int, bad bool) *ingestv1.Event {
	if bad {
		return invalidEvent("", n, false)
	}
	return logEvent("", n, false, false)
}

// clientWork runs a client scenario's load until end, or until the fault
// calls closeClients, and returns once every client is closed.
func (s *system) clientWork(cl clientLoad, end time.Time, l *ledger) {
	if cl.instances == 0 {
		cl.instances = 2
	}
	if cl.callers == 0 {
		cl.callers = 2
	}
	if cl.batch == 0 {
		cl.batch = 20
	}
	if cl.pace == 0 && !cl.noPace {
		cl.pace = 80 * time.Millisecond
	}
	if cl.badEvery == 0 {
		cl.badEvery = invalidEvery
	}
	var wg sync.WaitGroup
	for i := range cl.instances {
		wg.Go(func() { s.clientInstance(cl, i, end, l) })
	}
	wg.Wait()
	close(l.client.closed)
}

// closeClients, from a fault, stops the callers and closes every client
// with the scenario's closeWithin, and returns once all are closed.
func (s *system) closeClients(l *ledger) {
	close(l.client.closeNow)
	<-l.client.closed
}

func (s *system) newClient(cl clientLoad, c *clientTally) *client.Client {
	s.t.Helper()
	key := clientKey
	if cl.limited {
		key = limitedKey
	}
	opts := append([]client.Opt{
		client.WithAPIKey(key), client.WithInsecure(), client.MaxBatchEvents(clientBatch),
		client.WithMetrics(c.metrics), client.WithDialOptions(grpc.WithChainUnaryInterceptor(c.wire.intercept)),
	}, cl.opts...)
	addrs := []string{s.grpcAddr}
	if cl.addrs != nil {
		addrs = cl.addrs(s)
	}
	cli, err := client.New(addrs, opts...)
	if err != nil {
		s.t.Fatal(err)
	}
	return cli
}

// clientInstance is one client and its callers. It closes the client once
// the callers are done, within two minutes, or as soon as the fault asks,
// within closeWithin; an *UndeliveredError's ids go to the tally.
func (s *system) clientInstance(cl clientLoad, i int, end time.Time, l *ledger) {
	c := s.newClient(cl, l.client)
	var callers sync.WaitGroup
	for g := range cl.callers {
		publish := cl.publishOnly || g%2 == 1
		callers.Go(func() { s.clientCaller(c, cl, i*cl.callers+g, publish, end, l) })
	}
	done := make(chan struct{})
	go func() {
		callers.Wait()
		close(done)
	}()
	within := 2 * time.Minute
	select {
	case <-done:
	case <-l.client.closeNow:
		within = cl.closeWithin
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	err := c.Close(ctx)
	cancel()
	<-done
	l.mu.Lock()
	defer l.mu.Unlock()
	var und *client.UndeliveredError
	switch {
	case errors.As(err, &und):
		for _, id := range und.IDs {
			l.client.closeIDs[id] = true
		}
	case err != nil:
		l.client.closeErrs = append(l.client.closeErrs, err.Error())
	}
}

// clientCaller hands events over until end or closeNow.
func (s *system) clientCaller(c *client.Client, cl clientLoad, w int, publish bool, end time.Time, l *ledger) {
	source := clientSource
	if cl.limited {
		source = limitedSource
	}
	for n := w * 1_000_000; time.Now().Before(end); {
		select {
		case <-l.client.closeNow:
			return
		default:
		}
		events := make([]*ingestv1.Event, cl.batch)
		bad := make([]bool, cl.batch)
		for i := range events {
			bad[i] = n%cl.badEvery == cl.badEvery-1
			events[i] = clientEvent(n, bad[i])
			n++
		}
		if publish {
			// Without a deadline: every result Publish returns is final.
			results, err := c.Publish(context.Background(), events...)
			if len(results) != len(events) {
				l.mu.Lock()
				l.client.misjudge("Publish of %d events returned %d results (err %v)", len(events), len(results), err)
				l.mu.Unlock()
			}
			for i, r := range results {
				l.recordClient(source, bad[i], r)
			}
		} else {
			for i, ev := range events {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				err := c.Send(ctx, ev, func(r client.Result) { l.recordClient(source, bad[i], r) })
				cancel()
				if err != nil {
					l.mu.Lock()
					l.client.notTaken++
					if !errors.Is(err, client.ErrClosed) {
						l.client.misjudge("Send: %v", err)
					}
					l.mu.Unlock()
				}
			}
		}
		time.Sleep(cl.pace)
	}
}

// checkClient holds a client scenario to the client's contract and
// returns its ledger line:
//
//   - every event handed over has exactly one final result: a success
//     (ACCEPTED or DUPLICATE), a *RejectionError, or an *UndeliveredError;
//   - every success is in the sink exactly once; no rejected event is in
//     the sink, the DLQ or the parked topic (the reconcile checks);
//   - each contract-breaking event is refused SCHEMA_VIOLATION with its
//     violations, and no good event is refused;
//   - the undelivered are what was handed over less the successes and
//     the rejections; with closeWithin they are exactly what Close named,
//     without it there are none; one may be in the sink, once (its
//     request reached the gateway, the answer did not reach the client
//     before Close's deadline), never twice;
//   - no attempt began before the retry_after of the answer to the one
//     before it (the wire log's, not the client's own account).
func (s *system) checkClient(t *testing.T, name string, cl clientLoad, l *ledger, r result) string {
	c := l.client
	if c.misjudged > 0 {
		t.Errorf("%s: %d results break the client's contract; the first:\n\t%s", name, c.misjudged, strings.Join(c.firstMisjudged, "\n\t"))
	}
	if len(c.closeErrs) > 0 {
		t.Errorf("%s: Close returned %v", name, c.closeErrs)
	}
	if got := c.accepted + c.duplicate + c.rejected + len(c.undelivered); got != c.handed {
		t.Errorf("%s: handed over %d, final results %d", name, c.handed, got)
	}
	expected := map[string]bool{}
	for id := range l.ids {
		if !l.acked[identity(sourceOf(cl), id)] && l.rejected[identity(sourceOf(cl), id)] == "" {
			expected[id] = true
		}
	}
	named := 0
	for id := range c.closeIDs {
		if c.undelivered[id] {
			named++
		}
	}
	if !maps.Equal(c.undelivered, expected) || named != len(c.closeIDs) {
		t.Errorf("%s: undelivered results %d, handed over less successes and rejections %d: must be one set; ids Close named %d, of them undelivered %d",
			name, len(c.undelivered), len(expected), len(c.closeIDs), named)
	}
	// Close names the events still without a result at its deadline; one
	// whose retries ran out before is undelivered without being named. In
	// these scenarios no retries run out: with a deadline for Close, every
	// undelivered event is one it named; without, there is none.
	if cl.closeWithin == 0 && len(c.undelivered) > 0 || cl.closeWithin > 0 && len(c.closeIDs) != len(c.undelivered) {
		t.Errorf("%s: %d events undelivered, %d of them named by Close", name, len(c.undelivered), len(c.closeIDs))
	}
	inSink, lost, successNotOnce, undeliveredInSink := 0, 0, 0, 0
	for id := range l.ids {
		n := r.sinkRows[identity(sourceOf(cl), id)]
		if n > 0 {
			inSink++
		}
		if l.acked[identity(sourceOf(cl), id)] && n != 1 {
			successNotOnce++
			if n == 0 {
				lost++
			}
		}
		if c.undelivered[id] && n > 0 {
			undeliveredInSink++
		}
	}
	if successNotOnce > 0 {
		t.Errorf("%s: %d successes not in the sink exactly once", name, successNotOnce)
	}
	if n, first := c.wire.early(); n > 0 {
		t.Errorf("%s: %d attempts before their retry_after; the first:\n\t%s", name, n, strings.Join(first, "\n\t"))
	}
	c.metrics.mu.Lock()
	requests, retries := c.metrics.requests, maps.Clone(c.metrics.retries)
	c.metrics.mu.Unlock()
	if requests != c.wire.requests {
		t.Errorf("%s: Metrics.Request counted %d requests, the interceptor %d", name, requests, c.wire.requests)
	}
	var byReason []string
	for reason, n := range retries {
		byReason = append(byReason, fmt.Sprintf("%s:%d", reason, n))
	}
	sort.Strings(byReason)
	return fmt.Sprintf("%-27s handed %d  succeeded %d (%d/%d)  rejected %d  undelivered %d (%d in sink)  in-sink %d  lost %d  dup-in-sink %d  attempts>1 %d  retries {%s}  requests %d  local-disk %d  not-taken %d",
		name, c.handed, c.accepted+c.duplicate, c.accepted, c.duplicate, c.rejected, len(c.undelivered), undeliveredInSink, inSink,
		lost, r.dupInSink, c.multi, strings.Join(byReason, " "), requests, c.localDisk, c.notTaken)
}

func sourceOf(cl clientLoad) string {
	if cl.limited {
		return limitedSource
	}
	return clientSource
}

// clientScenarios are the scenarios whose load is package client; each
// leaves the gateway as it found it, serving a spool of normalSpool.
func clientScenarios(normalSpool int64) []scenario {
	const kafkaSpool = 1 << 20
	return []scenario{
		{
			// Kafka away: the gateway spools (LOCAL_DISK) until the small
			// spool is full, then answers BUFFER_FULL with a retry_after,
			// which the clients wait out; Kafka back, the spool drains and
			// everything lands.
			name:      "client-kafka-stopped",
			client:    &clientLoad{duration: 30 * time.Second},
			allInSink: true,
			before: func(s *system) {
				s.stop(s.gateway)
				s.startGateway(kafkaSpool, false)
			},
			fault: func(s *system) {
				s.waitAccepted(1000)
				s.script("kafka.sh", "stop")
				if !s.waitMetric(time.Minute, "sluice_admission_buffer_full_records_total", func(v float64) bool { return v > 0 }) {
					s.t.Error("client-kafka-stopped: the spool never refused BUFFER_FULL")
				}
				time.Sleep(5 * time.Second) // the clients meet the full spool
				s.script("kafka.sh", "start")
			},
			after: func(s *system, _ *ledger) {
				if !s.waitDrained(2 * time.Minute) {
					s.t.Error("client-kafka-stopped: the spool did not drain")
				}
				s.stop(s.gateway)
				s.startGateway(normalSpool, false)
			},
			check: func(t *testing.T, l *ledger, r result) {
				if l.client.localDisk == 0 || l.client.metrics.retried(ingestv1.Reason_BUFFER_FULL) == 0 {
					t.Errorf("LOCAL_DISK successes %d, events retried for BUFFER_FULL %d: the scenario needs both",
						l.client.localDisk, l.client.metrics.retried(ingestv1.Reason_BUFFER_FULL))
				}
			},
		},
		{
			// Four clients, one caller each publishing 50 events at a time
			// as fast as it is answered, against limitedSource's bucket.
			name: "client-rate-limited",
			// Four callers contend for one bucket: a batch may be refused
			// several times in a row while the others take the tokens
			// (about C-1 refusals an admission, below). Each refusal says
			// when to come back, so none uses up one of MaxAttempts.
			client: &clientLoad{duration: 20 * time.Second, instances: 4, callers: 1, batch: clientBatch, noPace: true, publishOnly: true, limited: true},
			check: func(t *testing.T, l *ledger, r result) {
				w := l.client.wire
				limited := l.client.metrics.retried(ingestv1.Reason_RATE_LIMITED)
				if w.limited == 0 || limited == 0 {
					t.Errorf("requests refused RATE_LIMITED %d, events retried for it %d: the bucket never refused", w.limited, limited)
				}
				// The bound. A client here has one batch at a time, sent
				// as one request (MaxBatchEvents is the batch), so C = 4
				// callers, A = requests admitted (one per batch). The
				// bucket refuses a request of n events at t with exactly
				// the wait w after which it holds n tokens if nobody else
				// takes any (a refusal takes none, and burst >= n); a
				// client that waits w is refused again only if another
				// caller was admitted within its wait. An admission falls
				// in at most one wait of each other caller, and each
				// batch's first request may be refused once without a
				// wait. So refusals <= A + (C-1)*A and
				//   requests <= (C+1) * A.
				// A client that ignored retry_after would be refused at
				// the round-trip rate instead, far over it.
				const callers = 4
				bound := (callers + 1) * w.answered
				if w.requests > bound || w.answered != l.client.handed/clientBatch {
					t.Errorf("%d requests (%d admitted, %d batches, %d refused RATE_LIMITED, shortest wait asked %v): over (C+1)*A = %d, or a batch not admitted once",
						w.requests, w.answered, l.client.handed/clientBatch, w.limited, w.minLimitedWait, bound)
				}
				t.Logf("client-rate-limited: %d requests, %d admitted, %d refused RATE_LIMITED (shortest wait asked %v), bound (C+1)*A = %d",
					w.requests, w.answered, w.limited, w.minLimitedWait, bound)
			},
		},
		{
			// The gateway SIGKILLed twice mid-stream: requests in flight
			// go unanswered, and the clients send their events again
			// under the same ids; each lands once.
			name:      "client-gateway-sigkill",
			client:    &clientLoad{duration: 25 * time.Second},
			allInSink: true,
			fault: func(s *system) {
				for range 2 {
					s.waitAccepted(2000)
					s.kill(s.gateway)
					s.startGateway(normalSpool, false)
				}
			},
			check: func(t *testing.T, l *ledger, r result) {
				if l.client.multi == 0 {
					t.Error("no event took more than one attempt: the kills met no request")
				}
			},
		},
		{
			// No fault: Publish batches with one event in seven broken.
			// Each broken one comes back refused with its violations on
			// its first attempt, the others land.
			name:      "client-mixed-batch",
			client:    &clientLoad{duration: 10 * time.Second, publishOnly: true, badEvery: 7},
			allInSink: true,
			check: func(t *testing.T, l *ledger, r result) {
				if l.client.rejected == 0 || l.client.badRetried != 0 || l.client.multi != 0 {
					t.Errorf("rejected %d, of them with Attempts != 1 %d; results with Attempts > 1 %d: every event needs one attempt",
						l.client.rejected, l.client.badRetried, l.client.multi)
				}
			},
		},
		{
			// The gateway stopped (SIGTERM), and while it is away every
			// client closed with a second's deadline: Close names the
			// events without a final result, which go undelivered; the
			// gateway then comes back.
			name:      "client-close-during-outage",
			client:    &clientLoad{duration: 30 * time.Second, closeWithin: time.Second},
			allInSink: true,
			fault: func(s *system) {
				l := s.ledger
				s.waitAccepted(1000)
				s.stop(s.gateway)
				deadline := time.Now().Add(30 * time.Second)
				for l.client.metrics.retried(ingestv1.Reason_UNAVAILABLE) == 0 && time.Now().Before(deadline) {
					time.Sleep(100 * time.Millisecond)
				}
				s.closeClients(l)
				s.startGateway(normalSpool, false)
			},
			check: func(t *testing.T, l *ledger, r result) {
				if len(l.client.undelivered) == 0 {
					t.Error("Close during the outage left nothing undelivered")
				}
			},
		},
	}
}
