package pull

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/breaker"
	"github.com/sluicehq/sluice/internal/clip"
	"github.com/sluicehq/sluice/internal/eventmap"
	"github.com/sluicehq/sluice/internal/jsonpointer"
	"github.com/sluicehq/sluice/internal/outbound"
	"github.com/sluicehq/sluice/internal/retryafter"
	"github.com/sluicehq/sluice/internal/tracing"
)

// Ingester judges pulled events under a source name and answers every
// event by index: (*gateway.Service).Ingest.
type Ingester interface {
	Ingest(ctx context.Context, sourceName string, events []*ingestv1.Event) []*ingestv1.EventResult
}

// Position is where a poller stands: the next page to request.
type Position struct {
	// Cursor is the partner's cursor (pagination cursor).
	Cursor string `json:"cursor,omitempty"`
	// URL is the next page's URL from a Link header (pagination link).
	URL string `json:"url,omitempty"`
	// Page is the next page number (pagination page).
	Page int `json:"page,omitempty"`
}

// CursorRecord is a saved Position, the value of a cursor record.
type CursorRecord struct {
	Poller string `json:"poller"`
	Position
	SavedAt time.Time `json:"saved_at"`
}

// CursorStore keeps a poller's position.
type CursorStore interface {
	// Load returns the last saved record; ok is false when none was saved.
	Load(ctx context.Context) (rec CursorRecord, ok bool, err error)
	// Save returns nil only once rec is durable.
	Save(ctx context.Context, rec CursorRecord) error
}

// Poller states, in Status.State.
const (
	StateStarting   = "starting"
	StatePolling    = "polling"
	StateWaiting    = "waiting"
	StateStopped    = "stopped"
	StateAuthFailed = "auth_failed"
)

// Breaker states, in Status.Circuit and sluice_poller_circuit_state: the
// names of breaker.State.
const (
	CircuitClosed   = "closed"
	CircuitOpen     = "open"
	CircuitHalfOpen = "half_open"
)

// PageFailure is a page the partner refused (a 4xx other than 401 and
// 429) or answered with a body that is not a page.
type PageFailure struct {
	URL    string // query values redacted (outbound.RedactURL)
	Status int    // 0 when the body, not the status, was wrong
	Body   string // at most bodyPrefix bytes of the answer (clip.Bytes)
	Reason string
	At     time.Time
}

// Status is a snapshot of a poller.
type Status struct {
	Partner string
	State   string
	Position
	// SavedAt is when the position was last saved; zero before the first.
	SavedAt time.Time
	Circuit string
	// Failures counts consecutive failed attempts; 0 after a committed page.
	Failures    int
	LastFailure *PageFailure // the most recent failed page, if any
	Err         string       // why the poller stopped, if it did
}

// bodyPrefix bounds the body kept in a PageFailure and logs.
const bodyPrefix = 512

// Poller pulls one partner's pages and admits their items. Run it once.
type Poller struct {
	cfg     Config
	ing     Ingester
	store   CursorStore
	clock   Clock
	log     *slog.Logger
	metrics *Metrics
	client  *http.Client // redirects stay on the request's origin
	origin  *url.URL     // Config.URL: the only origin page requests go to
	creds   *credentials
	limiter *rate.Limiter // nil: no client-side limit
	jitter  backoff.Jitter
	breaker *breaker.Breaker // transient failures open it; any answer closes it
	source  string
	mapping *eventmap.Mapping // Config.Mapping
	tracer  trace.Tracer      // nil: no spans (WithTracerProvider)

	// Owned by Run.
	failures    int       // consecutive failed attempts, for backoff
	notBefore   time.Time // the partner's rate-limit headers asked to wait until
	authRetried bool      // a 401 was answered by refreshing the credentials

	mu     sync.Mutex // guards status
	status Status
}

