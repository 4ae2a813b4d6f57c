package webhook_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	stripewebhook "github.com/stripe/stripe-go/v82/webhook"

	"github.com/sluicehq/sluice/gateway/webhook"
	"github.com/sluicehq/sluice/internal/logtest"
)

// TestProviderVectors: the vectors the providers publish verify, and do
// not verify with one byte of the body changed.
func TestProviderVectors(t *testing.T) {
	for _, c := range []struct {
		name   string
		scheme string
		now    time.Time // testNow when zero
		cfg    func(*webhook.Config)
		secret string
		header map[string]string
		body   string
		want   webhook.Delivery
	}{
		{
			// Standard Webhooks' libraries' TestWebhookSign (the Go, C#
			// and Java ones carry the same vector).
			name: "standard webhooks", scheme: webhook.SchemeStandard, secret: standardSecret,
			header: map[string]string{"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
				"webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
			body: `{"test": 2432232314}`,
			want: webhook.Delivery{ID: "msg_p5jXN8AQM9LWM0D4loKWxJek", Timestamp: time.Unix(1614265330, 0), Secret: "secret_files[0]"},
		},
		{
			// Standard Webhooks' secret without its whsec_ prefix, as its
			// libraries take it too.
			name: "standard webhooks, bare base64 secret", scheme: webhook.SchemeStandard, secret: strings.TrimPrefix(standardSecret, "whsec_"),
			header: map[string]string{"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
				"webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
			body: `{"test": 2432232314}`,
			want: webhook.Delivery{ID: "msg_p5jXN8AQM9LWM0D4loKWxJek", Timestamp: time.Unix(1614265330, 0), Secret: "secret_files[0]"},
		},
		{
			// GitHub's "Validating webhook deliveries" example.
			name: "github", scheme: webhook.SchemeGitHub, secret: githubSecret,
			header: map[string]string{"X-Hub-Signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"},
			body:   "Hello, World!",
			want:   webhook.Delivery{Secret: "secret_files[0]"},
		},
		{
			// Shopify documents the recipe (base64 of the HMAC-SHA256 of
			// the raw body under the app's secret) but publishes no fixed
			// vector; this one is openssl's, with the secret of Shopify's
			// own Python example:
			//   printf '%s' '{"id":820982911946154508,"email":"jon@doe.ca","topic":"orders/create"}' |
			//     openssl dgst -sha256 -hmac hush -binary | base64
			name: "shopify", scheme: webhook.SchemeShopify, secret: shopifySecret,
			header: map[string]string{"X-Shopify-Hmac-Sha256": "OfHPdyGVRpofzkzfvW7SxDxY5wwv73uWEW0Wt91citA="},
			body:   `{"id":820982911946154508,"email":"jon@doe.ca","topic":"orders/create"}`,
			want:   webhook.Delivery{Secret: "secret_files[0]"},
		},
		{
			// openssl, as a generic sender would sign:
			//   printf '%s' '1700000000.{"event":"order.paid","id":"ord_1"}' |
			//     openssl dgst -sha512 -hmac generic-secret-0123456789 -binary | base64 -w0
			name: "hmac sha512 base64 with a Unix timestamp", scheme: webhook.SchemeHMAC, secret: hmacSecret,
			cfg: func(c *webhook.Config) {
				c.HMAC = webhook.HMACConfig{Header: "X-Signature", Prefix: "v1=", Algorithm: "sha512", Encoding: "base64", TimestampHeader: "X-Timestamp", SignedSeparator: "."}
			},
			now:    time.Unix(1700000000, 0).Add(time.Minute),
			header: map[string]string{"X-Signature": "v1=pPEgNhBhoxYj7hECO/AbhSFuYFPKL2lfp4QcaXbHhKM6z09hlv+ynE+NHyEwRrF0Smh0IxMG9kTIo1bp99I++w==", "X-Timestamp": "1700000000"},
			body:   `{"event":"order.paid","id":"ord_1"}`,
			want:   webhook.Delivery{Timestamp: time.Unix(1700000000, 0), Secret: "secret_files[0]"},
		},
		{
			//   printf '%s' '2023-11-14T22:13:20Z:{"event":"order.paid","id":"ord_1"}' |
			//     openssl dgst -sha256 -hmac generic-secret-0123456789
			name: "hmac sha256 hex with an RFC 3339 timestamp", scheme: webhook.SchemeHMAC, secret: hmacSecret,
			cfg: func(c *webhook.Config) {
				c.HMAC = webhook.HMACConfig{Header: "X-Signature", Algorithm: "sha256", Encoding: "hex", TimestampHeader: "X-Signed-At", SignedSeparator: ":"}
			},
			now:    time.Unix(1700000000, 0).Add(-time.Minute),
			header: map[string]string{"X-Signature": "beeb40b3f86fd9b0f398e6c12415fcceed3d3d9cbf4eab8fd2a0f57a016b2782", "X-Signed-At": "2023-11-14T22:13:20Z"},
			body:   `{"event":"order.paid","id":"ord_1"}`,
			want:   webhook.Delivery{Timestamp: time.Unix(1700000000, 0), Secret: "secret_files[0]"},
		},
		{
			//   printf '%s' '{"event":"order.paid","id":"ord_1"}' | openssl dgst -sha256 -hmac generic-secret-0123456789
			name: "hmac sha256 hex over the body, upper-case hex", scheme: webhook.SchemeHMAC, secret: hmacSecret,
			cfg: func(c *webhook.Config) {
				c.HMAC = webhook.HMACConfig{Header: "X-Signature", Algorithm: "sha256", Encoding: "hex", SignedSeparator: "."}
			},
			header: map[string]string{"X-Signature": strings.ToUpper("887b873cf17cc743c2d1081d64ac3cbfc5ac0883ecbb03090b43f56dd2885af7")},
			body:   `{"event":"order.paid","id":"ord_1"}`,
			want:   webhook.Delivery{Secret: "secret_files[0]"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := webhook.NewDefaultConfig()
			cfg.Scheme = c.scheme
			cfg.SecretFiles = []string{secretFile(t, c.secret)}
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			now := testNow
			if !c.now.IsZero() {
				now = c.now
			}
			v := verifierOf(t, cfg, webhook.WithClock(at(now)))
			h := http.Header{}
			for k, val := range c.header {
				h.Set(k, val)
			}
			d, err := v.Verify(webhook.Request{Header: h, Body: []byte(c.body)})
			if err != nil {
				t.Fatal(err)
			}
			if !d.Timestamp.Equal(c.want.Timestamp) || d.ID != c.want.ID || d.Secret != c.want.Secret {
				t.Fatalf("%+v, want %+v", d, c.want)
			}
			changed := []byte(c.body)
			changed[len(changed)-1] ^= 1
			_, err = v.Verify(webhook.Request{Header: h, Body: changed})
			if r := refusalOf(t, err); r.Reason != webhook.ReasonBadSignature {
				t.Fatalf("one byte changed: %v", err)
			}
		})
	}
}

// TestStandardWebhooksLibrary: deliveries the Standard Webhooks Go library
// signs verify, across rotation, and its own test table's cases are
// answered as it answers them.
func TestStandardWebhooksLibrary(t *testing.T) {
	body := []byte(`{"type":"contact.created","timestamp":"2022-11-03T20:26:10.344522Z","data":{"id":"1f81eb52"}}`)
	sign := standardSender("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W")
	signed := sign(t, body, standardSecret, testNow)
	next := sign(t, body, standardNext, testNow).Get("webhook-signature")
	with := func(sig string) http.Header {
		h := signed.Clone()
		h.Set("webhook-signature", sig)
		return h
	}
	valid := signed.Get("webhook-signature")
	other := "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
	for _, c := range []struct {
		name    string
		secrets []string
		header  http.Header
		at      time.Time
		want    webhook.Reason // "" when it verifies
		secret  string
	}{
		{"signed by the library", []string{standardSecret}, signed, testNow, "", "secret_files[0]"},
		{"the second secret verifies", []string{standardNext, standardSecret}, signed, testNow, "", "secret_files[1]"},
		{"both signatures, the new secret only", []string{standardNext}, with(valid + " " + next), testNow, "", "secret_files[0]"},
		{"both signatures, the old secret only", []string{standardSecret}, with(next + " " + valid), testNow, "", "secret_files[0]"},
		{"a wrong secret", []string{wrongSecret}, signed, testNow, webhook.ReasonBadSignature, ""},
		// The library's TestWebhook cases:
		{"multi sig is valid", []string{standardSecret}, with(other + " v2," + strings.TrimPrefix(other, "v1,") + " " + valid + " " + other), testNow, "", "secret_files[0]"},
		{"entry without a comma, then a valid signature", []string{standardSecret}, with("v1 " + valid), testNow, "", "secret_files[0]"},
		{"malformed entries, then a valid signature", []string{standardSecret}, with(",,, v1,not,base64  " + valid), testNow, "", "secret_files[0]"},
		{"invalid signature", []string{standardSecret}, with(other), testNow, webhook.ReasonBadSignature, ""},
		{"the valid signature spelt otherwise", []string{standardSecret}, with(noncanonical(valid)), testNow, webhook.ReasonMalformedHeader, ""},
		{"partial signature", []string{standardSecret}, with("v1,"), testNow, webhook.ReasonMalformedHeader, ""},
		{"the valid signature under another version", []string{standardSecret}, with(strings.Replace(valid, "v1,", "v2,", 1)), testNow, webhook.ReasonMalformedHeader, ""},
		{"the valid signature with trailing data", []string{standardSecret}, with(valid + ",extra"), testNow, webhook.ReasonMalformedHeader, ""},
		{"old timestamp", []string{standardSecret}, signed, testNow.Add(5*time.Minute + time.Second), webhook.ReasonStaleTimestamp, ""},
		{"new timestamp", []string{standardSecret}, signed, testNow.Add(-5*time.Minute - time.Second), webhook.ReasonFutureTimestamp, ""},
		{"at the edge of the window, past", []string{standardSecret}, signed, testNow.Add(5 * time.Minute), "", "secret_files[0]"},
		{"at the edge of the window, ahead", []string{standardSecret}, signed, testNow.Add(-5 * time.Minute), "", "secret_files[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := webhook.NewDefaultConfig()
			cfg.Scheme = webhook.SchemeStandard
			for _, s := range c.secrets {
				cfg.SecretFiles = append(cfg.SecretFiles, secretFile(t, s))
			}
			v := verifierOf(t, cfg, webhook.WithClock(at(c.at)))
			d, err := v.Verify(webhook.Request{Header: c.header, Body: body})
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if d.ID != "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W" || !d.Timestamp.Equal(testNow) || d.Secret != c.secret {
					t.Fatalf("%+v", d)
				}
				return
			}
			if r := refusalOf(t, err); r.Reason != c.want {
				t.Fatalf("%v, want %s", err, c.want)
			}
		})
	}

	// A secret from the environment, signed by the library as the header
	// it builds.
	cfg := webhook.NewDefaultConfig()
	cfg.Scheme = webhook.SchemeStandard
	cfg.SecretEnv = []string{"STANDARD_WHSEC"}
	v := verifierOf(t, cfg, webhook.WithGetenv(func(k string) string {
		if k == "STANDARD_WHSEC" {
			return standardSecret
		}
		return ""
	}))
	if d, err := v.Verify(webhook.Request{Header: signed, Body: body}); err != nil || d.Secret != "secret_env[0]" {
		t.Fatalf("%+v %v", d, err)
	}
}

