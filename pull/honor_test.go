package pull

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/breaker"
	"github.com/sluicehq/sluice/internal/pulltest"
)

// TestRetryAfter: a 429 or 503 waits what Retry-After says (seconds or an
// HTTP date), capped; a missing or garbage header falls back to backoff.
// Waits are read from the injected clock.
func TestRetryAfter(t *testing.T) {
	clockStart := pulltest.NewClock().Now()
	for _, c := range []struct {
		name     string
		status   int
		header   string
		maxAfter time.Duration
		want     time.Duration
		cause    string
	}{
		{"seconds 429", 429, "7", 0, 7 * time.Second, waitRetryAfter},
		{"seconds 503", 503, "2", 0, 2 * time.Second, waitRetryAfter},
		{"http date", 429, clockStart.Add(9 * time.Second).Format(http.TimeFormat), 0, 9 * time.Second, waitRetryAfter},
		{"date in the past", 429, clockStart.Add(-time.Minute).Format(http.TimeFormat), 0, 0, ""},
		{"capped", 429, "3600", time.Minute, time.Minute, waitRetryAfter},
		{"capped date", 503, clockStart.Add(2 * time.Hour).Format(http.TimeFormat), 90 * time.Second, 90 * time.Second, waitRetryAfter},
		{"missing", 429, "", 0, time.Second, waitBackoff},
		{"garbage", 503, "soon-ish", 0, time.Second, waitBackoff},
		{"negative", 429, "-5", 0, time.Second, waitBackoff},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					if c.header != "" {
						w.Header().Set("Retry-After", c.header)
					}
					w.WriteHeader(c.status)
					return
				}
				pulltest.CursorPage(w, pulltest.Items("a", 0, 2), "")
			})
			cfg := testConfig("p", srv.URL)
			if c.maxAfter > 0 {
				cfg.MaxRetryAfter = c.maxAfter
			}
			clk := pulltest.NewClock()
			rec := pulltest.NewRecorder()
			p, m := newTestPoller(t, cfg, rec, &pulltest.Store[CursorRecord]{}, clk)
			stop := pulltest.Run(t, p)
			eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
			stop()
			sleeps := clk.Sleeps()
			// The first wait is the one after the refusal; the last is the
			// interval once caught up.
			var before []time.Duration
			for _, d := range sleeps[:len(sleeps)-1] {
				before = append(before, d)
			}
			var waited time.Duration
			for _, d := range before {
				waited += d
			}
			if waited != c.want {
				t.Errorf("waited %v before the retry (sleeps %s), want %v", waited, joinDur(sleeps), c.want)
			}
			if c.cause != "" {
				if got := counter(t, m, "waited", "p", c.cause); got != c.want.Seconds() {
					t.Errorf("sluice_poller_wait_seconds_total{cause=%s} = %v, want %v", c.cause, got, c.want.Seconds())
				}
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
			if len(rec.IDs()) != 2 {
				t.Errorf("ingested %v", rec.IDs())
			}
		})
	}
}

