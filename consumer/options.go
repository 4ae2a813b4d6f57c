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

// WithClock times backoffs, the breaker and DLQ deadlines with c; by
// default the system clock.
func WithClock(c Clock) Option {
	return optionFunc(func(o *options) {
		if c != nil {
			o.clock = c
		}
	})
}