// TestStripeGo: deliveries stripe-go's GenerateTestSignedPayload signs
// verify with the whsec_ secret as its text; what it does not sign does
// not.
func TestStripeGo(t *testing.T) {
	body := []byte(`{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event","type":"payment_intent.succeeded","created":1614265330}`)
	gen := func(secret string, at time.Time, scheme string) string {
		return stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at, Scheme: scheme}).Header
	}
	signed := gen(stripeSecret, testNow, "")
	v1 := func(h string) string { return h[strings.Index(h, "v1="):] }
	for _, c := range []struct {
		name    string
		secrets []string
		header  string
		body    []byte
		want    webhook.Reason
		secret  string
	}{
		{"signed by stripe-go", []string{stripeSecret}, signed, body, "", "secret_files[0]"},
		{"with a v0 signature beside", []string{stripeSecret}, signed + ",v0=" + strings.Repeat("ab", 32), body, "", "secret_files[0]"},
		{"rolled secret: both v1, the old secret", []string{stripeSecret}, gen(stripeNext, testNow, "") + "," + v1(signed), body, "", "secret_files[0]"},
		{"rolled secret: both v1, the new secret", []string{stripeNext}, signed + "," + v1(gen(stripeNext, testNow, "")), body, "", "secret_files[0]"},
		{"the second secret verifies", []string{stripeNext, stripeSecret}, signed, body, "", "secret_files[1]"},
		{"an unknown key passed over", []string{stripeSecret}, "x=y," + signed, body, "", "secret_files[0]"},
		{"a wrong secret", []string{stripeNext}, signed, body, webhook.ReasonBadSignature, ""},
		{"another body", []string{stripeSecret}, signed, []byte(`{"id":"evt_2"}`), webhook.ReasonBadSignature, ""},
		{"an empty body", []string{stripeSecret}, signed, nil, webhook.ReasonBadSignature, ""},
		{"an empty body, signed", []string{stripeSecret}, stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: []byte{}, Secret: stripeSecret, Timestamp: testNow}).Header, nil, "", "secret_files[0]"},
		{"another t", []string{stripeSecret}, strings.Replace(signed, "t="+strconv.FormatInt(testNow.Unix(), 10), "t="+strconv.FormatInt(testNow.Unix()-1, 10), 1), body, webhook.ReasonBadSignature, ""},
		{"signed as v0 only", []string{stripeSecret}, gen(stripeSecret, testNow, "v0"), body, webhook.ReasonMalformedHeader, ""},
		{"stale", []string{stripeSecret}, gen(stripeSecret, testNow.Add(-6*time.Minute), ""), body, webhook.ReasonStaleTimestamp, ""},
		{"future", []string{stripeSecret}, gen(stripeSecret, testNow.Add(6*time.Minute), ""), body, webhook.ReasonFutureTimestamp, ""},
		{"t twice", []string{stripeSecret}, "t=1," + signed, body, webhook.ReasonMalformedHeader, ""},
		{"no t", []string{stripeSecret}, v1(signed), body, webhook.ReasonMalformedHeader, ""},
		{"a signed t", []string{stripeSecret}, strings.Replace(signed, "t=", "t=+", 1), body, webhook.ReasonMalformedHeader, ""},
		{"a pair without =", []string{stripeSecret}, signed + ",v1", body, webhook.ReasonMalformedHeader, ""},
		{"a pair with two =", []string{stripeSecret}, signed + ",v1=a=b", body, webhook.ReasonMalformedHeader, ""},
		{"a trailing comma", []string{stripeSecret}, signed + ",", body, webhook.ReasonMalformedHeader, ""},
		{"spaces around the pairs", []string{stripeSecret}, strings.ReplaceAll(signed, ",", ", "), body, webhook.ReasonMalformedHeader, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := verifier(t, webhook.SchemeStripe, c.secrets...)
			h := http.Header{}
			h.Set("Stripe-Signature", c.header)
			d, err := v.Verify(webhook.Request{Header: h, Body: c.body})
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !d.Timestamp.Equal(testNow) || d.ID != "" || d.Secret != c.secret {
					t.Fatalf("%+v", d)
				}
				// stripe-go's own check agrees.
				if err := stripewebhook.ValidatePayloadIgnoringTolerance(c.body, c.header, stripeSecretOf(c.secrets, d.Secret)); err != nil {
					t.Fatalf("stripe-go refuses what verified: %v", err)
				}
				return
			}
			if r := refusalOf(t, err); r.Reason != c.want {
				t.Fatalf("%v, want %s", err, c.want)
			}
		})
	}
}

