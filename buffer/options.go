package buffer

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Option configures a Spool beyond its Config: what the caller's
// environment provides rather than what an operator tunes.
type Option interface{ apply(*options) }

type options struct {
	registerer prometheus.Registerer
	logger     *slog.Logger
	clock      func() time.Time
	// beforeSync, when set, runs in the writer before each fdatasync of
	// appended records. Tests use it to hold a batch open.
	beforeSync func()
	// durable, when set, is told of each durable step recovery takes
	// (see Spool.durable). Tests use it to check their order.
	durable func(op, path string)
}

type option struct{ fn func(*options) }

func (o option) apply(opts *options) { o.fn(opts) }

// WithRegisterer registers the spool's metrics on r, overriding the default
// of not registering them. Close unregisters them.
func WithRegisterer(r prometheus.Registerer) Option {
	return option{func(o *options) { o.registerer = r }}
}

// WithLogger replaces slog.Default(), for recovery and write failures.
// A nil logger keeps it.
func WithLogger(l *slog.Logger) Option {
	return option{func(o *options) {
		if l != nil {
			o.logger = l
		}
	}}
}

// WithClock sets the clock that stamps appended records and ages the oldest
// one, overriding the default time.Now. A nil clock keeps the default.
func WithClock(now func() time.Time) Option {
	return option{func(o *options) {
		if now != nil {
			o.clock = now
		}
	}}
}

func withBeforeSync(fn func()) Option {
	return option{func(o *options) { o.beforeSync = fn }}
}

func withDurableSteps(fn func(op, path string)) Option {
	return option{func(o *options) { o.durable = fn }}
}
