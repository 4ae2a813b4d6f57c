package webhook

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The header parsers. Each takes a value of at most MaxHeaderBytes (header
// checks that first) and returns an error that says what is wrong without
// quoting the value.

// standardSize is the size of a v1 signature: an HMAC-SHA256.
const standardSize = 32

// parseSignatureList reads Standard Webhooks' webhook-signature: a list of
// "<version>,<signature>" entries separated by spaces. The v1 entries whose
// signature is standard base64 (padded, canonical) of 32 bytes are the
// candidates; other versions (v1a, asymmetric) and v1 entries that do not
// decode are passed over, as the providers' libraries pass over entries
// that match nothing. More than MaxSignatures entries, or none to compare,
// is an error.
func parseSignatureList(v string) ([][]byte, error) {
	var sigs [][]byte
	entries := 0
	for entry := range strings.SplitSeq(v, " ") {
		if entry == "" {
			continue
		}
		if entries++; entries > MaxSignatures {
			return nil, fmt.Errorf("%s has more than %d signatures", HeaderStandardSignature, MaxSignatures)
		}
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		if b, ok := decodeBase64(sig, standardSize); ok {
			sigs = append(sigs, b)
		}
	}
	if len(sigs) == 0 {
		return nil, fmt.Errorf("%s has no v1 signature (v1,<base64 of 32 bytes>)", HeaderStandardSignature)
	}
	return sigs, nil
}

// parseStripeSignature reads Stripe-Signature: pairs "key=value" separated
// by commas, one t (Unix seconds) and v1 signatures (hex of 32 bytes). As
// Stripe's library does, it refuses a pair without exactly one "=", and
// passes over other keys (v0) and v1 values that do not decode. Unlike
// it, it refuses a second t (ambiguous), more than MaxSignatures pairs
// besides t, and a header without t or a v1 to compare.
func parseStripeSignature(v string) (int64, [][]byte, error) {
	var (
		sigs  [][]byte
		t     int64
		hasT  bool
		pairs int
	)
	for pair := range strings.SplitSeq(v, ",") {
		key, value, ok := strings.Cut(pair, "=")
		if !ok || strings.Contains(value, "=") {
			return 0, nil, fmt.Errorf("%s has a pair that is not key=value", HeaderStripeSignature)
		}
		if key == "t" {
			if hasT {
				return 0, nil, fmt.Errorf("%s has t= twice", HeaderStripeSignature)
			}
			if t, ok = parseUnixSeconds(value); !ok {
				return 0, nil, fmt.Errorf("%s has a t= that is not Unix seconds (decimal digits, up to the year 9999)", HeaderStripeSignature)
			}
			hasT = true
			continue
		}
		if pairs++; pairs > MaxSignatures {
			return 0, nil, fmt.Errorf("%s has more than %d signatures", HeaderStripeSignature, MaxSignatures)
		}
		if key != "v1" {
			continue
		}
		if b, ok := decodeHex(value, standardSize); ok {
			sigs = append(sigs, b)
		}
	}
	switch {
	case !hasT:
		return 0, nil, fmt.Errorf("%s has no t=", HeaderStripeSignature)
	case len(sigs) == 0:
		return 0, nil, fmt.Errorf("%s has no v1 signature (v1=<hex of 32 bytes>)", HeaderStripeSignature)
	}
	return t, sigs, nil
}

// decodeSignature reads a single signature: prefix, then size bytes in
// encoding (hex in either case, or standard base64 padded and canonical).
func decodeSignature(v, prefix, encoding string, size int) ([]byte, error) {
	rest, ok := strings.CutPrefix(v, prefix)
	if !ok {
		return nil, errors.New("the signature does not start with " + strconv.Quote(prefix))
	}
	var b []byte
	if encoding == EncodingBase64 {
		b, ok = decodeBase64(rest, size)
	} else {
		b, ok = decodeHex(rest, size)
	}
	if !ok {
		return nil, fmt.Errorf("the signature is not %s of %d bytes", encoding, size)
	}
	return b, nil
}

// decodeHex decodes exactly size bytes of hex.
func decodeHex(s string, size int) ([]byte, bool) {
	if len(s) != 2*size {
		return nil, false
	}
	b, err := hex.DecodeString(s)
	return b, err == nil
}

// decodeBase64 decodes exactly size bytes of standard, padded base64. It is
// strict, so that one signature has one spelling, as the providers compare
// the text.
func decodeBase64(s string, size int) ([]byte, bool) {
	if len(s) != base64.StdEncoding.EncodedLen(size) {
		return nil, false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	return b, err == nil && len(b) == size
}

// maxUnixSeconds is the last second of the year 9999: later is not a
// time a sender signs at, and past it time.Unix no longer orders.
const maxUnixSeconds = 253402300799

// parseUnixSeconds reads a non-negative decimal count of seconds up to the
// year 9999: digits only, no sign or space, as the providers' senders
// write it.
func parseUnixSeconds(s string) (int64, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n <= maxUnixSeconds
}

// parseTime reads the hmac scheme's timestamp: Unix seconds, or RFC 3339
// (fractions of a second allowed).
func parseTime(s string) (time.Time, bool) {
	if n, ok := parseUnixSeconds(s); ok {
		return time.Unix(n, 0), true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}
