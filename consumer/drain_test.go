package consumer

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluicehq/sluice/internal/logtest"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// seedDLQ runs a consumer whose sink fails ids (permanent ones
// permanently, the others transiently until budget ends) and waits until
// they are all dead-lettered and the rest written.
func seedDLQ(t *testing.T, addrs []string, group string, n int, transient, permanent []string, clock Clock) *memSink {
	t.Helper()
	ids := produceEvents(t, addrs, n, n)
	s := newMemSink()
	failing := map[string]error{}
	for _, id := range transient {
		failing[id] = sink.TransientError(errors.New("receiver 503"), 0)
	}
	for _, id := range permanent {
		failing[id] = sink.PermanentError(errors.New("receiver 422"))
	}
	s.setFail(func(b []sink.Event) error { return failing[b[0].ID] })
	cfg := testConfig(group)
	cfg.Retry.MaxAttempts = 2
	cfg.Breaker.MinRequests = 10
	// This consumer only fills the DLQ; it must not drain it.
	cfg.DLQ.DrainInterval = time.Hour
	r := start(t, cfg, addrs, s, WithClock(clock))
	waitFor(t, 20*time.Second, "dead letters", func() bool {
		return len(readAll(t, addrs, record.DLQTopic(testTopic))) == len(transient)+len(permanent)
	})
	waitFor(t, 20*time.Second, "the rest written", func() bool { return s.count() == len(ids)-len(transient)-len(permanent) })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	return s
}

func drainConfig(group string) Config {
	cfg := testConfig(group)
	cfg.Retry.MaxAttempts = 2
	// The failing dead letter is the only traffic: a breaker that never
	// judges leaves it to max_elapsed to give up.
	cfg.Breaker.MinRequests = 1000
	cfg.Retry.MaxElapsed = 20 * time.Millisecond
	cfg.DLQ.MaxRetries = 2
	return cfg
}

// TestDrainDLQ: once the sink is healthy, retryable dead letters are
// written in DRAIN_DLQ; permanent ones are skipped and stay in the DLQ.
func TestDrainDLQ(t *testing.T) {
	addrs := newCluster(t, 1)
	seedDLQ(t, addrs, "drain", 20, []string{"e00004", "e00011"}, []string{"e00007"}, nil)

	s := newMemSink()
	var logs logtest.Buffer
	reg := prometheus.NewRegistry()
	r := start(t, drainConfig("drain"), addrs, s, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), WithRegisterer(reg))
	waitFor(t, 20*time.Second, "retryable dead letters written", func() bool {
		return s.hasAll([]string{"e00004", "e00011"})
	})
	waitFor(t, 20*time.Second, "DLQ committed to its end", func() bool {
		return committed(t, addrs, "drain", record.DLQTopic(testTopic))[0] == 3
	})
	waitFor(t, 20*time.Second, "NORMAL", func() bool { return r.c.Mode() == ModeNormal })
	// What left the DLQ: the two retryable written, the permanent one
	// skipped; sluice_consumer_dlq_drained_total is the DLQ's drain rate.
	for outcome, want := range map[string]float64{outcomeWritten: 2, outcomeSkipped: 1, outcomeDLQ: 0, outcomeParked: 0} {
		if got := counter(t, reg, "sluice_consumer_dlq_drained_total", map[string]string{"outcome": outcome}); got != want {
			t.Errorf("sluice_consumer_dlq_drained_total{outcome=%q} = %v, want %v", outcome, got, want)
		}
	}
	if m, _ := sample(t, reg, "sluice_consumer_end_to_end_seconds", map[string]string{"route": routeDLQ}); m.GetHistogram().GetSampleCount() != 2 {
		t.Errorf("end-to-end observations of drained events: %v, want 2", m.GetHistogram().GetSampleCount())
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "to=DRAIN_DLQ") {
		t.Fatal("never in DRAIN_DLQ")
	}
	if s.count() != 2 {
		t.Fatalf("drain wrote %v, want the two retryable events", s.ids())
	}
	if n := len(readAll(t, addrs, record.DLQTopic(testTopic))); n != 3 {
		t.Fatalf("DLQ holds %d records, want the 3 original ones", n)
	}
}