// TestRateLimitHeadersSlowDown: each header family with nothing remaining
// makes the poller wait for the reset before its next request, so the
// partner, which refuses any request before the reset, never refuses one.
func TestRateLimitHeadersSlowDown(t *testing.T) {
	for _, c := range []struct {
		name   string
		header func(now time.Time) http.Header
		wait   time.Duration
	}{
		{"RateLimit structured", func(time.Time) http.Header {
			return http.Header{"Ratelimit": {`"default";r=0;t=30`}, "Ratelimit-Policy": {`"default";q=100;w=60`}}
		}, 30 * time.Second},
		{"RateLimit two policies", func(time.Time) http.Header {
			return http.Header{"Ratelimit": {`"burst";r=4;t=1, "day";r=0;t=45`}}
		}, 45 * time.Second},
		{"RateLimit dictionary", func(time.Time) http.Header {
			return http.Header{"Ratelimit": {`limit=100, remaining=0, reset=20`}}
		}, 20 * time.Second},
		{"RateLimit-Remaining/Reset", func(time.Time) http.Header {
			return http.Header{"Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {"25"}, "Ratelimit-Limit": {"10"}}
		}, 25 * time.Second},
		{"X-RateLimit delta", func(time.Time) http.Header {
			return http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"12"}}
		}, 12 * time.Second},
		{"X-RateLimit unix time", func(now time.Time) http.Header {
			return http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {fmt.Sprint(now.Add(40 * time.Second).Unix())}}
		}, 40 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := pulltest.NewClock()
			var resetAt atomic.Int64
			refused := atomic.Int32{}
			srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
				now := clk.Now()
				if now.UnixNano() < resetAt.Load() {
					refused.Add(1)
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				switch r.URL.Query().Get("cursor") {
				case "":
					for k, vs := range c.header(now) {
						w.Header()[k] = vs
					}
					resetAt.Store(now.Add(c.wait).UnixNano())
					pulltest.CursorPage(w, pulltest.Items("a", 0, 3), "c1")
				default:
					pulltest.CursorPage(w, pulltest.Items("a", 3, 5), "")
				}
			})
			p, m := newTestPoller(t, testConfig("p", srv.URL), pulltest.NewRecorder(), &pulltest.Store[CursorRecord]{}, clk)
			stop := pulltest.Run(t, p)
			eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
			stop()
			if n := refused.Load(); n != 0 {
				t.Errorf("the partner refused %d requests: the poller did not slow down", n)
			}
			if sleeps := clk.Sleeps(); len(sleeps) < 1 || sleeps[0] != c.wait {
				t.Errorf("sleeps %s, want %v first", joinDur(sleeps), c.wait)
			}
			if got := counter(t, m, "waited", "p", waitRateHeaders); got != c.wait.Seconds() {
				t.Errorf("waited on rate-limit headers %vs, want %v", got, c.wait.Seconds())
			}
		})
	}
}

// TestRateLimitHeadersAboveThreshold: requests remaining above
// MinRemaining do not slow the poller.
func TestRateLimitHeadersAboveThreshold(t *testing.T) {
	clk := pulltest.NewClock()
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "5")
		w.Header().Set("X-RateLimit-Reset", "30")
		if r.URL.Query().Get("cursor") == "" {
			pulltest.CursorPage(w, pulltest.Items("a", 0, 1), "c1")
			return
		}
		pulltest.CursorPage(w, nil, "")
	})
	cfg := testConfig("p", srv.URL)
	cfg.RateLimit.MinRemaining = 2
	p, _ := newTestPoller(t, cfg, pulltest.NewRecorder(), &pulltest.Store[CursorRecord]{}, clk)
	stop := pulltest.Run(t, p)
	eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
	stop()
	if s := clk.Sleeps(); len(s) != 1 || s[0] != cfg.Interval {
		t.Errorf("sleeps %s, want only the interval", joinDur(s))
	}
}

// TestClientRateLimit: the client-side limit spaces requests, on the
// injected clock.
func TestClientRateLimit(t *testing.T) {
	clk := pulltest.NewClock()
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n < 4 {
			pulltest.CursorPage(w, pulltest.Items("a", n, n+1), fmt.Sprint("c", n))
			return
		}
		pulltest.CursorPage(w, nil, "")
	})
	cfg := testConfig("p", srv.URL)
	cfg.RateLimit = RateLimitConfig{Rate: 0.5, Burst: 1}
	p, m := newTestPoller(t, cfg, pulltest.NewRecorder(), &pulltest.Store[CursorRecord]{}, clk)
	stop := pulltest.Run(t, p)
	eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
	stop()
	want := []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second, cfg.Interval}
	if got := clk.Sleeps(); joinDur(got) != joinDur(want) {
		t.Errorf("sleeps %s, want %s", joinDur(got), joinDur(want))
	}
	if got := counter(t, m, "waited", "p", waitClientLimit); got != 6 {
		t.Errorf("waited on the client limit %vs, want 6", got)
	}
}

