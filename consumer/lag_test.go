package consumer

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestLagGauge: records produced and not yet finished show as lag on
// sluice_consumer_lag of their partition; once they are written and
// committed the lag is 0.
func TestLagGauge(t *testing.T) {
	addrs := newCluster(t, 1)
	ids := produceEvents(t, addrs, 20, 20)
	s := newMemSink()
	open := s.closeGate()
	t.Cleanup(open)
	reg := prometheus.NewRegistry()
	start(t, testConfig("lag"), addrs, s, WithRegisterer(reg))
	partition := map[string]string{"topic": testTopic, "partition": "0"}
	lag := func() float64 {
		v, _ := gauge(t, reg, "sluice_consumer_lag", partition)
		return v
	}
	// The writes are held: nothing is committed, so every record is lag.
	waitFor(t, 20*time.Second, "lag of the held records", func() bool { return lag() == float64(len(ids)) })
	open()
	waitFor(t, 20*time.Second, "all written", func() bool { return s.hasAll(ids) })
	waitFor(t, 20*time.Second, "lag 0 once committed", func() bool {
		v, ok := gauge(t, reg, "sluice_consumer_lag", partition)
		return ok && v == 0
	})
}
