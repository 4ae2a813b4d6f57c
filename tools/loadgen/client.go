package loadgen

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/client"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// undeliveredCode is the failure code of an event the client gave up on.
const undeliveredCode = "client:UNDELIVERED"

// clientTarget publishes through one official client shared by every
// worker: a worker's request is one client.Publish of its events. The
// client batches at most EventsPerRequest events per gateway request, with
// Concurrency requests in flight, and retries what the gateway says may be
// retried, each event until Timeout.
//
// The client is configured to match the other gRPC targets:
// MaxBatchEvents = EventsPerRequest, MaxInFlight = Concurrency, room for
// Concurrency requests' events, one connection per Connections (Addr
// given that many times), EventTimeout = Timeout, the API key, TLS as the
// TLS flags say (plaintext only to a loopback address), PublishStream with
// ClientStream; its default Linger (5 ms), Backoff and MaxAttempts.
type clientTarget struct {
	c      *client.Client
	counts *clientCounts
	stream bool
	// closeWait bounds Close: events of a Publish cut off by its deadline
	// may still be in the client, retried until their EventTimeout.
	closeWait time.Duration
}

func newClientTarget(cfg Config) (*clientTarget, error) {
	tc, err := cfg.clientTLS()
	if err != nil {
		return nil, err
	}
	counts := newClientCounts()
	opts := []client.Opt{
		client.WithAPIKey(cfg.APIKey),
		client.MaxBatchEvents(cfg.EventsPerRequest),
		client.MaxInFlight(cfg.Concurrency),
		// Room for every worker's request at once, so a Publish never
		// waits for the buffer: the workers bound the load, as with grpc.
		client.MaxBufferedEvents(cfg.Concurrency * cfg.EventsPerRequest),
		client.EventTimeout(cfg.Timeout),
		client.WithMetrics(counts),
		// The gateway's answers to large batches, as the grpc target allows.
		client.WithDialOptions(grpcRecvLimit()),
	}
	if tc != nil {
		opts = append(opts, client.WithTLS(tc))
	} else {
		opts = append(opts, client.WithInsecure())
	}
	if cfg.ClientStream {
		opts = append(opts, client.UseStream())
	}
	addrs := make([]string, cfg.Connections)
	for i := range addrs {
		addrs[i] = cfg.Addr
	}
	c, err := client.New(addrs, opts...)
	if err != nil {
		return nil, fmt.Errorf("loadgen: client target: %w", err)
	}
	return &clientTarget{c: c, counts: counts, stream: cfg.ClientStream, closeWait: cfg.Timeout}, nil
}

func (t *clientTarget) NewSender() (Sender, error) { return sharedSender{t.send}, nil }

// send is one Publish. Its answer has a result for every event when each
// got a final result; when ctx ended first (or the client refused the
// events) it is no answer, even for events already acknowledged.
func (t *clientTarget) send(ctx context.Context, events []*ingestv1.Event) (Answer, error) {
	results, err := t.c.Publish(ctx, events...)
	if err != nil {
		return Answer{}, err
	}
	out := make([]EventResult, len(results))
	for i, r := range results {
		out[i] = EventResult{ID: r.ID, Outcome: r.Outcome, Durability: r.Durability, Kafka: r.Kafka, Spool: r.Spool}
		var rej *client.RejectionError
		var und *client.UndeliveredError
		switch {
		case r.Err == nil:
		case errors.As(r.Err, &rej):
			out[i].Reason, out[i].Message, out[i].Conflict = rej.Reason.String(), rej.Message, rej.Conflict
		case errors.As(r.Err, &und):
			out[i].Outcome = ingestv1.Outcome_OUTCOME_UNSPECIFIED
			out[i].Failure = &Failure{Code: undeliveredCode}
			out[i].Message = und.Error()
		default:
			return Answer{}, &AnswerError{Msg: fmt.Sprintf("event %d: a result that is neither success, rejection nor undelivered", i), Err: r.Err}
		}
	}
	return Answer{Results: out}, nil
}

// Close closes the client, waiting at most Timeout for events still in it.
func (t *clientTarget) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), t.closeWait)
	defer cancel()
	return t.c.Close(ctx)
}

// clientStats is what the client has done so far; Run reports the
// difference over the run.
func (t *clientTarget) clientStats() ClientStats { return t.counts.snapshot(t.stream) }

// clientCounts implements client.Metrics: the gateway requests the client
// made, and the events it retried and gave up on, by reason.
type clientCounts struct {
	requests atomic.Int64
	mu       sync.Mutex
	retried  map[string]int64
	given    map[string]int64
}

var _ client.Metrics = (*clientCounts)(nil)

func newClientCounts() *clientCounts {
	return &clientCounts{retried: map[string]int64{}, given: map[string]int64{}}
}

func (m *clientCounts) Request(int, time.Duration, error) { m.requests.Add(1) }

func (m *clientCounts) Final(outcome ingestv1.Outcome, reason ingestv1.Reason, _ int, _ time.Duration) {
	if outcome != ingestv1.Outcome_OUTCOME_UNSPECIFIED {
		return
	}
	// An event undelivered: reason is its last retryable answer's.
	m.mu.Lock()
	m.given[reason.String()]++
	m.mu.Unlock()
}

func (m *clientCounts) Retry(reason ingestv1.Reason, n int) {
	m.mu.Lock()
	m.retried[reason.String()] += int64(n)
	m.mu.Unlock()
}

func (m *clientCounts) Buffered(int, int) {}

func (m *clientCounts) snapshot(stream bool) ClientStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return ClientStats{Stream: stream, Requests: m.requests.Load(), Retried: maps.Clone(m.retried), Undelivered: maps.Clone(m.given)}
}

// clientStatser is a target that reports what a client did under it.
type clientStatser interface{ clientStats() ClientStats }

// ClientStats is what the official client did in a client target's run.
type ClientStats struct {
	// Stream: the client used PublishStream (--client-stream).
	Stream bool `json:"stream"`
	// Requests are the gateway requests (attempts, retries included) the
	// client made; it batches the workers' events into them.
	Requests int64 `json:"requests"`
	// Retried counts events the client sent again, by the reason of the
	// answer (UNAVAILABLE for a connection error or deadline); an event
	// sent again twice counts twice.
	Retried map[string]int64 `json:"retried"`
	// Undelivered counts events the client gave up on, by the reason of
	// their last retryable answer (REASON_UNSPECIFIED when they met none,
	// e.g. their Timeout passed while they waited).
	Undelivered map[string]int64 `json:"undelivered"`
}

// since is s less what before had counted.
func (s ClientStats) since(before ClientStats) ClientStats {
	s.Requests -= before.Requests
	s.Retried, s.Undelivered = diff(s.Retried, before.Retried), diff(s.Undelivered, before.Undelivered)
	return s
}

func diff(now, before map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range now {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// RetriedEvents is the number of events the client sent again, each
// retry counted.
func (s ClientStats) RetriedEvents() int64 {
	var n int64
	for _, v := range s.Retried {
		n += v
	}
	return n
}