// TestBreaker: repeated 5xx back off exponentially, open the breaker after
// Breaker.Failures, no request is made while it is open, a failed probe
// opens it again and a good one closes it.
func TestBreaker(t *testing.T) {
	clk := pulltest.NewClock()
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n <= 4 {
			http.Error(w, "boom", http.StatusBadGateway)
			return
		}
		pulltest.CursorPage(w, pulltest.Items("a", 0, 1), "")
	})
	cfg := testConfig("p", srv.URL) // Failures 3, Cooldown 1m, Initial 1s
	p, m := newTestPoller(t, cfg, pulltest.NewRecorder(), &pulltest.Store[CursorRecord]{}, clk)
	var states []string
	stop := pulltest.Run(t, p)
	eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
	stop()
	states = append(states, p.Status().Circuit)
	// 502, 1s, 502, 2s, 502 (opens), 1m, probe 502 (opens again), 1m, probe ok.
	want := []time.Duration{time.Second, 2 * time.Second, time.Minute, time.Minute, cfg.Interval}
	if got := clk.Sleeps(); joinDur(got) != joinDur(want) {
		t.Errorf("sleeps %s, want %s", joinDur(got), joinDur(want))
	}
	if n := len(srv.Requests()); n != 5 {
		t.Errorf("%d requests, want 5 (none while open)", n)
	}
	if states[0] != CircuitClosed || counter(t, m, "circuit", "p") != 0 {
		t.Errorf("circuit %s after a good probe", states[0])
	}
	if got := counter(t, m, "waited", "p", waitBreaker); got != 120 {
		t.Errorf("waited on the breaker %vs, want 120", got)
	}
	if got := counter(t, m, "requests", "p", "502"); got != 4 {
		t.Errorf("502 requests counted %v, want 4", got)
	}
}

// TestCircuitNames: Status.Circuit is the breaker's state name, so the
// documented constants must be those names.
func TestCircuitNames(t *testing.T) {
	for s, want := range map[breaker.State]string{breaker.Closed: CircuitClosed, breaker.Open: CircuitOpen, breaker.HalfOpen: CircuitHalfOpen} {
		if s.String() != want {
			t.Errorf("breaker state %d is %q, pull documents %q", s, s.String(), want)
		}
	}
}

// TestBreakerOnConnectionErrors: a partner that is not listening counts
// as failing; the breaker opens.
func TestBreakerOnConnectionErrors(t *testing.T) {
	srv := pulltest.NewPartner(t, func(int, http.ResponseWriter, *http.Request) {})
	url := srv.URL
	srv.Close()
	clk := pulltest.NewClock()
	cfg := testConfig("p", url)
	cfg.Breaker.Cooldown = 2 * time.Hour // the fake clock parks the open breaker
	p, m := newTestPoller(t, cfg, pulltest.NewRecorder(), &pulltest.Store[CursorRecord]{}, clk)
	stop := pulltest.Run(t, p)
	eventually(t, "the breaker to open", func() bool { return clk.Parked() > 0 })
	stop()
	if st := p.Status(); st.Circuit != CircuitOpen {
		t.Errorf("circuit %s", st.Circuit)
	}
	if got := counter(t, m, "requests", "p", "error"); got != 3 {
		t.Errorf("connection errors counted %v, want 3", got)
	}
}

