package admin

import (
	"fmt"
	"net"
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

// Validate reports the first wrong field by its name under admin.
func (c Config) Validate() error {
	if c.Addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fieldErr("addr", err.Error())
	}
	if c.Pprof && !isLoopback(host) {
		return fieldErr("pprof", fmt.Sprintf("profiles are served on loopback only, and addr %q is not", c.Addr))
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ConfigError names a field of the admin block and what is wrong with it.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return "admin: " + e.Field + ": " + e.Reason }

func fieldErr(field, reason string) error { return &ConfigError{Field: field, Reason: reason} }
