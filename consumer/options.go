package consumer

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
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
}

func defaultOptions() options {
	return options{
		logger: slog.Default(),
		clock:  systemClock{},
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