// TestDrainRefailsToParked: a dead letter that keeps failing goes back to
// the DLQ with dlq_retries growing by one each drain, first_failure_at
// kept, and past max_retries to the parked topic.
func TestDrainRefailsToParked(t *testing.T) {
	addrs := newCluster(t, 1)
	seedDLQ(t, addrs, "refail", 10, []string{"e00002"}, nil, nil)

	s := newMemSink()
	s.setFail(func(b []sink.Event) error {
		if b[0].ID == "e00002" {
			return sink.TransientError(errors.New("still 503"), 0)
		}
		return nil
	})
	cfg := drainConfig("refail")
	reg := prometheus.NewRegistry()
	r := start(t, cfg, addrs, s, WithRegisterer(reg))
	waitFor(t, 20*time.Second, "parked", func() bool { return len(readAll(t, addrs, record.ParkedTopic(testTopic))) == 1 })
	// Each drain of the record finished it: back to the DLQ twice, then
	// parked.
	waitFor(t, 20*time.Second, "drains counted", func() bool {
		return counter(t, reg, "sluice_consumer_dlq_drained_total", map[string]string{"outcome": outcomeParked}) == 1
	})
	if got := counter(t, reg, "sluice_consumer_dlq_drained_total", map[string]string{"outcome": outcomeDLQ}); got != 2 {
		t.Errorf("sluice_consumer_dlq_drained_total{outcome=\"dlq\"} = %v, want 2", got)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	dlq := readAll(t, addrs, record.DLQTopic(testTopic))
	if len(dlq) != 3 {
		t.Fatalf("DLQ holds %d records, want 3 (dlq_retries 0, 1, 2)", len(dlq))
	}
	first := mustEnvelope(t, dlq[0]).FirstFailureAt
	for i, rec := range dlq {
		env := mustEnvelope(t, rec)
		if env.DLQRetries != i || !env.FirstFailureAt.Equal(first) || env.SourceOffset != 2 || env.SourceTopic != testTopic || !env.Retryable {
			t.Fatalf("DLQ record %d: %+v", i, env)
		}
	}
	parked := mustEnvelope(t, readAll(t, addrs, record.ParkedTopic(testTopic))[0])
	if parked.DLQRetries != 3 || parked.ParkedReason != record.ParkedMaxRetries || parked.Retryable || !parked.FirstFailureAt.Equal(first) {
		t.Fatalf("parked envelope %+v", parked)
	}
}

// TestDrainPastDeadlineParks: a dead letter failing again after
// first_failure_at + deadline is parked at once.
func TestDrainPastDeadlineParks(t *testing.T) {
	addrs := newCluster(t, 1)
	clock := &offsetClock{}
	seedDLQ(t, addrs, "deadline", 10, []string{"e00005"}, nil, clock)
	clock.Advance(2 * time.Hour)

	s := newMemSink()
	s.setFail(func(b []sink.Event) error {
		if b[0].ID == "e00005" {
			return sink.TransientError(errors.New("still 503"), 0)
		}
		return nil
	})
	cfg := drainConfig("deadline")
	cfg.DLQ.MaxRetries = 100
	cfg.DLQ.Deadline = time.Hour
	r := start(t, cfg, addrs, s, WithClock(clock))
	waitFor(t, 20*time.Second, "parked", func() bool { return len(readAll(t, addrs, record.ParkedTopic(testTopic))) == 1 })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, addrs, record.DLQTopic(testTopic))); n != 1 {
		t.Fatalf("DLQ holds %d records, want only the original", n)
	}
	parked := mustEnvelope(t, readAll(t, addrs, record.ParkedTopic(testTopic))[0])
	if parked.ParkedReason != record.ParkedDeadline || parked.DLQRetries != 1 {
		t.Fatalf("parked envelope %+v", parked)
	}
}

