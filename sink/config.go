package sink

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Kinds of sink, the values of Config.Kind.
const (
	KindSQLite   = "sqlite"
	KindPostgres = "postgres"
	KindHTTP     = "http"
)

// Config selects and configures one sink. Only the block of the selected
// Kind is read and validated. Start from DefaultConfig.
type Config struct {
	// Kind is "sqlite", "postgres" or "http". Default "sqlite".
	Kind     string         `yaml:"kind"`
	SQLite   SQLiteConfig   `yaml:"sqlite"`
	Postgres PostgresConfig `yaml:"postgres"`
	HTTP     HTTPConfig     `yaml:"http"`
}

// SQLiteConfig configures the embedded SQLite sink.
type SQLiteConfig struct {
	// Path is the database file, created with its table when missing.
	// Default "sluice-events.db".
	Path string `yaml:"path"`
	// Table is the table name, a plain lowercase identifier. Default "events".
	Table string `yaml:"table"`
	// BusyTimeout is how long a statement waits for another process's lock
	// on the file before it fails (transient). Default 5s.
	BusyTimeout time.Duration `yaml:"busy_timeout"`
	// Synchronous is SQLite's synchronous setting in WAL mode: "full" (the
	// default) syncs the WAL at every commit, so an acknowledged batch
	// survives a process crash, a kernel crash and a power loss; "normal"
	// syncs only at checkpoints, so an acknowledged batch survives a process
	// crash but the last ones may be lost to a power loss, after the
	// consumer has committed their offsets.
	Synchronous string `yaml:"synchronous"`
}

// PostgresConfig configures the PostgreSQL sink. The table must exist: run
// Migrate (sluice sink migrate) first.
type PostgresConfig struct {
	// DSN is a libpq connection string or URL. Required. A password may come
	// from PGPASSWORD or a .pgpass file instead of the DSN.
	DSN string `yaml:"dsn"`
	// Table is the table name, a plain lowercase identifier. Default "events".
	Table string `yaml:"table"`
	// MaxConns bounds the pool's connections. Default 4.
	MaxConns int32 `yaml:"max_conns"`
	// ConnectTimeout bounds opening one connection. Default 5s.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// WriteTimeout bounds one Write, waiting for a connection included.
	// Default 30s.
	WriteTimeout time.Duration `yaml:"write_timeout"`
}

// HTTPConfig configures the HTTP sink.
type HTTPConfig struct {
	// URL receives one POST per event. Required, http or https.
	URL string `yaml:"url"`
	// Headers are sent with every request.
	Headers map[string]string `yaml:"headers"`
	// HeadersFromEnv maps a header name to the environment variable holding
	// its value (for example Authorization: SINK_AUTHORIZATION holding
	// "Bearer ..."), read once when the sink opens; a variable that is unset
	// or empty fails Open.
	HeadersFromEnv map[string]string `yaml:"headers_from_env"`
	// RequestTimeout bounds one POST, reading the response included.
	// Default 10s.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// MaxRetryAfter caps the Retry-After a receiver may ask for; 0 ignores
	// Retry-After. Default 10m.
	MaxRetryAfter time.Duration `yaml:"max_retry_after"`
	// MaxIdleConns bounds the idle connections kept to the receiver. Keep
	// it at least the consumer's concurrent writes (sink_concurrency, else
	// max_in_flight): a POST that finds no idle connection dials one, and
	// a connection returned to a full pool is closed, so a smaller pool
	// dials and closes a connection per POST under load. Connections idle
	// for 90s are closed. Default 1024.
	MaxIdleConns int `yaml:"max_idle_conns"`
}

// DefaultConfig returns the defaults documented on Config: an SQLite sink.
func NewDefaultConfig() Config {
	return Config{
		Kind: KindSQLite,
		SQLite: SQLiteConfig{
			Path:        "sluice-events.db",
			Table:       "events",
			BusyTimeout: 5 * time.Second,
			Synchronous: "full",
		},
		Postgres: PostgresConfig{
			Table:          "events",
			MaxConns:       4,
			ConnectTimeout: 5 * time.Second,
			WriteTimeout:   30 * time.Second,
		},
		HTTP: HTTPConfig{
			RequestTimeout: 10 * time.Second,
			MaxRetryAfter:  10 * time.Minute,
			MaxIdleConns:   1024,
		},
	}
}

func bad(field, format string, args ...any) error {
	return fmt.Errorf("sink: %s: "+format, append([]any{field}, args...)...)
}

// Validate reports the first invalid field as "sink: <field>: <why>", the
// field named by its YAML path.
func (c Config) Validate() error {
	switch c.Kind {
	case KindSQLite:
		return c.SQLite.validate()
	case KindPostgres:
		return c.Postgres.validate()
	case KindHTTP:
		return c.HTTP.validate()
	}
	return bad("kind", "must be %q, %q or %q, got %q", KindSQLite, KindPostgres, KindHTTP, c.Kind)
}

