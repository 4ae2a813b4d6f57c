package outbound

import (
	"net/url"
	"testing"
)

// FuzzRedactURL: redaction is idempotent, and of a URL that parses it
// keeps the scheme, host and path while every query value it leaves is
// empty or REDACTED and a password is xxxxx.
func FuzzRedactURL(f *testing.F) {
	for _, s := range []string{
		"https://api.partner.test/orders?api_key=k3y&cursor=c1",
		"https://user:pw@h:8443/p?a=1;b=2&c#frag",
		"//u:p@h/p?q", "/rel?x=1", "http://[::1]/?a=%zz", "?", "#", "a://b:c@d@e/?&=&",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := RedactURL(s)
		if RedactURL(r) != r {
			t.Fatalf("%q: not idempotent: %q then %q", s, r, RedactURL(r))
		}
		in, err := url.Parse(s)
		if err != nil {
			return
		}
		out, err := url.Parse(r)
		if err != nil {
			t.Fatalf("%q parses but its redaction %q does not: %v", s, r, err)
		}
		if out.Scheme != in.Scheme || out.Host != in.Host || out.Path != in.Path {
			t.Fatalf("%q redacted to %q: scheme, host or path changed", s, r)
		}
		q, _ := url.ParseQuery(out.RawQuery)
		for k, vs := range q {
			for _, v := range vs {
				if v != "" && v != redacted {
					t.Fatalf("%q redacted to %q keeps %s=%q", s, r, k, v)
				}
			}
		}
		if p, ok := out.User.Password(); ok && p != redactedPassword {
			t.Fatalf("%q redacted to %q keeps the password %q", s, r, p)
		}
		if out.Fragment != "" && out.Fragment != redacted {
			t.Fatalf("%q redacted to %q keeps the fragment %q", s, r, out.Fragment)
		}
	})
}
