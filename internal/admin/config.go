package admin

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/sluicehq/sluice/internal/tlsfiles"
)

// Default addresses: each process has its own, so that a gateway and a
// consumer run on one host from one config file.
const (
	DefaultGatewayAddr  = "127.0.0.1:9100"
	DefaultConsumerAddr = "127.0.0.1:9101"
)

// Config is the admin listener's block of the sluice config.
type Config struct {
	// Addr is the listen address. Empty takes the process's default
	// (DefaultGatewayAddr for sluice gateway, DefaultConsumerAddr for
	// sluice consumer).
	Addr string `yaml:"addr"`
	// Pprof serves /debug/pprof/. Profiles show the process's internals and
	// cost CPU to take, so Addr must then be a loopback address.
	Pprof bool `yaml:"pprof"`
	// TLS makes the listener speak HTTPS, its certificate files reloaded
	// when they change; a client_ca_file with client_auth require lets
	// only scrapers with a certificate in.
	TLS tlsfiles.ServerConfig `yaml:"tls"`
	// Insecure says that serving plain HTTP on an address other than
	// loopback is meant; without it, or TLS, such an address is refused.
	Insecure bool `yaml:"insecure"`
	// Auth is the token that allows calls that change state (POST
	// /admin/contracts/reload). A client certificate that TLS verifies
	// (client_ca_file with client_auth request or require) allows them
	// too; with neither, such calls are refused.
	Auth AuthConfig `yaml:"auth"`
}

// AuthConfig is the admin listener's bearer token: from a file or from an
// environment variable, one of them. The token is one line of printable
// ASCII without spaces, minTokenBytes to maxTokenBytes long.
type AuthConfig struct {
	// TokenFile holds the token; a trailing line ending is trimmed. It is
	// read at start and again when it changes (checked at most once a
	// second, on a call that changes state), so a rotated Secret needs no
	// restart.
	TokenFile string `yaml:"token_file"`
	// TokenEnv names the environment variable that holds the token, read
	// at start.
	TokenEnv string `yaml:"token_env"`
}

// NewDefaultConfig returns the defaults: the process's default address,
// no profiles.
func NewDefaultConfig() Config { return Config{} }

// WithDefaultAddr returns c with addr in place of an empty Addr.
func (c Config) WithDefaultAddr(addr string) Config {
	if c.Addr == "" {
		c.Addr = addr
	}
	return c
}

// Listener is the listener's TLS block with insecure, which the admin
// block keeps beside tls rather than in it.
func (c Config) Listener() tlsfiles.ListenerConfig {
	return tlsfiles.ListenerConfig{ServerConfig: c.TLS, Insecure: c.Insecure}
}

// Validate reports the first wrong field by its name under admin. It
// reads the token (auth.token_file or auth.token_env) as a start would.
func (c Config) Validate() error {
	if _, err := loadToken(c.Auth, slog.New(slog.DiscardHandler), time.Now); err != nil {
		return err
	}
	if c.Addr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fieldErr("addr", err.Error())
	}
	if c.Pprof && !tlsfiles.Loopback(c.Addr) {
		return fieldErr("pprof", fmt.Sprintf("profiles are served on loopback only, and addr %q is not", c.Addr))
	}
	l := c.Listener()
	if err := l.ValidateAt("tls", "insecure"); err != nil {
		var ce *tlsfiles.ConfigError
		if errors.As(err, &ce) {
			return fieldErr(ce.Field, ce.Err.Error())
		}
		return err
	}
	if !l.Insecure && l.PlaintextBeyondLoopback(c.Addr) {
		return fieldErr("addr", fmt.Sprintf("%s leaves loopback without TLS: set admin.tls.cert_file and key_file, or admin.insecure: true to serve plain HTTP there knowingly", c.Addr))
	}
	return nil
}

// ConfigError names a field of the admin block and what is wrong with it.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return "admin: " + e.Field + ": " + e.Reason }

func fieldErr(field, reason string) error { return &ConfigError{Field: field, Reason: reason} }
