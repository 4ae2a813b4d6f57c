package tlsfiles

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// checkInterval is how often a handshake may stat the files.
const checkInterval = time.Second

// Reloader serves a listener's certificate files as they are now; see the
// package doc.
type Reloader struct {
	cfg        ServerConfig
	listener   string
	now        func() time.Time
	log        *slog.Logger
	nextProtos []string
	reloadsOK  prometheus.Counter
	reloadsErr prometheus.Counter
	// expiry is the served certificate's NotAfter, in Unix seconds.
	expiry prometheus.Gauge

	// nextCheck is when a handshake may stat the files again (unix ns).
	nextCheck atomic.Int64
	// checking lets one handshake check; the others serve current.
	checking sync.Mutex
	stamps   [3]stamp // of the files last tried, guarded by checking
	current  atomic.Pointer[tls.Config]
}

// Option configures NewReloader.
type Option interface{ apply(*options) }

type options struct {
	now        func() time.Time
	log        *slog.Logger
	reg        prometheus.Registerer
	nextProtos []string
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithClock replaces time.Now for the once-a-second check.
func WithClock(now func() time.Time) Option { return optionFunc(func(o *options) { o.now = now }) }

// WithLogger replaces slog.Default(). A nil logger keeps it.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) {
		if l != nil {
			o.log = l
		}
	})
}

// WithRegisterer registers sluice_tls_reloads_total and
// sluice_tls_certificate_expiry_timestamp_seconds; by default they are
// kept but not registered.
func WithRegisterer(r prometheus.Registerer) Option {
	return optionFunc(func(o *options) { o.reg = r })
}

// WithNextProtos sets the ALPN protocols offered, for example "h2" and
// "http/1.1" for an HTTP server; by default none (gRPC's credentials add
// "h2" themselves).
func WithNextProtos(protos ...string) Option {
	return optionFunc(func(o *options) { o.nextProtos = protos })
}

// NewReloader loads cfg's files, which must pass Validate. listener names
// the listener in logs and in the metric's label.
func NewReloader(cfg ServerConfig, listener string, opts ...Option) (*Reloader, error) {
	if !cfg.Enabled() {
		return nil, fieldErr("cert_file", errors.New("must be set for a TLS listener"))
	}
	if err := cfg.validateFields(); err != nil {
		return nil, err
	}
	o := options{now: time.Now, log: slog.Default()}
	for _, opt := range opts {
		opt.apply(&o)
	}
	m, err := registerMetrics(o.reg)
	if err != nil {
		return nil, err
	}
	r := &Reloader{
		cfg:        cfg,
		listener:   listener,
		now:        o.now,
		log:        o.log.With("listener", listener),
		nextProtos: o.nextProtos,
		reloadsOK:  m.reloads.WithLabelValues(listener, "ok"),
		reloadsErr: m.reloads.WithLabelValues(listener, "error"),
		expiry:     m.expiry.WithLabelValues(listener),
	}
	r.stamps = statFiles(cfg)
	l, err := load(cfg)
	if err != nil {
		return nil, err
	}
	r.serve(l)
	r.nextCheck.Store(r.now().Add(checkInterval).UnixNano())
	r.log.Info("tls: certificate loaded", certAttrs(l)...)
	return r, nil
}

// Config is the listener's *tls.Config: every handshake gets the files last
// loaded.
func (r *Reloader) Config() *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		NextProtos:         r.nextProtos,
		GetConfigForClient: r.configForClient,
	}
}

func (r *Reloader) configForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	r.check()
	return r.current.Load(), nil
}

// check reloads the files when they changed and a second has passed since
// the last check. A handshake that finds another checking does not wait.
func (r *Reloader) check() {
	if r.now().UnixNano() < r.nextCheck.Load() || !r.checking.TryLock() {
		return
	}
	defer r.checking.Unlock()
	now := r.now()
	if now.UnixNano() < r.nextCheck.Load() {
		return
	}
	r.nextCheck.Store(now.Add(checkInterval).UnixNano())
	stamps := statFiles(r.cfg)
	if stamps == r.stamps {
		return
	}
	// Remembered even when the load fails: a broken state is tried once,
	// and again when the files change.
	r.stamps = stamps
	l, err := load(r.cfg)
	if err != nil {
		r.reloadsErr.Inc()
		r.log.Error("tls: reload failed; serving the previous certificate", "err", err)
		return
	}
	r.serve(l)
	r.reloadsOK.Inc()
	r.log.Info("tls: certificate reloaded", certAttrs(l)...)
}

// serve makes l the set every new handshake gets.
func (r *Reloader) serve(l *loaded) {
	r.current.Store(r.build(l))
	r.expiry.Set(float64(l.cert.Leaf.NotAfter.Unix()))
}

func (r *Reloader) build(l *loaded) *tls.Config {
	c := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{l.cert},
		NextProtos:   r.nextProtos,
		ClientCAs:    l.clientCAs,
	}
	switch r.cfg.ClientAuth {
	case ClientAuthRequest:
		c.ClientAuth = tls.VerifyClientCertIfGiven
	case ClientAuthRequire:
		c.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		c.ClientAuth = tls.NoClientCert
	}
	return c
}

func certAttrs(l *loaded) []any {
	leaf := l.cert.Leaf
	return []any{"subject", leaf.Subject.String(), "serial", leaf.SerialNumber.Text(16), "not_after", leaf.NotAfter}
}

// stamp is what a file looked like: a change to any part is a change of the
// file. A file replaced by rename has a new identity even when its size and
// modification time happen to be the same.
type stamp struct {
	exists  bool
	dev     uint64
	ino     uint64
	size    int64
	modTime int64
}

func statFiles(c ServerConfig) [3]stamp {
	return [3]stamp{statFile(c.CertFile), statFile(c.KeyFile), statFile(c.ClientCAFile)}
}

func statFile(path string) stamp {
	if path == "" {
		return stamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}
	}
	dev, ino := fileID(fi)
	return stamp{exists: true, dev: dev, ino: ino, size: fi.Size(), modTime: fi.ModTime().UnixNano()}
}

// metrics are the Reloaders' families; Reloaders on one Registerer share
// them, one listener label each.
type metrics struct {
	reloads *prometheus.CounterVec
	expiry  *prometheus.GaugeVec
}

func registerMetrics(reg prometheus.Registerer) (metrics, error) {
	m := metrics{
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_tls_reloads_total",
			Help: "Reloads of a listener's TLS certificate, key and client CAs after their files changed, by listener and result (ok, or error: the previous files are still served).",
		}, []string{"listener", "result"}),
		expiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_tls_certificate_expiry_timestamp_seconds",
			Help: "NotAfter of the certificate a listener serves, as a Unix timestamp; set at the first load and at every reload that succeeds.",
		}, []string{"listener"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.reloads, err = register(reg, m.reloads); err != nil {
		return metrics{}, err
	}
	if m.expiry, err = register(reg, m.expiry); err != nil {
		return metrics{}, err
	}
	return m, nil
}

// register registers c on reg, or returns the collector of its kind that
// another Reloader registered there.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("tlsfiles: registering metrics: %w", err)
	}
	return c, nil
}
