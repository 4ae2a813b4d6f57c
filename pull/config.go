package pull

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/eventmap"
	"github.com/sluicehq/sluice/internal/jsonpointer"
	"github.com/sluicehq/sluice/internal/outbound"
	"github.com/sluicehq/sluice/internal/strictyaml"
)

// Auth types.
const (
	AuthNone   = "none"
	AuthBearer = "bearer"
	AuthOAuth2 = "oauth2"
)

// OAuth2 client authentication styles, OAuth2Config.AuthStyle.
const (
	// AuthStyleAuto tries HTTP Basic first and, when the token endpoint
	// refuses, the request body; the style that worked is kept.
	AuthStyleAuto = "auto"
	// AuthStyleHeader sends the client id and secret as HTTP Basic
	// (RFC 6749 §2.3.1).
	AuthStyleHeader = "header"
	// AuthStyleParams sends them as client_id and client_secret in the
	// request body.
	AuthStyleParams = "params"
)

// Pagination types.
const (
	PaginateCursor = "cursor"
	PaginateLink   = "link"
	PaginatePage   = "page"
)

// Config is one partner's poller. Start from DefaultConfig; Validate names
// the first wrong field.
type Config struct {
	// Name identifies the poller: metrics, logs and the cursor record's key.
	Name string `yaml:"name"`
	// Source is the source name events are judged under. Default: Name.
	Source string `yaml:"source"`
	// ShareSource says that a Source that is also a push source's name,
	// or an earlier poller's source, is meant: an event's identity is
	// (source, id), so their events share one id space, and an id both
	// send is taken for the same event (a duplicate, or a conflict).
	// sluice's config refuses such a poller without it. Default false.
	ShareSource bool `yaml:"share_source"`
	// URL is the page URL. "{cursor}" is replaced by the query-escaped
	// cursor and "{page}" by the page number. Its origin is the only one
	// page requests, and the credentials, go to.
	URL string `yaml:"url"`
	// FirstURL, when set, is requested while there is no cursor yet, so a
	// partner that refuses an empty cursor parameter is not sent one. It
	// must be on URL's origin (scheme, host and port).
	FirstURL string `yaml:"first_url"`
	// Method is GET or POST. Default GET.
	Method string `yaml:"method"`
	// Headers are sent with every page request.
	Headers map[string]string `yaml:"headers"`
	Auth    AuthConfig        `yaml:"auth"`
	// Interval is the wait between polls once the poller is caught up.
	// Default 30s.
	Interval time.Duration `yaml:"interval"`
	// RequestTimeout bounds one request, body included, and one token
	// request. Default 30s.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// MaxBodyBytes bounds a page body; a larger page fails. Default 16 MiB.
	MaxBodyBytes int64            `yaml:"max_body_bytes"`
	Pagination   PaginationConfig `yaml:"pagination"`
	// Items is a JSON pointer (RFC 6901) to the array of items in the
	// body; "" means the body is the array.
	Items   string        `yaml:"items"`
	Mapping MappingConfig `yaml:"mapping"`
	// RateLimit paces requests on the client side and sets when the
	// partner's rate-limit headers make the poller wait.
	RateLimit RateLimitConfig `yaml:"rate_limit"`
	// MaxRetryAfter caps every wait the partner asks for: Retry-After and
	// the reset of its rate-limit headers. Default 5m.
	MaxRetryAfter time.Duration `yaml:"max_retry_after"`
	// Backoff is the wait after failed requests and pages: the n-th
	// consecutive failure waits a uniform time in
	// [0, min(Max, Initial·2ⁿ⁻¹)]. Default initial 1s, max 5m.
	Backoff backoff.Config `yaml:"backoff"`
	Breaker BreakerConfig  `yaml:"breaker"`
}

// AuthConfig says how requests are authenticated.
type AuthConfig struct {
	// Type is "none" (default), "bearer" or "oauth2".
	Type string `yaml:"type"`
	// TokenEnv names the environment variable holding the bearer token.
	TokenEnv string       `yaml:"token_env"`
	OAuth2   OAuth2Config `yaml:"oauth2"`
}

