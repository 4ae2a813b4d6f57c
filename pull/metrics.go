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
			Help: "Items of committed pages, by partner, outcome (ACCEPTED, DUPLICATE, REJECTED) and rejection reason (UNMAPPABLE for items that do not map to an event).",
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
			Help: "1 while the partner's poller runs on this replica, 0 once it stopped.",
		}, []string{"partner"}),
		cursorAge: &cursorAge{
			desc:  prometheus.NewDesc("sluice_poller_cursor_age_seconds", "Seconds since the partner's cursor was last saved, for pollers running on this replica.", []string{"partner"}, nil),
			saved: map[string]time.Time{},
			now:   time.Now,
		},
	}
	m.allCollectors = []prometheus.Collector{m.requests, m.items, m.pages, m.pageFailures, m.waited,
		m.circuit, m.tokenRefresh, m.authFailures, m.up, m.cursorAge}
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
