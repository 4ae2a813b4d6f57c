package reload

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/contract"
)

// MaxImageBytes bounds the descriptor set file a reload reads: the
// example contracts' image is some 100 KiB, and a file larger than this
// is refused as a failed reload rather than read into memory.
const MaxImageBytes = 64 << 20

// Triggers, as results name them.
const (
	TriggerWatch  = "watch"  // the file's content changed and held still
	TriggerSignal = "sighup" // the process got SIGHUP
	TriggerAdmin  = "admin"  // POST /admin/contracts/reload
)

// Results of a reload.
const (
	ResultReloaded     = "reloaded"     // the new registry is served
	ResultUnchanged    = "unchanged"    // the file holds what is served
	ResultFailed       = "failed"       // unreadable, does not load, or the service refused it
	ResultIncompatible = "incompatible" // loads, but breaks a type's compatibility policy
)

// Config is what a Reloader reloads and how it judges a new image.
type Config struct {
	// Path is the descriptor set file the registry was loaded from.
	Path string
	// WatchInterval is how often Path is read and hashed; 0 turns the
	// watch off (Reload still reloads).
	WatchInterval time.Duration
	// Policies are each type's compatibility policy.
	Policies contract.Policies
	// Load builds a registry from an image, with the event types and the
	// options the process started with.
	Load func(image []byte) (*contract.Registry, error)
}

// Option configures a Reloader.
type Option interface{ apply(*options) }

type options struct {
	log     *slog.Logger
	reg     prometheus.Registerer
	prepare []func(*contract.Registry) error
	signals <-chan os.Signal
	now     func() time.Time
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

// WithRegisterer registers the reload metrics on r; by default they are
// kept but not registered.
func WithRegisterer(r prometheus.Registerer) Option {
	return optionFunc(func(o *options) { o.reg = r })
}

// WithPrepare adds a step that a compatible registry must pass before it
// is swapped in: a service building what serving it takes (the gateway's
// REST description). Its error fails the reload. By default there is none.
func WithPrepare(f func(*contract.Registry) error) Option {
	return optionFunc(func(o *options) { o.prepare = append(o.prepare, f) })
}

// WithSignals makes Run reload on every value received from c (SIGHUP,
// as the process subscribed it); by default Run reloads on the watch only.
func WithSignals(c <-chan os.Signal) Option { return optionFunc(func(o *options) { o.signals = c }) }

// WithClock replaces time.Now, for results' times.
func WithClock(now func() time.Time) Option { return optionFunc(func(o *options) { o.now = now }) }

// Reloader swaps a new registry into Versions when the descriptor set
// file changes, on a signal, or when asked, once the new registry loads,
// keeps every type's compatibility policy against the one served, and
// passes every prepare step. It is safe for concurrent use; reloads run
// one at a time.
type Reloader struct {
	cfg      Config
	versions *contract.Versions
	log      *slog.Logger
	prepare  []func(*contract.Registry) error
	signals  <-chan os.Signal
	now      func() time.Time
	metrics  *metrics

	mu sync.Mutex // one reload at a time; guards what follows
	// served is the hash of the image served.
	served [sha256.Size]byte
	// seen is the content the watch read last, and refused the hash of
	// the last content a watch reload refused: the watch tries a content
	// once it has held still for one interval, and a refused one again
	// only after the file changed.
	seen, refused [sha256.Size]byte
	last          Result
}

// New serves versions' registry, which Config.Load loaded from
// Config.Path's content, and reloads it from there.
func New(cfg Config, versions *contract.Versions, opts ...Option) (*Reloader, error) {
	if cfg.Path == "" || cfg.Load == nil {
		return nil, errors.New("reload: a path and a load function are needed")
	}
	if cfg.WatchInterval < 0 {
		return nil, fmt.Errorf("reload: watch interval %v: must not be negative", cfg.WatchInterval)
	}
	o := options{log: slog.Default(), now: time.Now}
	for _, opt := range opts {
		opt.apply(&o)
	}
	m, err := newMetrics(o.reg)
	if err != nil {
		return nil, err
	}
	r := &Reloader{
		cfg: cfg, versions: versions, log: o.log, prepare: o.prepare, signals: o.signals, now: o.now, metrics: m,
		served: sha256.Sum256(versions.Registry().Image()),
	}
	r.seen = r.served
	reg := versions.Registry()
	r.metrics.serve(nil, reg)
	r.last = Result{Result: ResultReloaded, Trigger: "start", At: o.now(), Served: servedVersions(reg)}
	return r, nil
}

// Run watches the file and the signals until ctx ends. It is the
// Reloader's one goroutine; the caller owns it and waits for it.
func (r *Reloader) Run(ctx context.Context) {
	var tick <-chan time.Time
	if r.cfg.WatchInterval > 0 {
		t := time.NewTicker(r.cfg.WatchInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			r.Watch()
		case _, ok := <-r.signals:
			if !ok {
				r.signals = nil
				continue
			}
			r.Reload(TriggerSignal)
		}
	}
}

// Watch is one step of the watch, which Run takes every WatchInterval: it
// reads the file and reloads it when its content is new and the same as
// the last step read, so that a file being written in place is read
// again, not loaded half done.
func (r *Reloader) Watch() {
	image, err := readImage(r.cfg.Path)
	if err != nil {
		// A file missing for a moment (a rename in progress) is not a
		// reload; one that stays missing is reported by the next explicit
		// reload, and logged here.
		r.log.Debug("contracts: watch cannot read the descriptor set", "path", r.cfg.Path, "err", err)
		return
	}
	sum := sha256.Sum256(image)
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := sum != r.seen
	r.seen = sum
	if changed || sum == r.served || sum == r.refused {
		return
	}
	if res := r.reloadLocked(TriggerWatch, image, sum); res.Result != ResultReloaded {
		r.refused = sum
	}
}

// Reload reads the file now and reloads it, whatever the watch saw.
func (r *Reloader) Reload(trigger string) Result {
	image, err := readImage(r.cfg.Path)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		return r.finish(Result{Trigger: trigger, Result: ResultFailed, Error: err.Error(), At: r.now()}, r.versions.Registry(), nil)
	}
	sum := sha256.Sum256(image)
	r.seen = sum
	res := r.reloadLocked(trigger, image, sum)
	if res.Result != ResultReloaded && res.Result != ResultUnchanged {
		r.refused = sum
	}
	return res
}