func mustEnvelope(t *testing.T, r *kgo.Record) record.Envelope {
	t.Helper()
	env, err := record.ParseEnvelope(r)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// TestDrainParksUnreadableEnvelope: a DLQ record sluice did not write (no
// envelope) is parked, not retried and not dropped.
func TestDrainParksUnreadableEnvelope(t *testing.T) {
	addrs := newCluster(t, 1)
	rec := eventRecord(t, record.DLQTopic(testTopic), "stray", "k", logLine(t))
	produce(t, addrs, rec)
	s := newMemSink()
	r := start(t, drainConfig("stray"), addrs, s)
	waitFor(t, 20*time.Second, "parked", func() bool { return len(readAll(t, addrs, record.ParkedTopic(testTopic))) == 1 })
	waitFor(t, 20*time.Second, "DLQ committed", func() bool {
		return committed(t, addrs, "stray", record.DLQTopic(testTopic))[0] == 1
	})
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	env := mustEnvelope(t, readAll(t, addrs, record.ParkedTopic(testTopic))[0])
	if env.ParkedReason != record.ParkedUnreadable || env.Class != "decode" || env.SourceTopic != testTopic {
		t.Fatalf("parked envelope %+v", env)
	}
	if s.count() != 0 {
		t.Fatal("a record without envelope was written")
	}
}

// dlqRecord is a retryable dead letter of event id in the test topic's
// DLQ whose envelope names source as its source topic.
func dlqRecord(t *testing.T, id, source string, value []byte) *kgo.Record {
	t.Helper()
	at := time.Now().UTC()
	env := record.Envelope{Class: "transient", Error: "receiver 503", Sink: "mem", Attempts: 2, FirstFailureAt: at,
		LastFailureAt: at, Retryable: true, SourceTopic: source, SourceOffset: 7, Group: "g"}
	return record.NewDeadLetter(record.DLQTopic(testTopic), eventRecord(t, testTopic, id, id, value), &env)
}

// brokenLogLine is a LogLine that decodes but breaks its contract: its
// message is empty.
func brokenLogLine(t *testing.T) []byte {
	t.Helper()
	return protowire.AppendBytes(protowire.AppendTag(logLine(t), 3, protowire.BytesType), nil)
}

// TestDrainRefusesUncheckedRecords: a drained DLQ record goes back to its
// own DLQ topic's source or nowhere. One whose envelope names another
// topic is parked source_mismatch, one that breaks its contract is parked
// contract; neither is written to the sink.
func TestDrainRefusesUncheckedRecords(t *testing.T) {
	addrs := newCluster(t, 1)
	produce(t, addrs,
		dlqRecord(t, "to-audit", record.AuditTopic, logLine(t)),
		dlqRecord(t, "to-orders", "ingest.examples.shop.v1.OrderPlaced", logLine(t)),
		dlqRecord(t, "broken", testTopic, brokenLogLine(t)),
		dlqRecord(t, "fine", testTopic, logLine(t)),
	)
	s := newMemSink()
	r := start(t, drainConfig("unchecked"), addrs, s)
	waitFor(t, 20*time.Second, "three parked", func() bool { return len(readAll(t, addrs, record.ParkedTopic(testTopic))) == 3 })
	waitFor(t, 20*time.Second, "the valid one written", func() bool { return s.hasAll([]string{"fine"}) })
	waitFor(t, 20*time.Second, "DLQ committed", func() bool {
		return committed(t, addrs, "unchecked", record.DLQTopic(testTopic))[0] == 4
	})
	refused := testutil.ToFloat64(r.c.m.drainRefused.WithLabelValues(record.DLQTopic(testTopic), record.ParkedSourceMismatch))
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if got := s.ids(); len(got) != 1 {
		t.Fatalf("sink holds %v, want only the valid record", got)
	}
	if refused != 2 {
		t.Fatalf("%v source mismatches counted, want 2", refused)
	}
	want := map[string]string{"to-audit": record.ParkedSourceMismatch, "to-orders": record.ParkedSourceMismatch, "broken": record.ParkedContract}
	for _, rec := range readAll(t, addrs, record.ParkedTopic(testTopic)) {
		env := mustEnvelope(t, rec)
		h, err := record.ParseEvent(rec)
		if err != nil {
			t.Fatal(err)
		}
		if env.ParkedReason != want[h.ID] || env.SourceTopic != testTopic || env.DLQRetries != 1 || env.Retryable {
			t.Fatalf("%s parked with %+v, want reason %s", h.ID, env, want[h.ID])
		}
		delete(want, h.ID)
	}
	if n := len(readAll(t, addrs, record.DLQTopic(testTopic))); n != 4 {
		t.Fatalf("%d records in %s", n, record.DLQTopic(testTopic))
	}
	// Nothing reaches the audit topic but the consumer's decisions (the
	// memory sink keeps no audit table): the three parked, and the valid
	// one retried and written.
	var decisions []string
	for _, rec := range readAll(t, addrs, record.AuditTopic) {
		d, err := record.ParseDecision(rec)
		if err != nil {
			t.Fatalf("a record in %s that is no decision: %v: %q", record.AuditTopic, err, rec.Value)
		}
		decisions = append(decisions, d.EventID+" "+d.Action+" "+d.Detail)
	}
	slices.Sort(decisions)
	if want := []string{"broken parked contract", "fine retried ", "fine written ", "to-audit parked source_mismatch",
		"to-orders parked source_mismatch"}; !slices.Equal(decisions, want) {
		t.Fatalf("decisions in %s: %q, want %q", record.AuditTopic, decisions, want)
	}
}

// TestDrainDLQMode: with retryable records in the DLQ and a healthy sink,
// the consumer enters DRAIN_DLQ (Mode and sluice_consumer_mode say so, and
// the DLQ partition is fetched), writes the records and returns to NORMAL
// with the DLQ committed to its end and paused again.
func TestDrainDLQMode(t *testing.T) {
	addrs := newCluster(t, 1)
	produce(t, addrs,
		dlqRecord(t, "dlq-a", testTopic, logLine(t)),
		dlqRecord(t, "dlq-b", testTopic, logLine(t)),
	)
	s := newMemSink()
	// The sink is healthy but holds its writes, so that DRAIN_DLQ lasts
	// until the test has seen it.
	open := s.closeGate()
	t.Cleanup(open)
	reg := prometheus.NewRegistry()
	r := start(t, drainConfig("drain-mode"), addrs, s, WithRegisterer(reg))
	mode := func(m Mode) float64 {
		v, _ := gauge(t, reg, "sluice_consumer_mode", map[string]string{"mode": m.String()})
		return v
	}
	waitFor(t, 20*time.Second, "DRAIN_DLQ", func() bool { return r.c.Mode() == ModeDrainDLQ })
	if mode(ModeDrainDLQ) != 1 || mode(ModeNormal) != 0 {
		t.Fatalf("sluice_consumer_mode: DRAIN_DLQ %v, NORMAL %v in DRAIN_DLQ", mode(ModeDrainDLQ), mode(ModeNormal))
	}
	if slices.Contains(r.c.client.PauseFetchTopics(), record.DLQTopic(testTopic)) {
		t.Fatal("the DLQ topic is paused in DRAIN_DLQ")
	}
	open()
	waitFor(t, 20*time.Second, "the dead letters written", func() bool { return s.hasAll([]string{"dlq-a", "dlq-b"}) })
	waitFor(t, 20*time.Second, "DLQ committed to its end", func() bool {
		return committed(t, addrs, "drain-mode", record.DLQTopic(testTopic))[0] == 2
	})
	waitFor(t, 20*time.Second, "NORMAL", func() bool { return r.c.Mode() == ModeNormal })
	if mode(ModeNormal) != 1 || mode(ModeDrainDLQ) != 0 {
		t.Fatalf("sluice_consumer_mode: NORMAL %v, DRAIN_DLQ %v after the drain", mode(ModeNormal), mode(ModeDrainDLQ))
	}
	if !slices.Contains(r.c.client.PauseFetchTopics(), record.DLQTopic(testTopic)) {
		t.Fatal("the DLQ topic is fetched in NORMAL")
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, addrs, record.ParkedTopic(testTopic))); n != 0 {
		t.Fatalf("%d records parked", n)
	}
}
