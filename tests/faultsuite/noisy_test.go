package faultsuite

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/tools/loadgen"
)

// The noisy-neighbour scenarios: two sources of one gateway, A over its
// limits and B steady beside it. Each runs its own gateway config (only
// A and B, with their per-source limits and shares) and puts the
// suite's config back after.
const (
	noisyA    = "noisy-a"
	noisyB    = "noisy-b"
	noisyKeyA = "noisy-key-a"
	noisyKeyB = "noisy-key-b"

	// noisyQuotaA is A's events/s in the single-gateway scenario; A
	// offers ten times that: noisyCallersA callers, a third of them
	// streams (twice its max_streams) and the rest unary calls (twice its
	// max_requests, and more than the requests' half of the request
	// memory holds), each a batch of noisyBatchA every noisyPaceA.
	noisyQuotaA   = 200
	noisyCallersA = 24
	noisyStreamsA = noisyCallersA / 3
	noisyUnaryA   = noisyCallersA - noisyStreamsA
	noisyBatchA   = 100
	noisyPaceA    = noisyCallersA * noisyBatchA * time.Second / (10 * noisyQuotaA)
	// noisyMessageA pads A's events, so that its bytes/s limit
	// (noisyBytesRateA) is near its events/s limit.
	noisyMessageA   = 256
	noisyBytesRateA = 128 << 10

	// B sends noisyRateB events/s: noisyWorkersB callers, each a batch of
	// noisyBatchB every noisyPaceB.
	noisyRateB    = 200
	noisyWorkersB = 2
	noisyBatchB   = 2
	noisyPaceB    = noisyWorkersB * noisyBatchB * time.Second / noisyRateB

	// noisyPhase is one phase of a round of the single-gateway scenario:
	// after noisyWarmup of B alone and untimed (connections, the
	// producer's first batches), B alone, then B beside A, noisyPhases
	// times. Both p99s are measured in the same run, interleaved finely
	// so that the machine's other load falls on both alike, over
	// noisyRounds rounds whose samples are pooled: one verdict on all of
	// them, never a round measured again until it passes.
	noisyWarmup = time.Second
	noisyPhase  = 500 * time.Millisecond
	noisyPhases = 16
	noisyRounds = 2
	// noisyP99Ratio is how much slower B's p99 beside A may be than alone.
	noisyP99Ratio = 1.5
)

// The noisy gateway's request memory: a request is charged twice its
// size and 64 KiB, and one of noisyRequestBytes before a gRPC message's
// size is known; half of noisyRequestMemory is for requests, half for
// stream batches. B's guarantee in the requests' half (half of it, by
// limits.reserved_share, split between two sources), 1.5 MiB, holds both
// of B's callers' requests at once; A's 16 unary callers would want
// 9 MiB, more than the whole half.
const (
	noisyRequestBytes  = 256 << 10
	noisyRequestMemory = 12 << 20
)

// outageSpool is the outage scenario's spool.max_bytes.
const outageSpool = 12 << 20

// noisyGateway is what a noisy-neighbour scenario's gateway config varies.
type noisyGateway struct {
	spoolCap int64
	// aLimits is A's per-source settings (YAML lines under its entry).
	aLimits string
	// bShare is B's share weight (A's is 1); 0 means 1.
	bShare float64
}

