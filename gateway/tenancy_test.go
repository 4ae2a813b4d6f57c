package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/record"
)

// Keys of the two sources of the per-source tests: noisy takes all it
// can of a budget, quiet sends as it would alone.
const (
	keyNoisy = "key-noisy"
	keyQuiet = "key-quiet"
)

// twoSources gives the gateway the sources noisy and quiet, of equal
// share, and nothing else.
func twoSources(c *gateway.Config) {
	c.Sources = []gateway.SourceConfig{
		{Name: "noisy", KeyHashes: []string{gateway.HashKey(keyNoisy)}, EventTypes: []string{"*"}},
		{Name: "quiet", KeyHashes: []string{gateway.HashKey(keyQuiet)}, EventTypes: []string{"*"}},
	}
}

// logEvents are n log lines with ids prefix-0..., each payload padded to
// about pad bytes.
func logEvents(h *harness, prefix string, n, pad int) []ev {
	payload := examples.LogLineJSON
	if pad > 0 {
		var m map[string]any
		if err := json.Unmarshal(examples.LogLineJSON, &m); err != nil {
			h.t.Fatal(err)
		}
		m["message"] = strings.Repeat("x", pad)
		var err error
		if payload, err = json.Marshal(m); err != nil {
			h.t.Fatal(err)
		}
	}
	out := make([]ev, n)
	for i := range out {
		out[i] = ev{ID: fmt.Sprintf("%s-%d", prefix, i), Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: payload}
	}
	return out
}

// wantRESTAccepted posts events as key and wants every one ACCEPTED.
func wantRESTAccepted(t *testing.T, h *harness, key string, events []ev) {
	t.Helper()
	resp, body := h.postREST(key, restBody(events...))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s, want 200", key, resp.StatusCode, body)
	}
	for _, r := range mustResults(t, body) {
		if r.GetOutcome() != ingestv1.Outcome_ACCEPTED || r.GetDurability() != ingestv1.Durability_KAFKA {
			t.Fatalf("%s: %v, want ACCEPTED in Kafka", key, r)
		}
	}
}

// wantRESTLimited posts events as key and wants the whole request refused
// 429 RATE_LIMITED with Retry-After, its message naming the source and
// limit.
func wantRESTLimited(t *testing.T, h *harness, key string, events []ev, source, limit string) {
	t.Helper()
	resp, body := h.postREST(key, restBody(events...))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(body), "RATE_LIMITED") || !strings.Contains(string(body), source) || !strings.Contains(string(body), limit) {
		t.Fatalf("%s: %d (Retry-After %q) %s, want 429 RATE_LIMITED naming %s and %s", key, resp.StatusCode, resp.Header.Get("Retry-After"), body, source, limit)
	}
}

// wantGRPCAccepted publishes events as key over gRPC and wants every one
// ACCEPTED.
func wantGRPCAccepted(t *testing.T, h *harness, key string, events []ev) {
	t.Helper()
	out, err := h.publishGRPC(key, events...)
	if err != nil {
		t.Fatalf("%s over gRPC: %v", key, err)
	}
	for _, r := range out.GetResults() {
		if r.GetOutcome() != ingestv1.Outcome_ACCEPTED {
			t.Fatalf("%s over gRPC: %v, want ACCEPTED", key, r)
		}
	}
}

// wantLimited wants err to be RESOURCE_EXHAUSTED with ErrorInfo
// RATE_LIMITED, a RetryInfo and a message naming the source and limit.
func wantLimited(t *testing.T, err error, source, limit string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted || errorInfo(err).GetReason() != ingestv1.Reason_RATE_LIMITED.String() ||
		!strings.Contains(st.Message(), source) || !strings.Contains(st.Message(), limit) {
		t.Fatalf("%v, want RESOURCE_EXHAUSTED RATE_LIMITED naming %s and %s", err, source, limit)
	}
	if retryDelay(err) <= 0 {
		t.Fatalf("%v: no RetryInfo", err)
	}
}

