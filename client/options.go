package client

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
)

// Opt configures New.
type Opt interface{ apply(*cfg) }

type optFunc func(*cfg)

func (f optFunc) apply(c *cfg) { f(c) }

// cfg is the client's configuration: defaults from newCfg, then the options.
type cfg struct {
	apiKey      string
	tls         *tls.Config
	insecure    bool
	dialOpts    []grpc.DialOption
	batchEvents int
	batchBytes  int
	linger      time.Duration
	bufEvents   int
	bufBytes    int
	failFull    bool
	inFlight    int
	reqTimeout  time.Duration
	evTimeout   time.Duration
	maxAttempts int
	backoffBase time.Duration
	backoffMax  time.Duration
	stream      bool
	ids         func() string // nil: UUIDv7
	idsNil      bool          // WithIDs(nil), refused
	metrics     Metrics
	log         *slog.Logger
	clock       func() time.Time
}

func newCfg() cfg {
	c := cfg{
		batchEvents: 500,
		batchBytes:  4<<20 - 64<<10,
		linger:      5 * time.Millisecond,
		bufEvents:   10000,
		bufBytes:    64 << 20,
		inFlight:    4,
		reqTimeout:  30 * time.Second,
		evTimeout:   2 * time.Minute,
		maxAttempts: 10,
		backoffBase: 100 * time.Millisecond,
		backoffMax:  10 * time.Second,
		metrics:     nopMetrics{},
		log:         slog.Default(),
		clock:       time.Now,
	}
	return c
}

// WithAPIKey sends key as the x-api-key metadata of every call. By default
// no key is sent.
func WithAPIKey(key string) Opt { return optFunc(func(c *cfg) { c.apiKey = key }) }

// WithTLS dials every address with TLS (mTLS when config has client
// certificates). By default there is no transport security, and New
// refuses to start without WithTLS or WithInsecure.
func WithTLS(config *tls.Config) Opt { return optFunc(func(c *cfg) { c.tls = config }) }

// WithInsecure dials in plaintext. New refuses it unless every address is
// a loopback one (localhost, 127.0.0.0/8, ::1, or a unix socket).
func WithInsecure() Opt { return optFunc(func(c *cfg) { c.insecure = true }) }

// WithDialOptions adds options to every connection's grpc.NewClient. By
// default there are none beyond the transport credentials.
func WithDialOptions(opts ...grpc.DialOption) Opt {
	return optFunc(func(c *cfg) { c.dialOpts = append(c.dialOpts, opts...) })
}

// MaxBatchEvents bounds the events of one request; 500 by default, the
// gateway's limits.max_events_per_request default.
func MaxBatchEvents(n int) Opt { return optFunc(func(c *cfg) { c.batchEvents = n }) }

// MaxBatchBytes bounds the encoded events of one request; 4 MiB less
// 64 KiB by default, under the gateway's limits.max_request_bytes default.
func MaxBatchBytes(n int) Opt { return optFunc(func(c *cfg) { c.batchBytes = n }) }

// Linger is how long a batch that is not full waits for more events
// before it is sent; 5ms by default. 0 sends what is there at once.
func Linger(d time.Duration) Opt { return optFunc(func(c *cfg) { c.linger = d }) }

// MaxBufferedEvents bounds the events the client holds (buffered, in
// flight, or waiting to be retried); 10000 by default.
func MaxBufferedEvents(n int) Opt { return optFunc(func(c *cfg) { c.bufEvents = n }) }

// MaxBufferedBytes bounds the encoded size of the events the client holds;
// 64 MiB by default.
func MaxBufferedBytes(n int) Opt { return optFunc(func(c *cfg) { c.bufBytes = n }) }

// FailWhenFull makes Send return ErrBufferFull when the buffer has no room.
// By default Send waits for room until its ctx ends.
func FailWhenFull() Opt { return optFunc(func(c *cfg) { c.failFull = true }) }

// MaxInFlight bounds the requests awaiting an answer at once, over all
// addresses; 4 by default.
func MaxInFlight(n int) Opt { return optFunc(func(c *cfg) { c.inFlight = n }) }

// RequestTimeout bounds each request (each attempt); 30s by default.
func RequestTimeout(d time.Duration) Opt { return optFunc(func(c *cfg) { c.reqTimeout = d }) }

// EventTimeout bounds an event's time from enqueue to its final result;
// 2m by default. Past it the event is not sent again and ends as an
// *UndeliveredError.
func EventTimeout(d time.Duration) Opt { return optFunc(func(c *cfg) { c.evTimeout = d }) }