// startNoisyGateway stops the running gateway and starts one serving
// only A and B, on a spool directory of its own.
func (s *system) startNoisyGateway(g noisyGateway) {
	s.t.Helper()
	s.stop(s.gateway)
	spoolDir := filepath.Join(s.dir, "noisy-spool")
	cfg := fmt.Sprintf(`topics:
  examples.logs.v1.LogLine: %[3]s
gateway:
  grpc_addr: %[1]s
  http_addr: %[2]s
  publish_timeout: 5s
  unavailable_retry_after: 1s
  limits:
    max_events_per_request: 100
    max_event_bytes: %[4]d
    max_request_bytes: %[16]d
    request_memory_bytes: %[17]d
    reserved_share: 0.5
sources:
  - name: %[5]s
    key_hashes: [%[6]q]
    event_types: ["*"]
    share: 1
%[7]s
  - name: %[8]s
    key_hashes: [%[9]q]
    event_types: ["*"]
    share: %[18]v
    rate: 1000
    burst: 1000
contracts:
  descriptor_set: %[10]s
  types: [examples.logs.v1.LogLine]
kafka:
  brokers: [%[11]s]
  delivery_timeout: 5s
spool:
  dir: %[12]s
  segment_bytes: %[13]d
  max_bytes: %[14]d
  min_free_bytes: 1
admission:
  latency_threshold: 1s
  drain_timeout: 5s
  drain_backoff_max: 1s
log:
  level: info
admin:
  addr: %[15]s
`, s.grpcAddr, s.httpAddr, s.topic, maxEventBytes,
		noisyA, hashKey(noisyKeyA), g.aLimits,
		noisyB, hashKey(noisyKeyB),
		filepath.Join(s.root, "examples", "contracts.binpb"), strings.Join(s.brokers, ", "),
		spoolDir, min(g.spoolCap/4, 16<<20), g.spoolCap, s.adminAddr, noisyRequestBytes, noisyRequestMemory, cmp.Or(g.bShare, 1))
	path := filepath.Join(s.dir, "noisy-gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		s.t.Fatal(err)
	}
	s.gateway.args = []string{"gateway", "--config", path}
	s.start(s.gateway)
	s.waitReady()
}

// restoreGateway waits for the noisy gateway's spool to drain, stops it
// and starts the suite's gateway again.
func (s *system) restoreGateway(name string, spoolCap int64) {
	s.t.Helper()
	if !s.waitDrained(time.Minute) {
		s.t.Errorf("%s: the gateway's spool did not drain within a minute", name)
	}
	s.stop(s.gateway)
	s.gateway.args = []string{"gateway", "--config", filepath.Join(s.dir, "gateway.yaml")}
	s.startGateway(spoolCap, false)
}

// noisyRound is one measurement of B: its request latencies while A is
// idle and while A floods.
type noisyRound struct {
	alone, beside []time.Duration
}

func (r *noisyRound) ratio() float64 {
	return float64(p99(r.beside)) / float64(max(p99(r.alone), 1))
}

func (r *noisyRound) String() string {
	return fmt.Sprintf("B p99 alone %v (p50 %v, p90 %v, %d requests), beside A %v (p50 %v, p90 %v, %d requests), ratio %.2f",
		p99(r.alone), quantile(r.alone, 0.5), quantile(r.alone, 0.9), len(r.alone),
		p99(r.beside), quantile(r.beside, 0.5), quantile(r.beside, 0.9), len(r.beside), r.ratio())
}

// noisyTally is what the noisy-neighbour callers saw, by source, beside
// the ledger (which holds every answer by identity, as for every
// scenario).
type noisyTally struct {
	mu sync.Mutex
	// refused counts retryable refusals, by source and reason, event by
	// event (a whole-request refusal counts each of its events).
	refused map[string]map[string]int
	// unnamed counts A's per-event refusals whose message does not name
	// the source.
	unnamed int
	// whole counts refusals of a whole request or stream, by source and
	// reason; messages keeps a few refusal messages by source, for the
	// log.
	whole map[string]map[string]int
	// streamsRefused counts A's streams refused as a whole: a stream's
	// batches over A's rate are refused event by event, so these are
	// streams over its max_streams.
	streamsRefused int
	messages       map[string][]string
	acked          map[string]int
	localDisk      map[string]int
	// dropped counts A's events refused and not sent again: A is a flood,
	// not a client that keeps to its quota.
	dropped int
	// rounds are the single-gateway scenario's measurements of B.
	rounds []*noisyRound
}

func newNoisyTally() *noisyTally {
	return &noisyTally{refused: map[string]map[string]int{noisyA: {}, noisyB: {}}, whole: map[string]map[string]int{noisyA: {}, noisyB: {}}, acked: map[string]int{}, localDisk: map[string]int{}, messages: map[string][]string{}}
}

