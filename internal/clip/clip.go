package clip

import (
	"strings"
	"unicode/utf8"
)

// Marker ends a string that was cut.
const Marker = "…"

// String returns s when it is valid UTF-8 of at most max bytes. Otherwise
// it returns a prefix of s ending in Marker, max bytes at most in all;
// invalid bytes in the prefix each become '?'. With max below the marker's
// length the prefix is cut without one.
func String(s string, max int) string {
	if max <= 0 {
		return ""
	}
	if len(s) <= max && utf8.ValidString(s) {
		return s
	}
	if len(s) <= max {
		return replaceInvalid(s)
	}
	marker := Marker
	if max < len(marker) {
		marker = ""
	}
	cut := max - len(marker)
	for cut > 0 && !utf8.RuneStart(s[cut]) && cut > max-len(marker)-utf8.UTFMax {
		cut--
	}
	// A prefix that ends inside an invalid sequence keeps its bytes; they
	// become '?' below, one each.
	return replaceInvalid(s[:cut]) + marker
}

// Bytes is String of b.
func Bytes(b []byte, max int) string {
	if max <= 0 {
		return ""
	}
	n := min(len(b), max+1)
	return String(string(b[:n]), max)
}

// replaceInvalid maps each byte of an invalid sequence to '?', so that the
// length does not change.
func replaceInvalid(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteByte('?')
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