// OAuth2Config is the OAuth 2.0 client credentials grant (RFC 6749 §4.4).
type OAuth2Config struct {
	TokenURL string `yaml:"token_url"`
	ClientID string `yaml:"client_id"`
	// ClientSecretEnv names the environment variable holding the secret.
	ClientSecretEnv string   `yaml:"client_secret_env"`
	Scopes          []string `yaml:"scopes"`
	// Audience, when set, is sent as the audience parameter of the token
	// request (Auth0, Okta and others name the API the token is for).
	Audience string `yaml:"audience"`
	// ExtraParams are added to the token request's form. They may not set
	// grant_type, scope, audience, client_id or client_secret: those have
	// fields of their own (and a secret has no place in a config file).
	ExtraParams map[string]string `yaml:"extra_params"`
	// AuthStyle is how the client authenticates to the token endpoint:
	// "auto" (default; "" is auto too), "header" (HTTP Basic) or "params"
	// (in the request body).
	AuthStyle string `yaml:"auth_style"`
	// RefreshBefore is how long before its expiry a token is replaced.
	// Default 1m.
	RefreshBefore time.Duration `yaml:"refresh_before"`
}

// PaginationConfig says how the next page is found.
type PaginationConfig struct {
	// Type is "cursor" (default), "link" or "page".
	Type string `yaml:"type"`
	// Cursor is the JSON pointer to the next cursor in the body (type
	// cursor). A missing, null or empty cursor means there is no next page.
	Cursor string `yaml:"cursor"`
	// StartCursor is the cursor of the first poll ever.
	StartCursor string `yaml:"start_cursor"`
	// StartPage is the first page number (type page). Default 1.
	StartPage int `yaml:"start_page"`
	// PageSize is the number of items of a full page (type page). A page
	// with fewer items is the last one so far: it is polled again, not
	// advanced past, so items appended to it later are not skipped. 0: any
	// non-empty page is final and advanced past.
	PageSize int `yaml:"page_size"`
}

// MappingConfig maps an item to an event: package eventmap's Config, the
// mapping the webhook endpoint uses too. Pointers are RFC 6901 JSON
// pointers into the item:
//
//	id: /id                          # the event id (a string or an integer). Required.
//	type: examples.shop.v1.OrderPlaced   # the contract type of every item; or
//	type: /kind                      # the partner's own type of each item (a pointer),
//	types: {order.placed: examples.shop.v1.OrderPlaced}   # mapped to contract types,
//	default_type: ""                 # and those types lacks to this one ("": UNKNOWN_EVENT_TYPE)
//	occurred_at: /created_at         # RFC 3339 or Unix seconds; unset: the time the page was fetched
//	partition_key: /customer/id      # unset, missing or null: the event id is the key
//	payload: /order                  # the contract message's JSON; "" is the item itself
//
// An item has no headers: a poller's mapping reads JSON pointers only.
type MappingConfig = eventmap.Config

// RateLimitConfig is the client-side limit and the header threshold.
type RateLimitConfig struct {
	// Rate is requests per second; 0 is unlimited.
	Rate float64 `yaml:"rate"`
	// Burst is the limiter's bucket. Default 1.
	Burst int `yaml:"burst"`
	// MinRemaining: when the partner's rate-limit headers say that at most
	// this many requests remain, the poller waits for the reset before the
	// next request. Default 0.
	MinRemaining int64 `yaml:"min_remaining"`
}

// BreakerConfig is the per-partner circuit breaker.
type BreakerConfig struct {
	// Failures is the number of consecutive server errors, timeouts or
	// connection errors that opens the breaker. Default 5.
	Failures int `yaml:"failures"`
	// Cooldown is how long it stays open before one probe. Default 1m.
	Cooldown time.Duration `yaml:"cooldown"`
}

