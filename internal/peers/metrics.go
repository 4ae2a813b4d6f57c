package peers

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/promreg"
)

// Metrics are the membership's metrics. The gateway registers them whether
// or not the replicas coordinate: alone, sluice_gateway_replicas is 1.
type Metrics struct {
	reg prometheus.Registerer

	// Replicas is sluice_gateway_replicas: the replicas this one counts,
	// itself included; every source's rate here is its configured rate
	// divided by it.
	Replicas prometheus.Gauge
	ignored  *prometheus.CounterVec
	writes   prometheus.Counter
}

// NewMetrics registers the metrics on reg (none when reg is nil), with
// sluice_gateway_replicas at 1.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		reg: reg,
		Replicas: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_gateway_replicas",
			Help: "Gateway replicas this one counts alive, itself included, from the cluster's heartbeat topic (1 without one); each source's events/s and bytes/s here are its configured rates divided by it.",
		}),
		ignored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_gateway_heartbeats_ignored_total",
			Help: "Heartbeats read and not counted, by reason: malformed (not a heartbeat), stale (older than member_ttl when read), over_cap (a new replica while 1024 are counted).",
		}, []string{"reason"}),
		writes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_gateway_heartbeat_write_errors_total",
			Help: "Heartbeats of this replica that Kafka did not take (or that could not be queued).",
		}),
	}
	m.Replicas.Set(1)
	for _, r := range []string{ignoredMalformed, ignoredStale, ignoredOverCap} {
		m.ignored.WithLabelValues(r)
	}
	if reg != nil {
		if err := promreg.Register(reg, m.Replicas, m.ignored, m.writes); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Unregister removes the metrics from the registerer they were registered on.
func (m *Metrics) Unregister() {
	if m.reg != nil {
		promreg.Unregister(m.reg, m.Replicas, m.ignored, m.writes)
	}
}
