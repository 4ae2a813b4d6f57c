package pull

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/logtest"
	"github.com/sluicehq/sluice/internal/pulltest"
)

// newSecurePartner is newPartner over TLS; its Client trusts it.
func newSecurePartner(t testing.TB, handle func(n int, w http.ResponseWriter, r *http.Request)) *pulltest.Partner {
	return pulltest.StartPartner(t, httptest.NewTLSServer, handle)
}

// attackerLinks answers like a partner with link pagination whose next
// links stay on the attacker: what a partner's redirect would hand over.
func attackerLinks(t testing.TB) *pulltest.Partner {
	var a *pulltest.Partner
	a = pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n < 3 {
			w.Header().Set("Link", fmt.Sprintf(`<%s/items?after=%d>; rel="next"`, a.URL, n*2))
			pulltest.WriteJSON(w, http.StatusOK, pulltest.Items("x", n*2, n*2+2))
			return
		}
		pulltest.WriteJSON(w, http.StatusOK, []any{})
	})
	return a
}

// linkConfig is a link-paginated poller of base with a bearer token.
func linkConfig(base string) Config {
	cfg := testConfig("p", base)
	cfg.URL = base + "/items"
	cfg.Pagination.Type = PaginateLink
	cfg.Items = ""
	cfg.Auth = AuthConfig{Type: AuthBearer, TokenEnv: "TOKEN"}
	cfg.Breaker.Cooldown = 2 * time.Hour // the fake clock parks the open breaker
	return cfg
}

// tokenRequests counts the requests that carried the poller's token.
func tokenRequests(p *pulltest.Partner) int {
	n := 0
	for _, r := range p.Requests() {
		if strings.Contains(r.Header.Get("Authorization"), "static-token") {
			n++
		}
	}
	return n
}

// TestRedirectToAnotherOrigin: a partner that redirects to another origin
// does not get it followed: the other origin sees no request (so neither
// the token nor a Link of its own), no position is saved, and the poller
// backs off behind its breaker instead of spinning.
func TestRedirectToAnotherOrigin(t *testing.T) {
	attacker := attackerLinks(t)
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, attacker.URL+"/items", http.StatusFound)
	})
	clk := pulltest.NewClock()
	store, rec := &pulltest.Store[CursorRecord]{}, pulltest.NewRecorder()
	p, m := newTestPoller(t, linkConfig(srv.URL), rec, store, clk, WithGetenv(getenv))
	stop := pulltest.Run(t, p)
	eventually(t, "the breaker to open", func() bool { return clk.Parked() > 0 })
	stop()
	if n, tok := len(attacker.Requests()), tokenRequests(attacker); n != 0 {
		t.Errorf("the other origin got %d requests, %d with the token", n, tok)
	}
	if saves := store.Saves(); len(saves) != 0 {
		t.Errorf("positions saved: %+v", saves)
	}
	if len(rec.IDs()) != 0 {
		t.Errorf("items admitted: %v", rec.IDs())
	}
	// Breaker.Failures is 3: 1s, 2s, then the cooldown.
	if want := []time.Duration{time.Second, 2 * time.Second, 2 * time.Hour}; joinDur(clk.Sleeps()) != joinDur(want) {
		t.Errorf("sleeps %s, want %s", joinDur(clk.Sleeps()), joinDur(want))
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("partner got %d requests, want 3", n)
	}
	if st := p.Status(); st.Circuit != CircuitOpen {
		t.Errorf("circuit %s, want open", st.Circuit)
	}
	if got := counter(t, m, "requests", "p", "off_origin_redirect"); got != 3 {
		t.Errorf("off-origin redirects counted %v, want 3", got)
	}
}

