package strformat

import (
	"strings"
	"testing"
)

// formatPieces are the tokens the formats' grammars turn on; FuzzFormatPieces
// strings them together so that the fuzzer reaches deep into the IPv6, URI
// and prefix parsers, which random bytes rarely do.
var formatPieces = []string{
	":", "::", ":::", "1", "0", "00", "ffff", "FFFF", "12345", "1.2.3.4", "255", "256", "01", ".", "..",
	"%", "%25", "%eth0", "%C3%A9", "%C3%28", "%zz", "%2", "[", "]", "/", "//", "?", "#", "@", "a", "b-c", "-",
	"v1.", "v", "x", "http:", "a+b.c:", "1a:", "/0", "/24", "/32", "/64", "/128", "/129", "/024", "example", "com",
	"é", "\xff", " ", "!$&'()*+,;=", "~_", "8080", "65535", "65536", "0a", "A", "01ARZ3NDEKTSV4RRFFQ69G5FA", "\t", "\n",
}

func FuzzFormatPieces(f *testing.F) {
	f.Add([]byte{1, 2, 3})
	f.Add([]byte{40, 14, 19, 4, 22, 1, 19, 20, 42})
	f.Add([]byte{1, 3, 1, 9, 6, 42})
	o := newOracle(f)
	f.Fuzz(func(t *testing.T, prog []byte) {
		var b strings.Builder
		for _, c := range prog {
			b.WriteString(formatPieces[int(c)%len(formatPieces)])
		}
		s := b.String()
		want := o.valid(t, s)
		for i, fm := range o.fmts {
			if got := fm.check(s); got != want[i] {
				t.Errorf("%s(%q) = %v, protovalidate says %v", fm.field, s, got, want[i])
			}
		}
	})
}
