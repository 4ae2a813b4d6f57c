package sink

import (
	"net/http"
	"os"
	"time"
)

// Option configures a sink beyond its Config: what the caller's environment
// provides rather than what an operator tunes.
type Option interface{ apply(*options) }

type options struct {
	now        func() time.Time
	lookupEnv  func(string) (string, bool)
	httpClient *http.Client
}

type option struct{ fn func(*options) }

func (o option) apply(opts *options) { o.fn(opts) }

func buildOptions(opts []Option) options {
	o := options{now: time.Now, lookupEnv: os.LookupEnv}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	return o
}

// WithClock sets the clock that stamps written_at and that the HTTP sink
// measures Retry-After dates against, overriding time.Now. A nil clock keeps
// the default.
func WithClock(now func() time.Time) Option {
	return option{func(o *options) {
		if now != nil {
			o.now = now
		}
	}}
}

// WithLookupEnv sets how the HTTP sink reads HTTPConfig.HeadersFromEnv,
// overriding os.LookupEnv. A nil function keeps the default.
func WithLookupEnv(lookup func(string) (string, bool)) Option {
	return option{func(o *options) {
		if lookup != nil {
			o.lookupEnv = lookup
		}
	}}
}

// WithHTTPClient makes the HTTP sink send with c instead of a client of its
// own (which follows only 307 and 308 redirects and keeps
// HTTPConfig.MaxIdleConns idle connections). Redirects off the origin of
// HTTPConfig.URL are refused whatever c's CheckRedirect says, and every
// request is still bounded by HTTPConfig.RequestTimeout; Close leaves c's
// connections alone.
func WithHTTPClient(c *http.Client) Option {
	return option{func(o *options) {
		if c != nil {
			o.httpClient = c
		}
	}}
}
