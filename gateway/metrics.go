package gateway

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/gateway/webhook"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/promreg"
)

// metrics are the gateway's; they are registered on the Registerer given to
// New, never on a global one.
type metrics struct {
	events          *prometheus.CounterVec
	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	requestEvents   prometheus.Histogram
	dedupEvictions  prometheus.Counter
	streamsOpen     prometheus.Gauge
	shed            prometheus.Counter
	requestsShed    prometheus.Counter
	streamsRefused  prometheus.Counter
	// unauthenticatedRefused: calls past limits.unauthenticated_streams.
	unauthenticatedRefused prometheus.Counter
	receiveTimeouts        prometheus.Counter
	memoryRefusals         prometheus.Counter
	streamsIdle            prometheus.Counter
	// webhookRefusals: deliveries whose signature did not verify, by
	// source and reason; webhookPreauthRefusals: deliveries refused unread
	// because their source's pre-authentication pool was full.
	webhookRefusals        *prometheus.CounterVec
	webhookPreauthRefusals *prometheus.CounterVec
	// receivedBytes: request bytes by configured source, as admitBatch
	// judges them (decompressed).
	receivedBytes *prometheus.CounterVec
}

// newMetrics builds the metrics and registers them on reg, all or none
// (promreg.Register): a registry that holds one of them already, a second
// Service's, is an error wrapping prometheus.AlreadyRegisteredError.
func newMetrics(reg prometheus.Registerer, dedupLen, requestMemory, streamMemory func() float64) (*metrics, error) {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_events_total",
			Help: "Events judged by the gateway, by source, event type, outcome and rejection reason.",
		}, []string{"source", "type", "outcome", "reason"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_requests_total",
			Help: "Requests and stream batches by transport and result (ok or the whole-request failure reason).",
		}, []string{"transport", "result"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_request_duration_seconds",
			Help:    "Time from a request or stream batch arriving to its answer.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"transport"}),
		requestEvents: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_request_events",
			Help:    "Events per request or stream batch that passed the whole-request limits and the source's rate (sluice_requests_total with result ok).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}),
		dedupEvictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_dedup_evictions_total",
			Help: "Event ids forgotten before their dedup window ended because dedup.max_entries was reached.",
		}),
		streamsOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_streams_open",
			Help: "PublishStream streams open.",
		}),
		shed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_events_shed_total",
			Help: "Events refused UNAVAILABLE because they could not be checked within limits.max_queue_wait (the gateway was at capacity).",
		}),
		requestsShed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_requests_shed_total",
			Help: "gRPC Publish calls refused at their headers because limits.receiving_requests calls were already arriving (UNAVAILABLE), or their source's share of them (RATE_LIMITED).",
		}),
		streamsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_streams_refused_total",
			Help: "Authenticated streams (PublishStream, and health or reflection calls with a credential) refused at their headers because limits.max_streams streams were open (UNAVAILABLE), or their source's share of them or its max_streams (RATE_LIMITED).",
		}),
		unauthenticatedRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_unauthenticated_streams_refused_total",
			Help: "gRPC calls without a valid credential (health, reflection) refused UNAVAILABLE at their headers because limits.unauthenticated_streams were open, or half of it in streams.",
		}),
		receiveTimeouts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_receive_timeouts_total",
			Help: "gRPC Publish calls cut off (DEADLINE_EXCEEDED) because their message had not arrived within limits.receive_timeout.",
		}),
		memoryRefusals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_request_memory_refusals_total",
			Help: "Requests refused, unread, because limits.request_memory_bytes had no room for them within limits.max_queue_wait: UNAVAILABLE when it was full, RATE_LIMITED when the room left was other sources' guarantees.",
		}),
		streamsIdle: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_streams_idle_closed_total",
			Help: "PublishStream streams ended because they made no progress (no batch, no answer sent) for limits.stream_idle_timeout.",
		}),
		webhookRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_webhook_refused_total",
			Help: "Webhook deliveries refused 401 because their signature did not verify, by source and reason (missing_header, malformed_header, bad_signature, stale_timestamp, future_timestamp).",
		}, []string{"source", "reason"}),
		webhookPreauthRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_webhook_preauth_refused_total",
			Help: "Webhook deliveries refused 503 unread because their source's pool for bodies awaiting verification (webhook.preauth_memory_bytes) was full.",
		}, []string{"source"}),
		receivedBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_source_received_bytes_total",
			Help: "Request bytes received from a source (a REST body or gRPC message once decompressed, a stream batch), as its bytes_rate counts them; a request refused before it is read is not counted.",
		}, []string{"source"}),
	}
	if reg == nil {
		return m, nil
	}
	err := promreg.Register(reg, m.events, m.requests, m.requestDuration, m.requestEvents, m.dedupEvictions, m.streamsOpen, m.shed, m.requestsShed, m.streamsRefused, m.unauthenticatedRefused, m.receiveTimeouts, m.memoryRefusals, m.streamsIdle,
		m.webhookRefusals, m.webhookPreauthRefusals, m.receivedBytes,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sluice_dedup_entries",
			Help: "Event ids remembered by the dedup window or being published.",
		}, dedupLen),
		memoryGauge("requests", requestMemory), memoryGauge("streams", streamMemory))
	if err != nil {
		return nil, fmt.Errorf("gateway: registering metrics: %w", err)
	}
	return m, nil
}

