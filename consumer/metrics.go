package consumer

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/promreg"
)

// metrics are the consumer's collectors, registered as one unit.
type metrics struct {
	lag         *prometheus.GaugeVec
	inFlight    prometheus.Gauge
	sinkLatency *prometheus.HistogramVec
	sinkErrors  *prometheus.CounterVec
	circuit     *prometheus.GaugeVec
	mode        *prometheus.GaugeVec
	deadLetters *prometheus.CounterVec
	retries     *prometheus.CounterVec
	committed   *prometheus.GaugeVec
	events      *prometheus.CounterVec

	// sinkConflicts counts events whose identity the sink held with
	// another payload.
	sinkConflicts *prometheus.CounterVec
	// drainRefused counts the drained records parked unwritten.
	drainRefused *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_consumer_lag",
			Help: "Records between the committed offset and the end of each assigned partition.",
		}, []string{"topic", "partition"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_consumer_in_flight",
			Help: "Records polled and not yet finished.",
		}),
		sinkLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_sink_write_seconds",
			Help:    "Duration of Sink.Write calls.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"sink"}),
		sinkErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_sink_errors_total",
			Help: "Failed Sink.Write calls by error class.",
		}, []string{"sink", "class"}),
		circuit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_sink_circuit_state",
			Help: "Circuit breaker state of each sink: 0 closed, 1 open, 2 half_open.",
		}, []string{"sink"}),
		mode: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_consumer_mode",
			Help: "1 for the consumer's current mode, 0 for the others.",
		}, []string{"mode"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_consumer_dead_letters_total",
			Help: "Records produced to DLQ (kind=dlq) and parked (kind=parked) topics.",
		}, []string{"topic", "kind", "class"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_consumer_retries_total",
			Help: "In-process retries of transient sink failures.",
		}, []string{"sink"}),
		committed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_consumer_committed_offset",
			Help: "Last offset committed for each partition.",
		}, []string{"topic", "partition"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_consumer_events_total",
			Help: "Records finished, by outcome: written, dlq, parked, skipped.",
		}, []string{"outcome"}),
		sinkConflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_sink_conflicts_total",
			Help: "Events whose identity (source, id) the sink held with another payload: the first kept, the copy recorded.",
		}, []string{"sink", "source"}),
		drainRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_consumer_drain_refused_total",
			Help: "Drained DLQ records parked instead of written, by reason: source_mismatch, contract.",
		}, []string{"topic", "reason"}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.lag, m.inFlight, m.sinkLatency, m.sinkErrors, m.circuit, m.mode,
		m.deadLetters, m.retries, m.committed, m.events, m.sinkConflicts, m.drainRefused}
}

// register registers the consumer's collectors and more, those of its
// parts, as one unit.
func (m *metrics) register(r prometheus.Registerer, more ...prometheus.Collector) error {
	return promreg.Register(r, append(m.collectors(), more...)...)
}

func (m *metrics) unregister(r prometheus.Registerer, more ...prometheus.Collector) {
	promreg.Unregister(r, append(m.collectors(), more...)...)
}
