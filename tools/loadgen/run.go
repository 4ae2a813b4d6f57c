package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/status"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// Option configures Run.
type Option interface{ apply(*runOptions) }

type runOptions struct {
	clock    Clock
	ledger   io.Writer
	watchPID int
}

type optionFunc func(*runOptions)

func (f optionFunc) apply(o *runOptions) { f(o) }

// WithClock replaces the wall clock, for scheduling and latency.
func WithClock(c Clock) Option { return optionFunc(func(o *runOptions) { o.clock = c }) }

// WithLedger appends the id of every acknowledged event to w, one per
// line, flushed before Run returns; by default there is no ledger.
func WithLedger(w io.Writer) Option { return optionFunc(func(o *runOptions) { o.ledger = w }) }

// WithWatchPID measures process pid over the run: its CPU time (from
// /proc/PID/stat) and its largest RSS (/proc/PID/status, every 100 ms).
// By default no process is watched.
func WithWatchPID(pid int) Option { return optionFunc(func(o *runOptions) { o.watchPID = pid }) }

// Run sends load to target until a bound is reached: cfg.Requests or
// cfg.Events sent, cfg.Duration passed (no request is sent after it; those
// in flight finish, each within cfg.Timeout), or ctx ended (requests in
// flight are cut off and counted as interrupted). It starts
// cfg.Concurrency workers and waits for all of them before it returns.
func Run(ctx context.Context, cfg Config, gen *Generator, target Target, opts ...Option) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := runOptions{clock: wallClock{}}
	for _, opt := range opts {
		opt.apply(&o)
	}
	var led *ledger
	if o.ledger != nil {
		led = newLedger(o.ledger)
	}
	var w *watcher
	if o.watchPID > 0 {
		var err error
		if w, err = startWatcher(o.watchPID); err != nil {
			return nil, err
		}
	}
	cpu0 := selfCPU()
	cs, hasClient := target.(clientStatser)
	var client0 ClientStats
	if hasClient {
		client0 = cs.clientStats()
	}

	r := &runner{cfg: cfg, gen: gen, target: target, clock: o.clock, ledger: led, maxRequests: cfg.maxRequests()}
	if cfg.Rate > 0 {
		r.interval = time.Duration(float64(time.Second) / cfg.Rate)
	}
	r.start = r.clock.Now()
	r.deadline = r.start.Add(cfg.Duration)
	tallies := make([]*tally, cfg.Concurrency)
	errs := make([]error, cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range tallies {
		tallies[i] = newTally()
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.work(ctx, tallies[i])
		}()
	}
	wg.Wait()

	total := newTally()
	for _, t := range tallies {
		total.merge(t)
	}
	rep := r.report(total)
	rep.SelfCPU = selfCPU() - cpu0
	if hasClient {
		st := cs.clientStats().since(client0)
		rep.Client = &st
	}
	var runErr error
	if w != nil {
		stats, err := w.stop()
		rep.Watched = stats
		runErr = err
	}
	rep.finish()
	return rep, errors.Join(append(errs, runErr, led.flush())...)
}

type runner struct {
	cfg         Config
	gen         *Generator
	target      Target
	clock       Clock
	ledger      *ledger
	maxRequests int64 // -1: no count bound
	interval    time.Duration
	start       time.Time
	deadline    time.Time
	slot        atomic.Int64
	last        atomic.Int64 // latest answer, ns after start
}

// work is one worker: it takes request slots in order until a bound is
// reached. In the open loop slot i is due at start + i*interval, and its
// latency counts from then, so a slow answer that delays later requests
// shows in their latency instead of hiding it.
func (r *runner) work(ctx context.Context, t *tally) error {
	sender, err := r.target.NewSender()
	if err != nil {
		return err
	}
	defer sender.Close()
	for ctx.Err() == nil {
		i := r.slot.Add(1) - 1
		if r.maxRequests >= 0 && i >= r.maxRequests {
			return nil
		}
		var intended time.Time
		if r.interval > 0 {
			intended = r.start.Add(time.Duration(i) * r.interval)
			if !intended.Before(r.deadline) {
				return nil
			}
			if err := r.clock.SleepUntil(ctx, intended); err != nil {
				return nil // the run was stopped
			}
			if !r.clock.Now().Before(r.deadline) {
				return nil // behind schedule at the end: the rest stay unsent
			}
		} else if intended = r.clock.Now(); !intended.Before(r.deadline) {
			return nil
		}
		events := r.gen.Batch(r.cfg.batchSize(i))
		rctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
		ans, err := sender.Send(rctx, events)
		cancel()
		done := r.clock.Now()
		t.hist.Record(done.Sub(intended))
		for d := int64(done.Sub(r.start)); ; {
			last := r.last.Load()
			if d <= last || r.last.CompareAndSwap(last, d) {
				break
			}
		}
		t.requests++
		t.events += int64(len(events))
		if err != nil {
			t.unanswered(classify(ctx, err), err, len(events))
			continue
		}
		// Results are by index; the ledger takes the id that was sent.
		if err := matchIDs(ans.Results, events); err != nil {
			t.unanswered(kindTransport, err, len(events))
			continue
		}
		t.answer(ans, len(events))
		r.ledger.add(ans.Results)
	}
	return nil
}

// tally is one worker's counts; merged at the end.
type tally struct {
	hist                                    *Histogram
	requests, events, answered              int64
	accepted, duplicates, failedEvents      int64
	timeouts, interrupted, unansweredEvents int64
	retryableNoWait                         int64
	rejected, failures, errs                map[string]int64
	firstError, firstRejection              string
}

