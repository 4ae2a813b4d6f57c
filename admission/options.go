package admission

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// Option configures an Admission beyond its Config: what the caller's
// environment provides rather than what an operator tunes.
type Option interface{ apply(*options) }

type options struct {
	registerer prometheus.Registerer
	logger     *slog.Logger
	// beforeFallback, when set, runs in Admit after a direct publish
	// failed and before the failed records are spooled. Tests use it to
	// hold a request in that window.
	beforeFallback func()
}

type option struct{ fn func(*options) }

func (o option) apply(opts *options) { o.fn(opts) }

// WithRegisterer registers admission's and the drainer's metrics on r,
// overriding the default of not registering them.
func WithRegisterer(r prometheus.Registerer) Option {
	return option{func(o *options) { o.registerer = r }}
}

// WithLogger replaces slog.Default(), for admission and the drainer.
// A nil logger keeps it.
func WithLogger(l *slog.Logger) Option {
	return option{func(o *options) {
		if l != nil {
			o.logger = l
		}
	}}
}

// withBeforeFallback runs fn in Admit between a failed direct publish and
// the spool append of its records, overriding the default of nothing.
func withBeforeFallback(fn func()) Option {
	return option{func(o *options) { o.beforeFallback = fn }}
}