// DefaultConfig returns the defaults documented on Config. Name, URL and the
// mapping's ID and Type must be set.
func NewDefaultConfig() Config {
	return Config{
		Method:         http.MethodGet,
		Auth:           AuthConfig{Type: AuthNone, OAuth2: OAuth2Config{RefreshBefore: time.Minute, AuthStyle: AuthStyleAuto}},
		Interval:       30 * time.Second,
		RequestTimeout: 30 * time.Second,
		MaxBodyBytes:   16 << 20,
		Pagination:     PaginationConfig{Type: PaginateCursor, StartPage: 1},
		RateLimit:      RateLimitConfig{Burst: 1},
		MaxRetryAfter:  5 * time.Minute,
		Backoff:        backoff.Config{Initial: time.Second, Max: 5 * time.Minute},
		Breaker:        BreakerConfig{Failures: 5, Cooldown: time.Minute},
	}
}

// UnmarshalYAML starts from DefaultConfig, so a config file sets only what
// differs, and refuses unknown keys.
func (c *Config) UnmarshalYAML(n *yaml.Node) error {
	type plain Config
	d := plain(NewDefaultConfig())
	if err := strictyaml.Decode(n, &d); err != nil {
		return fmt.Errorf("pull: poller at line %d: %w", n.Line, err)
	}
	*c = Config(d)
	return nil
}

// ConfigError names a config field and what is wrong with it.
type ConfigError struct {
	Poller string
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	if e.Poller == "" {
		return "pull: " + e.Field + ": " + e.Reason
	}
	return "pull: poller " + e.Poller + ": " + e.Field + ": " + e.Reason
}

// SourceName is the source the poller's events are judged under.
func (c Config) SourceName() string {
	if c.Source != "" {
		return c.Source
	}
	return c.Name
}

