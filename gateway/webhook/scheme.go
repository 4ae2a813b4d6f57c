package webhook

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The schemes, each checked as its provider's own library checks it:
//
//   - standard (Standard Webhooks): webhook-id, webhook-timestamp (Unix
//     seconds) and webhook-signature, a space-separated list of
//     "v1,<base64>". The MAC is HMAC-SHA256 over "<id>.<timestamp>.<body>".
//     Other versions (v1a) are passed over. Secrets are "whsec_<base64>"
//     or the base64 alone, and key the MAC decoded.
//   - stripe: Stripe-Signature "t=<unix>,v1=<hex>,v1=<hex>,v0=…",
//     HMAC-SHA256 over "<t>.<body>", any v1 against any secret; v0 and
//     other keys are passed over. The secret ("whsec_…") keys the MAC as
//     the text it is, as stripe-go does: it is not decoded. Stripe's
//     library checks only that a timestamp is not too old; this package
//     refuses one too far ahead as well, as Standard Webhooks does.
//   - github: X-Hub-Signature-256 "sha256=<hex>", HMAC-SHA256 over the
//     body; no timestamp, no signed id.
//   - shopify: X-Shopify-Hmac-Sha256, base64 of HMAC-SHA256 over the body;
//     no timestamp, no signed id.
//   - hmac: one signature in HMACConfig.Header, after an optional Prefix,
//     sha256 or sha512, hex or base64. With TimestampHeader, the signed
//     string is "<timestamp><signed_separator><body>" with the timestamp's
//     value as sent, Unix seconds or RFC 3339; without it, the body.
//
// Timestamps of standard and stripe are decimal digits only (no sign, no
// space); the MAC covers their decimal value as the providers' libraries
// write it. Hex is read in either case; base64 signatures are standard,
// padded and canonical, so a signature has one spelling.

// Header names of the fixed schemes, as their providers spell them.
const (
	HeaderStandardID        = "webhook-id"
	HeaderStandardTimestamp = "webhook-timestamp"
	HeaderStandardSignature = "webhook-signature"
	HeaderStripeSignature   = "Stripe-Signature"
	HeaderGitHubSignature   = "X-Hub-Signature-256"
	HeaderShopifyHMAC       = "X-Shopify-Hmac-Sha256"
)

// scheme is how one scheme reads a request.
type scheme struct {
	name string
	// headers are the headers it signs with; sigHeader the one with the
	// signatures.
	headers   []string
	sigHeader string
	hash      func() hash.Hash
	// read takes what the signature covers apart from the body, and the
	// signatures to compare, from the headers.
	read func(http.Header) (signed, *Refusal)
}

// signed is what a request's headers say: what is signed before the body,
// the candidate signatures (each the size of the scheme's MAC), and the id
// and time of signing where the scheme has them.
type signed struct {
	prefix   []byte
	sigs     [][]byte
	id       string
	timed    bool
	at       time.Time
	atHeader string
}

func newScheme(c Config) scheme {
	switch c.Scheme {
	case SchemeStandard:
		return scheme{name: c.Scheme, sigHeader: HeaderStandardSignature, hash: sha256.New,
			headers: []string{HeaderStandardID, HeaderStandardTimestamp, HeaderStandardSignature}, read: readStandard}
	case SchemeStripe:
		return scheme{name: c.Scheme, sigHeader: HeaderStripeSignature, hash: sha256.New,
			headers: []string{HeaderStripeSignature}, read: readStripe}
	case SchemeGitHub:
		return single(c.Scheme, HMACConfig{Header: HeaderGitHubSignature, Prefix: "sha256=", Algorithm: AlgorithmSHA256, Encoding: EncodingHex})
	case SchemeShopify:
		return single(c.Scheme, HMACConfig{Header: HeaderShopifyHMAC, Algorithm: AlgorithmSHA256, Encoding: EncodingBase64})
	}
	return single(c.Scheme, c.HMAC)
}

// single is a scheme of one signature in one header: github, shopify,
// and hmac.
func single(name string, h HMACConfig) scheme {
	s := scheme{name: name, sigHeader: h.Header, hash: hashOf(h.Algorithm), headers: []string{h.Header}}
	size := s.hash().Size()
	if h.TimestampHeader != "" {
		s.headers = append(s.headers, h.TimestampHeader)
	}
	s.read = func(hd http.Header) (signed, *Refusal) {
		v, ref := header(hd, h.Header)
		if ref != nil {
			return signed{}, ref
		}
		sig, err := decodeSignature(v, h.Prefix, h.Encoding, size)
		if err != nil {
			return signed{}, malformed(h.Header, err.Error())
		}
		out := signed{sigs: [][]byte{sig}}
		if h.TimestampHeader == "" {
			return out, nil
		}
		ts, ref := header(hd, h.TimestampHeader)
		if ref != nil {
			return signed{}, ref
		}
		at, ok := parseTime(ts)
		if !ok {
			return signed{}, malformed(h.TimestampHeader, h.TimestampHeader+" is neither Unix seconds nor an RFC 3339 time")
		}
		out.timed, out.at, out.atHeader = true, at, h.TimestampHeader
		out.prefix = append([]byte(ts), h.SignedSeparator...)
		return out, nil
	}
	return s
}

