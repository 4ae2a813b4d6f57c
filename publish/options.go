package publish

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// Option configures a Producer beyond its Config: what the caller's
// environment provides rather than what an operator tunes.
type Option interface{ apply(*options) }

type options struct {
	registerer prometheus.Registerer
	logger     *slog.Logger
	topics     []string
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