func (c SQLiteConfig) validate() error {
	switch {
	case c.Path == "":
		return bad("sqlite.path", "must not be empty")
	case strings.ContainsAny(c.Path, "?\x00"):
		// The driver reads what follows '?' as connection parameters.
		return bad("sqlite.path", "must not contain '?' or NUL, got %q", c.Path)
	case c.Path == ":memory:" || strings.HasPrefix(c.Path, "file:"):
		return bad("sqlite.path", "must be a file path (an in-memory database is not durable), got %q", c.Path)
	case !validIdentifier(c.Table):
		return bad("sqlite.table", "must be a lowercase identifier ([a-z_][a-z0-9_]*, at most %d bytes), got %q", maxTableNameLen, c.Table)
	case c.BusyTimeout < 0:
		return bad("sqlite.busy_timeout", "must be >= 0, got %v", c.BusyTimeout)
	case c.Synchronous != "full" && c.Synchronous != "normal":
		return bad("sqlite.synchronous", `must be "full" or "normal", got %q`, c.Synchronous)
	}
	return nil
}

func (c PostgresConfig) validate() error {
	switch {
	case c.DSN == "":
		return bad("postgres.dsn", "must not be empty")
	case !validIdentifier(c.Table):
		return bad("postgres.table", "must be a lowercase identifier ([a-z_][a-z0-9_]*, at most %d bytes), got %q", maxTableNameLen, c.Table)
	case c.MaxConns <= 0:
		return bad("postgres.max_conns", "must be > 0, got %d", c.MaxConns)
	case c.ConnectTimeout <= 0:
		return bad("postgres.connect_timeout", "must be > 0, got %v", c.ConnectTimeout)
	case c.WriteTimeout <= 0:
		return bad("postgres.write_timeout", "must be > 0, got %v", c.WriteTimeout)
	}
	if _, err := parsePostgresConfig(c); err != nil {
		// The DSN may hold a password: name the field, not the value.
		return bad("postgres.dsn", "cannot be parsed: %v", redactDSNError(err))
	}
	return nil
}

func (c HTTPConfig) validate() error {
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		return bad("http.url", "must not be empty")
	case err != nil:
		return bad("http.url", "%v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("http.url", "must be an http or https URL, got scheme %q", u.Scheme)
	case u.Host == "":
		return bad("http.url", "must name a host")
	case c.RequestTimeout <= 0:
		return bad("http.request_timeout", "must be > 0, got %v", c.RequestTimeout)
	case c.MaxRetryAfter < 0:
		return bad("http.max_retry_after", "must be >= 0, got %v", c.MaxRetryAfter)
	case c.MaxIdleConns <= 0:
		return bad("http.max_idle_conns", "must be > 0, got %d", c.MaxIdleConns)
	}
	for name, value := range c.Headers {
		if err := checkHeader(name); err != nil {
			return bad("http.headers["+name+"]", "%v", err)
		}
		if !validHeaderValue(value) {
			return bad("http.headers["+name+"]", "value must not hold control characters")
		}
	}
	for name, env := range c.HeadersFromEnv {
		if err := checkHeader(name); err != nil {
			return bad("http.headers_from_env["+name+"]", "%v", err)
		}
		if env == "" || strings.ContainsAny(env, "=\x00") {
			return bad("http.headers_from_env["+name+"]", "must name an environment variable, got %q", env)
		}
		if _, dup := c.Headers[name]; dup {
			return bad("http.headers_from_env["+name+"]", "is also set in http.headers")
		}
	}
	return nil
}

// reservedHeaders are set by the sink itself.
var reservedHeaders = [...]string{HeaderIdempotencyKey, HeaderPayloadFingerprint, "Content-Type", "Content-Length", "Host", "Transfer-Encoding", "Connection"}

func checkHeader(name string) error {
	if !validHeaderName(name) {
		return fmt.Errorf("not a valid header name")
	}
	canon := http.CanonicalHeaderKey(name)
	for _, r := range reservedHeaders {
		if canon == r {
			return fmt.Errorf("is set by the sink and cannot be configured")
		}
	}
	return nil
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// Open validates cfg and opens the sink it selects.
func Open(ctx context.Context, cfg Config, opts ...Option) (Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Each case returns the interface only on success, so that a failed
	// Open never yields a non-nil Sink holding a nil pointer.
	switch cfg.Kind {
	case KindSQLite:
		s, err := OpenSQLite(ctx, cfg.SQLite, opts...)
		if err != nil {
			return nil, err
		}
		return s, nil
	case KindPostgres:
		s, err := OpenPostgres(ctx, cfg.Postgres, opts...)
		if err != nil {
			return nil, err
		}
		return s, nil
	default:
		s, err := OpenHTTP(cfg.HTTP, opts...)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}
