package webhook_test

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/gateway/webhook"
)

// BenchmarkVerify is one verification of a 2 KiB delivery per scheme, with
// one secret; and the worst case, MaxSecrets secrets and MaxSignatures
// signatures with the matching ones last: the most any delivery, signed
// or not, can cost.
func BenchmarkVerify(b *testing.B) {
	body := bytes.Repeat([]byte(`{"k":"0123456789abcdef"},`), 2048/25+1)[:2048]
	type bench struct {
		name string
		v    *webhook.Verifier
		h    http.Header
	}
	var cases []bench
	for _, s := range schemeCases() {
		cases = append(cases, bench{s.name, verifierOf(b, s.cfg(b, s.secret)), s.sign(b, body, s.secret, testNow)})
	}

	sha512 := hmacConfig()
	sha512.HMAC.Algorithm, sha512.HMAC.Encoding, sha512.HMAC.Prefix = "sha512", "base64", ""
	sha512.SecretFiles = []string{secretFile(b, hmacSecret)}
	h := http.Header{}
	h.Set("X-Timestamp", "1614265330")
	h.Set("X-Signature", macBase64SHA512(hmacSecret, []byte("1614265330."), body))
	cases = append(cases, bench{"hmac-sha512-base64", verifierOf(b, sha512), h})

	worst := webhook.NewDefaultConfig()
	worst.Scheme = webhook.SchemeStandard
	third := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a-third-secret-of-the-benchmark"))
	for _, s := range []string{wrongSecret, standardNext, third, standardSecret} {
		worst.SecretFiles = append(worst.SecretFiles, secretFile(b, s))
	}
	h = standardSender("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W")(b, body, standardSecret, testNow)
	h.Set("webhook-signature", listOf("standard", h.Get("webhook-signature"), webhook.MaxSignatures-1))
	cases = append(cases, bench{"standard-4-secrets-16-signatures", verifierOf(b, worst), h})

	for _, c := range cases {
		if _, err := c.v.Verify(webhook.Request{Header: c.h, Body: body}); err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := c.v.Verify(webhook.Request{Header: c.h, Body: body}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
