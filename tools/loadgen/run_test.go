package loadgen

import (
	"context"
	"sync"
	"testing"
	"time"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/logtest"
)

// fakeClock is virtual time: SleepUntil jumps to the time asked for, and
// a target advances it by how long its "work" takes.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
	return ctx.Err()
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fakeTarget answers every event ACCEPTED after "taking" took of the clock;
// with block set it never answers and waits for the request's deadline.
type fakeTarget struct {
	clock *fakeClock
	took  time.Duration
	block bool
	mu    sync.Mutex
	sent  []time.Time // clock time at each send
}

func (t *fakeTarget) NewSender() (Sender, error) { return t, nil }
func (t *fakeTarget) Close() error               { return nil }

func (t *fakeTarget) Send(ctx context.Context, events []*ingestv1.Event) (Answer, error) {
	if t.clock != nil {
		t.mu.Lock()
		t.sent = append(t.sent, t.clock.Now())
		t.mu.Unlock()
	}
	if t.block {
		<-ctx.Done()
		return Answer{}, ctx.Err()
	}
	if t.clock != nil {
		t.clock.advance(t.took)
	}
	rs := make([]EventResult, len(events))
	for i := range rs {
		rs[i] = EventResult{Outcome: ingestv1.Outcome_ACCEPTED}
	}
	return Answer{Results: rs}, nil
}

func testConfig() Config {
	cfg := NewDefaultConfig()
	cfg.Addr = "fake"
	cfg.EventsPerRequest = 10
	cfg.Concurrency = 1
	cfg.Duration = time.Hour
	return cfg
}

func run(t *testing.T, cfg Config, target Target, opts ...Option) *Report {
	t.Helper()
	gen, err := NewGenerator(cfg, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), cfg, gen, target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestOpenLoopMeasuresFromIntendedTime: requests due every 100 ms to a
// target that takes 250 ms queue up behind each other; each one's latency
// counts from when it was due, so it grows by 150 ms a request, where a
// closed loop (and a load generator with coordinated omission) reports a
// flat 250 ms.
func TestOpenLoopMeasuresFromIntendedTime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rate    float64
		wantMax time.Duration
		wantP50 time.Duration
	}{
		// Due at 0, 100, ..., 400 ms; answered at 250, 500, ..., 1250 ms.
		{"open", 10, 850 * time.Millisecond, 550 * time.Millisecond},
		{"closed", 0, 250 * time.Millisecond, 250 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			start := clock.Now()
			target := &fakeTarget{clock: clock, took: 250 * time.Millisecond}
			cfg := testConfig()
			cfg.Rate = tc.rate
			cfg.Requests = 5
			rep := run(t, cfg, target, WithClock(clock))
			if rep.Latency.Count != 5 || rep.Accepted != 50 {
				t.Fatalf("%d requests measured, %d accepted; want 5 and 50", rep.Latency.Count, rep.Accepted)
			}
			if rep.Latency.Max != tc.wantMax {
				t.Errorf("max latency %v, want %v", rep.Latency.Max, tc.wantMax)
			}
			if d := rep.Latency.P50 - tc.wantP50; d.Abs() > time.Duration(float64(tc.wantP50)*RelativeError) {
				t.Errorf("p50 %v, want %v", rep.Latency.P50, tc.wantP50)
			}
			if tc.rate > 0 {
				// Never sent before it was due.
				for i, at := range target.sent {
					if due := start.Add(time.Duration(i) * 100 * time.Millisecond); at.Before(due) {
						t.Errorf("request %d sent at %v, due %v", i, at.Sub(start), due.Sub(start))
					}
				}
			}
		})
	}
}

