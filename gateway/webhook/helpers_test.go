package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	stripewebhook "github.com/stripe/stripe-go/v82/webhook"

	"github.com/sluicehq/sluice/gateway/webhook"
)

// Secrets of the tests. Each test checks that none of them shows in an
// error or a log.
const (
	// standardSecret is Standard Webhooks' own test secret (its libraries'
	// TestWebhookSign vector).
	standardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	// standardNext is the secret a Standard Webhooks source rotates to.
	standardNext  = "whsec_c2x1aWNlLW5leHQtc2VjcmV0LWZvci10ZXN0cy0wMQ=="
	stripeSecret  = "whsec_test_5f1b2c3d4e5f60718293a4b5c6d7e8f9"
	stripeNext    = "whsec_test_next_0a1b2c3d4e5f60718293a4b5c6d7"
	githubSecret  = "It's a Secret to Everybody"
	shopifySecret = "hush"
	hmacSecret    = "generic-secret-0123456789"
	wrongSecret   = "whsec_d3Jvbmctc2VjcmV0LW9mLWFub3RoZXItc291cmNl"
)

var allSecrets = []string{standardSecret, standardNext, stripeSecret, stripeNext, githubSecret, shopifySecret, hmacSecret, wrongSecret,
	// and their decoded forms
	"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "sluice-next-secret-for-tests-01", "wrong-secret-of-another-source"}

// testNow is the clock of the tests: the time of Standard Webhooks' test
// vector.
var testNow = time.Unix(1614265330, 0)

func at(t time.Time) func() time.Time { return func() time.Time { return t } }

// secretFile writes content to a file of its own and returns its path.
func secretFile(t testing.TB, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// verifier is a Verifier of scheme over one secret file per secret, at
// testNow.
func verifier(t testing.TB, scheme string, secrets ...string) *webhook.Verifier {
	t.Helper()
	cfg := webhook.NewDefaultConfig()
	cfg.Scheme = scheme
	for _, s := range secrets {
		cfg.SecretFiles = append(cfg.SecretFiles, secretFile(t, s))
	}
	return verifierOf(t, cfg)
}

func verifierOf(t testing.TB, cfg webhook.Config, opts ...webhook.Option) *webhook.Verifier {
	t.Helper()
	v, err := webhook.New(cfg, append([]webhook.Option{webhook.WithClock(at(testNow)), webhook.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	return v
}

// refusalOf is err's Refusal; it fails the test when err is another kind.
func refusalOf(t testing.TB, err error) *webhook.Refusal {
	t.Helper()
	var r *webhook.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("%v (%T), want a *webhook.Refusal", err, err)
	}
	for _, s := range allSecrets {
		if containsFold(err.Error(), s) {
			t.Fatalf("the refusal holds a secret: %v", err)
		}
	}
	return r
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if equalFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// A sender signs a delivery as a provider does: by its own library where
// it has a Go one (Standard Webhooks, stripe-go); by the provider's
// documented recipe with crypto/hmac otherwise (GitHub, Shopify, and the
// hmac scheme's senders), anchored by the documented vectors in
// TestProviderVectors and by octokit's signer in TestOctokitSigns.
type sender func(t testing.TB, body []byte, secret string, at time.Time) http.Header

func standardSender(id string) sender {
	return func(t testing.TB, body []byte, secret string, at time.Time) http.Header {
		t.Helper()
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := wh.Sign(id, at, body)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set(standardwebhooks.HeaderWebhookID, id)
		h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
		h.Set(standardwebhooks.HeaderWebhookSignature, sig)
		return h
	}
}

func stripeSender(t testing.TB, body []byte, secret string, at time.Time) http.Header {
	p := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at})
	h := http.Header{}
	h.Set("Stripe-Signature", p.Header)
	return h
}

func githubSender(t testing.TB, body []byte, secret string, _ time.Time) http.Header {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	h := http.Header{}
	h.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
	h.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	return h
}

func shopifySender(t testing.TB, body []byte, secret string, _ time.Time) http.Header {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	h := http.Header{}
	h.Set("X-Shopify-Hmac-Sha256", base64.StdEncoding.EncodeToString(m.Sum(nil)))
	return h
}

// hmacSender signs as the hmac scheme of hmacConfig: X-Signature:
// sha256=<hex> over "<unix>.<body>" with the time in X-Timestamp.
func hmacSender(t testing.TB, body []byte, secret string, at time.Time) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%s.", ts)
	m.Write(body)
	h := http.Header{}
	h.Set("X-Signature", "sha256="+hex.EncodeToString(m.Sum(nil)))
	h.Set("X-Timestamp", ts)
	return h
}

func hmacConfig() webhook.Config {
	cfg := webhook.NewDefaultConfig()
	cfg.Scheme = webhook.SchemeHMAC
	cfg.HMAC.Header = "X-Signature"
	cfg.HMAC.Prefix = "sha256="
	cfg.HMAC.TimestampHeader = "X-Timestamp"
	return cfg
}
