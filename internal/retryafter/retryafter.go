package retryafter

import (
	"net/http"
	"strings"
	"time"
)

// maxDuration is the longest time.Duration; a Retry-After beyond it is
// answered as it.
const maxDuration = time.Duration(1<<63 - 1)

// Parse reads an HTTP Retry-After value (RFC 9110 section 10.2.3):
// delta-seconds ("120") or an HTTP-date ("Fri, 31 Dec 1999 23:59:59 GMT",
// and the obsolete RFC 850 and asctime forms), measured from now. A date in
// the past gives 0. ok is false for anything else (empty, negative,
// fractional, garbage), which callers treat as no Retry-After at all. A
// value too large for a time.Duration gives the largest one.
func Parse(value string, now time.Time) (d time.Duration, ok bool) {
	value = strings.Trim(value, " \t")
	if value == "" {
		return 0, false
	}
	if isDigits(value) {
		var secs int64
		for i := 0; i < len(value); i++ {
			secs = secs*10 + int64(value[i]-'0')
			if secs > int64(maxDuration/time.Second) {
				return maxDuration, true
			}
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	if !t.After(now) {
		return 0, true
	}
	// Sub saturates rather than overflowing.
	return t.Sub(now), true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