// Validate reports the first wrong field.
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Poller: c.Name, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if c.Name == "" {
		return bad("name", "must be set")
	}
	if !validName(c.Name) {
		return bad("name", "%q: use letters, digits, '.', '_' and '-'", c.Name)
	}
	if err := checkURL(c.URL); err != nil {
		return bad("url", "%v", err)
	}
	if c.FirstURL != "" {
		if err := checkURL(c.FirstURL); err != nil {
			return bad("first_url", "%v", err)
		}
		// The poller's credentials go to one origin only.
		u, _ := parseTemplate(c.URL)
		f, _ := parseTemplate(c.FirstURL)
		if !outbound.SameOrigin(u, f) {
			return bad("first_url", "must be on the origin of url (%s): the credentials go to that origin only", outbound.OriginOf(u))
		}
	}
	switch c.Method {
	case http.MethodGet, http.MethodPost:
	default:
		return bad("method", "%q is not GET or POST", c.Method)
	}
	for k := range c.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			return bad("headers", "%q is not a header name", k)
		}
		if strings.EqualFold(k, "Authorization") && c.Auth.Type != AuthNone {
			return bad("headers", "Authorization is set by auth.type %s", c.Auth.Type)
		}
	}
	switch c.Auth.Type {
	case AuthNone:
	case AuthBearer:
		if c.Auth.TokenEnv == "" {
			return bad("auth.token_env", "must name the environment variable holding the token")
		}
	case AuthOAuth2:
		o := c.Auth.OAuth2
		switch {
		case checkURL(o.TokenURL) != nil:
			return bad("auth.oauth2.token_url", "%v", checkURL(o.TokenURL))
		case o.ClientID == "":
			return bad("auth.oauth2.client_id", "must be set")
		case o.ClientSecretEnv == "":
			return bad("auth.oauth2.client_secret_env", "must name the environment variable holding the secret")
		case o.RefreshBefore < 0:
			return bad("auth.oauth2.refresh_before", "must be >= 0")
		}
		switch o.AuthStyle {
		case "", AuthStyleAuto, AuthStyleHeader, AuthStyleParams:
		default:
			return bad("auth.oauth2.auth_style", "%q is not auto, header or params", o.AuthStyle)
		}
		for _, k := range slices.Sorted(maps.Keys(o.ExtraParams)) {
			switch k {
			case "":
				return bad("auth.oauth2.extra_params", "a parameter name is empty")
			case "grant_type", "client_id", "client_secret":
				return bad("auth.oauth2.extra_params", "%s is set by the client credentials grant", k)
			case "scope":
				return bad("auth.oauth2.extra_params", "scope is set by auth.oauth2.scopes")
			case "audience":
				return bad("auth.oauth2.extra_params", "audience is set by auth.oauth2.audience")
			}
		}
	default:
		return bad("auth.type", "%q is not none, bearer or oauth2", c.Auth.Type)
	}
	switch {
	case c.Interval <= 0:
		return bad("interval", "must be > 0")
	case c.RequestTimeout <= 0:
		return bad("request_timeout", "must be > 0")
	case c.MaxBodyBytes <= 0:
		return bad("max_body_bytes", "must be > 0")
	case c.MaxRetryAfter <= 0:
		return bad("max_retry_after", "must be > 0")
	}
	if err := c.Backoff.Validate(); err != nil {
		var fe *backoff.FieldError
		if errors.As(err, &fe) {
			return bad("backoff."+fe.Field, "%v", fe.Err)
		}
		return bad("backoff", "%v", err)
	}
	switch {
	case c.Breaker.Failures < 1:
		return bad("breaker.failures", "must be >= 1")
	case c.Breaker.Cooldown <= 0:
		return bad("breaker.cooldown", "must be > 0")
	case c.RateLimit.Rate < 0:
		return bad("rate_limit.rate", "must be >= 0 (0 is unlimited)")
	case c.RateLimit.Rate > 0 && c.RateLimit.Burst < 1:
		return bad("rate_limit.burst", "must be >= 1")
	case c.RateLimit.MinRemaining < 0:
		return bad("rate_limit.min_remaining", "must be >= 0")
	}
	p := c.Pagination
	switch p.Type {
	case PaginateCursor:
		if err := jsonpointer.Check(p.Cursor); err != nil || p.Cursor == "" {
			return bad("pagination.cursor", "must be a JSON pointer to the next cursor, like /next")
		}
		if !strings.Contains(c.URL, "{cursor}") {
			return bad("url", "must contain {cursor} for pagination.type cursor")
		}
	case PaginateLink:
	case PaginatePage:
		if !strings.Contains(c.URL, "{page}") {
			return bad("url", "must contain {page} for pagination.type page")
		}
		if p.PageSize < 0 {
			return bad("pagination.page_size", "must be >= 0")
		}
	default:
		return bad("pagination.type", "%q is not cursor, link or page", p.Type)
	}
	if err := jsonpointer.Check(c.Items); err != nil {
		return bad("items", "%v", err)
	}
	if err := c.Mapping.Validate(); err != nil {
		var ce *eventmap.ConfigError
		if errors.As(err, &ce) {
			return bad("mapping."+ce.Field, "%s", ce.Reason)
		}
		return bad("mapping", "%v", err)
	}
	m := c.Mapping
	for _, f := range []struct {
		name string
		src  eventmap.Source
	}{{"id", m.ID}, {"type", m.Type.From}, {"occurred_at", m.OccurredAt}, {"partition_key", m.PartitionKey}} {
		if f.src.Header != "" {
			return bad("mapping."+f.name, "an item has no headers: use a JSON pointer into the item, like /%s", f.name)
		}
	}
	return nil
}

func checkURL(s string) error {
	if s == "" {
		return fmt.Errorf("must be set")
	}
	u, err := parseTemplate(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return nil
}

// parseTemplate parses a page URL, its placeholders filled in.
func parseTemplate(s string) (*url.URL, error) {
	return url.Parse(strings.NewReplacer("{cursor}", "c", "{page}", "1").Replace(s))
}

func validName(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return len(s) <= 200
}