// TestHTTPSRedirectToHTTP: an https partner redirecting to http on the
// same host is refused; the http server sees nothing.
func TestHTTPSRedirectToHTTP(t *testing.T) {
	plain := attackerLinks(t)
	srv := newSecurePartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+r.URL.Path, http.StatusMovedPermanently)
	})
	if !strings.HasPrefix(srv.URL, "https://127.0.0.1:") || !strings.HasPrefix(plain.URL, "http://127.0.0.1:") {
		t.Fatalf("servers %s and %s are not on one host", srv.URL, plain.URL)
	}
	clk := pulltest.NewClock()
	store := &pulltest.Store[CursorRecord]{}
	p, _ := newTestPoller(t, linkConfig(srv.URL), pulltest.NewRecorder(), store, clk, WithGetenv(getenv), WithHTTPClient(srv.Client()))
	stop := pulltest.Run(t, p)
	eventually(t, "the breaker to open", func() bool { return clk.Parked() > 0 })
	stop()
	if n := len(plain.Requests()); n != 0 {
		t.Errorf("the http server got %d requests", n)
	}
	if len(store.Saves()) != 0 || len(srv.Requests()) != 3 {
		t.Errorf("saves %v, %d requests to the partner", store.Saves(), len(srv.Requests()))
	}
}

// TestSameOriginRedirect: a redirect on the partner's origin is followed
// with the token, and a relative Link is resolved against the URL that
// answered.
func TestSameOriginRedirect(t *testing.T) {
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/items" {
			http.Redirect(w, r, "/v2/items", http.StatusFound)
			return
		}
		if r.URL.Query().Get("after") == "" {
			w.Header().Set("Link", `<?after=2>; rel="next"`)
			pulltest.WriteJSON(w, http.StatusOK, pulltest.Items("a", 0, 2))
			return
		}
		pulltest.WriteJSON(w, http.StatusOK, pulltest.Items("a", 2, 4))
	})
	clk := pulltest.NewClock()
	store, rec := &pulltest.Store[CursorRecord]{}, pulltest.NewRecorder()
	p, _ := newTestPoller(t, linkConfig(srv.URL), rec, store, clk, WithGetenv(getenv))
	stop := pulltest.Run(t, p)
	eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
	stop()
	if len(rec.IDs()) != 4 {
		t.Errorf("items %v, want a0..a3", rec.IDs())
	}
	saves := store.Saves()
	if len(saves) != 1 || saves[0].URL != srv.URL+"/v2/items?after=2" {
		t.Errorf("saves %+v", saves)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || tokenRequests(srv) != 3 {
		t.Errorf("%d requests, %d with the token; want 3 and 3", len(reqs), tokenRequests(srv))
	}
}

// TestSavedURLOffOrigin: a saved next URL on another origin (saved before
// links were checked against the configured URL) is not requested: the
// page fails and the position stays.
func TestSavedURLOffOrigin(t *testing.T) {
	attacker := attackerLinks(t)
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		pulltest.WriteJSON(w, http.StatusOK, pulltest.Items("a", 0, 2))
	})
	cfg := linkConfig(srv.URL)
	cfg.Backoff = backoff.Config{Initial: 2 * time.Hour, Max: 2 * time.Hour} // parks after the failure
	saved := CursorRecord{Poller: "p", Position: Position{URL: attacker.URL + "/items?after=10"}}
	store := &pulltest.Store[CursorRecord]{}
	store.Seed(saved)
	clk := pulltest.NewClock()
	p, _ := newTestPoller(t, cfg, pulltest.NewRecorder(), store, clk, WithGetenv(getenv))
	stop := pulltest.Run(t, p)
	eventually(t, "the page to fail", func() bool { return clk.Parked() > 0 })
	stop()
	if n := len(attacker.Requests()); n != 0 {
		t.Errorf("the other origin got %d requests", n)
	}
	if f := p.Status().LastFailure; f == nil || !strings.Contains(f.Reason, "leaves the partner's origin") {
		t.Errorf("last failure %+v", f)
	}
	if saves := store.Saves(); len(saves) != 1 {
		t.Errorf("saves %+v, want only the one loaded", saves)
	}
}

