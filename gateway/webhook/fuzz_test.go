package webhook_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	stripewebhook "github.com/stripe/stripe-go/v82/webhook"

	"github.com/sluicehq/sluice/gateway/webhook"
)

// fuzzBody is the body the fuzz targets' seeds sign.
var fuzzBody = []byte(`{"id":"evt_1","type":"order.paid"}`)

// FuzzSignatureList: webhook-signature's parser never panics and keeps
// its bounds; what it reads formats back to itself; and against the
// Standard Webhooks Go library, a header within the bounds verifies with
// this package exactly when it verifies with the library.
func FuzzSignatureList(f *testing.F) {
	good := standardSender("msg_1")(f, fuzzBody, standardSecret, testNow).Get("webhook-signature")
	other := "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
	for _, s := range []string{good, other + " " + good, "v1 " + good, ",,, v1,not,base64  " + good, good + ",extra", "v1,", "v2," + good[3:],
		good + " v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg==", strings.Repeat(other+" ", 16) + good,
		strings.Replace(good, "=", "", 1), strings.ToLower(good), "  " + good + "  ", noncanonical(good), ""} {
		f.Add(s)
	}
	lib, err := standardwebhooks.NewWebhook(standardSecret)
	if err != nil {
		f.Fatal(err)
	}
	v := verifierOf(f, configOf(f, webhook.SchemeStandard, standardSecret))
	f.Fuzz(func(t *testing.T, header string) {
		sigs, err := webhook.ParseSignatureList(header)
		if err == nil {
			if len(sigs) == 0 || len(sigs) > webhook.MaxSignatures {
				t.Fatalf("%d signatures", len(sigs))
			}
			var entries []string
			for _, s := range sigs {
				if len(s) != 32 {
					t.Fatalf("a signature of %d bytes", len(s))
				}
				entries = append(entries, "v1,"+base64.StdEncoding.EncodeToString(s))
			}
			again, err := webhook.ParseSignatureList(strings.Join(entries, " "))
			if err != nil || !equalSigs(again, sigs) {
				t.Fatalf("parse(format(%x)) = %x, %v", sigs, again, err)
			}
		}
		h := standardSender("msg_1")(t, fuzzBody, standardSecret, testNow)
		h.Set("webhook-signature", header)
		_, mine := v.Verify(webhook.Request{Header: h, Body: fuzzBody})
		if mine != nil {
			refusalOf(t, mine)
		}
		theirs := lib.VerifyIgnoringTimestamp(fuzzBody, h)
		entries := 0
		for e := range strings.SplitSeq(header, " ") {
			if e != "" {
				entries++
			}
		}
		within := len(header) <= webhook.MaxHeaderBytes && entries <= webhook.MaxSignatures
		switch {
		case mine == nil && theirs != nil:
			t.Fatalf("%q verifies here, and the library refuses it: %v", header, theirs)
		case within && mine != nil && theirs == nil:
			t.Fatalf("%q verifies with the library, and is refused here: %v", header, mine)
		}
	})
}

// noncanonical is a v1 entry spelt with the unused low bits of its last
// base64 digit set: the same bytes to a lenient decoder, another text to
// the libraries that compare text.
func noncanonical(entry string) string {
	const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	i := strings.LastIndexFunc(entry, func(r rune) bool { return r != '=' })
	return entry[:i] + string(digits[strings.IndexByte(digits, entry[i])^1]) + entry[i+1:]
}

// FuzzStripeSignature: Stripe-Signature's parser never panics and keeps
// its bounds; what it reads formats back to itself; and against
// stripe-go, a header verifies here only when it does there, and one that
// verifies there verifies here unless it is one this package refuses on
// purpose (t twice, a signed t, more than MaxSignatures pairs).
func FuzzStripeSignature(f *testing.F) {
	good := stripeSender(f, fuzzBody, stripeSecret, testNow).Get("Stripe-Signature")
	t0, v1, _ := strings.Cut(good, ",")
	for _, s := range []string{good, good + ",v0=" + strings.Repeat("ab", 32), v1 + "," + t0, "t=0" + t0[2:] + "," + v1, strings.ToUpper(good), t0 + ",v1=zz," + v1,
		t0 + ",t=1," + v1, t0, v1, good + ",", good + ",x", "t=+" + t0[2:] + "," + v1, t0 + strings.Repeat(",v0=1", 16) + "," + v1, ""} {
		f.Add(s)
	}
	v := verifierOf(f, configOf(f, webhook.SchemeStripe, stripeSecret))
	f.Fuzz(func(t *testing.T, header string) {
		ts, sigs, err := webhook.ParseStripeSignature(header)
		if err == nil {
			if len(sigs) == 0 || len(sigs) > webhook.MaxSignatures || ts < 0 {
				t.Fatalf("%d signatures at %d", len(sigs), ts)
			}
			pairs := []string{"t=" + strconv.FormatInt(ts, 10)}
			for _, s := range sigs {
				if len(s) != 32 {
					t.Fatalf("a signature of %d bytes", len(s))
				}
				pairs = append(pairs, "v1="+hex.EncodeToString(s))
			}
			ts2, again, err := webhook.ParseStripeSignature(strings.Join(pairs, ","))
			if err != nil || ts2 != ts || !equalSigs(again, sigs) {
				t.Fatalf("parse(format(%d, %x)) = %d, %x, %v", ts, sigs, ts2, again, err)
			}
		}
		h := http.Header{}
		h.Set("Stripe-Signature", header)
		_, mine := v.Verify(webhook.Request{Header: h, Body: fuzzBody})
		if mine != nil {
			refusalOf(t, mine)
		}
		theirs := stripewebhook.ValidatePayloadIgnoringTolerance(fuzzBody, header, stripeSecret)
		switch {
		case mine == nil && theirs != nil:
			t.Fatalf("%q verifies here, and stripe-go refuses it: %v", header, theirs)
		case mine != nil && theirs == nil && stripeRegular(header):
			t.Fatalf("%q verifies with stripe-go, and is refused here: %v", header, mine)
		}
	})
}