func stripeSecretOf(secrets []string, field string) string {
	i, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(field, "secret_files["), "]"))
	return secrets[i]
}

// scheme is one scheme of the hostile table: its config, and a sender.
type schemeCase struct {
	name   string
	cfg    func(t testing.TB, secret string) webhook.Config
	secret string
	sign   sender
	// ts is the header with the time of signing; "" when it has none.
	ts   string
	list bool // its signature header carries a list
}

func schemeCases() []schemeCase {
	simple := func(scheme string) func(t testing.TB, secret string) webhook.Config {
		return func(t testing.TB, secret string) webhook.Config {
			c := webhook.NewDefaultConfig()
			c.Scheme = scheme
			c.SecretFiles = []string{secretFile(t, secret)}
			return c
		}
	}
	return []schemeCase{
		{name: "standard", cfg: simple(webhook.SchemeStandard), secret: standardSecret, sign: standardSender("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"), ts: "webhook-timestamp", list: true},
		{name: "stripe", cfg: simple(webhook.SchemeStripe), secret: stripeSecret, sign: stripeSender, ts: "Stripe-Signature", list: true},
		{name: "github", cfg: simple(webhook.SchemeGitHub), secret: githubSecret, sign: githubSender},
		{name: "shopify", cfg: simple(webhook.SchemeShopify), secret: shopifySecret, sign: shopifySender},
		{name: "hmac", cfg: func(t testing.TB, secret string) webhook.Config {
			c := hmacConfig()
			c.SecretFiles = []string{secretFile(t, secret)}
			return c
		}, secret: hmacSecret, sign: hmacSender, ts: "X-Timestamp"},
	}
}

