package cloudevents

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzHeaderValue holds headerValue to the binding: it never panics,
// what it accepts is UTF-8, and any UTF-8 text reads back from its
// percent-encoding and from a quoted string of it (a backslash before
// each '"' and '\').
func FuzzHeaderValue(f *testing.F) {
	for _, s := range []string{"Euro%20%E2%82%AC%20%F0%9F%98%80", `"a \"b\" c"`, "%C0%A0", "100%", "plain", `"open`, "%e2%82%ac"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, problem := headerValue(v)
		if problem == "" && !utf8.ValidString(got) {
			t.Fatalf("headerValue(%q) = %q, not UTF-8", v, got)
		}
		if problem != "" && got != "" {
			t.Fatalf("headerValue(%q) refused (%s) with a value %q", v, problem, got)
		}
		if !utf8.ValidString(v) {
			return
		}
		var enc strings.Builder
		for i := 0; i < len(v); i++ {
			if c := v[i]; c <= ' ' || c == '"' || c == '%' || c >= 0x7f {
				fmt.Fprintf(&enc, "%%%02X", c)
			} else {
				enc.WriteByte(c)
			}
		}
		if back, problem := headerValue(enc.String()); problem != "" || back != v {
			t.Fatalf("percent-encoded %q as %q, which reads back %q (%s)", v, enc.String(), back, problem)
		}
		if strings.ContainsAny(v, "%\t") || strings.TrimLeft(v, " ") != v {
			return // a quoted string is percent-decoded after; whitespace outside it is trimmed
		}
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
		if back, problem := headerValue(quoted); problem != "" || back != v {
			t.Fatalf("quoted %q as %s, which reads back %q (%s)", v, quoted, back, problem)
		}
	})
}

func TestParseTime(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"2018-04-05T17:31:00Z", true},
		{"2018-04-05T17:31:00.5+01:00", true},
		{"2018-04-05t17:31:00.123456789z", true}, // RFC 3339 allows lower case
		{"2018-04-05T17:31:00-00:00", true},
		{"2018-04-05T17:31:00.123456789123Z", true}, // more digits than a nanosecond
		{"2018-04-05T7:31:00Z", false},              // time.Parse takes one hour digit
		{"2018-04-05T17:31:00+24:00", false},        // time.Parse takes offset hour 24
		{"2018-04-05T17:31:00+01:60", false},
		{"2018-04-05T17:31:00.Z", false},
		{"2018-04-05T17:31:00+0100", false},
		{"2018-04-05 17:31:00Z", false},
		{"2018-04-05T17:31:00", false},
		{"2018-04-05T24:00:00Z", false},
		{"2018-04-05T17:31:60Z", false}, // a leap second: time.Parse refuses it
		{"2018-02-30T17:31:00Z", false},
		{"", false},
	} {
		if _, ok := parseTime(tc.in); ok != tc.ok {
			t.Errorf("parseTime(%q) ok %v, want %v", tc.in, ok, tc.ok)
		}
	}
}
