package pull

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/clip"
	"github.com/sluicehq/sluice/internal/outbound"
)

// AuthError stops a poller: the partner refused its credentials twice, or
// the token endpoint refused the client. Other pollers keep running.
type AuthError struct {
	Partner string
	Status  int    // the HTTP status, 0 when the credentials were missing
	Body    string // a bounded prefix of the answer
	Err     error
}

func (e *AuthError) Error() string {
	msg := fmt.Sprintf("pull: poller %s: credentials refused", e.Partner)
	if e.Status != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Body != "" {
		msg += ": " + e.Body
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *AuthError) Unwrap() error { return e.Err }

// ErrNoCredentials is wrapped by an AuthError when a token or secret's
// environment variable is empty.
var ErrNoCredentials = errors.New("pull: credentials environment variable is empty or unset")

// credentials sets a request's Authorization header.
type credentials struct {
	cfg     AuthConfig
	partner string
	getenv  func(string) string
	client  *http.Client
	timeout time.Duration
	now     func() time.Time
	metrics *Metrics

	token   string
	expires time.Time // zero: does not expire
}

// authorize sets the header, fetching a token first when there is none or
// it is about to expire. The error is a *fetchError (retryable, judged like
// a page) or an *AuthError (the poller stops).
func (c *credentials) authorize(ctx context.Context, req *http.Request) error {
	switch c.cfg.Type {
	case AuthNone:
		return nil
	case AuthBearer:
		if c.token == "" {
			c.token = c.getenv(c.cfg.TokenEnv)
		}
		if c.token == "" {
			return &AuthError{Partner: c.partner, Err: fmt.Errorf("%w: %s", ErrNoCredentials, c.cfg.TokenEnv)}
		}
	case AuthOAuth2:
		if c.token == "" || (!c.expires.IsZero() && !c.now().Before(c.expires.Add(-c.cfg.OAuth2.RefreshBefore))) {
			if err := c.fetchToken(ctx); err != nil {
				return err
			}
		}
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	return nil
}

// invalidate drops the token after a 401, so the next request refreshes
// it: a new OAuth2 token, or the bearer token read again from the
// environment (it may have been rotated).
func (c *credentials) invalidate() {
	c.token, c.expires = "", time.Time{}
}

// tokenResponse is RFC 6749 §5.1.
type tokenResponse struct {
	AccessToken string          `json:"access_token"`
	TokenType   string          `json:"token_type"`
	ExpiresIn   json.RawMessage `json:"expires_in"`
}

// fetchToken runs the client credentials grant with HTTP Basic client
// authentication (RFC 6749 §2.3.1).
func (c *credentials) fetchToken(ctx context.Context) (err error) {
	o := c.cfg.OAuth2
	defer func() {
		result := "ok"
		if err != nil {
			result = "error"
		}
		c.metrics.tokenRefresh.WithLabelValues(c.partner, result).Inc()
	}()
	secret := c.getenv(o.ClientSecretEnv)
	if secret == "" {
		return &AuthError{Partner: c.partner, Err: fmt.Errorf("%w: %s", ErrNoCredentials, o.ClientSecretEnv)}
	}
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(o.Scopes) > 0 {
		form.Set("scope", strings.Join(o.Scopes, " "))
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return &AuthError{Partner: c.partner, Err: outbound.RedactError(err)}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(o.ClientID), url.QueryEscape(secret))
	resp, err := c.client.Do(req)
	if err != nil {
		err = outbound.RedactError(err)
		c.metrics.requests.WithLabelValues(c.partner, statusLabel(0, err)).Inc()
		return &fetchError{kind: judgeResponse(nil, err), err: fmt.Errorf("token request: %w", err)}
	}
	defer resp.Body.Close()
	c.metrics.requests.WithLabelValues(c.partner, statusLabel(resp.StatusCode, nil)).Inc()
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	kind := judgeResponse(resp, rerr)
	switch kind {
	case kindOK:
	case kindUnauthorized, kindPageFailed:
		// The token endpoint refused this client: the same request will be
		// refused again (RFC 6749 §5.2 invalid_client, invalid_scope, ...).
		return &AuthError{Partner: c.partner, Status: resp.StatusCode, Body: clip.Bytes(body, bodyPrefix)}
	default:
		return &fetchError{kind: kind, status: resp.StatusCode, header: resp.Header, body: clip.Bytes(body, bodyPrefix),
			err: fmt.Errorf("token request: HTTP %d", resp.StatusCode)}
	}
	var tr tokenResponse
	if err := json.Unmarshal(body, &tr); err != nil || tr.AccessToken == "" {
		return &AuthError{Partner: c.partner, Status: resp.StatusCode, Body: clip.Bytes(body, bodyPrefix),
			Err: errors.New("token response has no access_token")}
	}
	if tr.TokenType != "" && !strings.EqualFold(tr.TokenType, "bearer") {
		return &AuthError{Partner: c.partner, Status: resp.StatusCode,
			Err: fmt.Errorf("token_type %q is not bearer", tr.TokenType)}
	}
	c.token, c.expires = tr.AccessToken, time.Time{}
	if s, err := scalarString(tr.ExpiresIn); err == nil {
		var secs float64
		if _, err := fmt.Sscan(s, &secs); err == nil && secs > 0 && secs < maxWaitSeconds {
			c.expires = c.now().Add(time.Duration(secs * float64(time.Second)))
		}
	}
	return nil
}