// TestHostileDeliveries: every hostile delivery, for every scheme, is a
// typed refusal naming the header at fault, and holds no secret.
func TestHostileDeliveries(t *testing.T) {
	body := []byte(`{"id":"evt_1","type":"order.paid","data":{"amount":1200}}`)
	for _, s := range schemeCases() {
		v := verifierOf(t, s.cfg(t, s.secret))
		good := s.sign(t, body, s.secret, testNow)
		if _, err := v.Verify(webhook.Request{Header: good, Body: body}); err != nil {
			t.Fatalf("%s: the good delivery: %v", s.name, err)
		}
		sigHeader := v.SignatureHeaders()[len(v.SignatureHeaders())-1]
		if s.name == "hmac" {
			sigHeader = "X-Signature"
		}
		type hostile struct {
			name   string
			header http.Header
			body   []byte
			want   webhook.Reason
			at     string // the header named; "" for bad_signature
		}
		var cases []hostile
		for _, name := range v.SignatureHeaders() {
			del, empty, twice, long := good.Clone(), good.Clone(), good.Clone(), good.Clone()
			del.Del(name)
			empty.Set(name, "")
			twice.Add(name, good.Get(name))
			long.Set(name, good.Get(name)+strings.Repeat("0", webhook.MaxHeaderBytes))
			cases = append(cases,
				hostile{"no " + name, del, body, webhook.ReasonMissingHeader, name},
				hostile{"empty " + name, empty, body, webhook.ReasonMissingHeader, name},
				hostile{name + " twice", twice, body, webhook.ReasonMalformedHeader, name},
				hostile{"oversize " + name, long, body, webhook.ReasonMalformedHeader, name})
		}
		garbage := good.Clone()
		garbage.Set(sigHeader, "\x00\xff not a signature \u2603")
		cases = append(cases,
			hostile{"garbage signature", garbage, body, webhook.ReasonMalformedHeader, sigHeader},
			hostile{"no headers at all", http.Header{}, body, webhook.ReasonMissingHeader, v.SignatureHeaders()[0]},
			hostile{"a wrong secret", s.sign(t, body, wrongSecret, testNow), body, webhook.ReasonBadSignature, ""},
			hostile{"the signature of another body", s.sign(t, []byte(`{"id":"evt_2"}`), s.secret, testNow), body, webhook.ReasonBadSignature, ""},
			hostile{"another body", good, append(append([]byte(nil), body...), ' '), webhook.ReasonBadSignature, ""},
			hostile{"an empty body", good, nil, webhook.ReasonBadSignature, ""},
		)
		if ts := s.ts; ts != "" {
			cases = append(cases,
				hostile{"stale", s.sign(t, body, s.secret, testNow.Add(-time.Hour)), body, webhook.ReasonStaleTimestamp, ts},
				hostile{"future", s.sign(t, body, s.secret, testNow.Add(time.Hour)), body, webhook.ReasonFutureTimestamp, ts},
				hostile{"long ago", s.sign(t, body, s.secret, time.Unix(0, 0)), body, webhook.ReasonStaleTimestamp, ts},
			)
			if s.name != "stripe" {
				far, neg := good.Clone(), good.Clone()
				far.Set(ts, "9223372036854775807")
				neg.Set(ts, "-1")
				cases = append(cases,
					hostile{"past the year 9999", far, body, webhook.ReasonMalformedHeader, ts},
					hostile{"a negative time", neg, body, webhook.ReasonMalformedHeader, ts})
			}
		}
		if s.list {
			// 10,000 signatures do not fit the header's bound; 17 do, and
			// are refused before any MAC; 16 with the good one last verify.
			h := func(n int) http.Header {
				out := good.Clone()
				out.Set(sigHeader, listOf(s.name, good.Get(sigHeader), n))
				return out
			}
			if _, err := v.Verify(webhook.Request{Header: h(webhook.MaxSignatures - 1), Body: body}); err != nil {
				t.Fatalf("%s: %d signatures, the last good: %v", s.name, webhook.MaxSignatures, err)
			}
			cases = append(cases,
				hostile{"10,000 signatures", h(10_000), body, webhook.ReasonMalformedHeader, sigHeader},
				hostile{"17 signatures", h(webhook.MaxSignatures), body, webhook.ReasonMalformedHeader, sigHeader})
		}
		for _, c := range cases {
			t.Run(s.name+"/"+c.name, func(t *testing.T) {
				d, err := v.Verify(webhook.Request{Header: c.header, Body: c.body})
				if err == nil {
					t.Fatalf("verified: %+v", d)
				}
				r := refusalOf(t, err)
				if r.Reason != c.want || r.Header != c.at {
					t.Fatalf("%v (header %q), want %s (header %q)", err, r.Header, c.want, c.at)
				}
				if d != (webhook.Delivery{}) {
					t.Fatalf("a refusal with a delivery: %+v", d)
				}
			})
		}
	}
}

