package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/secret"
)

// Token bounds: a token is one line of printable ASCII without spaces (it
// travels in an Authorization header), long enough not to be guessed.
const (
	minTokenBytes = 16
	maxTokenBytes = 4096
)

// Reasons of a refused call (errorDetail.Reason).
const (
	// reasonUnauthenticated: the call changes state and carries no
	// credential the listener accepts (401, WWW-Authenticate: Bearer).
	reasonUnauthenticated = "UNAUTHENTICATED"
	// reasonNoCredentialConfigured: the call changes state and the
	// listener is configured with no credential that could allow it (403).
	reasonNoCredentialConfigured = "NO_CREDENTIAL_CONFIGURED"
)

// errorBody is the JSON of a call the listener refuses.
type errorBody struct {
	Error errorDetail `json:"error"`
}

// errorDetail says why a call was refused.
type errorDetail struct {
	Reason    string `json:"reason"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// changesState says whether a request of method may change state: every
// method but the safe ones of RFC 9110.
func changesState(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// guard lets every safe request through, and a request that may change
// state only with a credential: a client certificate the listener's TLS
// verified, or the bearer token.
type guard struct {
	next http.Handler
	// token is the bearer token's source; nil when none is configured.
	token *token
	// certs says that the listener verifies client certificates, so that
	// one may authorise a call.
	certs   bool
	refused *prometheus.CounterVec
}

// Labels of sluice_admin_refused_total.
const (
	refusedNoCredential    = "no_credential"
	refusedWrongCredential = "wrong_credential"
	refusedNoneConfigured  = "none_configured"
)

func newGuard(next http.Handler, tok *token, certs bool, reg prometheus.Registerer) (*guard, error) {
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_admin_refused_total",
		Help: "Calls to the admin listener that change state (any method but GET, HEAD and OPTIONS) refused, by reason: no_credential (none sent), wrong_credential (a token that is not the one configured), none_configured (admin.auth and admin.tls allow none).",
	}, []string{"reason"})
	for _, r := range []string{refusedNoCredential, refusedWrongCredential, refusedNoneConfigured} {
		refused.WithLabelValues(r)
	}
	if reg != nil {
		if err := reg.Register(refused); err != nil {
			// Another listener's, on the same registerer: share it.
			var are prometheus.AlreadyRegisteredError
			existing, ok := refused, false
			if errors.As(err, &are) {
				existing, ok = are.ExistingCollector.(*prometheus.CounterVec)
			}
			if !ok {
				return nil, fmt.Errorf("admin: registering metrics: %w", err)
			}
			refused = existing
		}
	}
	return &guard{next: next, token: tok, certs: certs, refused: refused}, nil
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !changesState(r.Method) || verifiedClient(r.TLS) {
		g.next.ServeHTTP(w, r)
		return
	}
	if g.token == nil && !g.certs {
		g.refused.WithLabelValues(refusedNoneConfigured).Inc()
		WriteJSON(w, http.StatusForbidden, errorBody{Error: errorDetail{Reason: reasonNoCredentialConfigured,
			Message: r.Method + " " + r.URL.Path + " changes state, and this listener is configured with no credential that allows it: " +
				"set admin.auth.token_file or admin.auth.token_env (then send Authorization: Bearer TOKEN), " +
				"or admin.tls.client_ca_file with client_auth request or require (then present a client certificate it signs)"}})
		return
	}
	sent, ok := bearer(r.Header.Get("Authorization"))
	switch {
	case ok && g.token != nil && g.token.matches(sent):
		g.next.ServeHTTP(w, r)
		return
	case ok:
		g.refused.WithLabelValues(refusedWrongCredential).Inc()
		w.Header().Set("WWW-Authenticate", `Bearer realm="sluice admin", error="invalid_token"`)
	default:
		g.refused.WithLabelValues(refusedNoCredential).Inc()
		w.Header().Set("WWW-Authenticate", `Bearer realm="sluice admin"`)
	}
	WriteJSON(w, http.StatusUnauthorized, errorBody{Error: errorDetail{Reason: reasonUnauthenticated,
		Message: r.Method + " " + r.URL.Path + " changes state: " + g.accepted()}})
}

// accepted says which credentials the listener takes.
func (g *guard) accepted() string {
	switch {
	case g.token != nil && g.certs:
		return "send Authorization: Bearer with the token of admin.auth, or present a client certificate that admin.tls.client_ca_file signs"
	case g.token != nil:
		return "send Authorization: Bearer with the token of admin.auth"
	}
	return "present a client certificate that admin.tls.client_ca_file signs"
}

// verifiedClient says whether the connection's client certificate was
// verified by the listener's TLS: VerifiedChains is empty otherwise.
func verifiedClient(s *tls.ConnectionState) bool {
	return s != nil && len(s.VerifiedChains) > 0
}

// bearer is the token of an Authorization header of the Bearer scheme
// (RFC 6750; the scheme's name in any case).
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// token is the bearer token: from an environment variable, read once, or
// from a file, read again when it changes (internal/secret). It keeps the
// token's SHA-256 only, and compares digests in constant time, so that
// neither the token nor its length shows in how long a comparison takes.
type token struct {
	digest *secret.Loaded[[sha256.Size]byte]
}

// loadToken reads the token cfg names; nil when it names none. Its errors
// are ConfigErrors naming the field.
func loadToken(cfg AuthConfig, log *slog.Logger, now func() time.Time) (*token, error) {
	var (
		src   secret.Source
		field string
	)
	switch {
	case cfg.TokenFile != "" && cfg.TokenEnv != "":
		return nil, fieldErr("auth.token_env", "set with token_file: give one of them")
	case cfg.TokenEnv != "":
		src, field = secret.Source{Env: cfg.TokenEnv}, "auth.token_env"
	case cfg.TokenFile != "":
		src, field = secret.Source{File: cfg.TokenFile}, "auth.token_file"
	default:
		return nil, nil
	}
	d, err := secret.Load("admin: token", src, parseToken,
		secret.WithLogger(log), secret.WithClock(now), secret.WithMaxBytes(maxTokenBytes))
	if err != nil {
		return nil, fieldErr(field, err.Error())
	}
	return &token{digest: d}, nil
}

// parseToken checks a token and keeps its digest.
func parseToken(b []byte) ([sha256.Size]byte, error) {
	if err := checkToken(string(b)); err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(b), nil
}

// checkToken refuses a token that cannot travel in a header or is short
// enough to guess. The errors never hold the token.
func checkToken(v string) error {
	switch {
	case v == "":
		return errors.New("the token is empty")
	case len(v) > maxTokenBytes:
		return fmt.Errorf("the token is longer than %d bytes", maxTokenBytes)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e {
			return fmt.Errorf("the token holds a byte other than printable ASCII (no spaces, one line) at offset %d", i)
		}
	}
	if len(v) < minTokenBytes {
		return fmt.Errorf("the token is %d bytes, fewer than %d: make one with `openssl rand -hex 32`", len(v), minTokenBytes)
	}
	return nil
}

// matches compares sent with the token in constant time. A token file
// that changed is read again first (at most once a second); one that is
// gone or holds no good token keeps the token before, as a listener keeps
// its certificate: the failure is logged once.
func (t *token) matches(sent string) bool {
	d := sha256.Sum256([]byte(sent))
	want := t.digest.Current()
	return subtle.ConstantTimeCompare(d[:], want[:]) == 1
}