// TestBackoffFullJitter: the n-th consecutive failure waits what
// Backoff.Wait draws under min(Max, Initial·2ⁿ⁻¹), and by default the
// draw is full jitter, in [0, ceiling]. The jitter's distribution is
// backoff.Full's, tested in internal/backoff.
func TestBackoffFullJitter(t *testing.T) {
	ceilings := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 3 * time.Second, 3 * time.Second}
	failing := func(t *testing.T) *pulltest.Partner {
		return pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n <= len(ceilings) {
				http.Error(w, "not yet", http.StatusNotFound)
				return
			}
			pulltest.CursorPage(w, pulltest.Items("a", 0, 1), "")
		})
	}
	cfg := func(url string) Config {
		c := testConfig("p", url)
		c.Backoff = backoff.Config{Initial: 100 * time.Millisecond, Max: 3 * time.Second}
		return c
	}

	t.Run("schedule", func(t *testing.T) {
		var asked, drawn []time.Duration
		jitter := func(ceiling time.Duration) time.Duration {
			d := backoff.Full(ceiling)
			asked, drawn = append(asked, ceiling), append(drawn, d)
			return d
		}
		clk := pulltest.NewClock()
		p, _ := newTestPoller(t, cfg(failing(t).URL), pulltest.NewRecorder(), &pulltest.Store[CursorRecord]{}, clk, WithJitter(jitter))
		stop := pulltest.Run(t, p)
		eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
		stop()
		if joinDur(asked) != joinDur(ceilings) {
			t.Errorf("ceilings asked %s, want %s", joinDur(asked), joinDur(ceilings))
		}
		var want []time.Duration // a wait of 0 is no sleep
		for _, d := range drawn {
			if d > 0 {
				want = append(want, d)
			}
		}
		want = append(want, time.Hour)
		if got := clk.Sleeps(); joinDur(got) != joinDur(want) {
			t.Errorf("sleeps %s, want the draws %s and the interval", joinDur(got), joinDur(want))
		}
	})

	t.Run("default jitter", func(t *testing.T) {
		clk := pulltest.NewClock()
		m, err := NewMetrics(nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPoller(cfg(failing(t).URL), pulltest.NewRecorder(), &pulltest.Store[CursorRecord]{}, WithClock(clk), WithLogger(quietLog()), WithMetrics(m))
		if err != nil {
			t.Fatal(err)
		}
		stop := pulltest.Run(t, p)
		eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
		stop()
		sleeps := clk.Sleeps()
		waits := sleeps[:len(sleeps)-1]
		distinct := map[time.Duration]bool{}
		for n, d := range waits {
			if d < 0 || d > ceilings[min(n, len(ceilings)-1)] {
				t.Errorf("failure %d: wait %v outside [0, %v]", n+1, d, ceilings[min(n, len(ceilings)-1)])
			}
			distinct[d] = true
		}
		if len(waits) > len(ceilings) || len(distinct) < 2 {
			t.Errorf("waits %s: not %d jittered draws", joinDur(waits), len(ceilings))
		}
	})
}

// TestOther4xx: a 404 records the page as failed (status and a bounded
// body prefix), keeps the cursor and retries the page with backoff.
func TestOther4xx(t *testing.T) {
	clk := pulltest.NewClock()
	long := strings.Repeat("é", 600) // 1200 bytes, cut at a rune boundary
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch c := r.URL.Query().Get("cursor"); {
		case c == "":
			pulltest.CursorPage(w, pulltest.Items("a", 0, 2), "c1")
		case c == "c1" && n <= 3:
			http.Error(w, "no such cursor "+long, http.StatusNotFound)
		case c == "c1":
			pulltest.CursorPage(w, pulltest.Items("a", 2, 4), "")
		}
	})
	store := &pulltest.Store[CursorRecord]{}
	p, m := newTestPoller(t, testConfig("p", srv.URL), pulltest.NewRecorder(), store, clk)
	var failedStatus Status
	stop := pulltest.Run(t, p)
	eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
	stop()
	failedStatus = p.Status()
	if got := strings.Join(srv.Cursors(), ","); got != ",c1,c1,c1" {
		t.Errorf("cursors requested %q, want the failed page retried", got)
	}
	f := failedStatus.LastFailure
	if f == nil || f.Status != 404 || !strings.HasPrefix(f.Body, "no such cursor") || len(f.Body) > bodyPrefix || !strings.Contains(f.URL, "cursor=REDACTED") {
		t.Fatalf("last failure %+v", f)
	}
	if got := counter(t, m, "pageFailures", "p", "404"); got != 2 {
		t.Errorf("page failures %v, want 2", got)
	}
	// The cursor never moved past c1 while c1 failed: saves are c1, then
	// nothing (the last page has no next cursor).
	saves := store.Saves()
	if len(saves) != 1 || saves[0].Cursor != "c1" {
		t.Errorf("saves %+v", saves)
	}
	if want := []time.Duration{time.Second, 2 * time.Second, time.Hour}; joinDur(clk.Sleeps()) != joinDur(want) {
		t.Errorf("sleeps %s, want %s", joinDur(clk.Sleeps()), joinDur(want))
	}
}

