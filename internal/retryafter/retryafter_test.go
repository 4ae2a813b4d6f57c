package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"120", 2 * time.Minute, true},
		{" 7\t", 7 * time.Second, true},
		{"9223372036", 9223372036 * time.Second, true},
		{"9223372037", maxDuration, true},
		{"99999999999999999999999999", maxDuration, true},
		{"Sun, 29 Nov 2026 10:01:30 GMT", 90 * time.Second, true},
		{"Sunday, 29-Nov-26 10:00:05 GMT", 5 * time.Second, true},
		{"Sun Nov 29 10:00:10 2026", 10 * time.Second, true},
		{"Sun, 29 Nov 2026 09:00:00 GMT", 0, true},
		{"", 0, false},
		{"  ", 0, false},
		{"-1", 0, false},
		{"+5", 0, false},
		{"1.5", 0, false},
		{"5s", 0, false},
		{"tomorrow", 0, false},
		{"2026-11-29T10:01:00Z", 0, false},
	} {
		d, ok := Parse(tc.in, now)
		if d != tc.want || ok != tc.ok {
			t.Errorf("Parse(%q) = %v, %v; want %v, %v", tc.in, d, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParse checks ParseRetryAfter against strconv and
// http.ParseTime: never negative, zero when refused, and exact for what
// either accepts.
func FuzzParse(f *testing.F) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, s := range []string{"0", "120", " 3 ", "-1", "1e3", "99999999999999999999",
		"Sun, 29 Nov 2026 10:01:30 GMT", "Sunday, 29-Nov-26 10:00:05 GMT", "Sun Nov 29 10:00:10 2026",
		"Thu, 01 Jan 1970 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT", "", "\x00", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		d, ok := Parse(in, now)
		if d < 0 {
			t.Fatalf("Parse(%q) = %v, negative", in, d)
		}
		if !ok && d != 0 {
			t.Fatalf("Parse(%q) = %v, false; want 0 when refused", in, d)
		}
		v := strings.Trim(in, " \t")
		if v != "" && strings.Trim(v, "0123456789") == "" {
			n, err := strconv.ParseUint(v, 10, 64)
			want := maxDuration
			if err == nil && n <= uint64(maxDuration/time.Second) {
				want = time.Duration(n) * time.Second
			}
			if !ok || d != want {
				t.Fatalf("Parse(%q) = %v, %v; want %v, true", in, d, ok, want)
			}
			return
		}
		if at, err := http.ParseTime(v); err == nil {
			want := max(at.Sub(now), 0)
			if !ok || d != want {
				t.Fatalf("Parse(%q) = %v, %v; want %v, true", in, d, ok, want)
			}
			return
		}
		if ok {
			t.Fatalf("Parse(%q) = %v, true; want it refused", in, d)
		}
	})
}
