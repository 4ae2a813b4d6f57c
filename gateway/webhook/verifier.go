package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/secret"
)

// Reason says why a delivery was refused. Every refusal is permanent for
// the delivery as sent (HTTP 401, never retryable): the same request is
// refused again.
type Reason string

// Reasons of a Refusal.
const (
	// ReasonMissingHeader: a header the scheme signs with is absent or
	// empty.
	ReasonMissingHeader Reason = "missing_header"
	// ReasonMalformedHeader: such a header is there but cannot be read:
	// not the scheme's form, sent twice, longer than MaxHeaderBytes, or
	// more than MaxSignatures entries.
	ReasonMalformedHeader Reason = "malformed_header"
	// ReasonBadSignature: no signature matches the body (and the id and
	// timestamp the scheme signs) under any configured secret.
	ReasonBadSignature Reason = "bad_signature"
	// ReasonStaleTimestamp: signed further in the past than the tolerance.
	ReasonStaleTimestamp Reason = "stale_timestamp"
	// ReasonFutureTimestamp: signed further in the future than the
	// tolerance.
	ReasonFutureTimestamp Reason = "future_timestamp"
)

// Reasons are every Reason, in a fixed order: a refusal counter's series.
func Reasons() []Reason {
	return []Reason{ReasonMissingHeader, ReasonMalformedHeader, ReasonBadSignature, ReasonStaleTimestamp, ReasonFutureTimestamp}
}

// Refusal is a delivery that did not verify.
type Refusal struct {
	Reason Reason
	// Header is the header at fault, as the scheme names it; empty for
	// bad_signature.
	Header string
	// Msg says what is wrong. It never holds a secret, nor a header's
	// value.
	Msg string
}

func (r *Refusal) Error() string { return "webhook: " + string(r.Reason) + ": " + r.Msg }

// ErrClosed is Verify's answer after Close: a fault of the caller, not of
// the delivery.
var ErrClosed = errors.New("webhook: verifier closed")

// Request is what Verify reads: the headers as net/http holds them (keys
// in canonical form), and the body as received, which the caller has read
// under its own bounds.
type Request struct {
	Header http.Header
	Body   []byte
}

// Delivery is what a verified delivery's signature covers besides its
// body.
type Delivery struct {
	// ID is the delivery id the signature covers: webhook-id for standard;
	// empty for the other schemes, whose ids (X-GitHub-Delivery,
	// X-Shopify-Webhook-Id, Stripe's event id in the body) are not signed
	// apart from the body.
	ID string
	// Timestamp is the time of signing the scheme carries (standard,
	// stripe, hmac with timestamp_header); zero when it has none.
	Timestamp time.Time
	// Secret names the configured secret that verified it, by its field
	// ("secret_files[1]", "secret_env[0]"), so that an operator sees when
	// an old secret is no longer used. Never the secret itself.
	Secret string
}

// Option configures New.
type Option interface{ apply(*options) }

type options struct {
	now    func() time.Time
	log    *slog.Logger
	getenv func(string) string
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithClock replaces time.Now: the replay window, and the once-a-second
// check of secret files.
func WithClock(now func() time.Time) Option { return optionFunc(func(o *options) { o.now = now }) }

// WithLogger replaces slog.Default() for the secret files' reload logs.
// A nil logger keeps it.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) {
		if l != nil {
			o.log = l
		}
	})
}

// WithGetenv replaces os.Getenv for secret_env.
func WithGetenv(getenv func(string) string) Option {
	return optionFunc(func(o *options) { o.getenv = getenv })
}

// Verifier verifies one source's deliveries. It is immutable but for its
// secrets, which follow their files; safe for concurrent use.
type Verifier struct {
	scheme    scheme
	tolerance time.Duration
	now       func() time.Time
	secrets   []namedSecret
	closed    atomic.Bool
}

type namedSecret struct {
	field string
	key   *secret.Loaded[[]byte]
}

// New checks cfg and reads its secrets. Its errors are ConfigErrors naming
// the field.
func New(cfg Config, opts ...Option) (*Verifier, error) {
	o := options{now: time.Now, log: slog.Default(), getenv: os.Getenv}
	for _, opt := range opts {
		opt.apply(&o)
	}
	if err := cfg.validateFields(); err != nil {
		return nil, err
	}
	secrets, err := cfg.loadSecrets(o.log, o.now, o.getenv)
	if err != nil {
		return nil, err
	}
	return &Verifier{scheme: newScheme(cfg), tolerance: cfg.Tolerance, now: o.now, secrets: secrets}, nil
}

