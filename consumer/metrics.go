package consumer

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/promreg"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
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
	// drained counts the records of drain passes finished, by outcome:
	// what leaves the DLQ, against deadLetters{kind="dlq"}, what enters it.
	drained *prometheus.CounterVec
	// endToEnd is the time from an event's ingested_at to the sink write
	// that made it durable.
	endToEnd *prometheus.HistogramVec
}

// Outcomes of a finished record, the outcome label of
// sluice_consumer_events_total and sluice_consumer_dlq_drained_total.
const (
	outcomeWritten = "written"
	outcomeDLQ     = "dlq"
	outcomeParked  = "parked"
	outcomeSkipped = "skipped"
)

// Routes of sluice_consumer_end_to_end_seconds: a record of a source topic,
// or one drained from its DLQ (whose ingested_at is as old as its failures).
const (
	routeDirect = "direct"
	routeDLQ    = "dlq"
)

// endToEndBuckets resolve a p95 around the 2-minute objective and reach 10
// minutes; past them the +Inf bucket says "later than 10 minutes".
var endToEndBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 45, 60, 75, 90, 105, 120, 150, 180, 240, 300, 450, 600}

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
		drained: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_consumer_dlq_drained_total",
			Help: "DLQ records finished by drain passes, by outcome: written, dlq (failed again, back to the DLQ), parked, skipped (not retryable, left in the DLQ).",
		}, []string{"outcome"}),
		endToEnd: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_consumer_end_to_end_seconds",
			Help:    "Time from an event's ingested_at header to the sink write that made it durable, by route: direct (from its topic) or dlq (drained from the DLQ).",
			Buckets: endToEndBuckets,
		}, []string{"route"}),
	}
}

// initLabels creates the series whose label values are known from the
// config at zero, so a fresh consumer's scrape names them and rate() sees
// their first increase.
func (m *metrics) initLabels(sinkName string, sources []string) {
	for _, o := range []string{outcomeWritten, outcomeDLQ, outcomeParked, outcomeSkipped} {
		m.events.WithLabelValues(o)
		m.drained.WithLabelValues(o)
	}
	for _, r := range []string{routeDirect, routeDLQ} {
		m.endToEnd.WithLabelValues(r)
	}
	m.sinkLatency.WithLabelValues(sinkName)
	m.retries.WithLabelValues(sinkName)
	classes := []string{sink.Transient.String(), sink.Permanent.String()}
	for _, class := range classes {
		m.sinkErrors.WithLabelValues(sinkName, class)
	}
	classes = append(classes, record.ClassDecode, record.ClassSchema)
	for _, t := range sources {
		for _, class := range classes {
			m.deadLetters.WithLabelValues(record.DLQTopic(t), outcomeDLQ, class)
			m.deadLetters.WithLabelValues(record.ParkedTopic(t), outcomeParked, class)
		}
		for _, reason := range []string{record.ParkedSourceMismatch, record.ParkedContract} {
			m.drainRefused.WithLabelValues(record.DLQTopic(t), reason)
		}
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.lag, m.inFlight, m.sinkLatency, m.sinkErrors, m.circuit, m.mode,
		m.deadLetters, m.retries, m.committed, m.events, m.sinkConflicts, m.drainRefused, m.drained, m.endToEnd}
}

// register registers the consumer's collectors and more, those of its
// parts, as one unit.
func (m *metrics) register(r prometheus.Registerer, more ...prometheus.Collector) error {
	return promreg.Register(r, append(m.collectors(), more...)...)
}

func (m *metrics) unregister(r prometheus.Registerer, more ...prometheus.Collector) {
	promreg.Unregister(r, append(m.collectors(), more...)...)
}
