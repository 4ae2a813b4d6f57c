package jsonscan

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// skipAll reads one value and the whitespace after it; ok is whether it
// was the whole input.
func skipAll(b []byte) (ok bool, err error) {
	sc := Scanner{Buf: b}
	if err := sc.Skip(); err != nil {
		return false, err
	}
	sc.Ws()
	return sc.Pos == len(b), nil
}

func TestSkip(t *testing.T) {
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	deepObject := strings.Repeat(`{"a":`, 10_000) + "1" + strings.Repeat("}", 10_000)
	for _, tc := range []struct {
		in   string
		ok   bool
		want string // a part of the error, when !ok
	}{
		{`{"a":[1,-2.5e+3,true,false,null,"x\u00e9\ud83d\ude00"],"b":{}}`, true, ""},
		{deep, true, ""},
		{deepObject, true, ""},
		{`[1,]`, false, `unexpected ']'`},
		{`{"a" 1}`, false, `want ':'`},
		{`{"a":1,}`, false, `want a string`},
		{`"\x"`, false, `invalid escape`},
		{`"\u12"`, false, `four hex digits`},
		{"\"a\x01\"", false, `control character`},
		{`01`, false, ``}, // a value, then data after it
		{`-`, false, `want a digit`},
		{`1.`, false, `want a digit`},
		{`1e`, false, `want a digit`},
		{`tru`, false, `want true`},
		{`[`, false, `end of input`},
		{``, false, `end of input`},
	} {
		ok, err := skipAll([]byte(tc.in))
		name := tc.in
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		if ok != tc.ok {
			t.Errorf("%s: ok %v (err %v), want %v", name, ok, err, tc.ok)
			continue
		}
		if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want one with %q", name, err, tc.want)
		}
		var se *SyntaxError
		if err != nil && !errors.As(err, &se) {
			t.Errorf("%s: error %T, want *SyntaxError", name, err)
		}
	}
}

func TestReadStringLone(t *testing.T) {
	for _, tc := range []struct {
		in   string
		lone bool
		text string
	}{
		{`"plain"`, false, "plain"},
		{`"\ud83d\ude00"`, false, "\U0001F600"},
		{`"\ud83d"`, true, "\uFFFD"},
		{`"\ude00"`, true, "\uFFFD"},
		{`"\ud83dx"`, true, "\uFFFDx"},
		{`"\ud83d\n"`, true, "\uFFFD\n"},
		{`"a\/b\"c"`, false, `a/b"c`},
	} {
		sc := Scanner{Buf: []byte(tc.in)}
		s, err := sc.ReadString()
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if s.Lone != tc.lone || sc.Text(s) != tc.text || string(sc.Key(s)) != tc.text {
			t.Errorf("%s: lone %v text %q key %q, want %v %q", tc.in, s.Lone, sc.Text(s), sc.Key(s), tc.lone, tc.text)
		}
	}
}

// FuzzSkip holds Skip to encoding/json: for UTF-8 input, one value and
// whitespace is accepted exactly when json.Valid accepts it.
func FuzzSkip(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"\ud800"`, `[1,]`, `-0.5e-7`, `{"a":1 "b":2}`, ` true `, `[[[[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8.Valid(b) {
			return
		}
		ok, _ := skipAll(b)
		if want := json.Valid(b); ok != want {
			t.Fatalf("Skip accepted %v, json.Valid %v: %q", ok, want, b)
		}
	})
}

// FuzzPlainRun holds plainRun, which tests eight bytes at a time, to the
// byte-by-byte loop it stands for, from every start.
func FuzzPlainRun(f *testing.F) {
	f.Add([]byte(`abcdefghijklmnop"q`))
	f.Add([]byte("caf\xc3\xa9 \x7f\xff\\n\x1f \x20\x21\x22\x5b\x5c\x5d"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for i := 0; i <= len(b); i++ {
			want := i
			for want < len(b) && b[want] >= 0x20 && b[want] != '"' && b[want] != '\\' {
				want++
			}
			if got := plainRun(b, i); got != want {
				t.Fatalf("plainRun(%q, %d) = %d, want %d", b, i, got, want)
			}
		}
	})
}
