package admission

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSwitchesFromStart: every mode switch exists at zero before the
// first, so that rate() and an alert on it see the first switch.
func TestSwitchesFromStart(t *testing.T) {
	c := newCluster(t, []string{"ingest.t"})
	p := newTestProducer(t, c.ListenAddrs(), nil)
	s := openSpool(t, t.TempDir(), nil)
	defer s.Close()
	reg := prometheus.NewRegistry()
	a := newTestAdmission(t, p, s, nil, reg)
	defer a.Close()
	if n, err := testutil.GatherAndCount(reg, "sluice_admission_switches_total"); err != nil || n != 4 {
		t.Fatalf("sluice_admission_switches_total: %d series (%v), want 4", n, err)
	}
	for _, l := range [][2]string{{"SPOOLING", "latency"}, {"SPOOLING", "in_flight_budget"}, {"SPOOLING", "kafka_error"}, {"DIRECT", "drained"}} {
		if got := testutil.ToFloat64(a.metrics.switches.WithLabelValues(l[0], l[1])); got != 0 {
			t.Errorf("switches %v = %v before any switch", l, got)
		}
	}
}
