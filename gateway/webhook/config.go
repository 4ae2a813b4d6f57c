package webhook

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"
)

// Schemes: how a source signs its deliveries.
const (
	SchemeStandard = "standard" // Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature
	SchemeStripe   = "stripe"   // Stripe-Signature: t=…,v1=…
	SchemeGitHub   = "github"   // X-Hub-Signature-256: sha256=…
	SchemeShopify  = "shopify"  // X-Shopify-Hmac-Sha256: base64
	SchemeHMAC     = "hmac"     // a header of the source's choosing; see HMACConfig
)

// Algorithms and encodings of the hmac scheme.
const (
	AlgorithmSHA256 = "sha256"
	AlgorithmSHA512 = "sha512"
	EncodingHex     = "hex"
	EncodingBase64  = "base64"
)

// Bounds. A delivery past one is refused malformed_header before any MAC
// is computed; a config past MaxSecrets is refused by Validate.
const (
	// MaxSignatures bounds the entries of a signature header that carries
	// a list (Standard Webhooks' space-separated list, Stripe's pairs
	// other than t=): rotation needs two or three, so sixteen is plenty,
	// and an attacker's header of thousands costs a bounded parse and no
	// MAC at all.
	MaxSignatures = 16
	// MaxHeaderBytes bounds each header a scheme reads.
	MaxHeaderBytes = 4096
	// MaxSecrets bounds a source's secrets (secret_files and secret_env
	// together). Each costs one MAC over the body of every delivery, signed
	// or not, before the sender is known.
	MaxSecrets = 4
	// MaxTolerance bounds the replay window: past a day a timestamp no
	// longer keeps a replay out.
	MaxTolerance = 24 * time.Hour
)

// Config is a source's webhook verification: the webhook block of a
// source, less what the gateway reads itself (the body's bounds, the
// mapping).
type Config struct {
	// Scheme is one of standard, stripe, github, shopify and hmac.
	Scheme string `yaml:"scheme"`
	// SecretFiles each hold one secret, read again when the file changes.
	// Several secrets (files and variables together, at most MaxSecrets)
	// are all accepted, for rotation.
	SecretFiles []string `yaml:"secret_files"`
	// SecretEnv names environment variables that each hold one secret,
	// read at start.
	SecretEnv []string `yaml:"secret_env"`
	// Tolerance is the replay window of a scheme with a timestamp
	// (standard, stripe, hmac with timestamp_header): a delivery signed
	// further in the past or the future is refused.
	Tolerance time.Duration `yaml:"tolerance"`
	// HMAC configures the hmac scheme, and only it.
	HMAC HMACConfig `yaml:"hmac"`
}

// HMACConfig is the hmac scheme: one signature in Header, an HMAC of the
// body, or of "<timestamp><separator><body>" when TimestampHeader is set.
type HMACConfig struct {
	// Header carries the signature.
	Header string `yaml:"header"`
	// Prefix comes before the signature in Header ("sha256="), matched
	// exactly; empty for none.
	Prefix string `yaml:"prefix"`
	// Algorithm is sha256 or sha512.
	Algorithm string `yaml:"algorithm"`
	// Encoding is hex (either case) or base64 (standard alphabet, padded).
	Encoding string `yaml:"encoding"`
	// TimestampHeader, when set, carries the time of signing: Unix seconds
	// (decimal digits) or RFC 3339. Its value as sent is signed before the
	// body, and Tolerance applies to it.
	TimestampHeader string `yaml:"timestamp_header"`
	// SignedSeparator stands between the timestamp and the body in what
	// is signed; it may be empty.
	SignedSeparator string `yaml:"signed_separator"`
}

// NewDefaultConfig returns the defaults: no scheme (one must be chosen),
// no secret, a tolerance of five minutes, and for hmac sha256 in hex with
// "." between a timestamp and the body.
func NewDefaultConfig() Config {
	return Config{
		Tolerance: 5 * time.Minute,
		HMAC: HMACConfig{
			Algorithm:       AlgorithmSHA256,
			Encoding:        EncodingHex,
			SignedSeparator: ".",
		},
	}
}