// TestTokenEndpointRedirect: a token endpoint redirecting to another
// origin does not get the client secret sent there; the poller backs off
// behind its breaker and keeps running.
func TestTokenEndpointRedirect(t *testing.T) {
	for _, tc := range []struct {
		style string
		sent  int // token requests for the 3 refreshes that open the breaker
	}{
		{AuthStyleHeader, 3},
		{AuthStyleParams, 3},
		{AuthStyleAuto, 6}, // each refresh tries HTTP Basic, then the body
	} {
		t.Run(tc.style, func(t *testing.T) {
			attacker := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
				pulltest.WriteJSON(w, http.StatusOK, map[string]any{"access_token": "stolen", "token_type": "Bearer"})
			})
			token := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, attacker.URL+"/token", http.StatusTemporaryRedirect) // a 307 resends the POST
			})
			api := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) { pulltest.CursorPage(w, nil, "") })
			cfg := testConfig("p", api.URL)
			cfg.Auth = AuthConfig{Type: AuthOAuth2, OAuth2: OAuth2Config{
				TokenURL: token.URL + "/token", ClientID: "client-1", ClientSecretEnv: "SECRET", RefreshBefore: time.Minute, AuthStyle: tc.style}}
			cfg.Breaker.Cooldown = 2 * time.Hour
			clk := pulltest.NewClock()
			p, m := newTestPoller(t, cfg, pulltest.NewRecorder(), &pulltest.Store[CursorRecord]{}, clk, WithGetenv(getenv))
			stop := pulltest.Run(t, p)
			eventually(t, "the breaker to open", func() bool { return clk.Parked() > 0 })
			if err := stop(); err != nil {
				t.Fatalf("Run: %v, want the poller to keep running", err)
			}
			for _, r := range attacker.Requests() {
				_, secret, _ := r.BasicAuth()
				t.Errorf("the other origin got a request, client secret %q (Basic) %q (body)", secret, r.FormValue("client_secret"))
			}
			if len(token.Requests()) != tc.sent || len(api.Requests()) != 0 {
				t.Errorf("%d token requests, %d API requests; want %d and 0", len(token.Requests()), len(api.Requests()), tc.sent)
			}
			if got := counter(t, m, "tokenRefresh", "p", "error"); got != 3 {
				t.Errorf("failed token refreshes %v, want 3", got)
			}
			if got := counter(t, m, "requests", "p", "off_origin_redirect"); got != 3 {
				t.Errorf("off-origin token redirects counted %v, want 3", got)
			}
		})
	}
}

// TestRequestDeadline: a partner or token endpoint that stops answering,
// before the headers or in the body, fails the request at RequestTimeout
// and counts against the breaker.
func TestRequestDeadline(t *testing.T) {
	for _, tc := range []string{"headers", "body", "token", "token body"} {
		t.Run(tc, func(t *testing.T) {
			released := make(chan struct{})
			hang := func(w http.ResponseWriter, r *http.Request, inBody bool) {
				io.Copy(io.Discard, r.Body) // so the server notices the client leave
				if inBody {
					w.WriteHeader(http.StatusOK)
					w.Write([]byte(`{"data": [`))
					w.(http.Flusher).Flush()
				}
				select {
				case <-r.Context().Done(): // the client gave up
				case <-released:
				}
			}
			api := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) { hang(w, r, tc == "body") })
			cfg := testConfig("p", api.URL)
			cfg.RequestTimeout = 50 * time.Millisecond
			cfg.Breaker.Cooldown = 2 * time.Hour
			if tc == "token" || tc == "token body" {
				token := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) { hang(w, r, tc == "token body") })
				cfg.Auth = AuthConfig{Type: AuthOAuth2, OAuth2: OAuth2Config{
					TokenURL: token.URL + "/token", ClientID: "client-1", ClientSecretEnv: "SECRET", RefreshBefore: time.Minute}}
				if tc == "token body" {
					// One attempt per refresh: auto would try again in the
					// body, past the deadline, and count that timeout.
					cfg.Auth.OAuth2.AuthStyle = AuthStyleHeader
				}
			}
			t.Cleanup(func() { close(released) }) // before the servers close
			clk := pulltest.NewClock()
			p, m := newTestPoller(t, cfg, pulltest.NewRecorder(), &pulltest.Store[CursorRecord]{}, clk, WithGetenv(getenv))
			stop := pulltest.Run(t, p)
			eventually(t, "the breaker to open", func() bool { return clk.Parked() > 0 })
			stop()
			label := "timeout"
			if tc == "body" || tc == "token body" {
				label = "200" // the answer came; reading it timed out
			}
			if got := counter(t, m, "requests", "p", label); got != 3 {
				t.Errorf("requests %s counted %v, want 3", label, got)
			}
			if st := p.Status(); st.Circuit != CircuitOpen {
				t.Errorf("circuit %s", st.Circuit)
			}
		})
	}
}

