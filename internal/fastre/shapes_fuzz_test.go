package fastre

import (
	"regexp"
	"strings"
	"testing"
)

// Pieces of the expressions FuzzShapes builds: the constructs contracts use
// and the ones whose RE2 meaning is easy to get wrong (case folding beyond
// ASCII, U+FFFD, newlines, flags).
var (
	shapeFlags = []string{"", "", "(?i)", "(?s)", "(?m)", "(?U)", "(?is)"}
	shapeAtoms = []string{
		"a", "b", "-", "_", "é", "k", "s", "K", `\x{212A}`, "ſ", `\x{FFFD}`, ".", `\.`, "[a-z]", "[^a-z]", "[0-9a-f]",
		"[A-Z0-9_-]", `\d`, `\w`, `\s`, "[é-ü]", `\p{Greek}`, `[^\n]`, `\n`, "(a|b|c)", "(foo|foobar)", "(?i:k)",
		"(?s:.)", "(?:ab)", "[[:alpha:]]", `[\x{80}-\x{10FFFF}]`, "[^a]", "x", "(-[A-Z]{2})",
	}
	shapeCounts = []string{"", "", "", "*", "+", "?", "{2}", "{1,3}", "{0,2}", "{2,}", "*?", "+?", "{3,32}"}
	shapeBegin  = []string{"", "^", `\A`, "^"}
	shapeEnd    = []string{"", "$", `\z`, "$"}
	shapeInput  = []string{
		"a", "b", "c", "k", "K", "\u212a", "s", "ſ", "S", "é", "-", "0", "9", "_", "\n", "\xff", "\xe2\x82", "\ufffd",
		"z", "A", "foo", "bar", "x", ".", "α", " ", "AB",
	}
)

func pick(b []byte, i *int, from []string) string {
	if *i >= len(b) {
		return from[0]
	}
	c := b[*i]
	*i++
	return from[int(c)%len(from)]
}

// shapeExpr builds an expression from prog.
func shapeExpr(prog []byte) string {
	i := 0
	var b strings.Builder
	b.WriteString(pick(prog, &i, shapeFlags))
	branches := 1
	if i < len(prog) && prog[i]%5 == 0 {
		branches = 2
	}
	for br := 0; br < branches; br++ {
		if br > 0 {
			b.WriteByte('|')
		}
		b.WriteString(pick(prog, &i, shapeBegin))
		n := 1
		if i < len(prog) {
			n = 1 + int(prog[i]%4)
			i++
		}
		for k := 0; k < n; k++ {
			b.WriteString(pick(prog, &i, shapeAtoms))
			b.WriteString(pick(prog, &i, shapeCounts))
		}
		b.WriteString(pick(prog, &i, shapeEnd))
	}
	return b.String()
}

func shapeString(in []byte) string {
	var b strings.Builder
	for i := 0; i < len(in); {
		b.WriteString(pick(in, &i, shapeInput))
	}
	return b.String()
}

// FuzzShapes holds MatchString to regexp's on expressions built from the
// constructs the shapes recognise, over inputs built from the runes where
// RE2's semantics are subtle; raw is also tried as it is.
func FuzzShapes(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6}, []byte{0, 1, 2}, "abc")
	f.Add([]byte{2, 1, 0, 8, 0, 1}, []byte{3, 4, 5}, "K")
	f.Add([]byte{0, 1, 3, 10, 12, 3}, []byte{15, 0}, "\xff")
	f.Add([]byte{5, 2, 1, 33, 6, 1}, []byte{1, 2, 26}, "a-AB")
	f.Fuzz(func(t *testing.T, prog, in []byte, raw string) {
		expr := shapeExpr(prog)
		want, err := regexp.Compile(expr)
		if err != nil {
			t.Skip()
		}
		got, err := Compile(expr)
		if err != nil {
			t.Fatalf("Compile(%q): %v, regexp compiles it", expr, err)
		}
		for _, s := range []string{shapeString(in), raw} {
			if g, w := got.MatchString(s), want.MatchString(s); g != w {
				t.Fatalf("%q (shape %q) on %q: %v, regexp says %v", expr, got.Shape(), s, g, w)
			}
		}
	})
}