// NewPoller validates cfg and builds a poller that saves its position in
// store.
func NewPoller(cfg Config, ing Ingester, store CursorStore, opts ...Option) (*Poller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt.apply(&o)
	}
	if o.metrics == nil {
		m, err := NewMetrics(nil)
		if err != nil {
			return nil, err
		}
		o.metrics = m
	}
	o.metrics.Configured(cfg)
	origin, err := parseTemplate(cfg.URL)
	if err != nil { // validated
		return nil, err
	}
	mapping, err := eventmap.New(cfg.Mapping)
	if err != nil { // validated
		return nil, err
	}
	// Both the partner's token and the client secret ride on this client:
	// neither may follow a redirect to another origin.
	client := outbound.StayOnOrigin(o.client)
	p := &Poller{
		cfg: cfg, ing: ing, store: store, clock: o.clock, metrics: o.metrics, client: client, origin: origin, mapping: mapping,
		jitter: o.jitter, source: cfg.SourceName(), tracer: o.tracer,
		log: o.log.With("poller", cfg.Name),
		creds: &credentials{cfg: cfg.Auth, partner: cfg.Name, getenv: o.getenv, client: client,
			timeout: cfg.RequestTimeout, now: o.clock.Now, metrics: o.metrics},
		status: Status{Partner: cfg.Name, State: StateStarting, Circuit: CircuitClosed,
			Position: Position{Cursor: cfg.Pagination.StartCursor, Page: cfg.Pagination.StartPage}},
	}
	if cfg.RateLimit.Rate > 0 {
		p.limiter = rate.NewLimiter(rate.Limit(cfg.RateLimit.Rate), cfg.RateLimit.Burst)
	}
	p.breaker = breaker.New(breaker.Config{ConsecutiveFailures: cfg.Breaker.Failures, Cooldown: cfg.Breaker.Cooldown},
		o.clock, p.circuitChanged)
	return p, nil
}

// Name is the poller's name.
func (p *Poller) Name() string { return p.cfg.Name }

// Status returns a snapshot.
func (p *Poller) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.status
	if s.LastFailure != nil {
		f := *s.LastFailure
		s.LastFailure = &f
	}
	return s
}

func (p *Poller) update(f func(*Status)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&p.status)
}

// Run polls until ctx ends (it then returns nil) or the partner refuses the
// credentials (it returns the *AuthError). It loads the saved position
// first and saves a new one only after every item of a page is
// acknowledged or refused for good.
func (p *Poller) Run(ctx context.Context) error {
	name := p.cfg.Name
	p.metrics.up.WithLabelValues(name).Set(1)
	p.metrics.circuit.WithLabelValues(name).Set(0)
	defer func() {
		p.metrics.up.WithLabelValues(name).Set(0)
		p.metrics.cursorAge.forget(name)
	}()
	if !p.load(ctx) {
		p.update(func(s *Status) { s.State = StateStopped })
		return nil
	}
	for ctx.Err() == nil {
		p.update(func(s *Status) { s.State = StatePolling })
		wait, cause, err := p.poll(ctx)
		if err != nil {
			p.metrics.authFailures.WithLabelValues(name).Inc()
			p.log.Error("poller stopped: the partner refused its credentials", "err", err)
			p.update(func(s *Status) { s.State, s.Err = StateAuthFailed, err.Error() })
			return err
		}
		if wait > 0 {
			p.update(func(s *Status) { s.State = StateWaiting })
			p.sleep(ctx, wait, cause)
		}
	}
	p.update(func(s *Status) { s.State = StateStopped })
	return nil
}