// stripeRegular says whether a header that stripe-go verifies is one this
// package must verify too: within the bounds, one t of digits only.
func stripeRegular(header string) bool {
	if len(header) > webhook.MaxHeaderBytes {
		return false
	}
	ts, others := 0, 0
	for p := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(p, "=")
		if k != "t" {
			others++
			continue
		}
		ts++
		if v == "" || strings.Trim(v, "0123456789") != "" {
			return false
		}
	}
	return ts == 1 && others <= webhook.MaxSignatures
}

// FuzzDecodeSignature: a single signature's reader (github, shopify,
// hmac) never panics, reads exactly the MAC's size, reads back what it
// is given as it writes it, and a value it reads is that value written
// again (hex without regard to case).
func FuzzDecodeSignature(f *testing.F) {
	f.Add("sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", "sha256=", false, false)
	f.Add("OfHPdyGVRpofzkzfvW7SxDxY5wwv73uWEW0Wt91citA=", "", true, false)
	f.Add("v1=pPEgNhBhoxYj7hECO/AbhSFuYFPKL2lfp4QcaXbHhKM6z09hlv+ynE+NHyEwRrF0Smh0IxMG9kTIo1bp99I++w==", "v1=", true, true)
	f.Add("OfHPdyGVRpofzkzfvW7SxDxY5wwv73uWEW0Wt91citB=", "", true, false)
	f.Add("OfHPdyGVRpofzkzfvW7SxDxY5wwv73uWEW0Wt91citA", "", true, false)
	f.Add("SHA256=757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17", "SHA256=", false, false)
	f.Add("sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e1", "sha256=", false, false)
	f.Fuzz(func(t *testing.T, value, prefix string, b64, sha512 bool) {
		encoding, size := webhook.EncodingHex, 32
		if b64 {
			encoding = webhook.EncodingBase64
		}
		if sha512 {
			size = 64
		}
		encode := func(b []byte) string {
			if b64 {
				return prefix + base64.StdEncoding.EncodeToString(b)
			}
			return prefix + hex.EncodeToString(b)
		}
		if sig, err := webhook.DecodeSignature(value, prefix, encoding, size); err == nil {
			if len(sig) != size {
				t.Fatalf("%d bytes, want %d", len(sig), size)
			}
			if again := encode(sig); again != value && (b64 || !strings.EqualFold(again, value)) {
				t.Fatalf("%q reads as %x, which writes as %q", value, sig, again)
			}
		} else if strings.Contains(err.Error(), value) && len(value) > 3 {
			t.Fatalf("the error quotes the value: %v", err)
		}
		want := bytes.Repeat([]byte(value+"\x00"), size)[:size]
		if got, err := webhook.DecodeSignature(encode(want), prefix, encoding, size); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("decode(encode(%x)) = %x, %v", want, got, err)
		}
	})
}

