package contract

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// portableSeeds are RE2 patterns of the kinds contracts use, and strings
// at their edges.
var portableSeeds = []struct{ pattern, text string }{
	{`^[a-z][a-z0-9-]{0,62}$`, "checkout-api"},
	{`^\+[1-9][0-9]{6,14}$`, "+442071838750"},
	{`^(?i)ab.\d+\s?$`, "AbÉ12 "},
	{`^(?i)k$`, "\u212a"},
	{`^[^a]$`, "😀"},
	{`^.{2}$`, "😀\r"},
	{`^[\w.-]+@[\w-]+$`, "a.b@c-d"},
	{`(?s)^a.b$`, "a\nb"},
	{`\Aa+\z`, "aaa"},
	{`^[&~|]{2}$`, "&&"},
	{`^a{2,}b?c*$`, "aab"},
	{`^(?:ab|cd)+$`, "abcd"},
	{`^[\x00-\x1f]*$`, "\t\n"},
	{`^[^\s\S]$`, "a"},
	{`^[\p{Greek}]+$`, "αβγ"},
	{`^(a|)$`, ""},
	{`^[\-\]\\^]+$`, `-]\^`},
	{`^ $`, " "},
	{`^\$[{}]$`, "${"},
}

// TestPortablePattern: a pattern printed portably matches what the
// RE2 pattern matches, read by RE2 and by ECMA-262 with the u flag.
func TestPortablePattern(t *testing.T) {
	for _, tc := range portableSeeds {
		checkPortable(t, tc.pattern, tc.text)
	}
	for _, p := range []string{`(?m)^a$`, `a\b`, `\Ba`} {
		if out, ok := portablePattern(p); ok {
			t.Errorf("portablePattern(%q) = %q; it has no portable form", p, out)
		}
	}
}

// FuzzPortablePattern: for any RE2 pattern with a portable form and any
// text, the form matches what the pattern matches by RE2, and no less by
// ECMA-262 (u flag).
func FuzzPortablePattern(f *testing.F) {
	for _, tc := range portableSeeds {
		f.Add(tc.pattern, tc.text)
	}
	f.Fuzz(func(t *testing.T, pattern, text string) {
		if len(pattern) > 200 || len(text) > 200 {
			return
		}
		checkPortable(t, pattern, text)
	})
}

func checkPortable(t *testing.T, pattern, text string) {
	t.Helper()
	re, err := regexp.Compile(pattern)
	if err != nil {
		return
	}
	out, ok := portablePattern(pattern)
	if !ok {
		return
	}
	if !utf8.ValidString(text) {
		return // JSON strings are Unicode text
	}
	want := re.MatchString(text)
	got, err := regexp.Compile(out)
	if err != nil {
		t.Fatalf("portablePattern(%q) = %q, which RE2 does not compile: %v", pattern, out, err)
	}
	if got.MatchString(text) != want {
		t.Fatalf("portablePattern(%q) = %q; on %q RE2 says %v, the pattern %v", pattern, out, text, got.MatchString(text), want)
	}
	ecma, err := regexp2.Compile(out, regexp2.ECMAScript|regexp2.Unicode)
	if err != nil {
		t.Fatalf("portablePattern(%q) = %q, which ECMA-262 does not compile: %v", pattern, out, err)
	}
	if want {
		if m, err := ecma.MatchString(text); err != nil || !m {
			t.Fatalf("portablePattern(%q) = %q; ECMA-262 refuses %q, which the pattern matches (%v)", pattern, out, text, err)
		}
	}
	if strings.ContainsAny(out, "\n\r") {
		t.Fatalf("portablePattern(%q) = %q has a raw line break", pattern, out)
	}
}

// TestFormatPatternsPortable: every pattern the schema writes for a format
// or a well-known type has a portable form (portable panics otherwise), the
// same language by RE2.
func TestFormatPatternsPortable(t *testing.T) {
	for _, p := range []string{emailPattern, hostnameLabels, hostnameLastLabel, ipv4Pattern, ipv6Loose, ipv6Full, uuidPattern,
		tuuidPattern, ulidPattern, uriLoose, uriNarrow, timestampWide, timestampNarrow, durationWide, durationNarrow} {
		out, ok := portablePattern(p)
		if !ok {
			t.Errorf("%q has no portable form", p)
			continue
		}
		for _, tc := range portableSeeds {
			checkPortable(t, p, tc.text)
		}
		if _, err := regexp2.Compile(out, regexp2.ECMAScript|regexp2.Unicode); err != nil {
			t.Errorf("%q prints as %q, which ECMA-262 does not compile: %v", p, out, err)
		}
	}
}