// TestBounds: a run stops at the first bound reached, count or time.
func TestBounds(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		requests, events         int64
		duration                 time.Duration
		rate                     float64
		wantRequests, wantEvents int64
		took                     time.Duration
		wantUnsent               int64
	}{
		{name: "requests", requests: 7, duration: time.Hour, wantRequests: 7, wantEvents: 70},
		{name: "events, last batch short", events: 25, duration: time.Hour, wantRequests: 3, wantEvents: 25},
		{name: "events before requests", requests: 9, events: 25, duration: time.Hour, wantRequests: 3, wantEvents: 25},
		{name: "requests before events", requests: 2, events: 25, duration: time.Hour, wantRequests: 2, wantEvents: 20},
		// Each request takes 1 s of the clock: they start at 0..4 s.
		{name: "duration, closed loop", duration: 5 * time.Second, wantRequests: 5, wantEvents: 50},
		{name: "duration before count", requests: 100, duration: 5 * time.Second, wantRequests: 5, wantEvents: 50},
		// Due every 0.5 s: those due at 0, 0.5, ..., 4.5 s run.
		{name: "duration, open loop", duration: 5 * time.Second, rate: 2, wantRequests: 10, wantEvents: 100},
		// Due every 0.1 s, each takes 1 s: by the end only the first was sent.
		{name: "duration, open loop behind", duration: time.Second, rate: 10, took: time.Second, wantRequests: 1, wantEvents: 10, wantUnsent: 9},
		{name: "count, open loop behind", requests: 4, duration: time.Second, rate: 10, took: time.Second, wantRequests: 1, wantEvents: 10, wantUnsent: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			cfg := testConfig()
			cfg.Requests, cfg.Events, cfg.Duration, cfg.Rate = tc.requests, tc.events, tc.duration, tc.rate
			took := tc.took
			if tc.rate == 0 {
				took = time.Second
			}
			rep := run(t, cfg, &fakeTarget{clock: clock, took: took}, WithClock(clock))
			if rep.Requests != tc.wantRequests || rep.Events != tc.wantEvents || rep.Unsent != tc.wantUnsent {
				t.Fatalf("sent %d requests, %d events, %d unsent; want %d, %d, %d",
					rep.Requests, rep.Events, rep.Unsent, tc.wantRequests, tc.wantEvents, tc.wantUnsent)
			}
		})
	}
}

// TestTimeoutIsNotSuccess: a request unanswered by its deadline is a
// timeout, acknowledges nothing and leaves nothing in the ledger.
func TestTimeoutIsNotSuccess(t *testing.T) {
	cfg := testConfig()
	cfg.Requests = 3
	cfg.Concurrency = 3
	cfg.Timeout = 20 * time.Millisecond
	var led logtest.Buffer
	rep := run(t, cfg, &fakeTarget{block: true}, WithLedger(&led))
	if rep.Timeouts != 3 || rep.Answered != 0 || rep.Accepted != 0 || rep.UnansweredEvents != 30 {
		t.Fatalf("timeouts %d answered %d accepted %d unanswered events %d; want 3, 0, 0, 30",
			rep.Timeouts, rep.Answered, rep.Accepted, rep.UnansweredEvents)
	}
	if led.String() != "" {
		t.Fatalf("ledger has %q after timeouts", led.String())
	}
	if rep.Latency.Count != 3 || rep.Latency.Max < cfg.Timeout {
		t.Fatalf("timeouts should be measured at their deadline or later: %+v", rep.Latency)
	}
}