// FuzzVerify: whatever headers and body a delivery carries, every scheme
// answers a delivery or a *Refusal without panicking, and a delivery it
// verifies is one the provider's own check (its library, or its
// documented recipe) verifies too.
func FuzzVerify(f *testing.F) {
	schemes := []struct {
		name   string
		secret string
		cfg    webhook.Config
		sign   sender
	}{
		{webhook.SchemeStandard, standardSecret, configOf(f, webhook.SchemeStandard, standardSecret), standardSender("msg_1")},
		{webhook.SchemeStripe, stripeSecret, configOf(f, webhook.SchemeStripe, stripeSecret), stripeSender},
		{webhook.SchemeGitHub, githubSecret, configOf(f, webhook.SchemeGitHub, githubSecret), githubSender},
		{webhook.SchemeShopify, shopifySecret, configOf(f, webhook.SchemeShopify, shopifySecret), shopifySender},
		{webhook.SchemeHMAC, hmacSecret, func() webhook.Config {
			c := hmacConfig()
			c.SecretFiles = []string{secretFile(f, hmacSecret)}
			return c
		}(), hmacSender},
	}
	verifiers := make([]*webhook.Verifier, len(schemes))
	for i, s := range schemes {
		verifiers[i] = verifierOf(f, s.cfg)
		names := verifiers[i].SignatureHeaders()
		h := s.sign(f, fuzzBody, s.secret, testNow)
		values := make([]string, 3)
		for j, n := range names {
			values[j] = h.Get(n)
		}
		f.Add(uint8(i), values[0], values[1], values[2], fuzzBody)
		f.Add(uint8(i), values[0], values[1], values[2], []byte{})
		f.Add(uint8(i), values[0]+" ", "0"+values[1], values[2], fuzzBody)
	}
	lib, err := standardwebhooks.NewWebhook(standardSecret)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, which uint8, h0, h1, h2 string, body []byte) {
		i := int(which) % len(schemes)
		v := verifiers[i]
		h := http.Header{}
		for j, n := range v.SignatureHeaders() {
			h.Set(n, []string{h0, h1, h2}[j])
		}
		d, err := v.Verify(webhook.Request{Header: h, Body: body})
		if err != nil {
			r := refusalOf(t, err)
			switch r.Reason {
			case webhook.ReasonMissingHeader, webhook.ReasonMalformedHeader, webhook.ReasonBadSignature, webhook.ReasonStaleTimestamp, webhook.ReasonFutureTimestamp:
			default:
				t.Fatalf("an unknown reason: %v", err)
			}
			return
		}
		if d.Secret != "secret_files[0]" {
			t.Fatalf("%+v", d)
		}
		var theirs bool
		switch schemes[i].name {
		case webhook.SchemeStandard:
			theirs = lib.VerifyIgnoringTimestamp(body, h) == nil
		case webhook.SchemeStripe:
			theirs = stripewebhook.ValidatePayloadIgnoringTolerance(body, h.Get("Stripe-Signature"), stripeSecret) == nil
		case webhook.SchemeGitHub:
			theirs = strings.EqualFold(h0, "sha256="+hex.EncodeToString(mac(sha256.New, githubSecret, body)))
		case webhook.SchemeShopify:
			theirs = h0 == base64.StdEncoding.EncodeToString(mac(sha256.New, shopifySecret, body))
		case webhook.SchemeHMAC:
			theirs = strings.EqualFold(h0, "sha256="+hex.EncodeToString(mac(sha256.New, hmacSecret, []byte(h1+"."), body)))
		}
		if !theirs {
			t.Fatalf("%s verified %q %q %q over %q, which its provider's check refuses", schemes[i].name, h0, h1, h2, body)
		}
	})
}

// FuzzParseTime: the hmac scheme's timestamp reader never panics; Unix
// seconds it reads are the value's digits, and an RFC 3339 time it reads
// is the instant its own RFC 3339 form reads as.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"1700000000", "2023-11-14T22:13:20Z", "2023-11-14T22:13:20.123+01:00", "0", "-1", "+1", "253402300799", "253402300800",
		"99999999999999999999", "2023-11-14 22:13:20Z", "0000-01-01T00:00:00+01:00", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		at, ok := webhook.ParseTime(s)
		if !ok {
			return
		}
		if s != "" && strings.Trim(s, "0123456789") == "" {
			if n, err := strconv.ParseInt(s, 10, 64); err != nil || at.Unix() != n || at.Nanosecond() != 0 {
				t.Fatalf("%q reads as %v", s, at)
			}
			return
		}
		again, ok := webhook.ParseTime(at.Format(time.RFC3339Nano))
		if !ok || !again.Equal(at) {
			t.Fatalf("%q reads as %v, whose RFC 3339 form reads as %v (%v)", s, at, again, ok)
		}
	})
}

func mac(h func() hash.Hash, secret string, parts ...[]byte) []byte {
	m := hmac.New(h, []byte(secret))
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

func macBase64SHA512(secret string, parts ...[]byte) string {
	return base64.StdEncoding.EncodeToString(mac(sha512.New, secret, parts...))
}

func equalSigs(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func configOf(t testing.TB, scheme, secret string) webhook.Config {
	c := webhook.NewDefaultConfig()
	c.Scheme = scheme
	c.SecretFiles = []string{secretFile(t, secret)}
	return c
}
