package admission

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/promreg"
	"github.com/sluicehq/sluice/publish"
)

// metrics are admission's and the drainer's Prometheus metrics, in one
// struct. They are always collected; they are registered only when
// WithRegisterer is given.
type metrics struct {
	mode        prometheus.GaugeFunc
	drainRate   prometheus.GaugeFunc
	switches    *prometheus.CounterVec
	spooled     prometheus.Counter
	full        prometheus.Counter
	drained     prometheus.Counter
	drainErrors prometheus.Counter
	undecodable prometheus.Counter
	tooLarge    prometheus.Counter

	// drainBlocked is 1 for the reason Kafka refuses the spooled record
	// the drainer is stuck at, while it is; drainRefusals counts those
	// refusals, one per attempt.
	drainBlocked  *prometheus.GaugeVec
	drainRefusals *prometheus.CounterVec

	// shares collects sluice_source_spool_bytes{source}; nil without
	// per-source shares.
	shares prometheus.Collector
}

// Reasons of sluice_admission_switches_total: to SPOOLING for a produce
// timeout, a full in-flight budget or a Kafka error; to DIRECT once drained.
const (
	switchLatency        = "latency"
	switchInFlightBudget = "in_flight_budget"
	switchKafkaError     = "kafka_error"
	switchDrained        = "drained"
)

func newMetrics(mode, rate func() float64) *metrics {
	m := &metrics{
		mode: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sluice_admission_mode", Help: "Admission mode: 0 DIRECT, 1 SPOOLING.",
		}, mode),
		drainRate: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sluice_spool_drain_bytes_per_second", Help: "Smoothed rate at which the drainer publishes spooled bytes.",
		}, rate),
		switches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_admission_switches_total", Help: "Admission mode switches by target mode and reason.",
		}, []string{"to", "reason"}),
		spooled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_admission_spooled_records_total", Help: "Records made durable in the spool.",
		}),
		full: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_admission_buffer_full_records_total", Help: "Records refused because the spool was full.",
		}),
		drained: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_spool_drained_records_total", Help: "Spooled records published to Kafka by the drainer.",
		}),
		drainErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_spool_drain_errors_total", Help: "Drain publishes that failed and were retried.",
		}),
		undecodable: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_spool_undecodable_records_total", Help: "Spooled records that passed their checksum but did not decode.",
		}),
		tooLarge: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_admission_too_large_records_total", Help: "Records refused because they are too large for the spool.",
		}),
		drainBlocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_spool_drain_blocked",
			Help: "1 while Kafka refuses the spooled record the drainer is at permanently, by publish.Refusal's reason; the drainer keeps it and retries.",
		}, []string{"reason"}),
		drainRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_spool_drain_refusals_total",
			Help: "Drain attempts Kafka refused permanently, by publish.Refusal's reason.",
		}, []string{"reason"}),
	}
	// Every reason exists at zero, so that an alert sees the first.
	for _, r := range publish.Refusals() {
		m.drainBlocked.WithLabelValues(r)
		m.drainRefusals.WithLabelValues(r)
	}
	// Every switch exists at zero, so that rate() sees the first one.
	for _, r := range []string{switchLatency, switchInFlightBudget, switchKafkaError} {
		m.switches.WithLabelValues(ModeSpooling.String(), r)
	}
	m.switches.WithLabelValues(ModeDirect.String(), switchDrained)
	return m
}

func (m *metrics) register(r prometheus.Registerer) error {
	cs := []prometheus.Collector{m.mode, m.drainRate, m.switches, m.spooled, m.full, m.drained, m.drainErrors, m.undecodable, m.tooLarge,
		m.drainBlocked, m.drainRefusals}
	if m.shares != nil {
		cs = append(cs, m.shares)
	}
	return promreg.Register(r, cs...)
}
