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

func TestShape(t *testing.T) {
	for _, tc := range []struct{ expr, shape string }{
		{`^[a-z0-9-]{3,32}$`, ShapeDFA},
		{`^[a-z]{2}(-[A-Z]{2})?$`, ShapeDFA},
		{`^\+[1-9][0-9]{6,14}$`, ShapeDFA},
		{`(?i)^[a-z]+$`, ShapeDFA},
		{`^[а-яА-ЯёЁ]+$`, ShapeDFA},
		{`^\p{L}+$`, ShapeDFA},
		{`^[\p{L}\p{N}]+$`, ShapeDFA},
		{`^\p{L}{1,64}$`, ""}, // states × rune classes over the limit
		{`[0-9]{3}`, ShapeDFA},
		{`^(card|bank_transfer|wallet)$`, ShapeLiterals},
		{`(?i)^(yes|no)$`, ShapeLiterals},
		{`^cus_`, ShapePrefix},
		{`\.json$`, ShapeSuffix},
		{`foo|bar`, ShapeContains},
		{`(?m)^a$`, ""},
		{`\bword\b`, ""},
		{`^a|b$`, ""},
		{`^\x{FFFD}$`, ShapeDFA},
		{`^(\x{FFFD}|a)$`, ShapeDFA},
		{`^[a-z]{1000}[0-9]{1000}$`, ""},
	} {
		r, err := Compile(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Shape(); got != tc.shape {
			t.Errorf("Shape(%q) = %q, want %q", tc.expr, got, tc.shape)
		}
	}
}

// TestMatchesRegexp runs every seed pair of FuzzMatch, so the differential
// check runs under plain go test too.
func TestMatchesRegexp(t *testing.T) {
	for _, expr := range fuzzPatterns {
		got := MustCompile(expr)
		want := regexp.MustCompile(expr)
		for _, s := range fuzzInputs {
			if g, w := got.MatchString(s), want.MatchString(s); g != w {
				t.Errorf("%q (shape %q) on %q: %v, regexp says %v", expr, got.Shape(), s, g, w)
			}
		}
	}
}
