package consumer

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/breaker"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// endsLog is a runner that records how the deliverer ended each job.
type endsLog struct {
	mu sync.Mutex
	// done maps each finished job's record offset to its done flag.
	done    map[int64]bool
	stopped error
}

func (e *endsLog) finish(j *job, done bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.done[j.rec.Offset]; ok {
		panic("a job finished twice")
	}
	e.done[j.rec.Offset] = done
}

func (e *endsLog) stop(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopped = err
}

func (e *endsLog) pace(ctx context.Context, _ string) error { return ctx.Err() }

// finished returns the done flags by offset.
func (e *endsLog) finished() map[int64]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.done)
}

// enteredSink tells when a write reached the sink.
type enteredSink struct {
	*memSink
	entered chan struct{}
}

func (s enteredSink) Write(ctx context.Context, batch []sink.Event) ([]sink.Conflict, error) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	return s.memSink.Write(ctx, batch)
}

// newTestDeliverer is the deliverer of a consumer built by New on a kfake
// cluster and never run; the jobs it ends are recorded in the returned
// endsLog.
func newTestDeliverer(t *testing.T, cfg Config, s sink.Sink) (*deliverer, *endsLog, []string) {
	t.Helper()
	addrs := newCluster(t, 1)
	c, err := New(cfg, testVersions(t), s, []kgo.Opt{kgo.SeedBrokers(addrs...)}, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.client.Close)
	ends := &endsLog{done: map[int64]bool{}}
	c.deliverer.run = ends
	return c.deliverer, ends, addrs
}

// sourceJobs are jobs of the events ids, at offsets 0.., of one
// partition of testTopic.
func sourceJobs(t *testing.T, ids ...string) []*job {
	t.Helper()
	p := newPartState(t.Context(), topicPartition{testTopic, 0}, false)
	var jobs []*job
	for i, id := range ids {
		r := eventRecord(t, testTopic, id, id, logLine(t))
		r.Offset = int64(i)
		jobs = append(jobs, &job{rec: r, part: p, key: id})
	}
	return jobs
}

// allDone reports whether the jobs at offsets 0..n-1, and only they,
// finished with done.
func allDone(got map[int64]bool, n int, done bool) bool {
	if len(got) != n {
		return false
	}
	for o := range int64(n) {
		if d, ok := got[o]; !ok || d != done {
			return false
		}
	}
	return true
}

// TestDelivererWrites: a batch is written in one write and each job
// finishes done; a sink that does not audit has its written rows
// recorded in the audit topic.
func TestDelivererWrites(t *testing.T) {
	s := newMemSink()
	d, ends, addrs := newTestDeliverer(t, testConfig("deliver"), s)
	d.process(sourceJobs(t, "a", "b", "c"))
	if got := ends.finished(); !allDone(got, 3, true) {
		t.Fatalf("finished %v, want 0..2 done", got)
	}
	if ids := s.ids(); !slices.Equal(ids, []string{"a", "b", "c"}) || s.calls != 1 {
		t.Fatalf("sink holds %v after %d writes, want a, b, c in one", ids, s.calls)
	}
	if v := testutil.ToFloat64(d.m.events.WithLabelValues(outcomeWritten)); v != 3 {
		t.Fatalf("written events %v, want 3", v)
	}
	if n := len(readAll(t, addrs, record.AuditTopic)); n != 3 {
		t.Fatalf("%d audit records, want 3 written rows", n)
	}
}

// TestDelivererIsolatesPermanent: a batch the sink refuses for good is
// split until the refused event is alone; it is dead-lettered, not
// retryable, and the others are written.
func TestDelivererIsolatesPermanent(t *testing.T) {
	s := newMemSink()
	s.setFail(func(b []sink.Event) error {
		for _, e := range b {
			if e.ID == "bad" {
				return sink.PermanentError(errors.New("receiver 422"))
			}
		}
		return nil
	})
	d, ends, addrs := newTestDeliverer(t, testConfig("isolate"), s)
	d.process(sourceJobs(t, "a", "b", "bad", "c"))
	if got := ends.finished(); !allDone(got, 4, true) {
		t.Fatalf("finished %v, want 0..3 done", got)
	}
	if ids := s.ids(); !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("sink holds %v", ids)
	}
	dl := readAll(t, addrs, record.DLQTopic(testTopic))
	if len(dl) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dl))
	}
	env, err := record.ParseEnvelope(dl[0])
	if err != nil {
		t.Fatal(err)
	}
	if env.SourceOffset != 2 || env.Retryable || env.Class != sink.Permanent.String() {
		t.Fatalf("envelope %+v, want offset 2, permanent, not retryable", env)
	}
	if v := testutil.ToFloat64(d.m.sinkErrors.WithLabelValues("mem", sink.Permanent.String())); v < 2 {
		t.Fatalf("%v permanent sink errors, want one per split down to the event", v)
	}
}

// TestDelivererUndecodable: a record that does not decode goes to the DLQ
// as record.ClassDecode without a write.
func TestDelivererUndecodable(t *testing.T) {
	s := newMemSink()
	d, ends, addrs := newTestDeliverer(t, testConfig("undecodable"), s)
	jobs := sourceJobs(t, "a")
	jobs[0].rec.Value = []byte{0x0a, 0xff}
	d.process(jobs)
	if got := ends.finished(); !allDone(got, 1, true) {
		t.Fatalf("finished %v, want 0 done", got)
	}
	if s.calls != 0 {
		t.Fatalf("%d sink writes for an undecodable record", s.calls)
	}
	dl := readAll(t, addrs, record.DLQTopic(testTopic))
	if len(dl) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dl))
	}
	if env, _ := record.ParseEnvelope(dl[0]); env.Class != record.ClassDecode {
		t.Fatalf("class %q, want %q", env.Class, record.ClassDecode)
	}
}

