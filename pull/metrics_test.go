package pull

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetricsRegistration: the metrics register all or none, report the
// cursor age at scrape time and unregister.
func TestMetricsRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Fatal("registered twice")
	}
	m.cursorAge.now = func() time.Time { return fuzzNow }
	m.cursorAge.set("acme", fuzzNow.Add(-90*time.Second))
	m.up.WithLabelValues("acme").Set(1)
	want := `
# HELP sluice_poller_cursor_age_seconds Seconds since the partner's cursor was last saved, for pollers running on this replica.
# TYPE sluice_poller_cursor_age_seconds gauge
sluice_poller_cursor_age_seconds{partner="acme"} 90
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sluice_poller_cursor_age_seconds"); err != nil {
		t.Error(err)
	}
	m.Unregister()
	if _, err := NewMetrics(reg); err != nil {
		t.Fatalf("after Unregister: %v", err)
	}
}

// TestConfiguredSeries: a poller that has not run yet exports its interval,
// sluice_poller_up 0 and its bounded series at zero.
func TestConfiguredSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unregister()
	cfg := testConfig("acme", "http://127.0.0.1:1")
	cfg.Interval = 45 * time.Second
	if _, err := NewPoller(cfg, nil, nil, WithMetrics(m), WithLogger(quietLog())); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP sluice_poller_interval_seconds The partner's configured interval between polls once caught up, the unit in which its cursor age is judged.
# TYPE sluice_poller_interval_seconds gauge
sluice_poller_interval_seconds{partner="acme"} 45
# HELP sluice_poller_up 1 while the partner's poller runs on this replica, 0 when it does not (stopped, or not yet or not here started).
# TYPE sluice_poller_up gauge
sluice_poller_up{partner="acme"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sluice_poller_interval_seconds", "sluice_poller_up"); err != nil {
		t.Error(err)
	}
	for name, n := range map[string]int{
		"sluice_poller_pages_total":         2,
		"sluice_poller_wait_seconds_total":  6,
		"sluice_poller_items_total":         3,
		"sluice_poller_circuit_state":       1,
		"sluice_poller_auth_failures_total": 1,
	} {
		got, err := testutil.GatherAndCount(reg, name)
		if err != nil {
			t.Fatal(err)
		}
		if got != n {
			t.Errorf("%s: %d series before the first poll, want %d", name, got, n)
		}
	}
}
