package outbound

import (
	"net/url"
	"strings"
)

// redacted stands for a query value or fragment in a redacted URL.
const redacted = "REDACTED"

// redactedPassword is what url.URL.Redacted puts for a password.
const redactedPassword = "xxxxx"

// RedactURL returns s with every query value replaced by REDACTED (the
// keys kept, in order: "?api_key=REDACTED&cursor=REDACTED"), a userinfo
// password by xxxxx as url.URL.Redacted does, and a non-empty fragment by
// REDACTED. It cuts s the way net/url does (the fragment at the first "#",
// then the query at the first "?", then the authority after "//") but
// never fails, so a string that does not parse as a URL is redacted too.
// A query part without "=" is a key and is kept.
func RedactURL(s string) string {
	rest, frag, hasFrag := strings.Cut(s, "#")
	rest, query, hasQuery := strings.Cut(rest, "?")
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(redactPassword(rest))
	if hasQuery {
		b.WriteByte('?')
		for i, part := range strings.Split(query, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			key, _, hasValue := strings.Cut(part, "=")
			b.WriteString(key)
			if hasValue {
				b.WriteString("=" + redacted)
			}
		}
	}
	if hasFrag {
		b.WriteByte('#')
		if frag != "" {
			b.WriteString(redacted)
		}
	}
	return b.String()
}

// redactPassword replaces the password of the authority of s, which holds
// no query or fragment.
func redactPassword(s string) string {
	start := 0
	if i := strings.Index(s, "//"); i >= 0 && isSchemePrefix(s[:i]) {
		start = i + 2
	} else {
		return s
	}
	end := len(s)
	if i := strings.IndexByte(s[start:], '/'); i >= 0 {
		end = start + i
	}
	at := strings.LastIndexByte(s[start:end], '@')
	if at < 0 {
		return s
	}
	user, _, hasPassword := strings.Cut(s[start:start+at], ":")
	if !hasPassword {
		return s
	}
	return s[:start] + user + ":" + redactedPassword + s[start+at:]
}

// isSchemePrefix reports whether p is "" or "scheme:" (RFC 3986 §3.1).
func isSchemePrefix(p string) bool {
	if p == "" {
		return true
	}
	if len(p) < 2 || p[len(p)-1] != ':' {
		return false
	}
	for i, c := range []byte(p[:len(p)-1]) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// RedactError returns err with the URL of a *url.Error redacted: the
// errors of http.Client.Do and http.NewRequest are a *url.Error whose
// message embeds the request URL. Call it on the error as net/http returns
// it, before wrapping it (a wrapping message is formatted once). The copy
// wraps the same cause, so errors.Is and errors.As see what they saw; any
// other error is returned as it is.
func RedactError(err error) error {
	ue, ok := err.(*url.Error)
	if !ok {
		return err
	}
	c := *ue
	c.URL = RedactURL(ue.URL)
	return &c
}
