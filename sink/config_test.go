package sink

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mod   func(*Config)
		field string // "" when valid
	}{
		{"default", func(c *Config) {}, ""},
		{"kind", func(c *Config) { c.Kind = "kafka" }, "kind"},
		{"empty kind", func(c *Config) { c.Kind = "" }, "kind"},
		{"sqlite path", func(c *Config) { c.SQLite.Path = "" }, "sqlite.path"},
		{"sqlite path query", func(c *Config) { c.SQLite.Path = "a.db?mode=ro" }, "sqlite.path"},
		{"sqlite memory", func(c *Config) { c.SQLite.Path = ":memory:" }, "sqlite.path"},
		{"sqlite table", func(c *Config) { c.SQLite.Table = "Events" }, "sqlite.table"},
		{"sqlite table injection", func(c *Config) { c.SQLite.Table = `e"; DROP TABLE x` }, "sqlite.table"},
		{"sqlite table digit", func(c *Config) { c.SQLite.Table = "1events" }, "sqlite.table"},
		{"sqlite table long", func(c *Config) { c.SQLite.Table = strings.Repeat("e", 64) }, "sqlite.table"},
		{"sqlite table longest", func(c *Config) { c.SQLite.Table = strings.Repeat("e", 53) }, ""},
		{"sqlite table no room for _conflicts", func(c *Config) { c.SQLite.Table = strings.Repeat("e", 54) }, "sqlite.table"},
		{"sqlite busy", func(c *Config) { c.SQLite.BusyTimeout = -time.Second }, "sqlite.busy_timeout"},
		{"sqlite synchronous", func(c *Config) { c.SQLite.Synchronous = "off" }, "sqlite.synchronous"},
		{"postgres ok", func(c *Config) { c.Kind = "postgres"; c.Postgres.DSN = "postgres://u@h/db" }, ""},
		{"postgres dsn", func(c *Config) { c.Kind = "postgres" }, "postgres.dsn"},
		{"postgres bad dsn", func(c *Config) { c.Kind = "postgres"; c.Postgres.DSN = "postgres://u:pw@h:notaport/db" }, "postgres.dsn"},
		{"postgres table", func(c *Config) { c.Kind = "postgres"; c.Postgres.DSN = "postgres://h/db"; c.Postgres.Table = "a-b" }, "postgres.table"},
		{"postgres table no room for _conflicts", func(c *Config) {
			c.Kind = "postgres"
			c.Postgres.DSN = "postgres://h/db"
			c.Postgres.Table = strings.Repeat("e", 54)
		}, "postgres.table"},
		{"postgres conns", func(c *Config) { c.Kind = "postgres"; c.Postgres.DSN = "postgres://h/db"; c.Postgres.MaxConns = 0 }, "postgres.max_conns"},
		{"postgres connect", func(c *Config) {
			c.Kind = "postgres"
			c.Postgres.DSN = "postgres://h/db"
			c.Postgres.ConnectTimeout = 0
		}, "postgres.connect_timeout"},
		{"postgres write", func(c *Config) { c.Kind = "postgres"; c.Postgres.DSN = "postgres://h/db"; c.Postgres.WriteTimeout = 0 }, "postgres.write_timeout"},
		{"http ok", func(c *Config) { c.Kind = "http"; c.HTTP.URL = "https://example.test/events" }, ""},
		{"http url", func(c *Config) { c.Kind = "http" }, "http.url"},
		{"http scheme", func(c *Config) { c.Kind = "http"; c.HTTP.URL = "ftp://h/x" }, "http.url"},
		{"http host", func(c *Config) { c.Kind = "http"; c.HTTP.URL = "http:///x" }, "http.url"},
		{"http timeout", func(c *Config) { c.Kind = "http"; c.HTTP.URL = "http://h"; c.HTTP.RequestTimeout = 0 }, "http.request_timeout"},
		{"http retry-after", func(c *Config) { c.Kind = "http"; c.HTTP.URL = "http://h"; c.HTTP.MaxRetryAfter = -1 }, "http.max_retry_after"},
		{"http idle", func(c *Config) { c.Kind = "http"; c.HTTP.URL = "http://h"; c.HTTP.MaxIdleConns = 0 }, "http.max_idle_conns"},
		{"http header name", func(c *Config) {
			c.Kind = "http"
			c.HTTP.URL = "http://h"
			c.HTTP.Headers = map[string]string{"Bad Name": "v"}
		}, "http.headers[Bad Name]"},
		{"http header value", func(c *Config) {
			c.Kind = "http"
			c.HTTP.URL = "http://h"
			c.HTTP.Headers = map[string]string{"X-A": "v\r\nX-B: w"}
		}, "http.headers[X-A]"},
		{"http reserved header", func(c *Config) {
			c.Kind = "http"
			c.HTTP.URL = "http://h"
			c.HTTP.Headers = map[string]string{"idempotency-key": "v"}
		}, "http.headers[idempotency-key]"},
		{"http reserved fingerprint header", func(c *Config) {
			c.Kind = "http"
			c.HTTP.URL = "http://h"
			c.HTTP.HeadersFromEnv = map[string]string{"sluice-payload-fingerprint": "FP"}
		}, "http.headers_from_env[sluice-payload-fingerprint]"},
		{"http env header", func(c *Config) {
			c.Kind = "http"
			c.HTTP.URL = "http://h"
			c.HTTP.HeadersFromEnv = map[string]string{"Authorization": ""}
		}, "http.headers_from_env[Authorization]"},
		{"http env header twice", func(c *Config) {
			c.Kind = "http"
			c.HTTP.URL = "http://h"
			c.HTTP.Headers = map[string]string{"Authorization": "x"}
			c.HTTP.HeadersFromEnv = map[string]string{"Authorization": "TOKEN"}
		}, "http.headers_from_env[Authorization]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewDefaultConfig()
			tc.mod(&cfg)
			err := cfg.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), "sink: "+tc.field+": ") {
				t.Fatalf("Validate = %v, want an error naming %s", err, tc.field)
			}
			if strings.Contains(err.Error(), "pw") {
				t.Fatalf("Validate leaks the DSN's password: %v", err)
			}
		})
	}
}