// Last is the last reload's result (at start: the registry loaded).
func (r *Reloader) Last() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

func (r *Reloader) reloadLocked(trigger string, image []byte, sum [sha256.Size]byte) Result {
	start := r.now()
	res := Result{Trigger: trigger, At: start}
	cur := r.versions.Registry()
	if sum == r.served {
		res.Result = ResultUnchanged
		return r.finish(res, cur, nil)
	}
	next, err := r.cfg.Load(image)
	if err != nil {
		res.Result, res.Error = ResultFailed, err.Error()
		return r.finish(res, cur, nil)
	}
	report, err := contract.CompareRegistries(cur, next, r.cfg.Policies)
	if err != nil {
		res.Result, res.Error = ResultFailed, err.Error()
		return r.finish(res, cur, nil)
	}
	res.Findings = findingsOf(report)
	if err := report.Err(); err != nil {
		res.Result, res.Error = ResultIncompatible, err.Error()
		return r.finish(res, cur, nil)
	}
	for _, p := range r.prepare {
		if err := p(next); err != nil {
			res.Result, res.Error = ResultFailed, err.Error()
			return r.finish(res, cur, nil)
		}
	}
	r.versions.Swap(next)
	r.served = sum
	res.Result = ResultReloaded
	res.Seconds = time.Since(start).Seconds()
	r.metrics.duration.Observe(res.Seconds)
	return r.finish(res, next, cur)
}

