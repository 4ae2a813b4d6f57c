package publish

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/promreg"
)

// metrics are the producer's Prometheus metrics. They are always collected;
// they are registered only when WithRegisterer is given.
type metrics struct {
	latency  prometheus.Histogram
	records  *prometheus.CounterVec
	errors   *prometheus.CounterVec
	buffered prometheus.GaugeFunc

	topicMissing *prometheus.GaugeVec

	acked, failed, timedOut prometheus.Counter
	retryable, permanent    prometheus.Counter
}

// newMetrics makes the producer's metrics; topics are those of
// WithTopics, whose sluice_kafka_topic_missing series start at 0.
func newMetrics(bufferedRecords func() float64, topics []string) *metrics {
	m := &metrics{
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sluice_produce_latency_seconds",
			Help: "Time from the Publish call to Kafka's acknowledgement (acks=all), per acknowledged record.",
			// 1ms to ~16s: covers linger, replication and the default 10s delivery timeout.
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_produce_records_total",
			Help: "Records answered by Publish, by result: acked, failed, or timeout (not acknowledged before the deadline).",
		}, []string{"result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_produce_errors_total",
			Help: "Records Publish answered with an error, by class as judged by publish.Retryable.",
		}, []string{"class"}),
		buffered: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sluice_producer_buffered_records",
			Help: "Records buffered in the Kafka client, waiting to be sent or acknowledged.",
		}, bufferedRecords),
		topicMissing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_kafka_topic_missing",
			Help: "1 while the cluster's last answer to the topic check (CheckTopics) was that the topic does not exist (UNKNOWN_TOPIC_OR_PARTITION), else 0.",
		}, []string{"topic"}),
	}
	for _, topic := range topics {
		m.topicMissing.WithLabelValues(topic)
	}
	m.acked = m.records.WithLabelValues("acked")
	m.failed = m.records.WithLabelValues("failed")
	m.timedOut = m.records.WithLabelValues("timeout")
	m.retryable = m.errors.WithLabelValues("retryable")
	m.permanent = m.errors.WithLabelValues("permanent")
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.latency, m.records, m.errors, m.buffered, m.topicMissing}
}

// register registers every collector or none.
func (m *metrics) register(r prometheus.Registerer) error {
	return promreg.Register(r, m.collectors()...)
}

func (m *metrics) unregister(r prometheus.Registerer) { promreg.Unregister(r, m.collectors()...) }

// answered counts one record's answer.
func (m *metrics) answered(err error) {
	switch {
	case err == nil:
		m.acked.Inc()
		return
	case errors.Is(err, ErrTimeout):
		m.timedOut.Inc()
	default:
		m.failed.Inc()
	}
	if Retryable(err) {
		m.retryable.Inc()
	} else {
		m.permanent.Inc()
	}
}
