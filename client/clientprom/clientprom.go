// Package clientprom reports a sluice client's work as Prometheus metrics:
// pass New's Metrics to client.WithMetrics.
//
//	sluice_client_events_total{outcome,reason}       events by final result
//	sluice_client_event_duration_seconds{outcome}    from Send to final result
//	sluice_client_retries_total{reason}              events to be sent again, by why
//	sluice_client_request_duration_seconds{result}   requests (attempts): answered or error
//	sluice_client_buffered_events, _bytes            what the client holds now
//
// Outcome is ACCEPTED, DUPLICATE, REJECTED, or UNDELIVERED (the client's
// own final result, *client.UndeliveredError); reason is the rejection's
// or the last retryable answer's, or "" for a success.
package clientprom

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/client"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// Metrics implements client.Metrics; all of a client's metrics are here.
type Metrics struct {
	events         *prometheus.CounterVec
	eventDuration  *prometheus.HistogramVec
	retries        *prometheus.CounterVec
	requests       *prometheus.HistogramVec
	bufferedEvents prometheus.Gauge
	bufferedBytes  prometheus.Gauge
}

var _ client.Metrics = (*Metrics)(nil)

// New registers the client's metrics on reg. Two clients in one process
// need two registerers (prometheus.WrapRegistererWith a label tells
// them apart).
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_client_events_total",
			Help: "Events that got their final result, by outcome and reason.",
		}, []string{"outcome", "reason"}),
		eventDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_client_event_duration_seconds",
			Help:    "Time from Send to an event's final result.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"outcome"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_client_retries_total",
			Help: "Events to be sent again, by the reason of the answer that retries them.",
		}, []string{"reason"}),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_client_request_duration_seconds",
			Help:    "Requests (attempts) by whether the gateway answered per event (answered) or the request failed as a whole (error).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"result"}),
		bufferedEvents: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_client_buffered_events",
			Help: "Events the client holds: buffered, in flight, or waiting to be retried.",
		}),
		bufferedBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_client_buffered_bytes",
			Help: "Encoded bytes of the events the client holds.",
		}),
	}
	for _, c := range []prometheus.Collector{m.events, m.eventDuration, m.retries, m.requests, m.bufferedEvents, m.bufferedBytes} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Request implements client.Metrics.
func (m *Metrics) Request(_ int, d time.Duration, err error) {
	result := "answered"
	if err != nil {
		result = "error"
	}
	m.requests.WithLabelValues(result).Observe(d.Seconds())
}

// Final implements client.Metrics.
func (m *Metrics) Final(outcome ingestv1.Outcome, reason ingestv1.Reason, _ int, sinceEnqueue time.Duration) {
	o := outcome.String()
	if outcome == ingestv1.Outcome_OUTCOME_UNSPECIFIED {
		o = "UNDELIVERED"
	}
	r := ""
	if reason != ingestv1.Reason_REASON_UNSPECIFIED {
		r = reason.String()
	}
	m.events.WithLabelValues(o, r).Inc()
	m.eventDuration.WithLabelValues(o).Observe(sinceEnqueue.Seconds())
}

// Retry implements client.Metrics.
func (m *Metrics) Retry(reason ingestv1.Reason, n int) {
	m.retries.WithLabelValues(reason.String()).Add(float64(n))
}

// Buffered implements client.Metrics.
func (m *Metrics) Buffered(events, bytes int) {
	m.bufferedEvents.Set(float64(events))
	m.bufferedBytes.Set(float64(bytes))
}
