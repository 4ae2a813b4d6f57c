package envelope

import (
	"unicode/utf8"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// Valid reports whether ev passes the Event message's protovalidate
// rules (proto/sluice/ingest/v1/ingest.proto), without reflection: on the
// gRPC path, protovalidate's walk of every envelope cost as much as
// decoding its payload. Only an envelope it calls invalid goes to
// protovalidate, which names each failed rule as always. FuzzEnvelopeRules
// holds it to protovalidate's verdict, and must change with the rules.
func Valid(ev *ingestv1.Event) bool {
	if !validID(ev.GetId()) || !runesBetween(ev.GetType(), 1, 200) ||
		ev.GetOccurredAt() == nil || !runesBetween(ev.GetPartitionKey(), 0, 256) || ev.GetPayload() == nil {
		return false
	}
	attrs := ev.GetAttributes()
	if len(attrs) > 16 {
		return false
	}
	for k, v := range attrs {
		if !validAttributeKey(k) || !runesBetween(v, 0, 256) {
			return false
		}
	}
	return true
}

// runesBetween is string.min_len and string.max_len: lengths in code
// points, an invalid byte counting as one.
func runesBetween(s string, lo, hi int) bool {
	// A string has at most one code point per byte, and at least one if
	// it is not empty: most need no count.
	if len(s) <= hi && (lo == 0 || lo == 1 && len(s) > 0) {
		return true
	}
	n := utf8.RuneCountInString(s)
	return n >= lo && n <= hi
}

// validID is id's rules: 1 to 128 characters matching
// ^[A-Za-z0-9][A-Za-z0-9._:-]*$ (ASCII only, so bytes are characters).
// '_' is in the class, after the first character: providers' delivery
// ids such as Stripe's evt_… and Standard Webhooks' msg_… are ids as
// they are (TestProviderDeliveryIDs).
func validID(s string) bool {
	if len(s) < 1 || len(s) > 128 || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '.' && c != '_' && c != ':' && c != '-' {
			return false
		}
	}
	return true
}

// validAttributeKey is an attribute key's rules: 1 to 64 characters
// matching ^[a-z0-9][a-z0-9._-]*$.
func validAttributeKey(s string) bool {
	if len(s) < 1 || len(s) > 64 || !isLowerAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isLowerAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func isAlnum(c byte) bool { return isLowerAlnum(c) || 'A' <= c && c <= 'Z' }
