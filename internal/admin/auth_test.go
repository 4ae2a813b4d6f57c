package admin

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicehq/sluice/internal/logtest"
	"github.com/sluicehq/sluice/internal/tlsfiles"
	"github.com/sluicehq/sluice/internal/tlsfiles/tlstest"
	"github.com/sluicehq/sluice/internal/waitfor"
)

const testToken = "0123456789abcdef-admin-test-token"

func writeToken(t *testing.T, path, tok string) {
	t.Helper()
	// Written beside and renamed over, as a Secret's mount swaps it.
	if err := os.WriteFile(path+".tmp", []byte(tok), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

func TestAuthConfigValidate(t *testing.T) {
	dir := t.TempDir()
	good, short, spaced, long, crlf := filepath.Join(dir, "good"), filepath.Join(dir, "short"), filepath.Join(dir, "spaced"), filepath.Join(dir, "long"), filepath.Join(dir, "crlf")
	writeToken(t, good, testToken+"\n")
	writeToken(t, crlf, testToken+"\r\n")
	writeToken(t, short, "abc\n")
	writeToken(t, spaced, "0123456789 abcdef0123\n")
	writeToken(t, long, strings.Repeat("a", maxTokenBytes+1))
	t.Setenv("SLUICE_ADMIN_TEST_TOKEN", testToken)
	t.Setenv("SLUICE_ADMIN_TEST_SHORT", "abc")
	t.Setenv("SLUICE_ADMIN_TEST_EMPTY", "")
	for _, c := range []struct {
		auth  AuthConfig
		field string // "" when valid
	}{
		{AuthConfig{}, ""},
		{AuthConfig{TokenFile: good}, ""},
		{AuthConfig{TokenFile: crlf}, ""},
		{AuthConfig{TokenEnv: "SLUICE_ADMIN_TEST_TOKEN"}, ""},
		{AuthConfig{TokenFile: filepath.Join(dir, "missing")}, "auth.token_file"},
		{AuthConfig{TokenFile: dir}, "auth.token_file"},
		{AuthConfig{TokenFile: short}, "auth.token_file"},
		{AuthConfig{TokenFile: spaced}, "auth.token_file"},
		{AuthConfig{TokenFile: long}, "auth.token_file"},
		{AuthConfig{TokenEnv: "SLUICE_ADMIN_TEST_SHORT"}, "auth.token_env"},
		{AuthConfig{TokenEnv: "SLUICE_ADMIN_TEST_EMPTY"}, "auth.token_env"},
		{AuthConfig{TokenEnv: "SLUICE_ADMIN_TEST_UNSET_" + t.Name()}, "auth.token_env"},
		{AuthConfig{TokenFile: good, TokenEnv: "SLUICE_ADMIN_TEST_TOKEN"}, "auth.token_env"},
	} {
		for _, addr := range []string{"", "127.0.0.1:0"} {
			err := Config{Addr: addr, Auth: c.auth}.Validate()
			var ce *ConfigError
			switch {
			case c.field == "" && err != nil:
				t.Errorf("%+v: %v", c.auth, err)
			case c.field != "" && (!errors.As(err, &ce) || ce.Field != c.field):
				t.Errorf("%+v: %v, want an error naming %s", c.auth, err, c.field)
			case err != nil && strings.Contains(err.Error(), testToken):
				t.Errorf("%+v: the error holds the token: %v", c.auth, err)
			}
		}
	}
}

// call is one request to the admin listener.
type call struct {
	method, path, authz string
	cert                bool // present the client certificate
}

type answer struct {
	code   int
	reason string // errorDetail.Reason of a refusal
	www    string // WWW-Authenticate
}

// TestStateChangingCallsNeedACredential: a call of any method but GET,
// HEAD and OPTIONS is let through with the bearer token or a client
// certificate the listener verified, refused 401 (WWW-Authenticate:
// Bearer) without either, and 403 NO_CREDENTIAL_CONFIGURED when the
// listener has neither configured; safe calls (probes, metrics, a route's
// GET) need nothing, and the mux's method checks stay.
func TestStateChangingCallsNeedACredential(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	writeToken(t, tokenFile, testToken+"\n")
	t.Setenv("SLUICE_ADMIN_TEST_TOKEN", testToken)
	ca, stranger := tlstest.NewCA(t, "admin-clients"), tlstest.NewCA(t, "stranger")
	certFile, keyFile := ca.Server(t).Files(t)
	clientCert := ca.Client(t, tlstest.Identity{CommonName: "operator"}).TLS(t)
	verifying := tlsfiles.ServerConfig{CertFile: certFile, KeyFile: keyFile, ClientCAFile: ca.File(t), ClientAuth: tlsfiles.ClientAuthRequest}
	plainTLS := tlsfiles.ServerConfig{CertFile: certFile, KeyFile: keyFile}

	safe := []call{
		{method: http.MethodGet, path: "/healthz"},
		{method: http.MethodGet, path: "/readyz"},
		{method: http.MethodGet, path: "/metrics"},
		{method: http.MethodHead, path: "/healthz"},
		{method: http.MethodGet, path: "/admin/thing"},
	}
	ok := answer{code: http.StatusOK}
	unauth := answer{code: http.StatusUnauthorized, reason: reasonUnauthenticated, www: `Bearer realm="sluice admin"`}
	wrong := answer{code: http.StatusUnauthorized, reason: reasonUnauthenticated, www: `Bearer realm="sluice admin", error="invalid_token"`}
	closed := answer{code: http.StatusForbidden, reason: reasonNoCredentialConfigured}
	for _, c := range []struct {
		name  string
		cfg   Config
		calls map[call]answer
	}{
		{"nothing configured", Config{}, map[call]answer{
			{method: http.MethodPost, path: "/admin/thing/change"}:                               closed,
			{method: http.MethodPost, path: "/admin/thing/change", authz: "Bearer " + testToken}: closed,
			{method: http.MethodDelete, path: "/admin/thing"}:                                    closed,
		}},
		{"TLS without client certificates", Config{TLS: plainTLS}, map[call]answer{
			{method: http.MethodPost, path: "/admin/thing/change"}: closed,
		}},
		{"token file", Config{Auth: AuthConfig{TokenFile: tokenFile}}, map[call]answer{
			{method: http.MethodPost, path: "/admin/thing/change"}:                                           unauth,
			{method: http.MethodPost, path: "/admin/thing/change", authz: "Bearer " + testToken}:             ok,
			{method: http.MethodPost, path: "/admin/thing/change", authz: "bearer  " + testToken + " "}:      ok,
			{method: http.MethodPost, path: "/admin/thing/change", authz: "Bearer " + testToken + "x"}:       wrong,
			{method: http.MethodPost, path: "/admin/thing/change", authz: "Bearer " + testToken[:20]}:        wrong,
			{method: http.MethodPost, path: "/admin/thing/change", authz: "Bearer"}:                          unauth,
			{method: http.MethodPost, path: "/admin/thing/change", authz: "Basic " + testToken}:              unauth,
			{method: http.MethodPost, path: "/admin/thing/change", authz: testToken}:                         unauth,
			{method: http.MethodPut, path: "/admin/thing"}:                                                   unauth,
			{method: http.MethodDelete, path: "/admin/thing", authz: "Bearer " + testToken}:                  ok,
			{method: http.MethodPatch, path: "/admin/nowhere"}:                                               unauth,
			{method: http.MethodGet, path: "/admin/thing/change", authz: "Bearer " + testToken}:              {code: http.StatusMethodNotAllowed},
			{method: http.MethodPost, path: "/healthz", authz: "Bearer " + testToken}:                        {code: http.StatusMethodNotAllowed},
			{method: http.MethodPost, path: "/admin/nowhere", authz: "Bearer " + testToken}:                  {code: http.StatusNotFound},
			{method: http.MethodGet, path: "/admin/thing", authz: "Bearer wrong-and-ignored-on-a-safe-call"}: ok,
		}},
		{"token env", Config{Auth: AuthConfig{TokenEnv: "SLUICE_ADMIN_TEST_TOKEN"}}, map[call]answer{
			{method: http.MethodPost, path: "/admin/thing/change"}:                               unauth,
			{method: http.MethodPost, path: "/admin/thing/change", authz: "Bearer " + testToken}: ok,
			{method: http.MethodPost, path: "/admin/thing/change", authz: "Bearer nope"}:         wrong,
		}},
		{"client certificates", Config{TLS: verifying}, map[call]answer{
			{method: http.MethodPost, path: "/admin/thing/change"}:                               unauth,
			{method: http.MethodPost, path: "/admin/thing/change", cert: true}:                   ok,
			{method: http.MethodPost, path: "/admin/thing/change", authz: "Bearer " + testToken}: wrong,
		}},
		{"client certificates and a token", Config{TLS: verifying, Auth: AuthConfig{TokenFile: tokenFile}}, map[call]answer{
			{method: http.MethodPost, path: "/admin/thing/change"}:                               unauth,
			{method: http.MethodPost, path: "/admin/thing/change", cert: true}:                   ok,
			{method: http.MethodPost, path: "/admin/thing/change", authz: "Bearer " + testToken}: ok,
			{method: http.MethodPost, path: "/admin/thing/change", authz: "Bearer nope"}:         wrong,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Addr = "127.0.0.1:0"
			reg := prometheus.NewRegistry()
			var changed atomic.Int32
			s, err := New(c.cfg, reg, WithLogger(quiet), WithRegisterer(reg), WithRoutes(func(mux *http.ServeMux) {
				mux.HandleFunc("GET /admin/thing", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("thing")) })
				mux.HandleFunc("POST /admin/thing/change", func(http.ResponseWriter, *http.Request) { changed.Add(1) })
				mux.HandleFunc("PUT /admin/thing", func(http.ResponseWriter, *http.Request) { changed.Add(1) })
				mux.HandleFunc("DELETE /admin/thing", func(http.ResponseWriter, *http.Request) { changed.Add(1) })
			}))
			if err != nil {
				t.Fatal(err)
			}
			s.Start()
			t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
			scheme := "http"
			if c.cfg.TLS.Enabled() {
				scheme = "https"
			}
			calls := map[call]answer{}
			for _, sc := range safe {
				calls[sc] = ok
			}
			for k, v := range c.calls {
				calls[k] = v
			}
			want := map[string]float64{}
			allowed := 0
			for k, a := range calls {
				clientTLS := &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
				if k.cert {
					clientTLS.Certificates = []tls.Certificate{clientCert}
				}
				client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: clientTLS}}
				req, _ := http.NewRequest(k.method, scheme+"://"+s.Addr()+k.path, nil)
				if k.authz != "" {
					req.Header.Set("Authorization", k.authz)
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatalf("%+v: %v", k, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var e errorBody
				if a.reason != "" {
					if err := json.Unmarshal(body, &e); err != nil {
						t.Errorf("%+v: a refusal that is not an errorBody: %s", k, body)
					}
				}
				if resp.StatusCode != a.code || e.Error.Reason != a.reason || resp.Header.Get("WWW-Authenticate") != a.www {
					t.Errorf("%+v: %d %q %q, want %d %q %q\n%s", k, resp.StatusCode, e.Error.Reason, resp.Header.Get("WWW-Authenticate"), a.code, a.reason, a.www, body)
				}
				if bytes.Contains(body, []byte(testToken)) {
					t.Errorf("%+v: the answer holds the token", k)
				}
				switch {
				case a.reason == reasonNoCredentialConfigured:
					want[refusedNoneConfigured]++
					if !strings.Contains(e.Error.Message, "admin.auth.token_file") || !strings.Contains(e.Error.Message, "client_ca_file") {
						t.Errorf("%+v: the refusal does not say how to configure a credential: %s", k, e.Error.Message)
					}
				case a.www == unauth.www:
					want[refusedNoCredential]++
				case a.www == wrong.www:
					want[refusedWrongCredential]++
				case a.code == http.StatusOK && changesState(k.method):
					allowed++
				}
			}
			if int(changed.Load()) != allowed {
				t.Errorf("%d calls changed state, want %d", changed.Load(), allowed)
			}
			for _, r := range []string{refusedNoCredential, refusedWrongCredential, refusedNoneConfigured} {
				if got := testutil.ToFloat64(s.guard.refused.WithLabelValues(r)); got != want[r] {
					t.Errorf("sluice_admin_refused_total{reason=%q} %v, want %v", r, got, want[r])
				}
			}
			if n, err := testutil.GatherAndCount(reg, "sluice_admin_refused_total"); err != nil || n != 3 {
				t.Errorf("sluice_admin_refused_total: %d series, %v", n, err)
			}
		})
	}

	// A certificate of another CA, sent although the listener names the
	// CAs it takes, does not get past the handshake.
	s, err := New(Config{Addr: "127.0.0.1:0", TLS: verifying}, prometheus.NewRegistry(), WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer func() { _ = s.Shutdown(context.Background()) }()
	strangerCert := stranger.Client(t, tlstest.Identity{CommonName: "stranger"}).TLS(t)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(),
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &strangerCert, nil }}}}
	if resp, err := client.Post("https://"+s.Addr()+"/admin/contracts/reload", "", nil); err == nil {
		resp.Body.Close()
		t.Fatalf("a certificate of another CA was let in: %d", resp.StatusCode)
	}
}

