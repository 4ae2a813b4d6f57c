package pull

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/internal/eventmap"
)

func TestConfigValidate(t *testing.T) {
	ok := testConfig("p", "http://partner.example")
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, c := range []struct {
		field string
		edit  func(*Config)
	}{
		{"name", func(c *Config) { c.Name = "" }},
		{"name", func(c *Config) { c.Name = "a b" }},
		{"url", func(c *Config) { c.URL = "ftp://x/{cursor}" }},
		{"url", func(c *Config) { c.URL = "http://x/items" }},
		{"first_url", func(c *Config) { c.FirstURL = "/relative" }},
		{"first_url", func(c *Config) { c.FirstURL = "https://partner.example/items" }},
		{"first_url", func(c *Config) { c.FirstURL = "http://partner.example:8080/items" }},
		{"method", func(c *Config) { c.Method = "DELETE" }},
		{"headers", func(c *Config) { c.Headers = map[string]string{"Bad Name": "x"} }},
		{"auth.type", func(c *Config) { c.Auth.Type = "basic" }},
		{"auth.token_env", func(c *Config) { c.Auth.Type = AuthBearer }},
		{"auth.oauth2.token_url", func(c *Config) { c.Auth.Type = AuthOAuth2 }},
		{"auth.oauth2.client_secret_env", func(c *Config) {
			c.Auth = AuthConfig{Type: AuthOAuth2, OAuth2: OAuth2Config{TokenURL: "https://t/token", ClientID: "c"}}
		}},
		{"auth.oauth2.auth_style", func(c *Config) {
			c.Auth = AuthConfig{Type: AuthOAuth2, OAuth2: OAuth2Config{TokenURL: "https://t/token", ClientID: "c", ClientSecretEnv: "S", AuthStyle: "basic"}}
		}},
		{"auth.oauth2.extra_params", func(c *Config) {
			c.Auth = AuthConfig{Type: AuthOAuth2, OAuth2: OAuth2Config{TokenURL: "https://t/token", ClientID: "c", ClientSecretEnv: "S",
				ExtraParams: map[string]string{"client_secret": "x"}}}
		}},
		{"auth.oauth2.extra_params", func(c *Config) {
			c.Auth = AuthConfig{Type: AuthOAuth2, OAuth2: OAuth2Config{TokenURL: "https://t/token", ClientID: "c", ClientSecretEnv: "S",
				ExtraParams: map[string]string{"scope": "x"}}}
		}},
		{"auth.oauth2.extra_params", func(c *Config) {
			c.Auth = AuthConfig{Type: AuthOAuth2, OAuth2: OAuth2Config{TokenURL: "https://t/token", ClientID: "c", ClientSecretEnv: "S",
				Audience: "a", ExtraParams: map[string]string{"audience": "b"}}}
		}},
		{"headers", func(c *Config) {
			c.Auth = AuthConfig{Type: AuthBearer, TokenEnv: "T"}
			c.Headers = map[string]string{"authorization": "x"}
		}},
		{"interval", func(c *Config) { c.Interval = 0 }},
		{"request_timeout", func(c *Config) { c.RequestTimeout = -1 }},
		{"max_body_bytes", func(c *Config) { c.MaxBodyBytes = 0 }},
		{"max_retry_after", func(c *Config) { c.MaxRetryAfter = 0 }},
		{"backoff.initial", func(c *Config) { c.Backoff.Initial = 0 }},
		{"backoff.max", func(c *Config) { c.Backoff.Max = time.Millisecond }},
		{"breaker.failures", func(c *Config) { c.Breaker.Failures = 0 }},
		{"breaker.cooldown", func(c *Config) { c.Breaker.Cooldown = 0 }},
		{"rate_limit.rate", func(c *Config) { c.RateLimit.Rate = -1 }},
		{"rate_limit.burst", func(c *Config) { c.RateLimit = RateLimitConfig{Rate: 1} }},
		{"pagination.cursor", func(c *Config) { c.Pagination.Cursor = "next" }},
		{"pagination.type", func(c *Config) { c.Pagination.Type = "offset" }},
		{"url", func(c *Config) { c.Pagination.Type = PaginatePage }},
		{"items", func(c *Config) { c.Items = "data" }},
		{"mapping.id", func(c *Config) { c.Mapping.ID = eventmap.Source{} }},
		{"mapping.occurred_at", func(c *Config) { c.Mapping.OccurredAt = eventmap.Pointer("/a~2") }},
		{"mapping.type", func(c *Config) { c.Mapping.Type = eventmap.TypeSource{} }},
		{"mapping.types", func(c *Config) { c.Mapping.Type = eventmap.TypeFrom(eventmap.Pointer("/kind")) }},
		{"mapping.types", func(c *Config) { c.Mapping.Types = map[string]string{"a": "test.Item"} }},
		{"mapping.payload", func(c *Config) { c.Mapping.Payload = "body" }},
		{"mapping.id", func(c *Config) { c.Mapping.ID = eventmap.Header("X-Id") }},
		{"mapping.type", func(c *Config) {
			c.Mapping.Type, c.Mapping.Types = eventmap.TypeFrom(eventmap.Header("X-Kind")), map[string]string{"a": "test.Item"}
		}},
	} {
		cfg := ok
		cfg.Headers = nil
		c.edit(&cfg)
		err := cfg.Validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("want an error on %s, got %v", c.field, err)
		}
	}
}

