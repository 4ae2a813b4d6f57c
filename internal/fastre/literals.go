package fastre

import (
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of the literal shapes: beyond them the DFA does better.
const (
	maxLiterals     = 32
	maxLiteralBytes = 1024
	maxClassRunes   = 4
)

// literals matches a finite set of strings. Comparing bytes is exact: the
// strings are valid UTF-8 without U+FFFD, so a run of input bytes equals one
// of them exactly when regexp's runes (invalid bytes read as U+FFFD) do, and
// a valid string's first byte is never a continuation byte, so a byte match
// starts on a rune boundary.
type literals struct {
	set        []string
	begin, end bool
}

func (l *literals) shape() string {
	switch {
	case l.begin && l.end:
		return ShapeLiterals
	case l.begin:
		return ShapePrefix
	case l.end:
		return ShapeSuffix
	}
	return ShapeContains
}

func (l *literals) match(s string) bool {
	for _, lit := range l.set {
		switch {
		case l.begin && l.end:
			if s == lit {
				return true
			}
		case l.begin:
			if strings.HasPrefix(s, lit) {
				return true
			}
		case l.end:
			if strings.HasSuffix(s, lit) {
				return true
			}
		default:
			if strings.Contains(s, lit) {
				return true
			}
		}
	}
	return false
}

// literalSet returns the strings body matches when they are few, or nil.
func literalSet(body *syntax.Regexp, begin, end bool) *literals {
	set, ok := language(body)
	if !ok {
		return nil
	}
	n := 0
	for _, s := range set {
		if strings.ContainsRune(s, utf8.RuneError) || !utf8.ValidString(s) {
			return nil
		}
		n += len(s)
	}
	if n > maxLiteralBytes {
		return nil
	}
	return &literals{set: set, begin: begin, end: end}
}

// language returns the strings re matches, when they are at most
// maxLiterals.
func language(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpLiteral:
		out := []string{""}
		for _, r := range re.Rune {
			alts := []rune{r}
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					alts = append(alts, f)
				}
			}
			out = product(out, runeStrings(alts))
			if out == nil {
				return nil, false
			}
		}
		return out, true
	case syntax.OpCharClass:
		var alts []rune
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(alts) == maxClassRunes {
					return nil, false
				}
				alts = append(alts, r)
			}
		}
		return runeStrings(alts), true
	case syntax.OpCapture:
		return language(re.Sub[0])
	case syntax.OpQuest:
		sub, ok := language(re.Sub[0])
		if !ok {
			return nil, false
		}
		return union([]string{""}, sub)
	case syntax.OpConcat:
		out := []string{""}
		for _, sub := range re.Sub {
			l, ok := language(sub)
			if !ok {
				return nil, false
			}
			if out = product(out, l); out == nil {
				return nil, false
			}
		}
		return out, true
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			l, ok := language(sub)
			if !ok {
				return nil, false
			}
			if out, ok = union(out, l); !ok {
				return nil, false
			}
		}
		return out, true
	}
	return nil, false
}

func runeStrings(rs []rune) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// product returns every a+b, or nil when they are too many.
func product(as, bs []string) []string {
	if len(as)*len(bs) > maxLiterals {
		return nil
	}
	out := make([]string, 0, len(as)*len(bs))
	for _, a := range as {
		for _, b := range bs {
			out = append(out, a+b)
		}
	}
	return out
}

func union(as, bs []string) ([]string, bool) {
	out := as
	for _, b := range bs {
		dup := false
		for _, a := range out {
			if a == b {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, b)
		}
	}
	return out, len(out) <= maxLiterals
}
