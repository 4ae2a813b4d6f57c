package admission

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
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
	// shares: see WithSourceShares; nil weights for none.
	shareWeights  map[string]float64
	shareReserved float64
	// tracer: WithTracerProvider's; nil for none.
	tracer trace.Tracer
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

// WithSourceShares splits the spool's bytes among the sources named in
// weights (a weight each, above 0): reserved (in [0, 1]) of it is
// guaranteed to them by weight and the rest is a remainder any source may
// borrow from (internal/share). A source over what it may hold is refused
// RefusedFull with a *SourceFullError; a source not named has no
// guarantee and borrows from the remainder only. It overrides the default
// of no per-source accounting: any source may fill the spool. It needs a
// spool; without one it does nothing.
func WithSourceShares(weights map[string]float64, reserved float64) Option {
	return option{func(o *options) {
		o.shareWeights, o.shareReserved = weights, reserved
	}}
}