// TestDelivererAbandoned: jobs of an abandoned partition finish unwritten
// and not done, before or during their write.
func TestDelivererAbandoned(t *testing.T) {
	s := newMemSink()
	d, ends, _ := newTestDeliverer(t, testConfig("abandoned"), s)
	jobs := sourceJobs(t, "a", "b")
	jobs[0].part.abandon()
	d.process(jobs)
	if got := ends.finished(); !allDone(got, 2, false) || s.calls != 0 {
		t.Fatalf("finished %v after %d writes, want 0..1 not done and no write", got, s.calls)
	}

	open := s.closeGate()
	defer open()
	gated := enteredSink{memSink: s, entered: make(chan struct{}, 1)}
	d2, ends2, _ := newTestDeliverer(t, testConfig("abandoned-mid-write"), gated)
	jobs = sourceJobs(t, "c")
	go func() {
		<-gated.entered
		jobs[0].part.abandon()
	}()
	d2.process(jobs)
	if got := ends2.finished(); !allDone(got, 1, false) {
		t.Fatalf("finished %v, want 0 not done: the write's outcome is unknown", got)
	}
	if st := d2.breakerState(); st != breaker.Closed {
		t.Fatalf("breaker %s after an abandoned write", st)
	}
}

// TestRetryBudget: the attempts are spent only once the breaker has
// judged enough writes (one attempt for a drained record); the time is
// spent once Retry.MaxElapsed passed since the first failure; forgive
// starts over.
func TestRetryBudget(t *testing.T) {
	cfg := testConfig("budget")
	cfg.Retry.MaxAttempts = 3
	cfg.Retry.MaxElapsed = time.Minute
	judged := breaker.New(breaker.Config{Window: time.Minute, MinRequests: 1, FailureRatio: 0.5, Cooldown: time.Second}, nil, nil)
	judged.Record(false)
	unjudged := breaker.New(breaker.Config{Window: time.Minute, MinRequests: 100, FailureRatio: 0.5, Cooldown: time.Second}, nil, nil)
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name  string
		b     *breaker.Breaker
		fails []time.Duration // failure times after t0
		drain bool
		want  bool
	}{
		{"attempts left", judged, []time.Duration{0, time.Second}, false, false},
		{"attempts used", judged, []time.Duration{0, time.Second, 2 * time.Second}, false, true},
		{"attempts used, breaker not judged", unjudged, []time.Duration{0, time.Second, 2 * time.Second}, false, false},
		{"time used", unjudged, []time.Duration{0, time.Minute}, false, true},
		{"drained: one attempt", judged, []time.Duration{0}, true, true},
		{"drained, breaker not judged", unjudged, []time.Duration{0}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &deliverer{cfg: cfg, breaker: tt.b}
			var b retryBudget
			for _, at := range tt.fails {
				b.fail(t0.Add(at))
			}
			if got := d.spent(&b, tt.drain); got != tt.want {
				t.Fatalf("spent = %v, want %v (%+v)", got, tt.want, b)
			}
			b.forgive()
			if d.spent(&b, false) || b.attempts != 0 {
				t.Fatalf("forgiven budget %+v still spent", b)
			}
		})
	}
}

// TestDelivererBackoff: a retry waits at most Retry.MaxBackoff, and never
// less than what the sink asked for.
func TestDelivererBackoff(t *testing.T) {
	cfg := testConfig("backoff")
	d := &deliverer{cfg: cfg}
	for attempt := 1; attempt <= 10; attempt++ {
		if w := d.backoff(attempt, 0); w < 0 || w > cfg.Retry.MaxBackoff {
			t.Fatalf("attempt %d waits %s, past MaxBackoff %s", attempt, w, cfg.Retry.MaxBackoff)
		}
		if w := d.backoff(attempt, time.Hour); w != time.Hour {
			t.Fatalf("attempt %d waits %s, want the sink's hour", attempt, w)
		}
	}
}

// TestDelivererDrained: a drained record without an envelope is parked
// (unreadable); one whose envelope says not retryable is skipped: done,
// unwritten, counted as skipped.
func TestDelivererDrained(t *testing.T) {
	s := newMemSink()
	d, ends, addrs := newTestDeliverer(t, testConfig("drained"), s)
	dlqTopic := record.DLQTopic(testTopic)
	p := newPartState(t.Context(), topicPartition{dlqTopic, 0}, true)

	bare := eventRecord(t, dlqTopic, "bare", "k", logLine(t))
	src := eventRecord(t, testTopic, "final", "k", logLine(t))
	final := record.NewDeadLetter(dlqTopic, src, &record.Envelope{Class: record.ClassDecode, Error: "bad", SourceTopic: testTopic, Group: "drained"})
	final.Offset = 1
	d.process([]*job{{rec: bare, part: p, key: "k"}})
	d.process([]*job{{rec: final, part: p, key: "k"}})
	if got := ends.finished(); !allDone(got, 2, true) {
		t.Fatalf("finished %v, want 0..1 done", got)
	}
	if s.calls != 0 {
		t.Fatalf("%d sink writes", s.calls)
	}
	parked := readAll(t, addrs, record.ParkedTopic(testTopic))
	if len(parked) != 1 {
		t.Fatalf("%d parked records, want 1", len(parked))
	}
	if env, _ := record.ParseEnvelope(parked[0]); env.ParkedReason != record.ParkedUnreadable {
		t.Fatalf("parked reason %q, want %q", env.ParkedReason, record.ParkedUnreadable)
	}
	if v := testutil.ToFloat64(d.m.drained.WithLabelValues(outcomeSkipped)); v != 1 {
		t.Fatalf("%v drained records skipped, want 1", v)
	}
}
