package admin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicehq/sluice/internal/tlsfiles"
)

// Readiness says whether the process is ready to serve: nil, or why not.
// It is called on every /readyz, so it must be cheap (Checker.Ready).
type Readiness func() error

// Server serves the admin endpoints on their own listener.
type Server struct {
	srv   *http.Server
	guard *guard
	lis   net.Listener
	log   *slog.Logger
	tls   *tls.Config
	wg    sync.WaitGroup
	errs  chan error
}

// Option configures New.
type Option interface{ apply(*options) }

type options struct {
	log   *slog.Logger
	tls   *tls.Config
	reg   prometheus.Registerer
	ready Readiness
	// routes add a component's own routes (its reload endpoint, say).
	routes []func(*http.ServeMux)
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithLogger replaces slog.Default(). A nil logger keeps it.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) {
		if l != nil {
			o.log = l
		}
	})
}

// WithTLS serves HTTPS with c, in place of the config's tls block; by
// default the listener speaks HTTPS when the block is set, plain HTTP when
// it is not.
func WithTLS(c *tls.Config) Option { return optionFunc(func(o *options) { o.tls = c }) }

// WithRegisterer registers the listener's certificate reloads
// (sluice_tls_reloads_total{listener="admin"}) and its refused calls
// (sluice_admin_refused_total{reason}); by default they are not
// registered.
func WithRegisterer(r prometheus.Registerer) Option {
	return optionFunc(func(o *options) { o.reg = r })
}

// WithReadiness makes /readyz answer r; by default /readyz answers 200
// whenever /healthz does.
func WithReadiness(r Readiness) Option { return optionFunc(func(o *options) { o.ready = r }) }

// WithRoutes lets add register routes of its own on the listener's mux,
// for example a component's status and reload endpoints; by default the
// listener serves /metrics, /healthz, /readyz (and pprof when asked).
// A route of any method but GET, HEAD and OPTIONS changes state: a call
// to it needs a credential (Config.Auth, or a verified client
// certificate), whoever registered it.
func WithRoutes(add func(*http.ServeMux)) Option {
	return optionFunc(func(o *options) { o.routes = append(o.routes, add) })
}

// New binds cfg.Addr (which must be set: see Config.WithDefaultAddr) and
// serves g on /metrics once started.
func New(cfg Config, g prometheus.Gatherer, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Addr == "" {
		return nil, fieldErr("addr", "must be set")
	}
	o := options{log: slog.Default()}
	for _, opt := range opts {
		opt.apply(&o)
	}
	if o.tls == nil && cfg.TLS.Enabled() {
		r, err := tlsfiles.NewReloader(cfg.TLS, "admin", tlsfiles.WithLogger(o.log), tlsfiles.WithRegisterer(o.reg))
		if err != nil {
			return nil, fmt.Errorf("admin: tls: %w", err)
		}
		o.tls = r.Config()
	}
	mux := http.NewServeMux()
	// OpenMetrics when the scraper asks for it (Prometheus does): the
	// latency histograms' exemplars, which carry trace ids, are only in
	// that format.
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if o.ready != nil {
			if err := o.ready(); err != nil {
				http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	for _, add := range o.routes {
		add(mux)
	}
	if cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	tok, err := loadToken(cfg.Auth, o.log, time.Now)
	if err != nil {
		return nil, err
	}
	certs := cfg.TLS.VerifiesClients() ||
		o.tls != nil && (o.tls.ClientAuth == tls.VerifyClientCertIfGiven || o.tls.ClientAuth == tls.RequireAndVerifyClientCert)
	handler, err := newGuard(mux, tok, certs, o.reg)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("admin: listener: %w", err)
	}
	return &Server{
		guard: handler,
		srv: &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: 5 * time.Second,
			// No WriteTimeout: a CPU profile or trace takes as long as it
			// is asked to.
			IdleTimeout: 2 * time.Minute,
			TLSConfig:   o.tls,
			ErrorLog:    slog.NewLogLogger(o.log.Handler(), slog.LevelWarn),
		},
		lis:  lis,
		log:  o.log,
		tls:  o.tls,
		errs: make(chan error, 1),
	}, nil
}

// Addr is the bound address (useful with port 0).
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Start serves in a goroutine that Shutdown stops and waits for. An error
// after start arrives on Err.
func (s *Server) Start() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		var err error
		if s.tls != nil {
			err = s.srv.ServeTLS(s.lis, "", "")
		} else {
			err = s.srv.Serve(s.lis)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.errs <- fmt.Errorf("admin: %w", err)
		}
	}()
	s.log.Info("admin serving", "addr", s.Addr())
}

// Err reports a listener that failed after Start.
func (s *Server) Err() <-chan error { return s.errs }

// Shutdown stops accepting, lets requests in flight finish until ctx is
// done, then closes the rest, and waits for the serving goroutine. Without
// Start it closes the listener.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	_ = s.lis.Close()
	s.wg.Wait()
	return err
}