func TestConfigYAML(t *testing.T) {
	cfg := NewDefaultConfig()
	doc := `
kind: http
http:
  url: https://receiver.test/events
  request_timeout: 3s
  headers: {X-Tenant: acme}
  headers_from_env: {Authorization: SINK_AUTH}
`
	if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Kind != KindHTTP || cfg.HTTP.RequestTimeout != 3*time.Second || cfg.HTTP.MaxRetryAfter != 10*time.Minute ||
		cfg.HTTP.Headers["X-Tenant"] != "acme" || cfg.HTTP.HeadersFromEnv["Authorization"] != "SINK_AUTH" {
		t.Fatalf("decoded %+v", cfg.HTTP)
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	cfg := NewDefaultConfig()
	cfg.SQLite.Path = filepath.Join(t.TempDir(), "events.db")
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != "sqlite" {
		t.Errorf("Name = %q", s.Name())
	}
	s.Close()

	cfg.Kind = KindHTTP
	cfg.HTTP.URL = "http://127.0.0.1:1/events"
	s, err = Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != "http" {
		t.Errorf("Name = %q", s.Name())
	}
	s.Close()

	cfg.Kind = "nope"
	if s, err := Open(ctx, cfg); err == nil || s != nil {
		t.Fatalf("Open(kind nope) = %v, %v", s, err)
	}
	cfg.Kind = KindSQLite
	cfg.SQLite.Path = filepath.Join(t.TempDir(), "missing-dir", "events.db")
	if s, err := Open(ctx, cfg); err == nil || s != nil {
		t.Fatalf("Open(sqlite in a missing directory) = %v, %v; want a nil Sink and an error", s, err)
	}
}