// finish records res: served is the registry served after it, prev the
// one it replaced (nil: none was).
func (r *Reloader) finish(res Result, served, prev *contract.Registry) Result {
	res.Served = servedVersions(served)
	r.metrics.reloads.WithLabelValues(res.Result).Inc()
	if prev != nil {
		r.metrics.serve(prev, served)
	}
	switch res.Result {
	case ResultReloaded:
		r.metrics.refused.Set(0)
		r.log.Info("contracts reloaded", "trigger", res.Trigger, "seconds", res.Seconds,
			"changed", changedVersions(prev, served), "findings", len(res.Findings))
	case ResultUnchanged:
		r.log.Info("contracts unchanged", "trigger", res.Trigger)
	case ResultIncompatible:
		r.metrics.refused.Set(1)
		var breaking int
		for _, f := range res.Findings {
			if f.Breaking {
				breaking++
			}
		}
		r.log.Error("contracts reload refused: incompatible; the running version keeps serving", "trigger", res.Trigger, "breaking", breaking)
		for _, f := range res.Findings {
			if f.Breaking {
				r.log.Error("contracts reload finding", "type", f.Type, "path", f.Path, "rule", f.Rule, "validate_rule", f.ValidateRule, "breaks", f.Breaks, "reason", f.Reason)
			}
		}
	default:
		r.metrics.refused.Set(1)
		r.log.Error("contracts reload refused: failed; the running version keeps serving", "trigger", res.Trigger, "err", res.Error)
	}
	r.last = res
	return res
}

func readImage(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reload: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxImageBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reload: read %s: %w", path, err)
	}
	if len(b) > MaxImageBytes {
		return nil, fmt.Errorf("reload: %s is over %d bytes", path, MaxImageBytes)
	}
	return b, nil
}

// Result is what a reload did, as the admin endpoint answers it.
type Result struct {
	Trigger string    `json:"trigger"`
	Result  string    `json:"result"`
	Error   string    `json:"error,omitempty"`
	At      time.Time `json:"at"`
	// Seconds is how long a successful reload took, load to swap.
	Seconds float64 `json:"seconds,omitempty"`
	// Findings are the compatibility check's, breaking or not.
	Findings []Finding `json:"findings,omitempty"`
	// Served is each type's fingerprint served after the reload.
	Served map[string]string `json:"served"`
}

// Finding is a contract.Finding as JSON says it.
type Finding struct {
	Type         string `json:"type"`
	Path         string `json:"path"`
	Rule         string `json:"rule"`
	ValidateRule string `json:"validate_rule,omitempty"`
	Reason       string `json:"reason"`
	Breaks       string `json:"breaks"`
	// Breaking says the finding breaks its type's policy.
	Breaking bool `json:"breaking"`
}

func findingsOf(rep *contract.Report) []Finding {
	var out []Finding
	for _, t := range rep.Types {
		breaking := t.Breaking()
		for _, f := range t.Findings {
			out = append(out, Finding{
				Type: f.Type, Path: f.Path, Rule: f.Rule, ValidateRule: f.ValidateRule, Reason: f.Reason,
				Breaks: f.Breaks.String(), Breaking: slices.Contains(breaking, f),
			})
		}
	}
	return out
}

// changedVersions lists the types whose fingerprint differs between prev
// and next, "type old → new", for the log.
func changedVersions(prev, next *contract.Registry) string {
	was := servedVersions(prev)
	var out []string
	for _, typ := range next.Types() {
		c, _ := next.Lookup(typ)
		if was[typ] != c.Fingerprint() {
			out = append(out, typ+" "+was[typ]+" → "+c.Fingerprint())
		}
	}
	return strings.Join(out, ", ")
}

func servedVersions(reg *contract.Registry) map[string]string {
	out := make(map[string]string, len(reg.Types()))
	for _, typ := range reg.Types() {
		c, _ := reg.Lookup(typ)
		out[typ] = c.Fingerprint()
	}
	return out
}
