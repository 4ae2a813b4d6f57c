package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven byte", 10, "eleven " + Marker},
		{"ab", 0, ""},
		{"abcdef", 2, "ab"},
		// "é" is two bytes: cutting at byte 5 would split it.
		{"abcdé" + "xyz", 7, "abcd" + Marker},
		{"a\xffb", 10, "a?b"},
		{"a\xff\xfebcdefgh", 7, "a??b" + Marker},
		{strings.Repeat("日", 10), 10, "日日" + Marker},
	} {
		got := String(tc.s, tc.max)
		if got != tc.want {
			t.Errorf("String(%q, %d) = %q, want %q", tc.s, tc.max, got, tc.want)
		}
	}
}

func TestBytes(t *testing.T) {
	if got := Bytes([]byte("abcdefghijklmnop"), 8); got != "abcde"+Marker {
		t.Errorf("Bytes = %q", got)
	}
	if got := Bytes(nil, 8); got != "" {
		t.Errorf("Bytes(nil) = %q", got)
	}
}

func FuzzString(f *testing.F) {
	f.Add("abcdé", 5)
	f.Add("\xff\xfe\xfd", 2)
	f.Add(strings.Repeat("日", 4), 4)
	f.Fuzz(func(t *testing.T, s string, max int) {
		max %= 4096
		got := String(s, max)
		if !utf8.ValidString(got) {
			t.Fatalf("String(%q, %d) = %q: not UTF-8", s, max, got)
		}
		if max >= 0 && len(got) > max {
			t.Fatalf("String(%q, %d) = %q: %d bytes", s, max, got, len(got))
		}
		if max > 0 && len(s) <= max && utf8.ValidString(s) && got != s {
			t.Fatalf("String(%q, %d) = %q: cut what fit", s, max, got)
		}
		if prefix, cut := strings.CutSuffix(got, Marker); cut && len(s) > max {
			if len(prefix) > len(s) {
				t.Fatalf("prefix %q longer than %q", prefix, s)
			}
		}
	})
}