// readStandard reads Standard Webhooks' three headers. What is signed is
// "<id>.<timestamp>.<body>", the timestamp in decimal as the sender's
// library writes it.
func readStandard(hd http.Header) (signed, *Refusal) {
	id, ref := header(hd, HeaderStandardID)
	if ref != nil {
		return signed{}, ref
	}
	ts, ref := header(hd, HeaderStandardTimestamp)
	if ref != nil {
		return signed{}, ref
	}
	sigs, ref := header(hd, HeaderStandardSignature)
	if ref != nil {
		return signed{}, ref
	}
	sec, ok := parseUnixSeconds(ts)
	if !ok {
		return signed{}, malformed(HeaderStandardTimestamp, HeaderStandardTimestamp+" is not Unix seconds (decimal digits, up to the year 9999)")
	}
	list, err := parseSignatureList(sigs)
	if err != nil {
		return signed{}, malformed(HeaderStandardSignature, err.Error())
	}
	prefix := make([]byte, 0, len(id)+22)
	prefix = append(prefix, id...)
	prefix = append(prefix, '.')
	prefix = strconv.AppendInt(prefix, sec, 10)
	prefix = append(prefix, '.')
	return signed{prefix: prefix, sigs: list, id: id, timed: true, at: time.Unix(sec, 0), atHeader: HeaderStandardTimestamp}, nil
}

// readStripe reads Stripe-Signature. What is signed is
// "<t>.<body>", t in decimal.
func readStripe(hd http.Header) (signed, *Refusal) {
	v, ref := header(hd, HeaderStripeSignature)
	if ref != nil {
		return signed{}, ref
	}
	sec, sigs, err := parseStripeSignature(v)
	if err != nil {
		return signed{}, malformed(HeaderStripeSignature, err.Error())
	}
	prefix := strconv.AppendInt(make([]byte, 0, 21), sec, 10)
	prefix = append(prefix, '.')
	return signed{prefix: prefix, sigs: sigs, timed: true, at: time.Unix(sec, 0), atHeader: HeaderStripeSignature}, nil
}

// header is a header's one value: absent or empty is missing_header; sent
// twice, or longer than MaxHeaderBytes, malformed_header.
func header(hd http.Header, name string) (string, *Refusal) {
	vs := hd.Values(name)
	switch {
	case len(vs) == 0 || len(vs) == 1 && vs[0] == "":
		return "", &Refusal{Reason: ReasonMissingHeader, Header: name, Msg: "no " + name + " header"}
	case len(vs) > 1:
		return "", malformed(name, fmt.Sprintf("%s is sent %d times", name, len(vs)))
	case len(vs[0]) > MaxHeaderBytes:
		return "", malformed(name, fmt.Sprintf("%s is %d bytes, more than %d", name, len(vs[0]), MaxHeaderBytes))
	}
	return vs[0], nil
}

func malformed(name, msg string) *Refusal {
	return &Refusal{Reason: ReasonMalformedHeader, Header: name, Msg: msg}
}

// rawSecret takes a secret's bytes as they are: Stripe's whsec_… secret
// keys its MAC as the text it is, as do GitHub's and Shopify's.
func rawSecret(b []byte) ([]byte, error) { return append([]byte(nil), b...), nil }

// standardSecret decodes a Standard Webhooks secret: whsec_ and base64, or
// the base64 alone, padded or not. The error never holds the secret.
func standardSecret(b []byte) ([]byte, error) {
	body := strings.TrimPrefix(string(b), "whsec_")
	key, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(body, "="))
	var bad base64.CorruptInputError
	switch {
	case errors.As(err, &bad):
		return nil, fmt.Errorf("a Standard Webhooks secret is whsec_ and base64, as the sender shows it; this is not base64 at byte %d", len(b)-len(body)+int(bad))
	case err != nil:
		return nil, errors.New("a Standard Webhooks secret is whsec_ and base64, as the sender shows it")
	case len(key) == 0:
		return nil, errors.New("the Standard Webhooks secret is empty after whsec_")
	}
	return key, nil
}