// sourceValue reads metric name's series of source from the registry.
func sourceValue(t *testing.T, h *harness, name, source string) float64 {
	t.Helper()
	families, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() == source {
					return m.GetGauge().GetValue() + m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no series of %s for source %s", name, source)
	return 0
}

// TestSourceBytesRate: a source over its bytes/s is refused RATE_LIMITED
// with Retry-After: over REST from its Content-Length, before the body is
// read, over gRPC from its message's size, before it is decoded (neither
// is counted as received). The other source's same requests are accepted, and the
// refused source is accepted again once its bucket refills.
func TestSourceBytesRate(t *testing.T) {
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) {
		twoSources(c)
		c.Sources[0].BytesRate = 1000
		c.Sources[0].BytesBurst = int64(c.Limits.MaxRequestBytes)
	}})
	// About 35 KB a request: the burst of 64 KiB holds one.
	first := logEvents(h, "bytes-a", 10, 3000)
	wantRESTAccepted(t, h, keyNoisy, first)
	received := sourceValue(t, h, "sluice_source_received_bytes_total", "noisy")
	if want := float64(len(restBody(first...))); received != want {
		t.Fatalf("noisy received %v bytes, want its body's %v", received, want)
	}
	wantRESTLimited(t, h, keyNoisy, logEvents(h, "bytes-b", 10, 3000), "noisy", "bytes_rate")
	if got := sourceValue(t, h, "sluice_source_received_bytes_total", "noisy"); got != received {
		t.Fatalf("the refused body was read: received %v, want %v", got, received)
	}
	_, err := h.publishGRPC(keyNoisy, logEvents(h, "bytes-c", 10, 3000)...)
	wantLimited(t, err, "noisy", "bytes_rate")
	if got := sourceValue(t, h, "sluice_source_received_bytes_total", "noisy"); got != received {
		t.Fatalf("the refused message was decoded: received %v, want %v", got, received)
	}

	// The other source, unlimited, is answered as it would be alone.
	wantRESTAccepted(t, h, keyQuiet, logEvents(h, "bytes-q1", 10, 3000))
	wantGRPCAccepted(t, h, keyQuiet, logEvents(h, "bytes-q2", 10, 3000))

	h.clock.Advance(time.Minute + 6*time.Second) // 66 KB at 1000 bytes/s
	wantRESTAccepted(t, h, keyNoisy, logEvents(h, "bytes-d", 10, 3000))
}

// TestSetReplicas: with three replicas a source's events/s and burst are a
// third of its config, and its bytes burst never below one full request;
// back at one replica they are whole again.
func TestSetReplicas(t *testing.T) {
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) {
		twoSources(c)
		c.Sources[0].Rate, c.Sources[0].Burst = 30, 30
		c.Sources[1].BytesRate, c.Sources[1].BytesBurst = 100, int64(c.Limits.MaxRequestBytes)
	}})
	h.svc.SetReplicas(3) // 10 events/s, burst 10 (a full batch)
	batch := func(round int) []ev { return logEvents(h, fmt.Sprintf("rep-%d", round), 10, 0) }
	wantRESTAccepted(t, h, keyNoisy, batch(0))
	wantRESTLimited(t, h, keyNoisy, batch(1), "noisy", "events/s")
	h.clock.Advance(time.Second)
	wantRESTAccepted(t, h, keyNoisy, batch(2))
	wantRESTLimited(t, h, keyNoisy, batch(3), "noisy", "events/s")
	// A third of quiet's bytes burst is below one request of
	// max_request_bytes; it stays at one.
	wantRESTAccepted(t, h, keyQuiet, logEvents(h, "rep-q", 10, 3000))

	h.svc.SetReplicas(1)
	h.clock.Advance(time.Second)
	for round := 4; round < 7; round++ {
		wantRESTAccepted(t, h, keyNoisy, batch(round))
	}
	wantRESTLimited(t, h, keyNoisy, batch(7), "noisy", "events/s")
}

