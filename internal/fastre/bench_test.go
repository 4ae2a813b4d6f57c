package fastre

import (
	"regexp"
	"testing"
)

// contractPatterns are the pattern rules of the example contracts and
// contract/testdata, each with a value that passes it.
var contractPatterns = []struct{ name, expr, valid string }{
	{"locale", `^[a-z]{2}(-[A-Z]{2})?$`, "en-US"},
	{"phone", `^\+[1-9][0-9]{6,14}$`, "+14155550123"},
	{"service", `^[a-z][a-z0-9-]{0,62}$`, "checkout-api"},
	{"trace_id", `^[0-9a-f]{32}$`, "4bf92f3577b34da6a3ce929d0e0e4736"},
	{"span_id", `^[0-9a-f]{16}$`, "00f067aa0ba902b7"},
	{"label_key", `^[a-z_][a-z0-9_]{0,62}$`, "region"},
	{"currency", `^[A-Z]{3}$`, "EUR"},
	{"sku", `^[A-Z0-9-]{4,32}$`, "MUG-CLASSIC-12"},
	{"country", `^[A-Z]{2}$`, "GB"},
	{"name", `^[A-Za-z0-9][A-Za-z0-9._:-]*$`, "orders.v1:placed"},
	{"slug", `^[a-z0-9][a-z0-9._-]*$`, "eu-west-1.prod"},
	{"method", `^(card|bank_transfer|wallet)$`, "bank_transfer"},
	{"customer", `^cus_`, "cus_8HkQ2mZx"},
	{"fold", `(?i)^[a-z]+(-[a-z]+)*$`, "Content-Type"},
}

func TestContractPatternsShaped(t *testing.T) {
	for _, p := range contractPatterns {
		r := MustCompile(p.expr)
		if r.Shape() == "" {
			t.Errorf("%s %q: not recognised", p.name, p.expr)
		}
		if !r.MatchString(p.valid) || !regexp.MustCompile(p.expr).MatchString(p.valid) {
			t.Errorf("%s %q: %q does not match", p.name, p.expr, p.valid)
		}
	}
}

// BenchmarkMatch compares MatchString with regexp's on each contract
// pattern's valid value: .../fastre against .../regexp.
func BenchmarkMatch(b *testing.B) {
	for _, p := range contractPatterns {
		fast := MustCompile(p.expr)
		re := regexp.MustCompile(p.expr)
		b.Run(p.name+"/fastre", func(b *testing.B) {
			for range b.N {
				if !fast.MatchString(p.valid) {
					b.Fatal("no match")
				}
			}
		})
		b.Run(p.name+"/regexp", func(b *testing.B) {
			for range b.N {
				if !re.MatchString(p.valid) {
					b.Fatal("no match")
				}
			}
		})
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	for _, p := range contractPatterns {
		r := MustCompile(p.expr)
		s := p.valid + "é\xff"
		if n := testing.AllocsPerRun(100, func() { r.MatchString(s) }); n != 0 {
			t.Errorf("%s: %v allocations", p.name, n)
		}
	}
}