// listOf is a list scheme's signature header: n well-formed signatures
// that match nothing, then good's own (after Stripe's t=, which stays
// first).
func listOf(scheme, good string, n int) string {
	var entries []string
	for i := range n {
		b := sha256.Sum256([]byte(strconv.Itoa(i)))
		if scheme == "stripe" {
			entries = append(entries, "v1="+hex.EncodeToString(b[:]))
		} else {
			entries = append(entries, "v1,"+base64.StdEncoding.EncodeToString(b[:]))
		}
	}
	if scheme == "stripe" {
		t, sig, _ := strings.Cut(good, ",")
		return strings.Join(append(append([]string{t}, entries...), sig), ",")
	}
	return strings.Join(append(entries, good), " ")
}

// TestSecretFileRotates: a secret renamed over its file verifies from the
// next check on (a second later), the one before no longer; a file that
// turns empty or goes away keeps the secret before. No secret is logged.
func TestSecretFileRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stripe-whsec")
	put := func(content string) {
		t.Helper()
		if err := os.WriteFile(path+".tmp", []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	put(stripeSecret + "\n")
	var now atomic.Int64
	now.Store(testNow.UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	logs := &logtest.Buffer{}
	cfg := webhook.NewDefaultConfig()
	cfg.Scheme = webhook.SchemeStripe
	cfg.SecretFiles = []string{path}
	v, err := webhook.New(cfg, webhook.WithClock(clock), webhook.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	body := []byte(`{"id":"evt_1"}`)
	verifies := func(secret string) bool {
		_, err := v.Verify(webhook.Request{Header: stripeSender(t, body, secret, clock()), Body: body})
		if err != nil && refusalOf(t, err).Reason != webhook.ReasonBadSignature {
			t.Fatal(err)
		}
		return err == nil
	}
	if !verifies(stripeSecret) || verifies(stripeNext) {
		t.Fatal("the first secret")
	}
	put(stripeNext + "\n")
	if !verifies(stripeSecret) {
		t.Fatal("the file was read again before a second passed")
	}
	now.Add(int64(time.Second))
	if !verifies(stripeNext) || verifies(stripeSecret) {
		t.Fatal("the rotated secret")
	}
	put("\n")
	now.Add(int64(time.Second))
	if !verifies(stripeNext) {
		t.Fatal("an empty file dropped the secret")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	now.Add(int64(time.Second))
	if !verifies(stripeNext) {
		t.Fatal("a missing file dropped the secret")
	}
	for _, want := range []string{"webhook: secret_files[0] reloaded", "webhook: secret_files[0] file reload failed", "webhook: secret_files[0] file unreadable"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, logs.String())
		}
	}
	for _, s := range allSecrets {
		if strings.Contains(logs.String(), s) {
			t.Fatalf("a secret is in the log:\n%s", logs.String())
		}
	}
}

func TestSignatureHeaders(t *testing.T) {
	hm := hmacConfig()
	hm.SecretFiles = []string{secretFile(t, hmacSecret)}
	noTS := hm
	noTS.HMAC.TimestampHeader = ""
	for _, c := range []struct {
		v    *webhook.Verifier
		want []string
	}{
		{verifier(t, webhook.SchemeStandard, standardSecret), []string{"webhook-id", "webhook-timestamp", "webhook-signature"}},
		{verifier(t, webhook.SchemeStripe, stripeSecret), []string{"Stripe-Signature"}},
		{verifier(t, webhook.SchemeGitHub, githubSecret), []string{"X-Hub-Signature-256"}},
		{verifier(t, webhook.SchemeShopify, shopifySecret), []string{"X-Shopify-Hmac-Sha256"}},
		{verifierOf(t, hm), []string{"X-Signature", "X-Timestamp"}},
		{verifierOf(t, noTS), []string{"X-Signature"}},
	} {
		got := c.v.SignatureHeaders()
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.v.Scheme(), got, c.want)
		}
		got[0] = "changed"
		if c.v.SignatureHeaders()[0] == "changed" {
			t.Errorf("%s: the caller changed the Verifier's headers", c.v.Scheme())
		}
	}
}