// TestSourceMaxRequests: while a source holds max_requests requests, its
// next is refused RATE_LIMITED at once, over REST and gRPC; the other
// source's requests are accepted meanwhile; once the held request is
// answered the source is accepted again.
func TestSourceMaxRequests(t *testing.T) {
	held := &holdingPublisher{entered: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, harnessOpts{
		config: func(c *gateway.Config) {
			twoSources(c)
			c.Sources[0].MaxRequests = 1
		},
		publisher: func(p gateway.Admitter) gateway.Admitter { held.Admitter = p; return held },
	})
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(held.release) }) }
	t.Cleanup(release)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e := logEvents(h, "req-held", 1, 0)
		e[0].Key = "recv-held"
		h.postREST(keyNoisy, restBody(e...))
	}()
	<-held.entered
	if got := sourceValue(t, h, "sluice_source_requests_in_flight", "noisy"); got != 1 {
		t.Fatalf("noisy holds %v requests, want 1", got)
	}
	wantRESTLimited(t, h, keyNoisy, logEvents(h, "req-a", 1, 0), "noisy", "max_requests")
	_, err := h.publishGRPC(keyNoisy, logEvents(h, "req-b", 1, 0)...)
	wantLimited(t, err, "noisy", "max_requests")
	wantRESTAccepted(t, h, keyQuiet, logEvents(h, "req-q1", 1, 0))
	wantGRPCAccepted(t, h, keyQuiet, logEvents(h, "req-q2", 1, 0))
	release()
	<-done
	eventually(t, "noisy's held request to end", func() bool {
		return sourceValue(t, h, "sluice_source_requests_in_flight", "noisy") == 0
	})
	wantRESTAccepted(t, h, keyNoisy, logEvents(h, "req-c", 1, 0))
}

// stalledCall opens a gRPC Publish call as key and sends its headers, not
// its message: it holds a receiving place, and the memory of a request of
// max_request_bytes, until cancelled.
func stalledCall(t *testing.T, h *harness, key string) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithTimeout(withKey(context.Background(), key), 30*time.Second)
	if _, err := h.conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true}, ingestv1.IngestService_Publish_FullMethodName); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	return cancel
}

// TestSourceMemoryShare: a source that holds its guarantee of request
// memory and all the shared remainder is refused RATE_LIMITED, naming the
// budget, while the other source's gRPC and REST requests are accepted
// from its guarantee; what the first gives back is lent again.
func TestSourceMemoryShare(t *testing.T) {
	cost := func(c gateway.Config) int64 { return 2*int64(c.Limits.MaxRequestBytes) + 64<<10 }
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) {
		twoSources(c)
		// Each half holds four gRPC calls: one guaranteed to each source,
		// two shared.
		c.Limits.RequestMemoryBytes = 2 * 4 * cost(*c)
		c.Limits.MaxQueueWait = 50 * time.Millisecond
		c.Limits.ReceiveTimeout = time.Minute
	}})
	c := float64(cost(h.cfg))
	var cancels []context.CancelFunc
	for range 3 {
		cancels = append(cancels, stalledCall(t, h, keyNoisy))
	}
	eventually(t, "noisy to hold its guarantee and the shared memory", func() bool {
		return sourceValue(t, h, "sluice_source_request_memory_bytes", "noisy") == 3*c
	})
	_, err := h.publishGRPC(keyNoisy, logEvents(h, "mem-a", 1, 0)...)
	wantLimited(t, err, "noisy", "request memory")
	wantRESTLimited(t, h, keyNoisy, logEvents(h, "mem-b", 1, 0), "noisy", "request memory")

	wantGRPCAccepted(t, h, keyQuiet, logEvents(h, "mem-q1", 10, 3000))
	wantRESTAccepted(t, h, keyQuiet, logEvents(h, "mem-q2", 10, 3000))

	cancels[0]()
	eventually(t, "noisy to give back one call's memory", func() bool {
		return sourceValue(t, h, "sluice_source_request_memory_bytes", "noisy") == 2*c
	})
	wantGRPCAccepted(t, h, keyNoisy, logEvents(h, "mem-c", 1, 0))
}