// refuse records a refusal of a whole request or stream, f, as the
// refusal of each of its events; it returns the events to send again.
func (n *noisyTally) refuse(l *ledger, source string, events []*ingestv1.Event, f *loadgen.Failure) (again []*ingestv1.Event) {
	n.mu.Lock()
	n.whole[source][f.Reason]++
	n.mu.Unlock()
	for _, ev := range events {
		if n.record(l, source, ev, loadgen.EventResult{ID: ev.GetId(), Outcome: ingestv1.Outcome_REJECTED, Reason: f.Reason, Retryable: f.Retryable, RetryAfter: f.RetryAfter}) {
			again = append(again, ev)
		}
	}
	return again
}

// record puts r in the ledger and the tally; it reports whether the
// event is to be sent again.
func (n *noisyTally) record(l *ledger, source string, ev *ingestv1.Event, r loadgen.EventResult) (retry bool) {
	retry = l.record(source, ev, false, r)
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case r.Acknowledged():
		n.acked[source]++
		if r.Durability == ingestv1.Durability_LOCAL_DISK {
			n.localDisk[source]++
		}
	case retry:
		n.refused[source][r.Reason]++
		if r.Message != "" {
			if source == noisyA && !strings.Contains(r.Message, noisyA) {
				n.unnamed++
			}
			if len(n.messages[source]) < 4 && !slices.Contains(n.messages[source], r.Message) {
				n.messages[source] = append(n.messages[source], r.Message)
			}
		}
	}
	return retry
}

func (n *noisyTally) refusals(source string) (total int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.refused[source] {
		total += c
	}
	return total
}

func (n *noisyTally) count(m map[string]int, source string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return m[source]
}

// noisyEvent is event number k of a noisy-neighbour caller: valid, or
// breaking its contract one time in invalidEvery (so that every scenario
// has rejections); A's carry a message of noisyMessageA bytes.
func (s *system) noisyEvent(scenario, source, caller string, k int, asJSON bool) *ingestv1.Event {
	id := fmt.Sprintf("%s-%s-%s-%d", s.run, scenario, caller, k)
	if k%invalidEvery == invalidEvery-1 {
		return invalidEvent(id, k, asJSON)
	}
	ev := logEvent(id, k, false, asJSON)
	if source == noisyA {
		line := protoFromPayload(s.t, ev)
		line.Message += " " + strings.Repeat("a", noisyMessageA)
		setPayload(ev, line, asJSON)
	}
	return ev
}