// TestTokenFileRotates: a token renamed over the file replaces the one
// before without a restart; a file that holds no good token, or is gone,
// keeps the one before, says so in the log, and never logs a token.
func TestTokenFileRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	writeToken(t, path, testToken+"\n")
	logs := &logtest.Buffer{}
	s, err := New(Config{Addr: "127.0.0.1:0", Auth: AuthConfig{TokenFile: path}}, prometheus.NewRegistry(),
		WithLogger(slog.New(slog.NewTextHandler(logs, nil))), WithRoutes(func(mux *http.ServeMux) {
			mux.HandleFunc("POST /admin/change", func(http.ResponseWriter, *http.Request) {})
		}))
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer func() { _ = s.Shutdown(context.Background()) }()
	post := func(tok string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+s.Addr()+"/admin/change", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(testToken); code != http.StatusOK {
		t.Fatalf("the first token: %d", code)
	}
	next := "fedcba9876543210-the-next-admin-token"
	writeToken(t, path, next+"\n")
	waitfor.Condition(t, 20*time.Second, "the rotated token to allow calls", func() bool { return post(next) == http.StatusOK })
	if code := post(testToken); code != http.StatusUnauthorized {
		t.Fatalf("the token before the rotation: %d, want 401", code)
	}
	if !strings.Contains(logs.String(), "admin: token reloaded") {
		t.Fatalf("the rotation is not logged:\n%s", logs.String())
	}
	writeToken(t, path, "short\n")
	waitfor.Condition(t, 20*time.Second, "the refused file to be logged", func() bool {
		post(next)
		return strings.Contains(logs.String(), "admin: token file reload failed")
	})
	if code := post(next); code != http.StatusOK {
		t.Fatalf("after a file with a short token: %d, want the token before to allow calls", code)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitfor.Condition(t, 20*time.Second, "the missing file to be logged", func() bool {
		post(next)
		return strings.Contains(logs.String(), "admin: token file unreadable")
	})
	if code := post(next); code != http.StatusOK {
		t.Fatalf("with the file gone: %d, want the token before to allow calls", code)
	}
	if strings.Contains(logs.String(), testToken) || strings.Contains(logs.String(), next) {
		t.Fatalf("a token is in the log:\n%s", logs.String())
	}
}

// FuzzAuthorization: whatever Authorization header a call that changes
// state carries, the guard answers 200 only for the Bearer scheme with
// the token, 401 with WWW-Authenticate otherwise, and never anything else.
func FuzzAuthorization(f *testing.F) {
	for _, s := range []string{"", "Bearer " + testToken, "bearer " + testToken, "Bearer  " + testToken + " ", "Basic " + testToken,
		testToken, "Bearer", "Bearer ", "Bearer " + testToken + "\x00", "Bearer\t" + testToken, "BEARER " + testToken + " x"} {
		f.Add(s)
	}
	path := filepath.Join(f.TempDir(), "token")
	if err := os.WriteFile(path, []byte(testToken), 0o600); err != nil {
		f.Fatal(err)
	}
	tok, err := loadToken(AuthConfig{TokenFile: path}, quiet, time.Now)
	if err != nil {
		f.Fatal(err)
	}
	g, err := newGuard(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), tok, false, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, authz string) {
		req := httptest.NewRequest(http.MethodPost, "/admin/contracts/reload", nil)
		req.Header.Set("Authorization", authz)
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		scheme, rest, _ := strings.Cut(strings.TrimSpace(authz), " ")
		allowed := strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(rest) == testToken
		switch {
		case allowed && rec.Code != http.StatusOK:
			t.Fatalf("%q: %d, want 200", authz, rec.Code)
		case !allowed && (rec.Code != http.StatusUnauthorized || !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer ")):
			t.Fatalf("%q: %d %q, want 401 with WWW-Authenticate", authz, rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
	})
}
