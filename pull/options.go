package pull

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/tracing"
)

// Clock is the pollers' time: every wait goes through Sleep, so tests
// measure waits without sleeping.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx ends and then returns ctx's error.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Option configures a Poller.
type Option interface{ apply(*options) }

type options struct {
	clock   Clock
	log     *slog.Logger
	metrics *Metrics
	client  *http.Client
	getenv  func(string) string
	jitter  backoff.Jitter
	tracer  trace.Tracer // nil: no spans
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

func defaultOptions() options {
	return options{
		clock:  realClock{},
		log:    slog.Default(),
		client: &http.Client{},
		getenv: os.Getenv,
		jitter: backoff.Full,
	}
}

// WithTracerProvider makes a root `poll {poller}` INTERNAL span with tp's
// tracer (tracing.TracerName) around the admission of each page: the
// page's events are judged under it, so their records carry its trace
// context (or their own `send` spans' when it records). It overrides the
// default of a no-op provider, with which the poller makes no span and
// its records carry no trace context. A nil tp keeps the default.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(o *options) {
		if _, off := tp.(noop.TracerProvider); tp != nil && !off {
			o.tracer = tp.Tracer(tracing.TracerName)
		}
	})
}

// WithClock replaces the wall clock.
func WithClock(c Clock) Option { return optionFunc(func(o *options) { o.clock = c }) }

// WithLogger replaces slog.Default(). A nil logger keeps it.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) {
		if l != nil {
			o.log = l
		}
	})
}

// WithMetrics shares one Metrics between pollers; by default a Poller has
// unregistered metrics of its own.
func WithMetrics(m *Metrics) Option { return optionFunc(func(o *options) { o.metrics = m }) }

// WithHTTPClient replaces the HTTP client (default: a plain http.Client).
// Whatever c's CheckRedirect says, the poller follows no redirect off the
// origin of its request, and every request is bounded by
// Config.RequestTimeout.
func WithHTTPClient(c *http.Client) Option { return optionFunc(func(o *options) { o.client = c }) }

// WithGetenv replaces os.Getenv for reading tokens and secrets.
func WithGetenv(f func(string) string) Option { return optionFunc(func(o *options) { o.getenv = f }) }

// WithJitter replaces full jitter (backoff.Full, uniform in [0, ceiling]):
// given the backoff ceiling it returns the wait, held to the ceiling.
func WithJitter(j backoff.Jitter) Option {
	return optionFunc(func(o *options) { o.jitter = j })
}
