package publish

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Option configures a Producer beyond its Config: what the caller's
// environment provides rather than what an operator tunes.
type Option interface{ apply(*options) }

type options struct {
	registerer prometheus.Registerer
	logger     *slog.Logger
	topics     []string
	tracing    bool
}

type option struct{ fn func(*options) }

func (o option) apply(opts *options) { o.fn(opts) }

// WithRegisterer registers the producer's metrics on r, overriding the
// default of not registering them. Close unregisters them.
func WithRegisterer(r prometheus.Registerer) Option {
	return option{func(o *options) { o.registerer = r }}
}

// WithLogger replaces slog.Default(), for the producer and its Kafka
// client. A nil logger keeps it.
func WithLogger(l *slog.Logger) Option {
	return option{func(o *options) {
		if l != nil {
			o.logger = l
		}
	}}
}

// WithTopics names the topics the producer writes to, overriding the
// default of none: CheckTopics asks the cluster whether they exist, and
// sluice_kafka_topic_missing has a series for each, at 0, from the start.
// They come from configuration, so that label's values are bounded.
func WithTopics(topics ...string) Option {
	return option{func(o *options) { o.topics = append(o.topics, topics...) }}
}

// WithTracerProvider has the producer end, at Kafka's answer, the span a
// record's Context carries when it records (the gateway's `send {topic}`
// span, whose context the record's traceparent is), with the record's
// partition and offset or the error, and its latency histogram carry the
// trace id of a sampled caller as an exemplar. The producer starts no span
// of its own (nor does it take kotel's hooks, which would replace the
// record's trace context and cost a span per record). The default, or a
// nil or no-op tp, leaves record contexts alone.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return option{func(o *options) {
		_, off := tp.(noop.TracerProvider)
		o.tracing = tp != nil && !off
	}}
}