// TestConfigYAML: a poller block starts from the defaults and refuses
// unknown keys.
func TestConfigYAML(t *testing.T) {
	var doc struct {
		Pollers []Config `yaml:"pollers"`
	}
	src := `
pollers:
  - name: acme
    url: https://api.acme.example/orders?cursor={cursor}
    interval: 15s
    pagination: {type: cursor, cursor: /next}
    items: /data
    mapping: {id: /id, type: examples.shop.v1.OrderPlaced}
    backoff: {initial: 2s, max: 1m}
`
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Pollers[0]
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	d := NewDefaultConfig()
	if c.Interval != 15*time.Second || c.Backoff.Initial != 2*time.Second || c.Method != d.Method ||
		c.Breaker != d.Breaker || c.MaxBodyBytes != d.MaxBodyBytes || c.Auth.Type != AuthNone {
		t.Errorf("decoded %+v", c)
	}
	bad := strings.Replace(src, "interval:", "intervall:", 1)
	if err := yaml.Unmarshal([]byte(bad), &doc); err == nil || !strings.Contains(err.Error(), "intervall") {
		t.Errorf("unknown key: %v", err)
	}
}

// TestOAuth2ConfigYAML: the token request's keys decode; auth_style
// defaults to auto.
func TestOAuth2ConfigYAML(t *testing.T) {
	var c Config
	src := `
name: acme
url: https://api.acme.example/orders?cursor={cursor}
pagination: {cursor: /next}
mapping: {id: /id, type: examples.shop.v1.OrderPlaced}
auth:
  type: oauth2
  oauth2:
    token_url: https://auth.acme.example/oauth/token
    client_id: sluice
    client_secret_env: ACME_SECRET
    audience: https://api.acme.example
    extra_params: {resource: orders}
`
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	o := c.Auth.OAuth2
	if o.Audience != "https://api.acme.example" || o.ExtraParams["resource"] != "orders" || o.AuthStyle != AuthStyleAuto || o.RefreshBefore != time.Minute {
		t.Errorf("decoded %+v", o)
	}
	if err := yaml.Unmarshal([]byte(strings.Replace(src, "audience:", "auth_style: params\n    audience:", 1)), &c); err != nil || c.Auth.OAuth2.AuthStyle != AuthStyleParams {
		t.Errorf("auth_style params: %v, %q", err, c.Auth.OAuth2.AuthStyle)
	}
}

func TestParseHeaders(t *testing.T) {
	now := fuzzNow
	for _, c := range []struct {
		h         http.Header
		ok        bool
		remaining int64
		reset     time.Duration
	}{
		{http.Header{"Ratelimit": {`"default";r=0;t=30`}}, true, 0, 30 * time.Second},
		{http.Header{"Ratelimit": {`"a";r=10;t=1`, `"b";r=2;t=50`}}, true, 2, 50 * time.Second},
		{http.Header{"Ratelimit": {`limit=10, remaining=3, reset=7`}}, true, 3, 7 * time.Second},
		{http.Header{"Ratelimit": {`"day";r=0`}, "Ratelimit-Policy": {`"hour";q=10;w=3600, "day";q=100;w=86400`}}, true, 0, 24 * time.Hour},
		{http.Header{"Ratelimit": {`"day";r=0`}}, false, 0, 0},
		{http.Header{"Ratelimit": {`"a";q=10`}, "X-Ratelimit-Remaining": {"1"}, "X-Ratelimit-Reset": {"4"}}, true, 1, 4 * time.Second},
		{http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1795953630"}}, true, 0, 30 * time.Second},
		{http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1795953615000"}}, true, 0, 15 * time.Second},
		{http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1795953500"}}, true, 0, 0}, // past
		{http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"2.5"}}, true, 0, 2500 * time.Millisecond},
		{http.Header{"X-Ratelimit-Remaining": {"zero"}, "X-Ratelimit-Reset": {"5"}}, false, 0, 0},
		{http.Header{"X-Ratelimit-Remaining": {"0"}}, false, 0, 0},
		{http.Header{}, false, 0, 0},
	} {
		a, ok := parseRateLimit(c.h, now)
		if ok != c.ok || (ok && (a.remaining != c.remaining || a.reset != c.reset)) {
			t.Errorf("%v: got %+v %v, want remaining %d reset %v ok %v", c.h, a, ok, c.remaining, c.reset, c.ok)
		}
	}
	base, _ := url.Parse("https://api.example/v1/items?page=1")
	for _, c := range []struct {
		link []string
		want string
	}{
		{[]string{`<https://api.example/v1/items?page=2>; rel="next"`}, "https://api.example/v1/items?page=2"},
		{[]string{`<?page=3>; rel="prev", <?page=2>; rel="next last"`}, "https://api.example/v1/items?page=2"},
		{[]string{`<https://a/1>; title="a, b; rel=next"; rel="prev"`, `<items?page=9>; REL=NEXT`}, "https://api.example/v1/items?page=9"},
		{[]string{`<https://a/1>; rel="prev"`}, ""},
		{[]string{`https://a/1; rel=next`}, ""},
	} {
		u, ok := parseLinkNext(c.link, base)
		got := ""
		if ok {
			got = u.String()
		}
		if got != c.want {
			t.Errorf("%q: next %q, want %q", c.link, got, c.want)
		}
	}
}
