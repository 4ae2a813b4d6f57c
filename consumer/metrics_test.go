package consumer

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/record"
)

// TestEndToEndLatency: every written event is observed in
// sluice_consumer_end_to_end_seconds{route="direct"} as the time since its
// ingested_at header, read on the consumer's clock.
func TestEndToEndLatency(t *testing.T) {
	addrs := newCluster(t, 1)
	ids := produceEvents(t, addrs, 5, 5)
	// The consumer's clock runs 90s ahead of the gateway's: each event is
	// at least 90s old when it is written.
	clock := &offsetClock{}
	clock.Advance(90 * time.Second)
	s := newMemSink()
	reg := prometheus.NewRegistry()
	r := start(t, testConfig("e2e"), addrs, s, WithRegisterer(reg), WithClock(clock))
	waitFor(t, 20*time.Second, "all written", func() bool { return s.hasAll(ids) })
	waitFor(t, 20*time.Second, "all observed", func() bool {
		m, _ := sample(t, reg, "sluice_consumer_end_to_end_seconds", map[string]string{"route": routeDirect})
		return m.GetHistogram().GetSampleCount() == 5
	})
	m, _ := sample(t, reg, "sluice_consumer_end_to_end_seconds", map[string]string{"route": routeDirect})
	if sum := m.GetHistogram().GetSampleSum(); sum < 5*90 {
		t.Errorf("sum of end-to-end latencies %v, want at least 5 × 90s", sum)
	}
	for _, b := range m.GetHistogram().GetBucket() {
		if b.GetUpperBound() < 90 && b.GetCumulativeCount() != 0 {
			t.Errorf("bucket le=%v holds %d events at least 90s old", b.GetUpperBound(), b.GetCumulativeCount())
		}
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestSeriesFromStart: a consumer that has handled nothing exports every
// series whose labels the config bounds, at zero, so alerts on their
// rate() and the dashboard see them before the first event.
func TestSeriesFromStart(t *testing.T) {
	addrs := newCluster(t, 1)
	reg := prometheus.NewRegistry()
	start(t, testConfig("fresh"), addrs, newMemSink(), WithRegisterer(reg))
	dlqTopic, parkedTopic := record.DLQTopic(testTopic), record.ParkedTopic(testTopic)
	fp := fingerprintOf(t, testRegistry(t))
	cases := []struct {
		name   string
		labels map[string]string
	}{
		{"sluice_consumer_events_total", map[string]string{"outcome": "written"}},
		{"sluice_consumer_events_total", map[string]string{"outcome": "dlq"}},
		{"sluice_consumer_events_total", map[string]string{"outcome": "parked"}},
		{"sluice_consumer_events_total", map[string]string{"outcome": "skipped"}},
		{"sluice_consumer_dlq_drained_total", map[string]string{"outcome": "written"}},
		{"sluice_consumer_dlq_drained_total", map[string]string{"outcome": "dlq"}},
		{"sluice_consumer_dlq_drained_total", map[string]string{"outcome": "parked"}},
		{"sluice_consumer_dlq_drained_total", map[string]string{"outcome": "skipped"}},
		{"sluice_consumer_end_to_end_seconds", map[string]string{"route": "direct"}},
		{"sluice_consumer_end_to_end_seconds", map[string]string{"route": "dlq"}},
		{"sluice_consumer_dead_letters_total", map[string]string{"topic": dlqTopic, "kind": "dlq", "class": "transient"}},
		{"sluice_consumer_dead_letters_total", map[string]string{"topic": dlqTopic, "kind": "dlq", "class": "permanent"}},
		{"sluice_consumer_dead_letters_total", map[string]string{"topic": dlqTopic, "kind": "dlq", "class": "decode"}},
		{"sluice_consumer_dead_letters_total", map[string]string{"topic": dlqTopic, "kind": "dlq", "class": "schema"}},
		{"sluice_consumer_dead_letters_total", map[string]string{"topic": parkedTopic, "kind": "parked", "class": "transient"}},
		{"sluice_consumer_drain_refused_total", map[string]string{"topic": dlqTopic, "reason": "contract"}},
		{"sluice_consumer_drain_refused_total", map[string]string{"topic": dlqTopic, "reason": "source_mismatch"}},
		{"sluice_consumer_events_by_schema_total", map[string]string{"type": testType, "fingerprint": fp, "decoded_with": "own"}},
		{"sluice_consumer_events_by_schema_total", map[string]string{"type": testType, "fingerprint": "unknown", "decoded_with": "newest"}},
		{"sluice_consumer_events_by_schema_total", map[string]string{"type": testType, "fingerprint": "unknown", "decoded_with": "none"}},
		{"sluice_sink_errors_total", map[string]string{"sink": "mem", "class": "transient"}},
		{"sluice_sink_errors_total", map[string]string{"sink": "mem", "class": "permanent"}},
		{"sluice_sink_write_seconds", map[string]string{"sink": "mem"}},
		{"sluice_consumer_retries_total", map[string]string{"sink": "mem"}},
		{"sluice_sink_circuit_state", map[string]string{"sink": "mem"}},
		{"sluice_consumer_mode", map[string]string{"mode": "NORMAL"}},
		{"sluice_consumer_mode", map[string]string{"mode": "PAUSED"}},
		{"sluice_consumer_mode", map[string]string{"mode": "DRAIN_DLQ"}},
	}
	for _, tc := range cases {
		if _, ok := sample(t, reg, tc.name, tc.labels); !ok {
			t.Errorf("a fresh consumer has no %s%v", tc.name, tc.labels)
		}
	}
}