// load reads the saved position, retrying with backoff; false when ctx
// ended first.
func (p *Poller) load(ctx context.Context) bool {
	for {
		rec, ok, err := p.store.Load(ctx)
		if err == nil {
			p.failures = 0
			if ok {
				p.update(func(s *Status) { s.Position, s.SavedAt = rec.Position, rec.SavedAt })
				p.metrics.cursorAge.set(p.cfg.Name, rec.SavedAt)
				p.log.Info("poller resumes from its saved position", "cursor", rec.Cursor, "url", outbound.RedactURL(rec.URL), "page", rec.Page, "saved_at", rec.SavedAt)
			} else {
				p.log.Info("poller starts: no saved position")
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		p.failures++
		wait := p.cfg.Backoff.Wait(p.failures, p.jitter)
		p.log.Warn("load of the saved position failed; retrying", "err", err, "wait", wait)
		if p.sleep(ctx, wait, waitBackoff) != nil {
			return false
		}
	}
}

func (p *Poller) sleep(ctx context.Context, d time.Duration, cause string) error {
	start := p.clock.Now()
	err := p.clock.Sleep(ctx, d)
	waited := d
	if err != nil {
		waited = p.clock.Now().Sub(start)
	}
	p.metrics.wait(p.cfg.Name, cause, waited)
	return err
}

// poll makes at most one request and returns how long to wait before the
// next one, and why. The error is an *AuthError: the poller must stop.
func (p *Poller) poll(ctx context.Context) (time.Duration, string, error) {
	now := p.clock.Now()
	if now.Before(p.notBefore) {
		return p.notBefore.Sub(now), waitRateHeaders, nil
	}
	if p.limiter != nil {
		r := p.limiter.ReserveN(now, 1)
		if d := r.DelayFrom(now); d > 0 {
			if p.sleep(ctx, d, waitClientLimit) != nil {
				return 0, "", nil
			}
		}
	}
	// The permit is taken last, so that a half-open probe is not held
	// through the waits above. Every path below records its outcome or
	// abandons it.
	if ok, wait, _ := p.breaker.Acquire(); !ok {
		return wait, waitBreaker, nil
	}
	pos := p.Status().Position
	pg, err := p.fetch(ctx, pos)
	if ctx.Err() != nil {
		p.breaker.Abandon()
		return 0, "", nil
	}
	var ae *AuthError
	if errors.As(err, &ae) {
		// The credentials, not the partner, failed: no outcome to count.
		p.breaker.Abandon()
		return 0, "", ae
	}
	var fe *fetchError
	if errors.As(err, &fe) {
		return p.failed(fe)
	}
	p.breaker.Record(false)
	p.authRetried = false
	p.noteLimits(pg.header)
	return p.admit(ctx, pos, pg)
}

// failed decides the wait after a failed request.
func (p *Poller) failed(fe *fetchError) (time.Duration, string, error) {
	now := p.clock.Now()
	switch fe.kind {
	case kindUnauthorized:
		p.breaker.Record(false)
		if p.authRetried {
			return 0, "", &AuthError{Partner: p.cfg.Name, Status: fe.status, Body: fe.body}
		}
		p.authRetried = true
		p.creds.invalidate()
		p.log.Warn("partner answered 401: refreshing the credentials and retrying once", "body", fe.body)
		return 0, "", nil
	case kindThrottled:
		p.breaker.Record(false)
		p.failures++
		if d, ok := retryafter.Parse(fe.header.Get("Retry-After"), now); ok {
			return min(d, p.cfg.MaxRetryAfter), waitRetryAfter, nil
		}
		if a, ok := parseRateLimit(fe.header, now); ok && a.remaining <= p.cfg.RateLimit.MinRemaining {
			return min(a.reset, p.cfg.MaxRetryAfter), waitRateHeaders, nil
		}
		return p.cfg.Backoff.Wait(p.failures, p.jitter), waitBackoff, nil
	case kindTransient:
		p.failures++
		p.breaker.Record(true)
		if p.breaker.State() == breaker.Open {
			p.log.Warn("circuit open: the partner keeps failing", "failures", p.failures, "cooldown", p.cfg.Breaker.Cooldown, "err", fe.err)
			return p.cfg.Breaker.Cooldown, waitBreaker, nil
		}
		wait := p.cfg.Backoff.Wait(p.failures, p.jitter)
		p.log.Warn("request failed; backing off", "err", fe.err, "wait", wait)
		return wait, waitBackoff, nil
	default: // kindPageFailed
		p.breaker.Record(false)
		p.failures++
		f := &PageFailure{URL: fe.url, Status: fe.status, Body: fe.body, Reason: fe.err.Error(), At: now}
		label := "body"
		if fe.status != 0 {
			label = strconv.Itoa(fe.status)
		}
		p.metrics.pageFailures.WithLabelValues(p.cfg.Name, label).Inc()
		wait := p.cfg.Backoff.Wait(p.failures, p.jitter)
		p.log.Error("page failed; it will be retried, the cursor stays", "url", fe.url, "status", fe.status, "body", fe.body, "err", fe.err, "wait", wait)
		p.update(func(s *Status) { s.LastFailure = f; s.Failures = p.failures })
		return wait, waitBackoff, nil
	}
}

// circuitChanged is the breaker's onChange: Status.Circuit and
// sluice_poller_circuit_state follow it. It runs on Run's goroutine, from
// Acquire and Record. The opening is logged where it is decided, with the
// failure that caused it.
func (p *Poller) circuitChanged(s breaker.State) {
	p.update(func(st *Status) { st.Circuit = s.String() })
	var v float64
	switch s {
	case breaker.Open:
		v = 1
	case breaker.HalfOpen:
		v = 2
		p.log.Info("circuit half_open: probing the partner")
	case breaker.Closed:
		p.log.Info("circuit closed: the partner answers")
	}
	p.metrics.circuit.WithLabelValues(p.cfg.Name).Set(v)
}

// noteLimits makes the next request wait for the reset when the partner's
// rate-limit headers say the window is (nearly) used up.
func (p *Poller) noteLimits(h http.Header) {
	now := p.clock.Now()
	if a, ok := parseRateLimit(h, now); ok && a.remaining <= p.cfg.RateLimit.MinRemaining && a.reset > 0 {
		p.notBefore = now.Add(min(a.reset, p.cfg.MaxRetryAfter))
	}
}

// ingest judges a page's events, under a root `poll {poller}` span when
// the poller traces.
func (p *Poller) ingest(ctx context.Context, events []*ingestv1.Event) []*ingestv1.EventResult {
	if p.tracer == nil {
		return p.ing.Ingest(ctx, p.source, events)
	}
	sctx, span := p.tracer.Start(ctx, "poll "+p.cfg.Name, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String(tracing.AttrSource, p.source), attribute.String(tracing.AttrTransport, "poller"),
			attribute.Int(tracing.AttrEvents, len(events))))
	defer span.End()
	results := p.ing.Ingest(sctx, p.source, events)
	if span.IsRecording() {
		var accepted, duplicate, rejected int
		for _, r := range results {
			switch r.GetOutcome() {
			case ingestv1.Outcome_ACCEPTED:
				accepted++
			case ingestv1.Outcome_DUPLICATE:
				duplicate++
			case ingestv1.Outcome_REJECTED:
				rejected++
			}
		}
		span.SetAttributes(attribute.Int(tracing.AttrOutcome+".accepted", accepted),
			attribute.Int(tracing.AttrOutcome+".duplicate", duplicate), attribute.Int(tracing.AttrOutcome+".rejected", rejected))
	}
	return results
}

// admit maps and admits a page's items and saves the next position once
// every item is acknowledged or refused for good.
func (p *Poller) admit(ctx context.Context, pos Position, pg *page) (time.Duration, string, error) {
	name := p.cfg.Name
	events := make([]*ingestv1.Event, 0, len(pg.items))
	unmappable, unknownType := 0, 0
	for i, item := range pg.items {
		ev, err := mapItem(p.mapping, i, item, pg.fetched)
		if err != nil {
			if _, ok := errors.AsType[*eventmap.UnknownTypeError](err); ok {
				unknownType++
				p.log.Warn("item's type maps to no contract type; skipped", "err", err)
				continue
			}
			unmappable++
			p.log.Warn("item does not map to an event; skipped", "err", err)
			continue
		}
		events = append(events, ev)
	}
	var results []*ingestv1.EventResult
	if len(events) > 0 {
		results = p.ingest(ctx, events)
	}
	if ctx.Err() != nil {
		return 0, "", nil
	}
	type key struct{ outcome, reason string }
	counts := map[key]int{}
	var retryAfter time.Duration
	retry := len(results) != len(events)
	for i := 0; i < len(events) && !retry; i++ {
		r := results[i]
		switch r.GetOutcome() {
		case ingestv1.Outcome_ACCEPTED, ingestv1.Outcome_DUPLICATE:
			counts[key{r.GetOutcome().String(), ""}]++
		case ingestv1.Outcome_REJECTED:
			rej := r.GetRejection()
			if rej.GetRetryable() {
				retry = true
				retryAfter = max(retryAfter, rej.GetRetryAfter().AsDuration())
				continue
			}
			counts[key{"REJECTED", rej.GetReason().String()}]++
			p.log.Warn("item rejected; skipped", "id", events[i].GetId(), "reason", rej.GetReason().String(), "message", rej.GetMessage())
		default:
			retry = true
		}
	}
	if retry {
		p.failures++
		p.metrics.pages.WithLabelValues(name, "retried").Inc()
		wait := max(p.cfg.Backoff.Wait(p.failures, p.jitter), min(retryAfter, p.cfg.MaxRetryAfter))
		p.log.Warn("page not acknowledged in full; it will be polled again", "wait", wait)
		p.update(func(s *Status) { s.Failures = p.failures })
		return wait, waitBackoff, nil
	}
	if pg.next != pos {
		rec := CursorRecord{Poller: name, Position: pg.next, SavedAt: p.clock.Now()}
		if err := p.store.Save(ctx, rec); err != nil {
			if ctx.Err() != nil {
				return 0, "", nil
			}
			p.failures++
			p.metrics.pages.WithLabelValues(name, "retried").Inc()
			wait := p.cfg.Backoff.Wait(p.failures, p.jitter)
			p.log.Warn("saving the cursor failed; the page will be polled again", "err", err, "wait", wait)
			p.update(func(s *Status) { s.Failures = p.failures })
			return wait, waitBackoff, nil
		}
		p.update(func(s *Status) { s.Position, s.SavedAt = rec.Position, rec.SavedAt })
		p.metrics.cursorAge.set(name, rec.SavedAt)
	}
	p.failures = 0
	p.update(func(s *Status) { s.Failures = 0 })
	p.metrics.pages.WithLabelValues(name, "committed").Inc()
	for k, n := range counts {
		p.metrics.items.WithLabelValues(name, k.outcome, k.reason).Add(float64(n))
	}
	if unmappable > 0 {
		p.metrics.items.WithLabelValues(name, "REJECTED", reasonUnmappable).Add(float64(unmappable))
	}
	if unknownType > 0 {
		p.metrics.items.WithLabelValues(name, "REJECTED", ingestv1.Reason_UNKNOWN_EVENT_TYPE.String()).Add(float64(unknownType))
	}
	if pg.last {
		return p.cfg.Interval, waitInterval, nil
	}
	return 0, "", nil
}

// reasonUnmappable is the reason label of items that do not map to events.
const reasonUnmappable = "UNMAPPABLE"

// How each answer is handled:
//
//   - 2xx: a page. The rate-limit headers (RateLimit, RateLimit-Remaining/
//     -Reset, X-RateLimit-Remaining/-Reset) are read on every answer: with
//     at most RateLimit.MinRemaining requests left, the next request waits
//     for the reset. A reset of 1e9 or more is a Unix timestamp (1e12 or
//     more: milliseconds), a smaller one seconds from now.
//   - 429 and 503: wait for Retry-After (seconds or HTTP date), else for
//     the rate-limit reset, else exponential backoff with full jitter;
//     every partner-given wait is capped by MaxRetryAfter.
//   - Other 5xx, timeouts, connection errors, off-origin redirects:
//     backoff with full jitter; after Breaker.Failures in a row the breaker
//     opens for Breaker.Cooldown, then one probe decides. Any answer of the
//     partner (401, 429, a failed page included) counts as a success for
//     the breaker: the partner is up.
//   - 401: the credentials are refreshed once (a new OAuth2 token, or the
//     bearer token read again from its environment variable) and the page
//     retried; a second 401 in a row stops the poller with an *AuthError.
//     A token endpoint that refuses the client (4xx, or a 2xx with an
//     error member) stops it the same way; one that is down, slow or
//     redirects off its origin is retried like a page, behind the breaker.
//     Tokens (client credentials grant) are kept until RefreshBefore ahead
//     of their expires_in, counted on the poller's Clock.
//   - Other 4xx, and 2xx bodies that are not a page: the page is recorded
//     as failed (Status, a log line, sluice_poller_page_failures_total),
//     the position stays, and the page is retried with backoff.

// kind is how a partner's answer is handled.
type kind int

const (
	kindOK           kind = iota
	kindThrottled         // 429, 503: wait as the partner says
	kindTransient         // other 5xx, timeouts, connection errors, off-origin redirects: backoff, breaker
	kindUnauthorized      // 401: refresh the credentials once
	kindPageFailed        // other 4xx and 1xx/3xx, bodies that are not a page
)

// judgeResponse is the one place where an answer of a partner, or the
// failure to get one, is judged. err is the error of the request or of
// reading the body.
func judgeResponse(resp *http.Response, err error) kind {
	switch {
	case errors.Is(err, outbound.ErrOffOrigin):
		// The partner (or its token endpoint) redirects to another origin,
		// which is never followed: nothing about this page is wrong, the
		// endpoint is. Like an outage it is probed behind the breaker
		// rather than retried at the backoff's pace for ever.
		return kindTransient
	case err != nil:
		return kindTransient // timeouts, refused or reset connections, cut bodies
	}
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return kindOK
	case c == http.StatusTooManyRequests || c == http.StatusServiceUnavailable:
		return kindThrottled
	case c == http.StatusUnauthorized:
		return kindUnauthorized
	case c >= 500:
		return kindTransient
	default:
		return kindPageFailed
	}
}

