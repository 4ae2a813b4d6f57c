package consumer

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// gatedSink passes writes to inner, except that once armed every write
// blocks until its context ends.
type gatedSink struct {
	sink.Sink
	// after is how many writes pass before the gate closes; <0 never.
	after   atomic.Int32
	passed  atomic.Int32
	blocked atomic.Int32
}

func (g *gatedSink) Write(ctx context.Context, b []sink.Event) ([]sink.Conflict, error) {
	if a := g.after.Load(); a >= 0 && g.passed.Add(1) > a {
		g.blocked.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return g.Sink.Write(ctx, b)
}

func openSQLite(t testing.TB, path string) *sink.SQLite {
	t.Helper()
	cfg := sink.NewDefaultConfig().SQLite
	cfg.Path = path
	cfg.Synchronous = "normal"
	s, err := sink.OpenSQLite(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestCrashThenRestart: the first consumer's client is closed abruptly
// with writes in flight; a second consumer of the same group finishes the
// job. Nothing is lost, every event is one row, and what was committed
// before the crash was in the sink.
func TestCrashThenRestart(t *testing.T) {
	addrs := newCluster(t, 1)
	ids := produceEvents(t, addrs, 300, 300)
	db := openSQLite(t, filepath.Join(t.TempDir(), "events.db"))
	g := &gatedSink{Sink: db}
	g.after.Store(100)
	cfg := testConfig("crash")
	cfg.RevokeTimeout = 50 * time.Millisecond
	r := start(t, cfg, addrs, g)
	waitFor(t, 20*time.Second, "writes stuck", func() bool { return g.blocked.Load() > 0 })
	// Crash: the client goes away under the running consumer.
	r.c.client.Close()
	if err := r.stop(); err != nil && !errors.Is(err, errClosed) {
		t.Fatal(err)
	}

	// What was committed must be in the sink.
	off := committed(t, addrs, "crash", testTopic)[0]
	ctx := context.Background()
	for _, id := range ids[:off] {
		if _, err := db.Get(ctx, "test", id); err != nil {
			t.Fatalf("offset of %s committed but not in the sink: %v", id, err)
		}
	}
	if int(off) == len(ids) {
		t.Fatal("everything committed although writes were stuck")
	}

	r2 := start(t, cfg, addrs, db)
	waitFor(t, 20*time.Second, "all offsets committed", func() bool {
		return committed(t, addrs, "crash", testTopic)[0] == int64(len(ids))
	})
	if err := r2.stop(); err != nil {
		t.Fatal(err)
	}
	n, err := db.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(ids)) {
		t.Fatalf("%d rows, want %d", n, len(ids))
	}
	for _, id := range ids {
		if _, err := db.Get(ctx, "test", id); err != nil {
			t.Fatalf("event %s: %v", id, err)
		}
	}
	if len(readAll(t, addrs, record.DLQTopic(testTopic))) != 0 {
		t.Fatal("the crash sent events to the DLQ")
	}
}

// TestRebalanceMidFlight: a second member joins while the first has
// writes in flight. The first finishes its revoked work before giving the
// partitions up, so every event is written exactly once and the committed
// offsets match the sink.
func TestRebalanceMidFlight(t *testing.T) {
	addrs := newCluster(t, 4)
	ids := produceEvents(t, addrs, 600, 97)
	s := newMemSink()
	s.latency = 30 * time.Millisecond
	cfg := testConfig("rebalance")
	cfg.MaxInFlight = 32
	cfg.RevokeTimeout = 10 * time.Second
	sa, sb := &tally{Sink: s}, &tally{Sink: s}
	a := start(t, cfg, addrs, sa)
	waitFor(t, 20*time.Second, "first writes", func() bool { return s.count() >= 40 })
	b := start(t, cfg, addrs, sb)
	waitFor(t, 30*time.Second, "all written", func() bool { return s.hasAll(ids) })
	waitFor(t, 20*time.Second, "all committed", func() bool {
		var sum int64
		for _, o := range committed(t, addrs, "rebalance", testTopic) {
			sum += o
		}
		return sum == int64(len(ids))
	})
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if sa.n.Load() == 0 || sb.n.Load() == 0 {
		t.Fatalf("writes by member: %d and %d; the second member never took over", sa.n.Load(), sb.n.Load())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, n := range s.writes {
		if n != 1 {
			t.Fatalf("event %s written %d times", id, n)
		}
	}
	for key, got := range s.order {
		if !slices.IsSorted(got) {
			t.Fatalf("key %s out of order across the rebalance: %v", key, got)
		}
	}
}

// tally counts the events one member wrote.
type tally struct {
	sink.Sink
	n atomic.Int32
}

func (c *tally) Write(ctx context.Context, b []sink.Event) ([]sink.Conflict, error) {
	conflicts, err := c.Sink.Write(ctx, b)
	if err == nil {
		c.n.Add(int32(len(b)))
	}
	return conflicts, err
}

// TestSinkOutage: a sink down for a while opens the breaker, pauses
// fetching, parks in-flight events without spending their retries, and
// after recovery every event is written once with the DLQ still empty.
func TestSinkOutage(t *testing.T) {
	addrs := newCluster(t, 1)
	ids := produceEvents(t, addrs, 30, 30)
	s := newMemSink()
	var down atomic.Bool
	down.Store(true)
	var failed atomic.Int32
	s.setFail(func([]sink.Event) error {
		if down.Load() {
			failed.Add(1)
			return sink.TransientError(errors.New("503"), 0)
		}
		return nil
	})
	cfg := testConfig("outage")
	cfg.Retry.MaxAttempts = 2
	cfg.Breaker.MinRequests = 5
	cfg.Breaker.Cooldown = 20 * time.Millisecond
	r := start(t, cfg, addrs, s)
	waitFor(t, 20*time.Second, "PAUSED", func() bool { return r.c.Mode() == ModePaused })
	if !slices.Contains(r.c.client.PauseFetchTopics(), testTopic) {
		t.Fatal("source topic not paused while the breaker is open")
	}
	// Let several half-open probes fail: more failed writes than the
	// retry budget of all events put together would allow without the
	// breaker.
	waitFor(t, 20*time.Second, "failed probes", func() bool { return failed.Load() > 2*int32(len(ids))+10 })
	down.Store(false)
	waitFor(t, 20*time.Second, "all written", func() bool { return s.hasAll(ids) })
	waitFor(t, 20*time.Second, "NORMAL", func() bool { return r.c.Mode() == ModeNormal })
	if slices.Contains(r.c.client.PauseFetchTopics(), testTopic) {
		t.Fatal("source topic still paused after recovery")
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, addrs, record.DLQTopic(testTopic))); n != 0 {
		env, _ := record.ParseEnvelope(readAll(t, addrs, record.DLQTopic(testTopic))[0])
		t.Fatalf("the outage sent %d events to the DLQ: %+v", n, env)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, n := range s.writes {
		if n != 1 {
			t.Fatalf("event %s written %d times", id, n)
		}
	}
}

// offsetClock is the system clock moved forward by a set amount.
type offsetClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *offsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *offsetClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

func (c *offsetClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}