// TestSourceReceivingShare: a source whose gRPC calls hold its guarantee
// of the receiving places and all the shared ones is refused RATE_LIMITED
// at its next call's headers; the other source's calls are received.
func TestSourceReceivingShare(t *testing.T) {
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) {
		twoSources(c)
		c.Limits.ReceivingRequests = 4 // one guaranteed to each, two shared
		c.Limits.ReceiveTimeout = time.Minute
	}})
	for range 3 {
		stalledCall(t, h, keyNoisy)
	}
	var err error
	eventually(t, "noisy's next call to be refused", func() bool {
		_, err = h.publishGRPC(keyNoisy, logEvents(h, "recv-a", 1, 0)...)
		return err != nil
	})
	wantLimited(t, err, "noisy", "receiving")
	wantGRPCAccepted(t, h, keyQuiet, logEvents(h, "recv-q", 10, 0))
}

// TestSourceStreamShare: a source holding its guarantee of the stream
// slots and all the shared ones is refused RATE_LIMITED at its next
// stream's headers, and a source at its own max_streams too; the other
// source opens its streams and its batches are accepted.
func TestSourceStreamShare(t *testing.T) {
	for _, c := range []struct {
		name, limit string
		config      func(*gateway.Config)
	}{
		{"share", "stream slots", func(c *gateway.Config) {
			c.Limits.MaxStreams = 4 // one guaranteed to each, two shared
		}},
		{"max_streams", "max_streams", func(c *gateway.Config) { c.Sources[0].MaxStreams = 3 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{config: func(cfg *gateway.Config) { twoSources(cfg); c.config(cfg) }})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			open := func(key, prefix string) error {
				st, err := h.client.PublishStream(withKey(ctx, key))
				if err != nil {
					return err
				}
				events := logEvents(h, prefix, 2, 0)
				req := &ingestv1.PublishStreamRequest{BatchId: 1}
				for _, e := range events {
					req.Events = append(req.Events, e.proto())
				}
				if err := st.Send(req); err != nil {
					_, err = st.Recv()
					return err
				}
				resp, err := st.Recv()
				if err != nil {
					return err
				}
				wantOutcomes(t, resp.GetResults(), ingestv1.Outcome_ACCEPTED, ingestv1.Outcome_ACCEPTED)
				return nil
			}
			for i := range 3 {
				if err := open(keyNoisy, fmt.Sprintf("st-n%d", i)); err != nil {
					t.Fatalf("noisy's stream %d: %v", i, err)
				}
			}
			if got := sourceValue(t, h, "sluice_source_streams", "noisy"); got != 3 {
				t.Fatalf("noisy holds %v streams, want 3", got)
			}
			wantLimited(t, open(keyNoisy, "st-n3"), "noisy", c.limit)
			if err := open(keyQuiet, "st-q"); err != nil {
				t.Fatalf("quiet's stream: %v", err)
			}
		})
	}
}