// TestLogsRedactURLs: the URLs in log lines, in Status and in errors from
// net/http keep their query keys and lose their values; no metric label
// carries one.
func TestLogsRedactURLs(t *testing.T) {
	const secret = "s3cret-value"
	closed := pulltest.NewPartner(t, func(int, http.ResponseWriter, *http.Request) {})
	closed.Close()
	refusing := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page", http.StatusNotFound)
	})
	for _, tc := range []struct {
		name  string
		cfg   func() Config
		saved *Position
		want  []string // in the log
	}{
		{name: "refused page", cfg: func() Config {
			c := testConfig("p", refusing.URL)
			c.URL = refusing.URL + "/items?token=" + secret + "&cursor={cursor}"
			c.Pagination.StartCursor = secret
			return c
		}, want: []string{"page failed", "token=REDACTED&cursor=REDACTED"}},
		{name: "connection error", cfg: func() Config {
			c := testConfig("p", closed.URL)
			c.URL = closed.URL + "/items?token=" + secret + "&cursor={cursor}"
			return c
		}, want: []string{"circuit open", "token=REDACTED&cursor=REDACTED"}},
		{name: "token endpoint down", cfg: func() Config {
			c := testConfig("p", refusing.URL)
			c.Auth = AuthConfig{Type: AuthOAuth2, OAuth2: OAuth2Config{
				TokenURL: closed.URL + "/token?tenant=" + secret, ClientID: "client-1", ClientSecretEnv: "SECRET", RefreshBefore: time.Minute}}
			return c
		}, want: []string{"circuit open", "token request", "tenant=REDACTED"}},
		{name: "saved link", cfg: func() Config {
			c := linkConfig(refusing.URL)
			return c
		}, saved: &Position{URL: refusing.URL + "/items?after=10&sig=" + secret},
			want: []string{"resumes from its saved position", "after=REDACTED&sig=REDACTED", "page failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg()
			cfg.Breaker = BreakerConfig{Failures: 1, Cooldown: 2 * time.Hour}
			cfg.Backoff = backoff.Config{Initial: 2 * time.Hour, Max: 2 * time.Hour} // either parks
			store := &pulltest.Store[CursorRecord]{}
			if tc.saved != nil {
				store.Seed(CursorRecord{Poller: "p", Position: *tc.saved})
			}
			var out logtest.Buffer
			reg := prometheus.NewRegistry()
			m, err := NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			clk := pulltest.NewClock()
			p, err := NewPoller(cfg, pulltest.NewRecorder(), store, WithClock(clk), WithMetrics(m), WithGetenv(getenv),
				WithJitter(identityJitter), WithLogger(slog.New(slog.NewTextHandler(&out, nil))))
			if err != nil {
				t.Fatal(err)
			}
			stop := pulltest.Run(t, p)
			eventually(t, "the poller to park", func() bool { return clk.Parked() > 0 })
			stop()
			log := out.String()
			if strings.Contains(log, secret) {
				t.Errorf("the log holds the secret:\n%s", log)
			}
			for _, w := range tc.want {
				if !strings.Contains(log, w) {
					t.Errorf("the log lacks %q:\n%s", w, log)
				}
			}
			if f := p.Status().LastFailure; f != nil && strings.Contains(fmt.Sprintf("%+v", *f), secret) {
				t.Errorf("Status().LastFailure holds the secret: %+v", *f)
			}
			families, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, fam := range families {
				for _, metric := range fam.GetMetric() {
					for _, l := range metric.GetLabel() {
						if v := l.GetValue(); strings.Contains(v, secret) || strings.Contains(v, "?") || strings.Contains(v, "://") {
							t.Errorf("%s{%s=%q} carries a URL", fam.GetName(), l.GetName(), v)
						}
					}
				}
			}
		})
	}
}
