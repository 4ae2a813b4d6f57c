package pull

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/promreg"
)

// Wait causes, the cause label of sluice_poller_wait_seconds_total.
const (
	waitRetryAfter  = "retry_after"
	waitRateHeaders = "rate_limit_headers"
	waitClientLimit = "client_limit"
	waitBackoff     = "backoff"
	waitBreaker     = "breaker"
	waitInterval    = "interval"
)

// Metrics are the pollers' metrics. One Metrics serves every poller of a
// process; NewMetrics registers them all or none.
type Metrics struct {
	requests      *prometheus.CounterVec
	items         *prometheus.CounterVec
	pages         *prometheus.CounterVec
	pageFailures  *prometheus.CounterVec
	waited        *prometheus.CounterVec
	circuit       *prometheus.GaugeVec
	tokenRefresh  *prometheus.CounterVec
	authFailures  *prometheus.CounterVec
	up            *prometheus.GaugeVec
	interval      *prometheus.GaugeVec
	cursorAge     *cursorAge
	reg           prometheus.Registerer
	allCollectors []prometheus.Collector
}

// NewMetrics creates the pollers' metrics and registers them on reg when it
// is not nil.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_poller_requests_total",
			Help: "Page and token requests to partners, by partner and HTTP status (or error, timeout, off_origin_redirect).",
		}, []string{"partner", "status"}),
		items: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_poller_items_total",
			Help: "Items of committed pages, by partner, outcome (ACCEPTED, DUPLICATE, REJECTED) and rejection reason (UNMAPPABLE for items that do not map to an event, UNKNOWN_EVENT_TYPE for a type the mapping's types table lacks).",
		}, []string{"partner", "outcome", "reason"}),
		pages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_poller_pages_total",
			Help: "Pages by partner and result: committed (cursor saved), retried (an item was refused retryably, or the cursor was not saved).",
		}, []string{"partner", "result"}),
		pageFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_poller_page_failures_total",
			Help: "Pages the partner refused with a 4xx other than 401 and 429, or answered with a body that is not a page, by partner and status.",
		}, []string{"partner", "status"}),
		waited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_poller_wait_seconds_total",
			Help: "Seconds pollers waited, by partner and cause: retry_after, rate_limit_headers, client_limit, backoff, breaker, interval.",
		}, []string{"partner", "cause"}),
		circuit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_poller_circuit_state",
			Help: "The partner's circuit breaker: 0 closed, 1 open, 2 half_open.",
		}, []string{"partner"}),
		tokenRefresh: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_poller_token_refreshes_total",
			Help: "Access token fetches, by partner and result (ok, error).",
		}, []string{"partner", "result"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_poller_auth_failures_total",
			Help: "Pollers stopped because the partner refused their credentials.",
		}, []string{"partner"}),
		up: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_poller_up",
			Help: "1 while the partner's poller runs on this replica, 0 when it does not (stopped, or not yet or not here started).",
		}, []string{"partner"}),
		interval: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_poller_interval_seconds",
			Help: "The partner's configured interval between polls once caught up, the unit in which its cursor age is judged.",
		}, []string{"partner"}),
		cursorAge: &cursorAge{
			desc:  prometheus.NewDesc("sluice_poller_cursor_age_seconds", "Seconds since the partner's cursor was last saved, for pollers running on this replica.", []string{"partner"}, nil),
			saved: map[string]time.Time{},
			now:   time.Now,
		},
	}
	m.allCollectors = []prometheus.Collector{m.requests, m.items, m.pages, m.pageFailures, m.waited,
		m.circuit, m.tokenRefresh, m.authFailures, m.up, m.interval, m.cursorAge}
	if reg != nil {
		if err := promreg.Register(reg, m.allCollectors...); err != nil {
			return nil, err
		}
		m.reg = reg
	}
	return m, nil
}

// Unregister removes the metrics from the registerer they were registered on.
func (m *Metrics) Unregister() {
	if m.reg != nil {
		promreg.Unregister(m.reg, m.allCollectors...)
	}
}

// Configured sets the interval of cfg's partner and creates its series
// whose labels are bounded (page results, wait causes, item outcomes,
// token results for OAuth2) at zero, so a scrape names them before the
// first poll and rate() sees their first increase. sluice_poller_up is
// created at 0 where the poller is not running, so that an alert can tell
// a configured poller that runs on no replica. NewPoller calls it, and so
// does a runner for every poller it may run.
func (m *Metrics) Configured(cfg Config) {
	name := cfg.Name
	m.interval.WithLabelValues(name).Set(cfg.Interval.Seconds())
	m.up.WithLabelValues(name)
	m.circuit.WithLabelValues(name)
	m.authFailures.WithLabelValues(name)
	for _, r := range []string{"committed", "retried"} {
		m.pages.WithLabelValues(name, r)
	}
	for _, c := range []string{waitRetryAfter, waitRateHeaders, waitClientLimit, waitBackoff, waitBreaker, waitInterval} {
		m.waited.WithLabelValues(name, c)
	}
	for _, o := range []string{"ACCEPTED", "DUPLICATE"} {
		m.items.WithLabelValues(name, o, "")
	}
	m.items.WithLabelValues(name, "REJECTED", reasonUnmappable)
	if cfg.Auth.Type == AuthOAuth2 {
		for _, r := range []string{"ok", "error"} {
			m.tokenRefresh.WithLabelValues(name, r)
		}
	}
}

func (m *Metrics) wait(partner, cause string, d time.Duration) {
	if d > 0 {
		m.waited.WithLabelValues(partner, cause).Add(d.Seconds())
	}
}

// cursorAge reports now − saved_at per running poller at scrape time.
type cursorAge struct {
	desc  *prometheus.Desc
	mu    sync.Mutex
	saved map[string]time.Time
	now   func() time.Time
}

func (c *cursorAge) set(partner string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.saved[partner] = at
}

func (c *cursorAge) forget(partner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.saved, partner)
}

func (c *cursorAge) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *cursorAge) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for p, at := range c.saved {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, now.Sub(at).Seconds(), p)
	}
}
