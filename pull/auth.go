package pull

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

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

// errNoCredentials is wrapped by an AuthError when a token or secret's
// environment variable is empty.
var errNoCredentials = errors.New("pull: credentials environment variable is empty or unset")

// credentials sets a request's Authorization header. It is used by Run's
// goroutine only.
type credentials struct {
	cfg     AuthConfig
	partner string
	getenv  func(string) string
	client  *http.Client // outbound.StayOnOrigin: the secret stays on the token URL's origin
	timeout time.Duration
	now     func() time.Time
	metrics *Metrics

	grant *clientcredentials.Config // built at the first token request; it remembers the auth style auto found

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
			return &AuthError{Partner: c.partner, Err: fmt.Errorf("%w: %s", errNoCredentials, c.cfg.TokenEnv)}
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

// oauth2Style maps auth_style to the library's.
func oauth2Style(s string) oauth2.AuthStyle {
	switch s {
	case AuthStyleHeader:
		return oauth2.AuthStyleInHeader
	case AuthStyleParams:
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleAutoDetect
}

// fetchToken runs the client credentials grant (golang.org/x/oauth2's
// clientcredentials) over c.client, within c.timeout. The secret is read
// from the environment at every fetch, so a rotated one is picked up.
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
		return &AuthError{Partner: c.partner, Err: fmt.Errorf("%w: %s", errNoCredentials, o.ClientSecretEnv)}
	}
	if c.grant == nil {
		params := url.Values{}
		for k, v := range o.ExtraParams {
			params.Set(k, v)
		}
		if o.Audience != "" {
			params.Set("audience", o.Audience)
		}
		c.grant = &clientcredentials.Config{ClientID: o.ClientID, TokenURL: o.TokenURL, Scopes: o.Scopes,
			EndpointParams: params, AuthStyle: oauth2Style(o.AuthStyle)}
	}
	c.grant.ClientSecret = secret
	// The library sends the request with the client from the context: the
	// poller's, so redirects stay on the origin, seen by tokenTransport so
	// that the answer's status and a cut body are judged here.
	seen := &tokenTransport{next: c.client.Transport}
	hc := *c.client
	hc.Transport = seen
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, &hc), c.timeout)
	defer cancel()
	tok, err := c.grant.Token(ctx)
	if err != nil {
		return c.tokenError(err, seen)
	}
	c.metrics.requests.WithLabelValues(c.partner, statusLabel(seen.status, nil)).Inc()
	if tok.TokenType != "" && !strings.EqualFold(tok.TokenType, "bearer") {
		return &AuthError{Partner: c.partner, Status: seen.status,
			Err: fmt.Errorf("token_type %q is not bearer", tok.TokenType)}
	}
	// The expiry is counted on the poller's clock, not the library's.
	c.token, c.expires = tok.AccessToken, time.Time{}
	if secs, ok := seconds(tok.Extra("expires_in")); ok && secs > 0 && secs < maxWaitSeconds {
		c.expires = c.now().Add(time.Duration(secs * float64(time.Second)))
	}
	return nil
}

// tokenError judges a failed token request: the endpoint refusing the
// client is an *AuthError (the same request will be refused again, RFC
// 6749 §5.2 invalid_client, invalid_scope, ...); an outage, a timeout or
// an off-origin redirect is a *fetchError, retried like a page.
func (c *credentials) tokenError(err error, seen *tokenTransport) error {
	var re *oauth2.RetrieveError
	var ue *url.Error
	switch {
	case errors.As(err, &re):
		resp := re.Response
		c.metrics.requests.WithLabelValues(c.partner, statusLabel(resp.StatusCode, nil)).Inc()
		body := clip.Bytes(re.Body, bodyPrefix)
		switch kind := judgeResponse(resp, nil); kind {
		case kindOK, kindUnauthorized, kindPageFailed:
			// A 2xx here carries an "error" member instead of a token.
			return &AuthError{Partner: c.partner, Status: resp.StatusCode, Body: body}
		default:
			return &fetchError{kind: kind, status: resp.StatusCode, header: resp.Header, body: body,
				err: fmt.Errorf("token request: HTTP %d", resp.StatusCode)}
		}
	case seen.readErr != nil:
		// The answer came and was cut: judged like a page's cut body.
		c.metrics.requests.WithLabelValues(c.partner, statusLabel(seen.status, nil)).Inc()
		rerr := outbound.RedactError(seen.readErr)
		return &fetchError{kind: judgeResponse(nil, rerr), status: seen.status, err: fmt.Errorf("token request: %w", rerr)}
	case errors.As(err, &ue) && ue.Op != "parse":
		// The request got no answer: http.Client.Do's error.
		err = outbound.RedactError(err)
		c.metrics.requests.WithLabelValues(c.partner, statusLabel(0, err)).Inc()
		return &fetchError{kind: judgeResponse(nil, err), err: fmt.Errorf("token request: %w", err)}
	case seen.status != 0:
		// An answer that is not a token: no access_token, or not JSON.
		c.metrics.requests.WithLabelValues(c.partner, statusLabel(seen.status, nil)).Inc()
		return &AuthError{Partner: c.partner, Status: seen.status, Err: errors.New("token response has no access_token")}
	default:
		return &AuthError{Partner: c.partner, Err: outbound.RedactError(err)}
	}
}

// seconds reads expires_in as the library keeps it: a JSON number or
// string, or a form value.
func seconds(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return f, err == nil
	}
	return 0, false
}

// tokenTransport sends the token request with Accept: application/json
// and notes the last answer's status and an error reading its body, which
// the library reports without wrapping.
type tokenTransport struct {
	next    http.RoundTripper // nil: http.DefaultTransport
	status  int
	readErr error
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	if req.Header.Get("Accept") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("Accept", "application/json")
	}
	t.status, t.readErr = 0, nil // each hop and each attempt starts afresh
	resp, err := next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	t.status = resp.StatusCode
	resp.Body = &notedBody{ReadCloser: resp.Body, t: t}
	return resp, nil
}

type notedBody struct {
	io.ReadCloser
	t *tokenTransport
}

func (b *notedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.t.readErr = err
	}
	return n, err
}