// MaxAttempts bounds the requests judged for one event; 10 by default.
// Not counted: a request refused as too large, and split, and one answered
// with a retry_after (RATE_LIMITED, BUFFER_FULL...): the gateway said when
// to come back, and EventTimeout bounds how long the event waits so.
func MaxAttempts(n int) Opt { return optFunc(func(c *cfg) { c.maxAttempts = n }) }

// Backoff sets the waits before a retry when the answer gave no
// retry_after: full jitter, up to base·2^(attempt-1) capped at max.
// 100ms and 10s by default.
func Backoff(base, max time.Duration) Opt {
	return optFunc(func(c *cfg) { c.backoffBase, c.backoffMax = base, max })
}

// UseStream sends batches on one PublishStream per connection. By
// default each batch is a unary Publish.
func UseStream() Opt { return optFunc(func(c *cfg) { c.stream = true }) }

// WithIDs gives the ids of events sent without one. By default they are
// UUIDv7 text.
func WithIDs(f func() string) Opt {
	return optFunc(func(c *cfg) { c.ids, c.idsNil = f, f == nil })
}

// WithMetrics reports the client's work to m. By default nothing is
// reported.
func WithMetrics(m Metrics) Opt { return optFunc(func(c *cfg) { c.metrics = m }) }

// WithLogger replaces slog.Default() for the logs of retries and
// undelivered events. New refuses a nil logger.
func WithLogger(l *slog.Logger) Opt { return optFunc(func(c *cfg) { c.log = l }) }

// WithClock replaces time.Now for occurred_at, ids and deadlines.
func WithClock(now func() time.Time) Opt { return optFunc(func(c *cfg) { c.clock = now }) }

// validate says which option is wrong and why.
func (c *cfg) validate(addrs []string) error {
	bad := func(opt, why string) error { return fmt.Errorf("client: %s: %s", opt, why) }
	switch {
	case len(addrs) == 0:
		return errors.New("client: no address")
	case c.tls != nil && c.insecure:
		return bad("WithInsecure", "conflicts with WithTLS")
	case c.tls == nil && !c.insecure:
		return bad("WithTLS", "required, or WithInsecure for loopback addresses")
	case c.batchEvents < 1:
		return bad("MaxBatchEvents", "must be at least 1")
	case c.batchBytes < 1:
		return bad("MaxBatchBytes", "must be at least 1")
	case c.linger < 0:
		return bad("Linger", "must not be negative")
	case c.bufEvents < c.batchEvents:
		return bad("MaxBufferedEvents", fmt.Sprintf("%d is below MaxBatchEvents (%d): a full batch must fit", c.bufEvents, c.batchEvents))
	case c.bufBytes < c.batchBytes:
		return bad("MaxBufferedBytes", fmt.Sprintf("%d is below MaxBatchBytes (%d): a full batch must fit", c.bufBytes, c.batchBytes))
	case c.inFlight < 1:
		return bad("MaxInFlight", "must be at least 1")
	case c.reqTimeout <= 0:
		return bad("RequestTimeout", "must be positive")
	case c.evTimeout <= 0:
		return bad("EventTimeout", "must be positive")
	case c.maxAttempts < 1:
		return bad("MaxAttempts", "must be at least 1")
	case c.backoffBase <= 0 || c.backoffMax < c.backoffBase:
		return bad("Backoff", "base must be positive and max at least base")
	case c.idsNil:
		return bad("WithIDs", "nil function")
	case c.metrics == nil:
		return bad("WithMetrics", "nil Metrics")
	case c.log == nil:
		return bad("WithLogger", "nil logger")
	case c.clock == nil:
		return bad("WithClock", "nil clock")
	}
	for _, a := range addrs {
		if strings.TrimSpace(a) == "" {
			return errors.New("client: an address is empty")
		}
		if c.insecure && !isLoopback(a) {
			return bad("WithInsecure", fmt.Sprintf("%q is not a loopback address: use WithTLS", a))
		}
	}
	return nil
}

// isLoopback reports whether a gRPC target can only reach this host.
func isLoopback(target string) bool {
	if strings.HasPrefix(target, "unix:") || strings.HasPrefix(target, "unix-abstract:") {
		return true
	}
	for _, scheme := range []string{"dns:///", "passthrough:///"} {
		target = strings.TrimPrefix(target, scheme)
	}
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		host = target
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