// noisySender is a caller as source over gRPC: a PublishStream when
// stream is set, unary Publish calls otherwise.
func (s *system) noisySender(source string, stream bool) (loadgen.Target, loadgen.Sender) {
	cfg := loadgen.NewDefaultConfig()
	cfg.APIKey, cfg.Target, cfg.Addr = noisyKeyB, loadgen.TargetGRPC, s.grpcAddr
	if source == noisyA {
		cfg.APIKey = noisyKeyA
	}
	if stream {
		cfg.Target = loadgen.TargetStream
	}
	target, err := loadgen.NewTarget(cfg, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	sender, err := target.NewSender()
	if err != nil {
		target.Close()
		s.t.Fatal(err)
	}
	return target, sender
}

// batchA is count of A's caller w's batches of round, from batch number
// from on.
func (s *system) batchA(scenario string, round, w, from, count int) [][]*ingestv1.Event {
	out := make([][]*ingestv1.Event, count)
	for b := range out {
		out[b] = make([]*ingestv1.Event, noisyBatchA)
		for i := range out[b] {
			out[b][i] = s.noisyEvent(scenario, noisyA, fmt.Sprintf("r%d-a%d", round, w), (from+b)*noisyBatchA+i, false)
		}
	}
	return out
}

// floodA is one of A's callers, a stream for w a multiple of 3, unary
// calls otherwise: a batch of noisyBatchA every noisyPaceA (the
// noisyCallersA callers at even offsets) while flooding says so, until
// end or stop is closed, whatever the answers: batches first (built
// before, so that building them does not load the machine while B is
// timed), then new ones. What is refused is dropped (and a caller
// refused whole waits out the retry_after); what is acknowledged is in
// the ledger.
func (s *system) floodA(scenario string, round, w int, batches [][]*ingestv1.Event, flooding func() bool, end time.Time, l *ledger, n *noisyTally, stop <-chan struct{}) {
	stream := w%3 == 0
	target, sender := s.noisySender(noisyA, stream)
	defer target.Close()
	defer sender.Close()
	k := len(batches) * noisyBatchA
	// The callers' batches are spread evenly over the pace; a batch whose
	// time comes while flooding says no is not sent.
	next := time.Now().Add(time.Duration(w) * noisyPaceA / noisyCallersA)
	for {
		time.Sleep(time.Until(next))
		next = next.Add(noisyPaceA)
		select {
		case <-stop:
			return
		default:
		}
		if !time.Now().Before(end) {
			return
		}
		if !flooding() {
			continue
		}
		var events []*ingestv1.Event
		if len(batches) > 0 {
			events, batches = batches[0], batches[1:]
		} else {
			events = s.batchA(scenario, round, w, k/noisyBatchA, 1)[0]
			k += noisyBatchA
		}
		l.mu.Lock()
		l.sent += len(events)
		l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ans, err := sender.Send(ctx, events)
		cancel()
		dropped := 0
		switch {
		case err != nil:
			l.mu.Lock()
			l.unanswered += len(events)
			l.mu.Unlock()
		case ans.Failure != nil:
			dropped = len(n.refuse(l, noisyA, events, ans.Failure))
			if stream && ans.Failure.Reason == ingestv1.Reason_RATE_LIMITED.String() {
				n.mu.Lock()
				n.streamsRefused++
				n.mu.Unlock()
			}
			time.Sleep(min(ans.Failure.RetryAfter, 2*time.Second))
			for next.Before(time.Now()) {
				next = next.Add(noisyPaceA)
			}
		default:
			for i, r := range ans.Results {
				if n.record(l, noisyA, events[i], r) {
					dropped++
				}
			}
		}
		n.mu.Lock()
		n.dropped += dropped
		n.mu.Unlock()
	}
}

// noisyPhaseKind is what a request of B is timed as.
type noisyPhaseKind int

const (
	untimed noisyPhaseKind = iota
	alone
	beside
)

// steadyB is one of B's callers: a batch of noisyBatchB every noisyPaceB
// until end or stop is closed, each sent until it has an answer that is not "retry" (as
// the suite's callers do), timed; the first attempt's latency is kept in
// n's last round as alone or beside as phase says when it began.
func (s *system) steadyB(scenario string, round, w int, phase func() noisyPhaseKind, end time.Time, l *ledger, n *noisyTally, stop <-chan struct{}) {
	target, sender := s.noisySender(noisyB, false)
	defer target.Close()
	defer sender.Close()
	caller := fmt.Sprintf("r%d-b%d", round, w)
	k := 0
	tick := time.NewTicker(noisyPaceB)
	defer tick.Stop()
	for time.Now().Before(end) {
		select {
		case <-tick.C:
		case <-stop:
			return
		}
		pending := make([]*ingestv1.Event, noisyBatchB)
		for i := range pending {
			pending[i] = s.noisyEvent(scenario, noisyB, caller, k, false)
			k++
		}
		l.mu.Lock()
		l.sent += len(pending)
		l.mu.Unlock()
		giveUp := time.Now().Add(2 * time.Minute)
		for attempt := 0; len(pending) > 0 && time.Now().Before(giveUp); attempt++ {
			kind := phase()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			began := time.Now()
			ans, err := sender.Send(ctx, pending)
			took := time.Since(began)
			cancel()
			if attempt == 0 && err == nil && kind != untimed {
				n.mu.Lock()
				r := n.rounds[len(n.rounds)-1]
				if kind == beside {
					r.beside = append(r.beside, took)
				} else {
					r.alone = append(r.alone, took)
				}
				n.mu.Unlock()
			}
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			var again []*ingestv1.Event
			var wait time.Duration
			if f := ans.Failure; f != nil {
				again, wait = n.refuse(l, noisyB, pending, f), f.RetryAfter
			} else {
				for i, r := range ans.Results {
					if n.record(l, noisyB, pending[i], r) {
						again = append(again, pending[i])
						wait = max(wait, r.RetryAfter)
					}
				}
			}
			pending = again
			if len(pending) > 0 {
				time.Sleep(min(max(wait, 100*time.Millisecond), 5*time.Second))
			}
		}
		l.mu.Lock()
		l.unanswered += len(pending)
		l.mu.Unlock()
	}
}

// quantile is the q-quantile of ds (nearest rank); 0 for none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func p99(ds []time.Duration) time.Duration { return quantile(ds, 0.99) }

// measureRound is one round of the single-gateway scenario: after
// noisyWarmup, noisyPhases phases of B alone and as many of B beside A,
// alternating, into n's last round.
func (s *system) measureRound(round int, n *noisyTally) {
	const scenario = "noisy-neighbour"
	// A's batches are built before B is timed.
	batches := make([][][]*ingestv1.Event, noisyCallersA)
	for w := range batches {
		batches[w] = s.batchA(scenario, round, w, 0, int(noisyPhases*noisyPhase/noisyPaceA)+2)
	}
	start := time.Now()
	end := start.Add(noisyWarmup + 2*noisyPhases*noisyPhase)
	// After the warm-up, phase 2i is B alone, 2i+1 B beside A.
	phase := func() noisyPhaseKind {
		since := time.Since(start)
		switch {
		case since < noisyWarmup:
			return untimed
		case int((since-noisyWarmup)/noisyPhase)%2 == 1:
			return beside
		}
		return alone
	}
	flooding := func() bool { return phase() == beside }
	var wg sync.WaitGroup
	for w := range noisyCallersA {
		wg.Go(func() { s.floodA(scenario, round, w, batches[w], flooding, end, s.ledger, n, nil) })
	}
	for w := range noisyWorkersB {
		wg.Go(func() { s.steadyB(scenario, round, w, phase, end, s.ledger, n, nil) })
	}
	wg.Wait()
}

// noisyScenarios are the two noisy-neighbour scenarios. Their load runs
// in fault (the scenario's load is empty); their checks read the tally.
func noisyScenarios(normalSpool int64) []scenario {
	single := newNoisyTally()
	outage := newNoisyTally()
	var singleBeside time.Duration // how long A flooded, for its bound
	return []scenario{
		{
			// A at ten times its events/s in batches of 100 over 8
			// streams and 16 unary callers (twice its max_streams and
			// max_requests), B a steady 200 events/s, in alternating
			// phases of B alone and B beside A.
			name: "noisy-neighbour",
			before: func(s *system) {
				s.startNoisyGateway(noisyGateway{spoolCap: 64 << 20, aLimits: fmt.Sprintf(`    rate: %d
    burst: %d
    bytes_rate: %d
    bytes_burst: %d
    max_requests: %d
    max_streams: %d`, noisyQuotaA, noisyQuotaA, noisyBytesRateA, noisyRequestBytes, noisyUnaryA/2, noisyStreamsA/2)})
			},
			fault: func(s *system) {
				// The consumer tier is stopped while B is timed, alone and
				// beside A alike, and started again after: on this one
				// machine, its work for A's and B's acknowledged events
				// (reading Kafka, writing PostgreSQL) competes with the
				// gateway for the same two cores, which is not the
				// isolation measured here. It drains everything after;
				// the ledger checks that all of it landed.
				for _, c := range s.consumers {
					s.stop(c)
				}
				defer func() {
					for _, c := range s.consumers {
						s.start(c)
					}
				}()
				for round := range noisyRounds {
					single.mu.Lock()
					single.rounds = append(single.rounds, &noisyRound{})
					single.mu.Unlock()
					s.measureRound(round, single)
					r := single.rounds[round]
					singleBeside += noisyPhases * noisyPhase
					s.t.Logf("noisy-neighbour: round %d: %v", round, r)
				}
			},
			after: func(s *system, _ *ledger) { s.restoreGateway("noisy-neighbour", normalSpool) },
			check: func(t *testing.T, l *ledger, r result) {
				n := single
				t.Logf("noisy-neighbour: B refusals %v; A acknowledged %d, refusals %v (whole requests or streams %v, streams %d), dropped %d; A's messages %q",
					n.refused[noisyB], n.acked[noisyA], n.refused[noisyA], n.whole[noisyA], n.streamsRefused, n.dropped, n.messages[noisyA])
				if got := n.refusals(noisyB); got != 0 {
					t.Errorf("noisy-neighbour: B was refused %d times (%v, %q): another source's answers must not change", got, n.refused[noisyB], n.messages[noisyB])
				}
				pooled := &noisyRound{}
				for _, r := range n.rounds {
					pooled.alone = append(pooled.alone, r.alone...)
					pooled.beside = append(pooled.beside, r.beside...)
				}
				t.Logf("noisy-neighbour: %d rounds pooled: %v", len(n.rounds), pooled)
				if len(pooled.alone) < 100 || len(pooled.beside) < 100 || pooled.ratio() > noisyP99Ratio {
					t.Errorf("noisy-neighbour: B's p99 beside A is not within %.1f times its p99 alone (with 100 requests of each at least): %v",
						noisyP99Ratio, pooled)
				}
				if n.refused[noisyA][ingestv1.Reason_RATE_LIMITED.String()] == 0 {
					t.Errorf("noisy-neighbour: A at ten times its quota was never refused RATE_LIMITED (refusals %v)", n.refused[noisyA])
				}
				// A opens twice its max_streams: some are refused whole.
				if n.streamsRefused == 0 {
					t.Errorf("noisy-neighbour: A's %d streams, twice its max_streams, were never refused RATE_LIMITED as a whole (whole refusals %v)",
						noisyStreamsA, n.whole[noisyA])
				}
				if n.unnamed != 0 {
					t.Errorf("noisy-neighbour: %d of A's refusals do not name the source", n.unnamed)
				}
				// A count, not a duration: A's acknowledged events are at
				// most its quota over the time it flooded, what its bucket
				// refilled while it was idle (a phase's worth, up to its
				// burst, before each of its phases in every round) and its
				// first full bucket, and a tenth for the phases' edges.
				refill := min(noisyQuotaA, noisyQuotaA*noisyPhase.Seconds())
				idle := refill * noisyPhases * float64(len(n.rounds))
				if most := int(1.1*(noisyQuotaA*singleBeside.Seconds()+idle)) + noisyQuotaA; n.acked[noisyA] > most || n.acked[noisyA] == 0 {
					t.Errorf("noisy-neighbour: A had %d events acknowledged; want some, at most %d", n.acked[noisyA], most)
				}
			},
		},
		{
			// Kafka stopped while A, without a rate, floods: A's backlog
			// fills its share of the spool (its guarantee and the shared
			// remainder) and A is refused BUFFER_FULL; B's appends go on in
			// its guarantee, LOCAL_DISK. Everything acknowledged is in the
			// sink once Kafka is back.
			name:      "noisy-neighbour-kafka-outage",
			allInSink: true,
			before: func(s *system) {
				// The spool's shares: its capacity less a segment, 9 MiB;
				// half of it guaranteed, 1.125 MiB to A and 3.375 MiB to B
				// (share 3), which holds B's records for over 30s of
				// outage; A may borrow the other 4.5 MiB.
				s.startNoisyGateway(noisyGateway{spoolCap: outageSpool, bShare: 3})
			},
			fault: func(s *system) {
				// A floods until Kafka is back; B sends until the spool has
				// drained after it.
				var wg sync.WaitGroup
				var flooding atomic.Bool
				flooding.Store(true)
				stop := make(chan struct{})
				ends := time.Now().Add(2 * time.Minute) // the outage below ends both sooner
				for w := range noisyCallersA {
					wg.Go(func() {
						s.floodA("noisy-neighbour-kafka-outage", 0, w, nil, flooding.Load, ends, s.ledger, outage, stop)
					})
				}
				for w := range noisyWorkersB {
					wg.Go(func() {
						s.steadyB("noisy-neighbour-kafka-outage", 0, w, func() noisyPhaseKind { return untimed }, ends, s.ledger, outage, stop)
					})
				}
				defer func() {
					flooding.Store(false)
					close(stop)
					wg.Wait()
				}()
				s.waitAccepted(500)
				s.script("kafka.sh", "stop")
				fullA := func() int { return outage.count(outage.refused[noisyA], ingestv1.Reason_BUFFER_FULL.String()) }
				if !waitFor(30*time.Second, func() bool { return fullA() > 0 && outage.count(outage.localDisk, noisyB) > 0 }) {
					s.t.Errorf("noisy-neighbour-kafka-outage: within 30s of the outage, A refused BUFFER_FULL %d times, B acknowledged LOCAL_DISK %d",
						fullA(), outage.count(outage.localDisk, noisyB))
				}
				// B goes on spooling beside A's full share for a while.
				diskB := outage.count(outage.localDisk, noisyB)
				time.Sleep(3 * time.Second)
				if got := outage.count(outage.localDisk, noisyB); got <= diskB {
					s.t.Errorf("noisy-neighbour-kafka-outage: B's LOCAL_DISK acknowledgements stayed at %d while A's share was full", got)
				}
				heldA, _ := s.gatewayMetric("sluice_source_spool_bytes", `source="`+noisyA+`"`)
				heldB, _ := s.gatewayMetric("sluice_source_spool_bytes", `source="`+noisyB+`"`)
				s.t.Logf("noisy-neighbour-kafka-outage: spool bytes held with A's share full: A %v, B %v", heldA, heldB)
				// A's guarantee is at most a quarter of half the cap (its
				// weight 1 of 4): holding more, A borrowed the remainder
				// nobody else needed.
				if guaranteeA := float64(outageSpool) / 2 / 4; heldA <= guaranteeA || heldB <= 0 {
					s.t.Errorf("noisy-neighbour-kafka-outage: sluice_source_spool_bytes A %v, B %v: A must hold more than its guarantee (under %v), borrowed, and B spooled bytes",
						heldA, heldB, guaranteeA)
				}
				flooding.Store(false)
				s.script("kafka.sh", "start")
				if !s.waitDrained(time.Minute) {
					s.t.Error("noisy-neighbour-kafka-outage: the spool did not drain within a minute of Kafka's start")
				}
			},
			after: func(s *system, _ *ledger) { s.restoreGateway("noisy-neighbour-kafka-outage", normalSpool) },
			check: func(t *testing.T, l *ledger, r result) {
				n := outage
				t.Logf("noisy-neighbour-kafka-outage: A acknowledged %d (LOCAL_DISK %d), refusals %v, dropped %d; B acknowledged %d (LOCAL_DISK %d), refusals %v; messages %q",
					n.acked[noisyA], n.localDisk[noisyA], n.refused[noisyA], n.dropped, n.acked[noisyB], n.localDisk[noisyB], n.refused[noisyB], n.messages)
				if n.unnamed != 0 {
					t.Errorf("noisy-neighbour-kafka-outage: %d of A's refusals do not name the source", n.unnamed)
				}
				if n.refused[noisyA][ingestv1.Reason_BUFFER_FULL.String()] == 0 || n.localDisk[noisyA] == 0 {
					t.Errorf("noisy-neighbour-kafka-outage: A spooled %d and was refused BUFFER_FULL %d times: its backlog must fill its share",
						n.localDisk[noisyA], n.refused[noisyA][ingestv1.Reason_BUFFER_FULL.String()])
				}
				if got := n.refused[noisyB][ingestv1.Reason_BUFFER_FULL.String()]; got != 0 || n.localDisk[noisyB] == 0 {
					t.Errorf("noisy-neighbour-kafka-outage: B refused BUFFER_FULL %d times, acknowledged LOCAL_DISK %d: B must still be spooled", got, n.localDisk[noisyB])
				}
			},
		},
	}
}

// waitFor polls cond every 100 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return cond()
}