// TestBodyNotAPage: a 200 whose body is not a page fails like a 4xx.
func TestBodyNotAPage(t *testing.T) {
	clk := pulltest.NewClock()
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Write([]byte(`{"data": "not an array"}`))
			return
		}
		pulltest.CursorPage(w, pulltest.Items("a", 0, 1), "")
	})
	p, m := newTestPoller(t, testConfig("p", srv.URL), pulltest.NewRecorder(), &pulltest.Store[CursorRecord]{}, clk)
	stop := pulltest.Run(t, p)
	eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
	stop()
	if f := p.Status().LastFailure; f == nil || f.Status != 0 || !strings.Contains(f.Reason, "not an array") {
		t.Errorf("last failure %+v", f)
	}
	if got := counter(t, m, "pageFailures", "p", "body"); got != 1 {
		t.Errorf("page failures %v", got)
	}
}

// oauthPartner is a token endpoint and an API that accepts only the
// latest token; api decides the answer for a request with a valid token.
type oauthPartner struct {
	tokens atomic.Int32
	api    *pulltest.Partner
	token  *pulltest.Partner
}

func newOAuthPartner(t *testing.T, expiresIn int, api func(n int, valid bool, w http.ResponseWriter, r *http.Request)) *oauthPartner {
	o := &oauthPartner{}
	o.token = pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || id != "client-1" || secret != "s3cret" || r.FormValue("grant_type") != "client_credentials" || r.FormValue("scope") != "read:orders" {
			pulltest.WriteJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
			return
		}
		k := o.tokens.Add(1)
		pulltest.WriteJSON(w, http.StatusOK, map[string]any{"access_token": fmt.Sprint("tok-", k), "token_type": "Bearer", "expires_in": expiresIn})
	})
	o.api = pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		valid := r.Header.Get("Authorization") == fmt.Sprint("Bearer tok-", o.tokens.Load())
		api(n, valid, w, r)
	})
	return o
}

func oauthConfig(name string, o *oauthPartner) Config {
	cfg := testConfig(name, o.api.URL)
	cfg.Auth = AuthConfig{Type: AuthOAuth2, OAuth2: OAuth2Config{
		TokenURL: o.token.URL + "/token", ClientID: "client-1", ClientSecretEnv: "SECRET", Scopes: []string{"read:orders"}, RefreshBefore: time.Minute}}
	return cfg
}

func getenv(name string) string {
	return map[string]string{"SECRET": "s3cret", "TOKEN": "static-token"}[name]
}

