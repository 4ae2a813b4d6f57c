package fastre

import (
	"regexp"
	"testing"
)

func TestCompileErrors(t *testing.T) {
	for _, expr := range []string{`(`, `[a-`, `a{2,1}`, `\p{Nope}`, `x{1001}`, `(?<n>a)(?P<n>b)`, "\xff("} {
		_, want := regexp.Compile(expr)
		_, got := Compile(expr)
		if (got == nil) != (want == nil) {
			t.Errorf("Compile(%q) error %v, regexp says %v", expr, got, want)
		}
	}
}

// FuzzMatch holds Compile and MatchString to regexp's on any expression and
// input.
func FuzzMatch(f *testing.F) {
	for _, p := range fuzzPatterns {
		for _, s := range fuzzInputs {
			f.Add(p, s)
		}
	}
	f.Fuzz(func(t *testing.T, expr, s string) {
		want, werr := regexp.Compile(expr)
		got, gerr := Compile(expr)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("Compile(%q): error %v, regexp says %v", expr, gerr, werr)
		}
		if werr != nil {
			return
		}
		if g, w := got.MatchString(s), want.MatchString(s); g != w {
			t.Fatalf("%q (shape %q) on %q: %v, regexp says %v", expr, got.Shape(), s, g, w)
		}
	})
}

var fuzzPatterns = []string{
	`^[a-z0-9-]{3,32}$`, `^[a-z][a-z0-9_]*$`, `^(a|b|c)$`, `^(card|bank_transfer|wallet)$`, `^cus_`, `\.json$`,
	`^[A-Z]{3}$`, `^\+[1-9][0-9]{7,14}$`, `^[a-z]{2}(-[A-Z]{2})?$`, `^[0-9a-f]{32}$`, `^[0-9a-f]{16}$`,
	`(?i)^[a-z]+$`, `^[^/]+$`, `^.+$`, `^.*$`, `(?m)^a$`, `(?s)^.$`, `^a$|^b$`, `abc`, `^$`, `\A[a-z]\z`,
	`^[\x{80}-\x{10FFFF}]+$`, `^[^a]{2}$`, `^\d{3}$`, `^\w+$`, `^[[:alpha:]]+$`, `^\p{L}+$`, `^(?:foo|bar)$`, `^(|a)$`,
}

var fuzzInputs = []string{
	"", "a", "abc", "ABC", "a-b-c", "cus_8HkQ2mZx", "x.json", "EUR", "+14155550123", "en-US", "a\n", "\na", "a\nb",
	"\xff", "é", "K", "\u212a", "ſ", "card", "bank_transfer", "wallet2", "0123456789abcdef0123456789abcdef",
}