// loadSecrets reads every secret of c, parsed as its scheme takes them.
func (c Config) loadSecrets(log *slog.Logger, now func() time.Time, getenv func(string) string) ([]namedSecret, error) {
	parse := rawSecret
	if c.Scheme == SchemeStandard {
		parse = standardSecret
	}
	opts := []secret.Option{secret.WithLogger(log), secret.WithClock(now), secret.WithGetenv(getenv)}
	var out []namedSecret
	add := func(field string, src secret.Source) error {
		k, err := secret.Load("webhook: "+field, src, parse, opts...)
		if err != nil {
			return fieldErr(field, err.Error())
		}
		out = append(out, namedSecret{field: field, key: k})
		return nil
	}
	for i, f := range c.SecretFiles {
		if err := add(fmt.Sprintf("secret_files[%d]", i), secret.Source{File: f}); err != nil {
			return nil, err
		}
	}
	for i, e := range c.SecretEnv {
		if err := add(fmt.Sprintf("secret_env[%d]", i), secret.Source{Env: e}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Scheme is the scheme the Verifier checks.
func (v *Verifier) Scheme() string { return v.scheme.name }

// SignatureHeaders are the names of the headers the scheme signs with, as
// the scheme spells them (look them up without regard to case): what a
// consumer keeps beside the body, byte for byte, to verify the delivery
// again.
func (v *Verifier) SignatureHeaders() []string { return append([]string(nil), v.scheme.headers...) }

// Close ends the Verifier's use: Verify answers ErrClosed from then on,
// and no secret file is read again. Verifications under way finish. It
// starts no goroutine to stop: secret files are checked when Verify uses
// them.
func (v *Verifier) Close() error {
	v.closed.Store(true)
	return nil
}

// Verify checks a delivery's signature: its headers are read (bounded),
// the timestamp checked against the tolerance, and one MAC per secret
// computed over what the scheme signs and compared with every signature
// the header carries, in constant time. A refusal is a *Refusal; after
// Close, ErrClosed.
func (v *Verifier) Verify(r Request) (Delivery, error) {
	if v.closed.Load() {
		return Delivery{}, ErrClosed
	}
	s, ref := v.scheme.read(r.Header)
	if ref != nil {
		return Delivery{}, ref
	}
	d := Delivery{ID: s.id}
	if s.timed {
		d.Timestamp = s.at
		if ref := v.inWindow(s); ref != nil {
			return Delivery{}, ref
		}
	}
	var sum [sha512.Size]byte
	for _, sec := range v.secrets {
		m := hmac.New(v.scheme.hash, sec.key.Current())
		m.Write(s.prefix)
		m.Write(r.Body)
		mac := m.Sum(sum[:0])
		for _, c := range s.sigs {
			if hmac.Equal(mac, c) {
				d.Secret = sec.field
				return d, nil
			}
		}
	}
	return Delivery{}, &Refusal{Reason: ReasonBadSignature,
		Msg: "no signature in " + v.scheme.sigHeader + " matches the delivery under any configured secret"}
}

// inWindow refuses a timestamp outside the tolerance around now. Times
// are compared rather than subtracted, since a difference saturates.
func (v *Verifier) inWindow(s signed) *Refusal {
	now := v.now()
	switch {
	case s.at.Before(now.Add(-v.tolerance)):
		return &Refusal{Reason: ReasonStaleTimestamp, Header: s.atHeader,
			Msg: fmt.Sprintf("%s is %v old, past the tolerance of %v", s.atHeader, now.Sub(s.at).Truncate(time.Second), v.tolerance)}
	case s.at.After(now.Add(v.tolerance)):
		return &Refusal{Reason: ReasonFutureTimestamp, Header: s.atHeader,
			Msg: fmt.Sprintf("%s is %v in the future, past the tolerance of %v", s.atHeader, s.at.Sub(now).Truncate(time.Second), v.tolerance)}
	}
	return nil
}

// hashOf is the hash an hmac scheme's algorithm names.
func hashOf(algorithm string) func() hash.Hash {
	if algorithm == AlgorithmSHA512 {
		return sha512.New
	}
	return sha256.New
}
