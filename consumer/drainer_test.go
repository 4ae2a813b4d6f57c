package consumer

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/breaker"
	"github.com/sluicehq/sluice/record"
)

// newTestDrainer is a drainer of testTopic over a client of a kfake
// cluster, which it pauses and resumes, with a drain interval of a minute
// on clock.
func newTestDrainer(t *testing.T, clock Clock) (*drainer, *kgo.Client, *metrics) {
	t.Helper()
	addrs := newCluster(t, 1)
	dlqTopic := record.DLQTopic(testTopic)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumerGroup("drainer"), kgo.ConsumeTopics(testTopic, dlqTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	cfg := NewDefaultConfig().DLQ
	cfg.DrainInterval = time.Minute
	m := newMetrics()
	return newDrainer(cl, []string{testTopic}, []string{dlqTopic}, cfg, clock, slog.New(slog.DiscardHandler), m.mode), cl, m
}

func dlqPart(t *testing.T) *partState {
	return newPartState(t.Context(), topicPartition{record.DLQTopic(testTopic), 0}, true)
}

// woke reports whether d asked for the mode to be evaluated, and takes
// the request.
func woke(d *drainer) bool {
	select {
	case <-d.woken():
		return true
	default:
		return false
	}
}

// TestDrainerPass: a pass starts only with records pending, the breaker
// closed and the quiet time over; it skips retired partitions, ends once
// its records are polled and finished, and restarts the quiet time.
func TestDrainerPass(t *testing.T) {
	clock := &offsetClock{}
	d, _, _ := newTestDrainer(t, clock)
	p, gone := dlqPart(t), dlqPart(t)
	gone.retire()
	pending := map[*partState]int64{p: 2, gone: 5}

	d.maybeStartPass(pending, breaker.Closed)
	if d.passActive() {
		t.Fatal("a pass started before the quiet time")
	}
	clock.Advance(time.Minute)
	d.maybeStartPass(pending, breaker.Open)
	d.maybeStartPass(nil, breaker.Closed)
	if d.passActive() {
		t.Fatal("a pass started with the breaker open or nothing pending")
	}
	woke(d)
	d.maybeStartPass(pending, breaker.Closed)
	if !d.passActive() || !woke(d) {
		t.Fatal("no pass started, or the mode was not woken")
	}
	if p.passEnd.Load() != 2 || gone.passEnd.Load() != 0 {
		t.Fatalf("pass ends %d and %d (retired), want 2 and 0", p.passEnd.Load(), gone.passEnd.Load())
	}
	if len(d.pass.parts) != 1 {
		t.Fatalf("the pass covers %d partitions, want 1", len(d.pass.parts))
	}
	// A second start while a pass runs changes nothing.
	d.maybeStartPass(map[*partState]int64{p: 9}, breaker.Closed)
	if p.passEnd.Load() != 2 {
		t.Fatal("a second pass started over the first")
	}

	for o := range int64(2) {
		if err := p.wm.add(o); err != nil {
			t.Fatal(err)
		}
	}
	p.polledPass.Store(true)
	p.wm.done(0)
	if !d.passActive() {
		t.Fatal("the pass ended with a record in flight")
	}
	p.wm.done(1)
	if d.passActive() {
		t.Fatal("the pass did not end with its records finished")
	}
	if p.passEnd.Load() != 0 {
		t.Fatal("the ended pass still holds back records")
	}
	d.maybeStartPass(map[*partState]int64{p: 4}, breaker.Closed)
	if d.passActive() {
		t.Fatal("a pass started right after the last one ended")
	}
	clock.Advance(time.Minute)
	d.quiet()
	if !woke(d) {
		t.Fatal("quiet did not wake the mode")
	}
	d.maybeStartPass(map[*partState]int64{p: 4}, breaker.Closed)
	if d.passActive() {
		t.Fatal("a pass started right after the breaker changed")
	}
}

// TestDrainerModes: evaluate sets the mode, its gauge and which topics
// are fetched.
func TestDrainerModes(t *testing.T) {
	clock := &offsetClock{}
	d, cl, m := newTestDrainer(t, clock)
	dlqTopic := record.DLQTopic(testTopic)
	tests := []struct {
		name   string
		st     breaker.State
		idle   bool
		pass   bool
		want   Mode
		paused []string
	}{
		{"normal", breaker.Closed, true, false, ModeNormal, []string{dlqTopic}},
		{"open with work in flight", breaker.Open, false, false, ModePaused, []string{testTopic, dlqTopic}},
		{"open and idle fetches a probe", breaker.Open, true, false, ModePaused, []string{dlqTopic}},
		{"half-open and busy", breaker.HalfOpen, false, false, ModePaused, []string{testTopic, dlqTopic}},
		{"drain pass", breaker.Closed, false, true, ModeDrainDLQ, nil},
		{"normal again", breaker.Closed, false, false, ModeNormal, []string{dlqTopic}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.pass {
				clock.Advance(time.Minute)
				p := dlqPart(t)
				d.maybeStartPass(map[*partState]int64{p: 1}, breaker.Closed)
			} else if d.pass != nil {
				for _, p := range d.pass.parts {
					p.polledPass.Store(true)
				}
			}
			d.evaluate(tt.st, tt.idle)
			if got := d.current(); got != tt.want {
				t.Fatalf("mode %s, want %s", got, tt.want)
			}
			paused := cl.PauseFetchTopics()
			slices.Sort(paused)
			want := slices.Sorted(slices.Values(tt.paused))
			if !slices.Equal(paused, want) {
				t.Fatalf("paused %v, want %v", paused, want)
			}
			for _, x := range allModes {
				want := 0.0
				if x == tt.want {
					want = 1
				}
				if v := testutil.ToFloat64(m.mode.WithLabelValues(x.String())); v != want {
					t.Fatalf("mode gauge %s = %v, want %v", x, v, want)
				}
			}
		})
	}
}

// TestDrainerPace: the drain rate admits a record at once, and a wait on
// a canceled context fails.
func TestDrainerPace(t *testing.T) {
	d, _, _ := newTestDrainer(t, &offsetClock{})
	if err := d.pace(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := d.pace(ctx, "a"); err == nil {
		t.Fatal("pace admitted a record on a canceled context")
	}
}