// TestInterruptedRunStops: cancelling the run's context stops it; what was
// in flight is counted as interrupted, not as timeouts.
func TestInterruptedRunStops(t *testing.T) {
	cfg := testConfig()
	cfg.Concurrency = 2
	cfg.Timeout = time.Hour
	gen, err := NewGenerator(cfg, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	target := &blockingTarget{started: make(chan struct{}, 2)}
	done := make(chan *Report, 1)
	go func() {
		rep, _ := Run(ctx, cfg, gen, target)
		done <- rep
	}()
	<-target.started
	<-target.started
	cancel()
	select {
	case rep := <-done:
		if rep.Interrupted != 2 || rep.Timeouts != 0 {
			t.Fatalf("interrupted %d timeouts %d, want 2 and 0", rep.Interrupted, rep.Timeouts)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop after its context ended")
	}
}

type blockingTarget struct{ started chan struct{} }

func (t *blockingTarget) NewSender() (Sender, error) { return t, nil }
func (t *blockingTarget) Close() error               { return nil }
func (t *blockingTarget) Send(ctx context.Context, _ []*ingestv1.Event) (Answer, error) {
	t.started <- struct{}{}
	<-ctx.Done()
	return Answer{}, ctx.Err()
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(*Config)
	}{
		{"target", func(c *Config) { c.Target = "udp" }},
		{"addr", func(c *Config) { c.Addr = "" }},
		{"type", func(c *Config) { c.EventType = "examples.nope.v1.Nope" }},
		{"encoding", func(c *Config) { c.Encoding = "xml" }},
		{"encoding", func(c *Config) { c.Target = TargetREST }}, // binary over REST
		{"events-per-request", func(c *Config) { c.EventsPerRequest = 0 }},
		{"event-bytes", func(c *Config) { c.EventBytes = -1 }},
		{"keys", func(c *Config) { c.Keys = 0 }},
		{"concurrency", func(c *Config) { c.Concurrency = 0 }},
		{"rate", func(c *Config) { c.Rate = -1 }},
		{"duration", func(c *Config) { c.Duration = 0 }},
		{"timeout", func(c *Config) { c.Timeout = 0 }},
		{"connections", func(c *Config) { c.Connections = 0 }},
		{"target", func(c *Config) { c.Target = "Client" }},
		{"client-stream", func(c *Config) { c.ClientStream = true }},                         // on grpc
		{"client-stream", func(c *Config) { c.Target, c.ClientStream = TargetStream, true }}, // stream is not the client
	} {
		cfg := NewDefaultConfig()
		tc.edit(&cfg)
		err := cfg.Validate()
		ce, ok := err.(*ConfigError)
		if !ok || ce.Field != tc.field {
			t.Errorf("want a ConfigError on --%s, got %v", tc.field, err)
		}
	}
	if err := NewDefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, edit := range []func(*Config){
		func(c *Config) { c.Target = TargetClient },
		func(c *Config) { c.Target, c.ClientStream = TargetClient, true },
		func(c *Config) { c.Target, c.Encoding, c.TLS.Enabled = TargetClient, EncodingJSON, true },
	} {
		cfg := NewDefaultConfig()
		edit(&cfg)
		if err := cfg.Validate(); err != nil {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

// TestGeneratorPayloadSizes: padding reaches the size asked for, and the
// invalid variant differs from the valid one.
func TestGeneratorPayloadSizes(t *testing.T) {
	for _, tc := range []struct {
		typ, enc string
		size     int
	}{
		{TypeOrderPlaced, EncodingJSON, 700},
		{TypeLogLine, EncodingBinary, 300},
		{TypeLogLine, EncodingJSON, 1000},
		{TypeOrderPlaced, EncodingBinary, 500},
	} {
		cfg := NewDefaultConfig()
		cfg.EventType, cfg.Encoding, cfg.EventBytes, cfg.InvalidEvery = tc.typ, tc.enc, tc.size, 2
		g, err := NewGenerator(cfg, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		if n := g.PayloadBytes(); n < tc.size-8 || n > tc.size {
			t.Errorf("%s %s: payload %d bytes, want about %d", tc.typ, tc.enc, n, tc.size)
		}
		evs := g.Batch(2)
		if evs[0].GetId() == evs[1].GetId() || proto2str(evs[0]) == proto2str(evs[1]) {
			t.Errorf("%s %s: the invalid event is the same as the valid one", tc.typ, tc.enc)
		}
	}
	cfg := NewDefaultConfig()
	cfg.EventType, cfg.EventBytes = TypeOrderPlaced, 100_000
	if _, err := NewGenerator(cfg, time.Now); err == nil {
		t.Error("an OrderPlaced of 100 kB cannot be made by padding its note; want an error")
	}
}

func proto2str(ev *ingestv1.Event) string { return ev.GetJson() + string(ev.GetBinary()) }
