package ownership

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/pull"
)

// Option configures a Runner.
type Option interface{ apply(*options) }

type options struct {
	log     *slog.Logger
	reg     prometheus.Registerer
	metrics *pull.Metrics
	poller  []pull.Option
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithLogger replaces slog.Default(), for the runner and its pollers. A
// nil logger keeps it.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) {
		if l != nil {
			o.log = l
		}
	})
}

// WithRegisterer registers the pollers' metrics, and Close unregisters
// them; by default none are registered.
func WithRegisterer(r prometheus.Registerer) Option {
	return optionFunc(func(o *options) { o.reg = r })
}

// WithMetrics gives the pollers metrics that the caller registered and
// unregisters; it replaces WithRegisterer.
func WithMetrics(m *pull.Metrics) Option { return optionFunc(func(o *options) { o.metrics = m }) }

// WithPollerOptions are given to every poller (pull.WithClock,
// pull.WithHTTPClient, pull.WithGetenv, ...); by default none. The
// runner's logger comes before them and its metrics after them.
func WithPollerOptions(opts ...pull.Option) Option {
	return optionFunc(func(o *options) { o.poller = append(o.poller, opts...) })
}