// Transports, the transport label of sluice_requests_total and
// sluice_request_duration_seconds.
var transports = [...]string{"rest", "grpc", "grpc-stream", "webhook", "cloudevents"}

// initLabels creates at zero the series whose labels the config bounds,
// so a fresh gateway's scrape names them and rate() sees their first
// increase: every transport with every result, and for each configured
// source and loaded type the outcomes the SLOs count (ACCEPTED, DUPLICATE,
// and the server-side refusals BUFFER_FULL and UNAVAILABLE). Client-side
// refusals appear with their first event: sources × types × reasons is too
// many series to create idle.
func (m *metrics) initLabels(sources, types []string) {
	for _, t := range transports {
		m.requestDuration.WithLabelValues(t)
		m.requests.WithLabelValues(t, "ok")
		for v, name := range ingestv1.Reason_name {
			if ingestv1.Reason(v) != ingestv1.Reason_REASON_UNSPECIFIED {
				m.requests.WithLabelValues(t, name)
			}
		}
	}
	for _, src := range sources {
		for _, typ := range types {
			m.events.WithLabelValues(src, typ, ingestv1.Outcome_ACCEPTED.String(), "")
			m.events.WithLabelValues(src, typ, ingestv1.Outcome_DUPLICATE.String(), "")
			m.events.WithLabelValues(src, typ, ingestv1.Outcome_REJECTED.String(), ingestv1.Reason_BUFFER_FULL.String())
			m.events.WithLabelValues(src, typ, ingestv1.Outcome_REJECTED.String(), ingestv1.Reason_UNAVAILABLE.String())
			m.events.WithLabelValues(src, typ, ingestv1.Outcome_REJECTED.String(), ingestv1.Reason_IDEMPOTENCY_CONFLICT.String())
		}
	}
}

// memoryGauge is sluice_request_memory_bytes of one half of the budget.
func memoryGauge(pool string, held func() float64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "sluice_request_memory_bytes",
		Help:        "Bytes charged to limits.request_memory_bytes by what the gateway holds, by half: requests (REST, unary gRPC) or streams.",
		ConstLabels: prometheus.Labels{"pool": pool},
	}, held)
}

func sourceNames(cs []SourceConfig) []string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return names
}

// initWebhook creates at zero a webhook source's refusal series.
func (m *metrics) initWebhook(source string) {
	for _, r := range webhook.Reasons() {
		m.webhookRefusals.WithLabelValues(source, string(r))
	}
	m.webhookPreauthRefusals.WithLabelValues(source)
}

// registerWebhookPools registers sluice_webhook_preauth_bytes, each
// webhook source's pool of bodies awaiting verification in use.
func registerWebhookPools(reg prometheus.Registerer, webhooks map[string]*webhookSource) error {
	if reg == nil || len(webhooks) == 0 {
		return nil
	}
	var cs []prometheus.Collector
	for name, ws := range webhooks {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "sluice_webhook_preauth_bytes",
			Help:        "Bytes of a webhook source's pool (webhook.preauth_memory_bytes) held by deliveries not yet verified.",
			ConstLabels: prometheus.Labels{"source": name},
		}, ws.preauth.inUse))
	}
	if err := promreg.Register(reg, cs...); err != nil {
		return fmt.Errorf("gateway: registering metrics: %w", err)
	}
	return nil
}