func newTally() *tally {
	return &tally{hist: NewHistogram(), rejected: map[string]int64{}, failures: map[string]int64{}, errs: map[string]int64{}}
}

func (t *tally) answer(a Answer, n int) {
	t.answered++
	if f := a.Failure; f != nil {
		t.failures[f.key()]++
		t.failedEvents += int64(n)
		if f.Retryable && f.RetryAfter <= 0 {
			t.retryableNoWait++
		}
		return
	}
	for _, r := range a.Results {
		if r.Failure != nil {
			// One event given up on, not a gateway answer: a failure
			// carrying one event.
			t.failures[r.Failure.key()]++
			t.failedEvents++
			if t.firstError == "" {
				t.firstError = r.Message
			}
			continue
		}
		switch r.Outcome {
		case ingestv1.Outcome_ACCEPTED:
			t.accepted++
		case ingestv1.Outcome_DUPLICATE:
			t.duplicates++
		default:
			reason := r.Reason
			if r.Outcome != ingestv1.Outcome_REJECTED {
				reason = r.Outcome.String() // an answer that left the outcome unset
			}
			t.rejected[reason]++
			if t.firstRejection == "" {
				t.firstRejection = reason + ": " + r.Message
			}
			if r.Retryable && r.RetryAfter <= 0 {
				t.retryableNoWait++
			}
		}
	}
}

func (t *tally) unanswered(kind string, err error, n int) {
	t.unansweredEvents += int64(n)
	switch kind {
	case kindTimeout:
		t.timeouts++
	case kindInterrupted:
		t.interrupted++
	default:
		key := "error"
		var ae *AnswerError
		if errors.As(err, &ae) {
			key = "bad-answer"
		} else if st, ok := status.FromError(err); ok {
			key = "grpc:" + codeName(st)
		}
		t.errs[key]++
		if t.firstError == "" {
			t.firstError = err.Error()
		}
	}
}

func (t *tally) merge(o *tally) {
	t.hist.Merge(o.hist)
	t.requests += o.requests
	t.events += o.events
	t.answered += o.answered
	t.accepted += o.accepted
	t.duplicates += o.duplicates
	t.failedEvents += o.failedEvents
	t.timeouts += o.timeouts
	t.interrupted += o.interrupted
	t.unansweredEvents += o.unansweredEvents
	t.retryableNoWait += o.retryableNoWait
	for _, m := range [][2]map[string]int64{{t.rejected, o.rejected}, {t.failures, o.failures}, {t.errs, o.errs}} {
		for k, v := range m[1] {
			m[0][k] += v
		}
	}
	if t.firstError == "" {
		t.firstError = o.firstError
	}
	if t.firstRejection == "" {
		t.firstRejection = o.firstRejection
	}
}

func (r *runner) report(t *tally) *Report {
	mode := "closed"
	if r.interval > 0 {
		mode = "open"
	}
	return &Report{
		RunID: r.gen.RunID(), Target: r.cfg.Target, Addr: r.cfg.Addr, EventType: r.cfg.EventType,
		Encoding: r.cfg.Encoding, EventsPerRequest: r.cfg.EventsPerRequest, PayloadBytes: r.gen.PayloadBytes(),
		Mode: mode, Concurrency: r.cfg.Concurrency, Rate: r.cfg.Rate, Timeout: r.cfg.Timeout,
		Elapsed:  time.Duration(r.last.Load()),
		Requests: t.requests, Events: t.events, Answered: t.answered,
		Accepted: t.accepted, Duplicates: t.duplicates, Rejected: t.rejected,
		Failures: t.failures, FailedEvents: t.failedEvents,
		Timeouts: t.timeouts, Interrupted: t.interrupted, UnansweredEvents: t.unansweredEvents,
		Errors: t.errs, FirstError: t.firstError, RetryableWithoutWait: t.retryableNoWait,
		Unsent: r.unsent(t.requests), FirstRejection: t.firstRejection,
		Latency: Latency{
			Count: t.hist.Count(), Mean: t.hist.Mean(),
			P50: t.hist.Percentile(0.50), P90: t.hist.Percentile(0.90), P99: t.hist.Percentile(0.99),
			P999: t.hist.Percentile(0.999), Max: t.hist.Max(),
		},
	}
}

func (l Latency) String() string {
	return fmt.Sprintf("p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  (mean %s, %d requests)",
		round(l.P50), round(l.P90), round(l.P99), round(l.P999), round(l.Max), round(l.Mean), l.Count)
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// unsent is how many requests of the open loop's schedule were due before
// the end but never sent, because the run was behind schedule.
func (r *runner) unsent(sent int64) int64 {
	if r.interval <= 0 {
		return 0
	}
	due := int64((r.cfg.Duration + r.interval - 1) / r.interval)
	if r.maxRequests >= 0 {
		due = min(due, r.maxRequests)
	}
	return max(due-sent, 0)
}

// matchIDs sets each result's id to the id of the event at its index; a
// result that names another id is an answer the run cannot trust.
func matchIDs(rs []EventResult, events []*ingestv1.Event) error {
	for j := range rs {
		want := events[j].GetId()
		if rs[j].ID != "" && rs[j].ID != want {
			return &AnswerError{Msg: fmt.Sprintf("result %d is for id %q, sent %q", j, rs[j].ID, want)}
		}
		rs[j].ID = want
	}
	return nil
}