// TestNoisyNeighbour: while noisy floods the gateway over REST, gRPC and
// streams, far past its rate, its max_requests and its max_streams,
// every request of quiet's is accepted into Kafka; noisy's refusals are
// RATE_LIMITED with a retry_after, and every event of noisy's that was
// accepted is in Kafka.
func TestNoisyNeighbour(t *testing.T) {
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) {
		twoSources(c)
		c.Sources[0].Rate, c.Sources[0].Burst = 100, 100 // the clock stands still: 100 events in all
		c.Sources[0].MaxRequests = 2
		c.Sources[0].MaxStreams = 2
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		mu       sync.Mutex
		accepted []string
		refused  int
		problems []string
	)
	judge := func(results []*ingestv1.EventResult, events []ev) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range results {
			switch {
			case r.GetOutcome() == ingestv1.Outcome_ACCEPTED:
				accepted = append(accepted, events[r.GetIndex()].ID)
			case r.GetRejection().GetReason() == ingestv1.Reason_RATE_LIMITED && r.GetRejection().GetRetryAfter().AsDuration() > 0:
				refused++
			default:
				problems = append(problems, fmt.Sprintf("noisy event %v", r))
			}
		}
	}
	whole := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if status.Code(err) == codes.ResourceExhausted && errorInfo(err).GetReason() == ingestv1.Reason_RATE_LIMITED.String() && retryDelay(err) > 0 {
			refused++
			return
		}
		problems = append(problems, fmt.Sprintf("noisy request: %v", err))
	}
	// quietRound sends quiet's 40 requests, every one accepted, and
	// gives their p99 latency, for the log: alone, then beside noisy.
	quietRound := func(round string) time.Duration {
		var took []time.Duration
		for i := range 40 {
			events := logEvents(h, fmt.Sprintf("quiet-%s-%d", round, i), 5, 1000)
			start := time.Now()
			if i%2 == 0 {
				wantRESTAccepted(t, h, keyQuiet, events)
			} else {
				wantGRPCAccepted(t, h, keyQuiet, events)
			}
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		return took[len(took)*99/100]
	}
	aloneP99 := quietRound("alone")
	stop, beside := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	// On every path, a failure too, noisy's callers stop and are waited
	// for before the harness shuts down.
	end := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer end()
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-beside
			var st grpc.BidiStreamingClient[ingestv1.PublishStreamRequest, ingestv1.PublishStreamResponse]
			for i := 0; i < 30; i++ {
				select {
				case <-stop:
					return
				default:
				}
				events := logEvents(h, fmt.Sprintf("noisy-%d-%d", g, i), 10, 3000)
				switch g % 3 {
				case 0: // REST
					resp, body := h.postREST(keyNoisy, restBody(events...))
					if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" {
						mu.Lock()
						refused++
						mu.Unlock()
						continue
					}
					var pr ingestv1.PublishResponse
					if err := protojson.Unmarshal(body, &pr); err != nil {
						whole(fmt.Errorf("%d %s: %w", resp.StatusCode, body, err))
						continue
					}
					judge(pr.GetResults(), events)
				case 1: // gRPC
					out, err := h.publishGRPC(keyNoisy, events...)
					if err != nil {
						whole(err)
						continue
					}
					judge(out.GetResults(), events)
				case 2: // a stream, opened again when refused
					if st == nil {
						var err error
						if st, err = h.client.PublishStream(withKey(ctx, keyNoisy)); err != nil {
							whole(err)
							continue
						}
					}
					req := &ingestv1.PublishStreamRequest{BatchId: uint64(i)}
					for _, e := range events {
						req.Events = append(req.Events, e.proto())
					}
					if err := st.Send(req); err != nil {
						_, err = st.Recv()
						whole(err)
						st = nil
						continue
					}
					resp, err := st.Recv()
					if err != nil {
						whole(err)
						st = nil
						continue
					}
					judge(resp.GetResults(), events)
				}
			}
			if st != nil {
				_ = st.CloseSend()
			}
		}()
	}
	close(beside)
	besideP99 := quietRound("beside")
	end()
	if len(problems) > 0 {
		t.Fatalf("%d answers to noisy neither accepted nor RATE_LIMITED with a retry_after, first: %s", len(problems), problems[0])
	}
	if refused == 0 || len(accepted) == 0 || len(accepted) > 100 {
		t.Fatalf("noisy: %d events accepted and %d refusals, want some of each and at most its burst of 100 accepted", len(accepted), refused)
	}
	t.Logf("noisy: %d events accepted, %d refusals (requests or events); quiet: 400 events accepted, p99 %v alone, %v beside noisy",
		len(accepted), refused, aloneP99, besideP99)
	got := h.consumeIDs(record.EventTopic(typeLog), accepted)
	seen := map[string]bool{}
	for _, r := range got {
		seen[header(r, record.HeaderEventID)] = true
	}
	for _, id := range accepted {
		if !seen[id] {
			t.Fatalf("noisy's accepted %s is not in Kafka", id)
		}
	}
}