// fetchError is a request that did not give a page.
type fetchError struct {
	kind   kind
	url    string
	status int
	header http.Header
	body   string
	err    error
}

func (e *fetchError) Error() string { return e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

// page is a fetched page.
type page struct {
	items   [][]byte
	next    Position
	last    bool // caught up: wait Interval before the next poll
	header  http.Header
	fetched time.Time
}

// pageURL builds the URL of the page at pos.
func (p *Poller) pageURL(pos Position) string {
	if pos.URL != "" {
		return pos.URL
	}
	tmpl := p.cfg.URL
	if p.cfg.FirstURL != "" && pos.Cursor == "" && p.cfg.Pagination.Type != PaginatePage {
		tmpl = p.cfg.FirstURL
	}
	return strings.NewReplacer("{cursor}", url.QueryEscape(pos.Cursor), "{page}", strconv.Itoa(pos.Page)).Replace(tmpl)
}

// fetch requests the page at pos. The error is a *fetchError or an
// *AuthError.
func (p *Poller) fetch(ctx context.Context, pos Position) (*page, error) {
	target := p.pageURL(pos)
	fail := func(k kind, status int, h http.Header, body []byte, err error) error {
		return &fetchError{kind: k, url: outbound.RedactURL(target), status: status, header: h, body: clip.Bytes(body, bodyPrefix), err: err}
	}
	rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, p.cfg.Method, target, nil)
	if err != nil {
		return nil, fail(kindPageFailed, 0, nil, nil, fmt.Errorf("build request: %w", outbound.RedactError(err)))
	}
	// A saved next URL is checked again: one saved by an earlier release
	// may lead anywhere, and the token must not go there.
	if err := p.onOrigin(req.URL, "next page URL"); err != nil {
		return nil, fail(kindPageFailed, 0, nil, nil, err)
	}
	for k, v := range p.cfg.Headers {
		req.Header.Set(k, v)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	req.Header.Set("User-Agent", "sluice-poller")
	if err := p.creds.authorize(ctx, req); err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		err = outbound.RedactError(err)
		p.metrics.requests.WithLabelValues(p.cfg.Name, statusLabel(0, err)).Inc()
		return nil, fail(judgeResponse(nil, err), 0, nil, nil, err)
	}
	defer resp.Body.Close()
	p.metrics.requests.WithLabelValues(p.cfg.Name, statusLabel(resp.StatusCode, nil)).Inc()
	body, err := io.ReadAll(io.LimitReader(resp.Body, p.cfg.MaxBodyBytes+1))
	k := judgeResponse(resp, err)
	if k != kindOK {
		if err == nil {
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil, fail(k, resp.StatusCode, resp.Header, body, err)
	}
	if int64(len(body)) > p.cfg.MaxBodyBytes {
		return nil, fail(kindPageFailed, 0, resp.Header, nil, fmt.Errorf("body is over max_body_bytes (%d)", p.cfg.MaxBodyBytes))
	}
	pg, err := p.parsePage(body, pos, resp)
	if err != nil {
		return nil, fail(kindPageFailed, 0, resp.Header, body, err)
	}
	return pg, nil
}

// parsePage finds the items and the next position.
func (p *Poller) parsePage(body []byte, pos Position, resp *http.Response) (*page, error) {
	doc := jsonpointer.NewDoc(body)
	raw, err := pageItems(doc, body, p.cfg.Items)
	if err != nil {
		return nil, err
	}
	pg := &page{header: resp.Header, fetched: p.clock.Now(), next: pos}
	pg.items = make([][]byte, len(raw))
	for i, r := range raw {
		pg.items[i] = r
	}
	switch pc := p.cfg.Pagination; pc.Type {
	case PaginateCursor:
		next, err := nextCursor(doc, body, pc.Cursor)
		if err != nil {
			return nil, err
		}
		if next != "" {
			pg.next = Position{Cursor: next}
		}
		pg.last = len(raw) == 0 || next == "" || next == pos.Cursor
	case PaginateLink:
		// A relative link is resolved against the URL that answered; the
		// result must be on the configured origin, whatever answered.
		u, ok := parseLinkNext(resp.Header.Values("Link"), resp.Request.URL)
		if ok {
			if err := p.onOrigin(u, "next link"); err != nil {
				return nil, err
			}
			pg.next = Position{URL: u.String()}
		}
		pg.last = !ok || len(raw) == 0
	case PaginatePage:
		full := len(raw) > 0 && (pc.PageSize == 0 || len(raw) >= pc.PageSize)
		if full {
			pg.next = Position{Page: pos.Page + 1}
		}
		pg.last = !full
	}
	return pg, nil
}

// nextCursor reads the next cursor; "" when the body is empty or the
// cursor is missing, null or empty.
func nextCursor(doc *jsonpointer.Doc, body []byte, ptr string) (string, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return "", nil
	}
	v, err := doc.Lookup(ptr)
	switch {
	case errors.Is(err, jsonpointer.ErrNotFound) || (err == nil && jsonpointer.IsNull(v)):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("cursor at %s: %w", ptr, err)
	}
	next, err := jsonpointer.ScalarString(v)
	if err != nil {
		return "", fmt.Errorf("cursor at %s: %w", ptr, err)
	}
	return next, nil
}

// onOrigin refuses a page URL off the configured URL's origin (scheme,
// host and port): the poller's credentials must not be sent there.
func (p *Poller) onOrigin(u *url.URL, what string) error {
	if !outbound.SameOrigin(p.origin, u) {
		return fmt.Errorf("%s %s leaves the partner's origin %s", what, outbound.RedactURL(u.String()), outbound.OriginOf(p.origin))
	}
	return nil
}

// statusLabel is the status label of sluice_poller_requests_total: never
// a URL.
func statusLabel(code int, err error) string {
	if err != nil {
		if errors.Is(err, outbound.ErrOffOrigin) {
			return "off_origin_redirect"
		}
		var ne interface{ Timeout() bool }
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return "timeout"
		}
		return "error"
	}
	return strconv.Itoa(code)
}
