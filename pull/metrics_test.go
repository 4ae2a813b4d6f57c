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