// TestClose: after Close, Verify answers ErrClosed, not a refusal of the
// delivery.
func TestClose(t *testing.T) {
	v := verifier(t, webhook.SchemeGitHub, githubSecret)
	body := []byte("Hello, World!")
	h := githubSender(t, body, githubSecret, testNow)
	if _, err := v.Verify(webhook.Request{Header: h, Body: body}); err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := v.Verify(webhook.Request{Header: h, Body: body})
	var r *webhook.Refusal
	if !errors.Is(err, webhook.ErrClosed) || errors.As(err, &r) {
		t.Fatalf("%v, want ErrClosed", err)
	}
}

// TestConcurrentVerify: deliveries verified at once while the secret file
// rotates between two secrets each verify, since each carries signatures
// under both, as a sender does during a rotation (run under -race in CI).
func TestConcurrentVerify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stripe-whsec")
	put := func(content string) {
		if err := os.WriteFile(path+".tmp", []byte(content), 0o600); err != nil {
			t.Error(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Error(err)
		}
	}
	put(stripeSecret)
	var now atomic.Int64
	now.Store(testNow.UnixNano())
	cfg := webhook.NewDefaultConfig()
	cfg.Scheme = webhook.SchemeStripe
	cfg.SecretFiles = []string{path}
	v := verifierOf(t, cfg, webhook.WithClock(func() time.Time { return time.Unix(0, now.Load()) }))
	body := []byte(`{"id":"evt_1"}`)
	secrets := []string{stripeSecret, stripeNext}
	h := stripeSender(t, body, secrets[0], testNow)
	next := stripeSender(t, body, secrets[1], testNow).Get("Stripe-Signature")
	h.Set("Stripe-Signature", h.Get("Stripe-Signature")+next[strings.Index(next, ","):])
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if _, err := v.Verify(webhook.Request{Header: h, Body: body}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 50 {
		put(secrets[(i+1)%2])
		now.Add(int64(time.Second))
	}
	close(done)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