// Test401RefreshOnce: a 401 refreshes the token once and the page is
// retried with the new one.
func Test401RefreshOnce(t *testing.T) {
	clk := pulltest.NewClock()
	var o *oauthPartner
	o = newOAuthPartner(t, 3600, func(n int, valid bool, w http.ResponseWriter, r *http.Request) {
		if n == 1 || !valid { // the first token is revoked behind the poller's back
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		pulltest.CursorPage(w, pulltest.Items("a", 0, 2), "")
	})
	rec := pulltest.NewRecorder()
	p, m := newTestPoller(t, oauthConfig("p", o), rec, &pulltest.Store[CursorRecord]{}, clk, WithGetenv(getenv))
	stop := pulltest.Run(t, p)
	eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := o.tokens.Load(); n != 2 {
		t.Errorf("%d tokens fetched, want 2", n)
	}
	if got := counter(t, m, "tokenRefresh", "p", "ok"); got != 2 {
		t.Errorf("token refreshes %v", got)
	}
	if len(rec.IDs()) != 2 {
		t.Errorf("ingested %v", rec.IDs())
	}
}

// TestOAuth2RefreshBeforeExpiry: a token is replaced RefreshBefore ahead
// of its expiry, without a 401.
func TestOAuth2RefreshBeforeExpiry(t *testing.T) {
	clk := pulltest.NewClock()
	unauthorized := atomic.Int32{}
	o := newOAuthPartner(t, 120, func(n int, valid bool, w http.ResponseWriter, r *http.Request) {
		if !valid {
			unauthorized.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Query().Get("cursor") == "" {
			w.Header().Set("RateLimit", `"x";r=0;t=90`) // 90 s pass before the next request
			pulltest.CursorPage(w, pulltest.Items("a", 0, 1), "c1")
			return
		}
		pulltest.CursorPage(w, pulltest.Items("a", 1, 2), "")
	})
	p, _ := newTestPoller(t, oauthConfig("p", o), pulltest.NewRecorder(), &pulltest.Store[CursorRecord]{}, clk, WithGetenv(getenv))
	stop := pulltest.Run(t, p)
	eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
	stop()
	if n := o.tokens.Load(); n != 2 || unauthorized.Load() != 0 {
		t.Errorf("%d tokens, %d refusals; want 2 tokens and no refusal", n, unauthorized.Load())
	}
}

// Test401TwiceStopsOnlyThatPoller: a second 401 in a row stops the poller
// with an *AuthError and sluice_poller_up 0; another poller keeps running.
func Test401TwiceStopsOnlyThatPoller(t *testing.T) {
	bad := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"token revoked"}`, http.StatusUnauthorized)
	})
	var stopBad atomic.Bool
	good := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer static-token" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		c := r.URL.Query().Get("cursor")
		k := 0
		fmt.Sscan(c, &k)
		if !stopBad.Load() && k >= 3 {
			pulltest.CursorPage(w, nil, c) // hold at page 3 until the other poller stopped
			return
		}
		if k >= 6 {
			pulltest.CursorPage(w, nil, "")
			return
		}
		pulltest.CursorPage(w, pulltest.Items("g", k, k+1), fmt.Sprint(k+1))
	})
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name, url string, clk Clock) *Poller {
		cfg := testConfig(name, url)
		cfg.Auth = AuthConfig{Type: AuthBearer, TokenEnv: "TOKEN"}
		cfg.Interval = time.Millisecond // the good poller re-polls while held
		p, err := NewPoller(cfg, pulltest.NewRecorder(), &pulltest.Store[CursorRecord]{}, WithClock(clk), WithLogger(quietLog()),
			WithMetrics(m), WithGetenv(getenv), WithJitter(identityJitter))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	goodClk := pulltest.NewClock()
	pb, pg := mk("bad", bad.URL, pulltest.NewClock()), mk("good", good.URL, goodClk)
	rec := pg.ing.(*pulltest.Recorder)
	stopGood := pulltest.Run(t, pg)
	eventually(t, "the good poller to reach page 3", func() bool { return len(rec.IDs()) == 3 })
	errBad := pb.Run(t.Context())
	stopBad.Store(true)
	var ae *AuthError
	if !errors.As(errBad, &ae) || ae.Status != 401 || !strings.Contains(ae.Body, "token revoked") {
		t.Fatalf("bad poller: %v, want an *AuthError with the 401", errBad)
	}
	if n := len(bad.Requests()); n != 2 {
		t.Errorf("bad partner got %d requests, want 2 (one retry)", n)
	}
	if st := pb.Status(); st.State != StateAuthFailed || st.Err == "" {
		t.Errorf("bad status %+v", st)
	}
	if counter(t, m, "up", "bad") != 0 || counter(t, m, "authFailures", "bad") != 1 {
		t.Errorf("bad poller: up %v, auth failures %v", counter(t, m, "up", "bad"), counter(t, m, "authFailures", "bad"))
	}
	eventually(t, "the good poller to go on after the bad one stopped", func() bool { return len(rec.IDs()) == 6 })
	if counter(t, m, "up", "good") != 1 {
		t.Error("good poller is not up")
	}
	if err := stopGood(); err != nil {
		t.Errorf("good poller: %v", err)
	}
}

// TestTokenEndpointRefusesClient: invalid client credentials stop the
// poller; a token endpoint outage does not.
func TestTokenEndpointRefusesClient(t *testing.T) {
	o := newOAuthPartner(t, 3600, func(n int, valid bool, w http.ResponseWriter, r *http.Request) {
		pulltest.CursorPage(w, nil, "")
	})
	cfg := oauthConfig("p", o)
	cfg.Auth.OAuth2.ClientID = "client-2"
	p, _ := newTestPoller(t, cfg, pulltest.NewRecorder(), &pulltest.Store[CursorRecord]{}, pulltest.NewClock(), WithGetenv(getenv))
	err := p.Run(t.Context())
	var ae *AuthError
	if !errors.As(err, &ae) || ae.Status != 401 || !strings.Contains(ae.Body, "invalid_client") {
		t.Fatalf("Run: %v", err)
	}
	if len(o.api.Requests()) != 0 {
		t.Error("the API was called without a token")
	}

	p, _ = newTestPoller(t, oauthConfig("p", o), pulltest.NewRecorder(), &pulltest.Store[CursorRecord]{}, pulltest.NewClock(), WithGetenv(func(string) string { return "" }))
	if err := p.Run(t.Context()); !errors.Is(err, errNoCredentials) {
		t.Fatalf("Run without a secret: %v", err)
	}
}

// TestRequestAndBodies: the configured method and headers are sent; an
// empty 204 is a caught-up poll; a body over MaxBodyBytes fails the page.
func TestRequestAndBodies(t *testing.T) {
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch n {
		case 1:
			w.WriteHeader(http.StatusNoContent)
		default:
			pulltest.CursorPage(w, pulltest.Items("a", 0, 50), "")
		}
	})
	cfg := testConfig("p", srv.URL)
	cfg.Method = http.MethodPost
	cfg.Headers = map[string]string{"X-Tenant": "acme"}
	cfg.Interval = time.Minute // not parked: polls again after the empty answer
	cfg.MaxBodyBytes = 256
	cfg.Backoff = backoff.Config{Initial: 2 * time.Hour, Max: 2 * time.Hour} // parks after the failure
	clk := pulltest.NewClock()
	rec := pulltest.NewRecorder()
	p, _ := newTestPoller(t, cfg, rec, &pulltest.Store[CursorRecord]{}, clk)
	stop := pulltest.Run(t, p)
	eventually(t, "the oversized page to fail", func() bool { return clk.Parked() > 0 })
	stop()
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Method != http.MethodPost || reqs[0].Header.Get("X-Tenant") != "acme" {
		t.Fatalf("requests %v", reqs)
	}
	if f := p.Status().LastFailure; f == nil || !strings.Contains(f.Reason, "max_body_bytes") {
		t.Errorf("last failure %+v", f)
	}
	if s := clk.Sleeps(); len(s) != 2 || s[0] != time.Minute {
		t.Errorf("sleeps %s, want the interval after the empty answer", joinDur(s))
	}
	if len(rec.IDs()) != 0 {
		t.Errorf("items %v from an oversized page", rec.IDs())
	}
}