// Validate reports the first wrong field by its name in the webhook block
// ("scheme", "secret_files[1]", "hmac.header"). It reads the secrets as a
// start would (os.Getenv for secret_env), and its errors never hold one.
func (c Config) Validate() error {
	if err := c.validateFields(); err != nil {
		return err
	}
	_, err := c.loadSecrets(slog.New(slog.DiscardHandler), time.Now, os.Getenv)
	return err
}

// validateFields checks what can be checked without reading a secret.
func (c Config) validateFields() error {
	switch c.Scheme {
	case SchemeStandard, SchemeStripe, SchemeGitHub, SchemeShopify, SchemeHMAC:
	case "":
		return fieldErr("scheme", "must be set: standard, stripe, github, shopify or hmac")
	default:
		return fieldErr("scheme", fmt.Sprintf("%q is not one of standard, stripe, github, shopify, hmac", c.Scheme))
	}
	n := len(c.SecretFiles) + len(c.SecretEnv)
	switch {
	case n == 0:
		return fieldErr("secret_files", "a webhook source needs a secret: list a file in secret_files or a variable in secret_env")
	case n > MaxSecrets:
		return fieldErr("secret_files", fmt.Sprintf("%d secrets in secret_files and secret_env, more than %d: each costs a MAC over every delivery", n, MaxSecrets))
	}
	seen := map[string]string{}
	for i, f := range c.SecretFiles {
		field := fmt.Sprintf("secret_files[%d]", i)
		if f == "" {
			return fieldErr(field, "must not be empty")
		}
		if other, ok := seen["file "+f]; ok {
			return fieldErr(field, fmt.Sprintf("%s is also %s", f, other))
		}
		seen["file "+f] = field
	}
	for i, e := range c.SecretEnv {
		field := fmt.Sprintf("secret_env[%d]", i)
		if e == "" || strings.ContainsAny(e, "= \t\r\n\x00") {
			return fieldErr(field, "must name an environment variable")
		}
		if other, ok := seen["env "+e]; ok {
			return fieldErr(field, fmt.Sprintf("%s is also %s", e, other))
		}
		seen["env "+e] = field
	}
	if c.Tolerance <= 0 || c.Tolerance > MaxTolerance {
		return fieldErr("tolerance", fmt.Sprintf("must be in (0, %v]", MaxTolerance))
	}
	return c.HMAC.validate(c.Scheme == SchemeHMAC)
}

func (h HMACConfig) validate(used bool) error {
	if !used {
		for _, f := range []struct{ field, value string }{{"hmac.header", h.Header}, {"hmac.prefix", h.Prefix}, {"hmac.timestamp_header", h.TimestampHeader}} {
			if f.value != "" {
				return fieldErr(f.field, "is for scheme hmac only")
			}
		}
		return nil
	}
	switch {
	case h.Header == "":
		return fieldErr("hmac.header", "must name the header that carries the signature")
	case !isToken(h.Header):
		return fieldErr("hmac.header", fmt.Sprintf("%q is not a header name", h.Header))
	case len(h.Prefix) > 64 || !isPrintable(h.Prefix):
		return fieldErr("hmac.prefix", "must be at most 64 bytes of printable ASCII")
	case h.Algorithm != AlgorithmSHA256 && h.Algorithm != AlgorithmSHA512:
		return fieldErr("hmac.algorithm", fmt.Sprintf("%q is not sha256 or sha512", h.Algorithm))
	case h.Encoding != EncodingHex && h.Encoding != EncodingBase64:
		return fieldErr("hmac.encoding", fmt.Sprintf("%q is not hex or base64", h.Encoding))
	case h.TimestampHeader != "" && !isToken(h.TimestampHeader):
		return fieldErr("hmac.timestamp_header", fmt.Sprintf("%q is not a header name", h.TimestampHeader))
	case h.TimestampHeader != "" && strings.EqualFold(h.TimestampHeader, h.Header):
		return fieldErr("hmac.timestamp_header", "must not be hmac.header")
	case len(h.SignedSeparator) > 16 || !isPrintable(h.SignedSeparator):
		return fieldErr("hmac.signed_separator", "must be at most 16 bytes of printable ASCII")
	}
	return nil
}

// isToken says whether s is an HTTP field name (RFC 9110's token).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func isPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// ConfigError names a field of the webhook block and what is wrong with
// it. It never holds a secret.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return "webhook: " + e.Field + ": " + e.Reason }

func fieldErr(field, reason string) error { return &ConfigError{Field: field, Reason: reason} }
