package consumer

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Option changes a default of New.
type Option interface{ apply(*options) }

type options struct {
	registerer prometheus.Registerer
	logger     *slog.Logger
	clock      Clock
	// sources are the configured source names, the values of the source
	// label.
	sources []string
	// tracerProvider traces records; the no-op provider by default.
	tracerProvider trace.TracerProvider
}

func defaultOptions() options {
	return options{
		logger: slog.Default(),
		clock:  systemClock{},

		tracerProvider: noop.NewTracerProvider(),
	}
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithRegisterer registers the consumer's metrics on r; by default there
// are none.
func WithRegisterer(r prometheus.Registerer) Option {
	return optionFunc(func(o *options) { o.registerer = r })
}

// WithLogger replaces slog.Default(). A nil logger keeps it.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) {
		if l != nil {
			o.logger = l
		}
	})
}

// WithSources names the configured sources (the gateway's), the values
// of the source label of sluice_consumer_dlq_backlog; a record of any
// other source is counted as "other". By default there are none.
func WithSources(names ...string) Option {
	return optionFunc(func(o *options) { o.sources = append([]string(nil), names...) })
}

// WithClock times backoffs, the breaker and DLQ deadlines with c; by
// default the system clock.
func WithClock(c Clock) Option {
	return optionFunc(func(o *options) {
		if c != nil {
			o.clock = c
		}
	})
}

// otherSource is the source label of a source not configured.
const otherSource = "other"

// sourceLabels returns the source label of a source: its name when
// configured, else otherSource, so that the label has a bounded set of
// values whatever the records' headers say.
func sourceLabels(names []string) func(string) string {
	known := make(map[string]bool, len(names))
	for _, n := range names {
		known[n] = true
	}
	return func(source string) string {
		if known[source] {
			return source
		}
		return otherSource
	}
}

// WithTracerProvider traces records with tp: a `process {topic}` span per
// record, a `sink write {sink}` span per batch write and a span per dead
// letter. By default, and with a nil tp, the no-op provider: no span is
// started and no record's headers are read for its trace context.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(o *options) {
		if tp != nil {
			o.tracerProvider = tp
		}
	})
}
