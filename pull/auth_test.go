package pull

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pulltest"
)

// tokenRequest is what a token endpoint was sent.
type tokenRequest struct {
	form          url.Values
	basicID       string
	basicSecret   string
	basic         bool
	authorization string
}

// tokenEndpoint records every token request; accept decides whether it
// gets a token.
type tokenEndpoint struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []tokenRequest
}

func newTokenEndpoint(t *testing.T, accept func(tokenRequest) bool) *tokenEndpoint {
	te := &tokenEndpoint{}
	te.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Errorf("token request form: %v", err)
		}
		tr := tokenRequest{form: r.PostForm, authorization: r.Header.Get("Authorization")}
		tr.basicID, tr.basicSecret, tr.basic = r.BasicAuth()
		te.mu.Lock()
		te.reqs = append(te.reqs, tr)
		n := len(te.reqs)
		te.mu.Unlock()
		if !accept(tr) {
			pulltest.WriteJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
			return
		}
		pulltest.WriteJSON(w, http.StatusOK, map[string]any{"access_token": fmt.Sprint("tok-", n), "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(te.Close)
	return te
}

func (te *tokenEndpoint) Requests() []tokenRequest {
	te.mu.Lock()
	defer te.mu.Unlock()
	return append([]tokenRequest(nil), te.reqs...)
}

func byBasic(tr tokenRequest) bool {
	return tr.basic && tr.basicID == "client-1" && tr.basicSecret == "s3cret" && tr.form.Get("client_secret") == ""
}

func byParams(tr tokenRequest) bool {
	return tr.authorization == "" && tr.form.Get("client_id") == "client-1" && tr.form.Get("client_secret") == "s3cret"
}

// TestOAuth2TokenRequest: the token request carries the grant, the
// scopes, the audience and the extra parameters, and authenticates the
// client the way auth_style says; auto falls back to the body when the
// endpoint refuses HTTP Basic, and keeps to what worked.
func TestOAuth2TokenRequest(t *testing.T) {
	for _, tc := range []struct {
		style  string
		accept func(tokenRequest) bool
		want   []func(tokenRequest) bool // how each token request authenticated
	}{
		{AuthStyleHeader, byBasic, []func(tokenRequest) bool{byBasic, byBasic}},
		{AuthStyleParams, byParams, []func(tokenRequest) bool{byParams, byParams}},
		{AuthStyleAuto, byBasic, []func(tokenRequest) bool{byBasic, byBasic}},
		{AuthStyleAuto, byParams, []func(tokenRequest) bool{byBasic, byParams, byParams}},
	} {
		name := tc.style
		if tc.style == AuthStyleAuto && len(tc.want) == 3 {
			name += " falls back to params"
		}
		t.Run(name, func(t *testing.T) {
			te := newTokenEndpoint(t, tc.accept)
			// Each request's token is refused once, so the poller fetches a
			// second token.
			api := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				pulltest.CursorPage(w, pulltest.Items("a", 0, 1), "")
			})
			cfg := testConfig("p", api.URL)
			cfg.Auth = AuthConfig{Type: AuthOAuth2, OAuth2: OAuth2Config{
				TokenURL: te.URL + "/token", ClientID: "client-1", ClientSecretEnv: "SECRET",
				Scopes: []string{"read:orders", "read:refunds"}, RefreshBefore: time.Minute,
				Audience: "https://api.acme.example", ExtraParams: map[string]string{"resource": "orders", "tenant": "t-7"},
				AuthStyle: tc.style}}
			clk := pulltest.NewClock()
			rec := pulltest.NewRecorder()
			p, _ := newTestPoller(t, cfg, rec, &pulltest.Store[CursorRecord]{}, clk, WithGetenv(getenv))
			stop := pulltest.Run(t, p)
			eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
			if err := stop(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			reqs := te.Requests()
			if len(reqs) != len(tc.want) {
				t.Fatalf("%d token requests, want %d", len(reqs), len(tc.want))
			}
			for i, tr := range reqs {
				if !tc.want[i](tr) {
					t.Errorf("token request %d authenticated as Basic %v (%q), body client_id %q: not as expected",
						i+1, tr.basic, tr.basicID, tr.form.Get("client_id"))
				}
				for k, v := range map[string]string{"grant_type": "client_credentials", "scope": "read:orders read:refunds",
					"audience": "https://api.acme.example", "resource": "orders", "tenant": "t-7"} {
					if got := tr.form.Get(k); got != v {
						t.Errorf("token request %d: %s = %q, want %q", i+1, k, got, v)
					}
				}
			}
			if len(rec.IDs()) != 1 {
				t.Errorf("ingested %v", rec.IDs())
			}
		})
	}
}

// Test401FetchesOneNewToken: a partner that refuses every token makes the
// poller fetch exactly one new token, retry once with it and stop.
func Test401FetchesOneNewToken(t *testing.T) {
	te := newTokenEndpoint(t, byBasic)
	api := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"token revoked"}`, http.StatusUnauthorized)
	})
	cfg := testConfig("p", api.URL)
	cfg.Auth = AuthConfig{Type: AuthOAuth2, OAuth2: OAuth2Config{
		TokenURL: te.URL + "/token", ClientID: "client-1", ClientSecretEnv: "SECRET", RefreshBefore: time.Minute}}
	p, m := newTestPoller(t, cfg, pulltest.NewRecorder(), &pulltest.Store[CursorRecord]{}, pulltest.NewClock(), WithGetenv(getenv))
	err := p.Run(t.Context())
	var ae *AuthError
	if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
		t.Fatalf("Run: %v, want an *AuthError with the 401", err)
	}
	if n := len(te.Requests()); n != 2 {
		t.Errorf("%d tokens fetched, want 2: the first and one after the 401", n)
	}
	reqs := api.Requests()
	if len(reqs) != 2 || reqs[0].Header.Get("Authorization") != "Bearer tok-1" || reqs[1].Header.Get("Authorization") != "Bearer tok-2" {
		var got []string
		for _, r := range reqs {
			got = append(got, r.Header.Get("Authorization"))
		}
		t.Errorf("API requests with %q, want one with each token", got)
	}
	if got := counter(t, m, "tokenRefresh", "p", "ok"); got != 2 {
		t.Errorf("token refreshes %v, want 2", got)
	}
}
