package pull

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxWaitSeconds keeps parsed waits far from time.Duration's overflow; every
// wait is capped by Config.MaxRetryAfter anyway.
const maxWaitSeconds = 365 * 24 * 3600

// limitAdvice is what a partner's rate-limit headers say: how many requests
// remain in the window and when it resets.
type limitAdvice struct {
	remaining int64
	reset     time.Duration
}

// epochThreshold tells a reset given as a Unix timestamp from one given in
// seconds from now: no window lasts 30 years, and no timestamp since 2001
// is smaller.
const epochThreshold = 1_000_000_000

// parseReset reads a reset value: delta seconds, a Unix timestamp in seconds
// (>= 1e9) or milliseconds (>= 1e12). Fractions are allowed.
func parseReset(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f != f || v == "" || strings.ContainsAny(v, "eEinfINFxX") {
		return 0, false
	}
	switch {
	case f >= epochThreshold*1000:
		f = f/1000 - float64(now.UnixNano())/1e9
	case f >= epochThreshold:
		f -= float64(now.UnixNano()) / 1e9
	}
	if f <= 0 {
		return 0, true
	}
	if f > maxWaitSeconds {
		f = maxWaitSeconds
	}
	return time.Duration(f * float64(time.Second)), true
}

// parseRateLimit reads the partner's rate-limit headers, in order of
// preference: the IETF structured "RateLimit" field (draft-ietf-httpapi-
// ratelimit-headers, both the list-of-policies form `"p";r=0;t=30` and the
// earlier dictionary form `limit=10, remaining=0, reset=30`), then
// RateLimit-Remaining/RateLimit-Reset, then X-RateLimit-Remaining/
// X-RateLimit-Reset. With several policies the most restrictive counts:
// the fewest remaining, and among those the latest reset. ok is false when
// no family gives both a remaining count and a reset.
func parseRateLimit(h http.Header, now time.Time) (limitAdvice, bool) {
	if vs := h.Values("RateLimit"); len(vs) > 0 {
		windows := policyWindows(strings.Join(h.Values("RateLimit-Policy"), ","))
		if a, ok := parseRateLimitField(strings.Join(vs, ","), windows, now); ok {
			return a, true
		}
	}
	for _, prefix := range []string{"RateLimit-", "X-RateLimit-"} {
		rem, reset := h.Get(prefix+"Remaining"), h.Get(prefix+"Reset")
		if rem == "" || reset == "" {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(rem), 10, 64)
		if err != nil || n < 0 {
			continue
		}
		d, ok := parseReset(reset, now)
		if !ok {
			continue
		}
		return limitAdvice{remaining: n, reset: d}, true
	}
	return limitAdvice{}, false
}

// policyWindows reads RateLimit-Policy (`"default";q=100;w=60`): the window
// of each named policy, the longest a reset of that policy can be.
func policyWindows(v string) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, member := range splitTopLevel(v, ',') {
		parts := splitTopLevel(member, ';')
		name := strings.Trim(strings.TrimSpace(parts[0]), `"`)
		for _, p := range parts[1:] {
			k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.TrimSpace(k) != "w" {
				continue
			}
			if n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64); err == nil && n >= 0 && n <= maxWaitSeconds {
				out[name] = time.Duration(n) * time.Second
			}
		}
	}
	return out
}

// parseRateLimitField reads the structured RateLimit field. A policy that
// gives no reset (t) waits its window from RateLimit-Policy (w).
func parseRateLimitField(v string, windows map[string]time.Duration, now time.Time) (limitAdvice, bool) {
	var best limitAdvice
	found := false
	// dictionary form: members are key=value for one implicit policy.
	dict := limitAdvice{remaining: -1, reset: -1}
	for _, member := range splitTopLevel(v, ',') {
		parts := splitTopLevel(member, ';')
		if len(parts) == 0 {
			continue
		}
		head := strings.TrimSpace(parts[0])
		if k, val, isPair := strings.Cut(head, "="); isPair && !strings.HasPrefix(head, `"`) {
			setAdvice(&dict, strings.ToLower(strings.TrimSpace(k)), val, now)
			continue
		}
		a := limitAdvice{remaining: -1, reset: -1}
		for _, p := range parts[1:] {
			k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
			setAdvice(&a, strings.ToLower(strings.TrimSpace(k)), val, now)
		}
		if w, ok := windows[strings.Trim(head, `"`)]; ok && a.reset < 0 {
			a.reset = w
		}
		if a.remaining >= 0 && a.reset >= 0 {
			best, found = tighter(best, a, found), true
		}
	}
	if dict.remaining >= 0 && dict.reset >= 0 {
		best, found = tighter(best, dict, found), true
	}
	return best, found
}

func setAdvice(a *limitAdvice, key, val string, now time.Time) {
	val = strings.Trim(strings.TrimSpace(val), `"`)
	switch key {
	case "r", "remaining":
		if n, err := strconv.ParseInt(val, 10, 64); err == nil && n >= 0 {
			a.remaining = n
		}
	case "t", "reset":
		if d, ok := parseReset(val, now); ok {
			a.reset = d
		}
	}
}

func tighter(best, a limitAdvice, have bool) limitAdvice {
	if !have || a.remaining < best.remaining || (a.remaining == best.remaining && a.reset > best.reset) {
		return a
	}
	return best
}

// splitTopLevel splits s at sep outside double-quoted strings (with
// backslash escapes) and angle brackets.
func splitTopLevel(s string, sep byte) []string {
	var out []string
	start, quoted, angle := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\\':
			i++
		case c == '"' && !angle:
			quoted = !quoted
		case c == '<' && !quoted:
			angle = true
		case c == '>' && !quoted:
			angle = false
		case c == sep && !quoted && !angle:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// parseLinkNext returns the target of the first Link (RFC 8288) whose rel
// includes "next", resolved against base.
func parseLinkNext(values []string, base *url.URL) (*url.URL, bool) {
	for _, v := range values {
		for _, link := range splitTopLevel(v, ',') {
			link = strings.TrimSpace(link)
			if !strings.HasPrefix(link, "<") {
				continue
			}
			end := strings.IndexByte(link, '>')
			if end < 0 {
				continue
			}
			target := strings.TrimSpace(link[1:end])
			if !hasRel(link[end+1:], "next") {
				continue
			}
			u, err := url.Parse(target)
			if err != nil {
				continue
			}
			if base != nil {
				u = base.ResolveReference(u)
			}
			return u, true
		}
	}
	return nil, false
}

// hasRel reports whether a link's parameters carry rel with the relation
// type want (rel is a space-separated list, compared case-insensitively).
func hasRel(params, want string) bool {
	for _, p := range splitTopLevel(params, ';') {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "rel") {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = strings.ReplaceAll(v[1:len(v)-1], `\"`, `"`)
		}
		for _, rel := range strings.Fields(v) {
			if strings.EqualFold(rel, want) {
				return true
			}
		}
		return false // only the first rel counts (RFC 8288 §3.3)
	}
	return false
}
