package contract

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// portablePattern rewrites an RE2 pattern (protovalidate's string.pattern
// dialect) into one that every engine a client may check a JSON Schema
// pattern with reads the same: ECMA-262 with the u flag (the dialect JSON
// Schema names), RE2, Rust's regex (pydantic) and Python's re. It parses
// the pattern and prints it back with only what those engines share:
//
//   - literals, with a syntax character escaped by a backslash (and no
//     other: ECMA's u flag refuses a needless escape), a control character
//     or the space as \xHH; in a class, & ~ | as \xHH too, since Rust and
//     Python read two of them in a row as a set operation;
//   - classes as explicit ranges, \d \w \s and (?i) spelled out in them,
//     and . as [^\n], where the engines' own classes differ;
//   - groups as (?:...), alternation, and the quantifiers * + ? {n,m};
//   - ^ and $ at the ends of the text.
//
// Python's $ also matches before a final newline; that only admits more.
// What has no such form (\b, (?m), a class or literal naming a surrogate)
// makes ok false: the pattern cannot be carried.
func portablePattern(p string) (string, bool) {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	if !printRegexp(&b, re) {
		return "", false
	}
	out := b.String()
	if len(out) > maxPatternBytes {
		return "", false
	}
	if _, err := regexp.Compile(out); err != nil {
		return "", false // a printing bug; say nothing rather than something wrong
	}
	return out, true
}

// maxPatternBytes bounds a printed pattern: \pL spelled out as ranges is
// long, and a description is read by people too.
const maxPatternBytes = 8 << 10

func printRegexp(b *strings.Builder, re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch:
		b.WriteString("(?:)")
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && foldable(r) {
				if !printClass(b, foldRanges(r)) {
					return false
				}
				continue
			}
			if !printLiteral(b, r) {
				return false
			}
		}
	case syntax.OpCharClass:
		return printClass(b, re.Rune)
	case syntax.OpAnyCharNotNL:
		b.WriteString(`[^\n]`)
	case syntax.OpAnyChar:
		b.WriteString(`[\s\S]`)
	case syntax.OpBeginText:
		b.WriteString("^")
	case syntax.OpEndText:
		b.WriteString("$")
	case syntax.OpCapture:
		b.WriteString("(?:")
		if !printRegexp(b, re.Sub[0]) {
			return false
		}
		b.WriteString(")")
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		if !printOperand(b, re.Sub[0]) {
			return false
		}
		switch re.Op {
		case syntax.OpStar:
			b.WriteString("*")
		case syntax.OpPlus:
			b.WriteString("+")
		case syntax.OpQuest:
			b.WriteString("?")
		default:
			switch {
			case re.Max == -1:
				fmt.Fprintf(b, "{%d,}", re.Min)
			case re.Min == re.Max:
				fmt.Fprintf(b, "{%d}", re.Min)
			default:
				fmt.Fprintf(b, "{%d,%d}", re.Min, re.Max)
			}
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpAlternate {
				b.WriteString("(?:")
				if !printRegexp(b, sub) {
					return false
				}
				b.WriteString(")")
			} else if !printRegexp(b, sub) {
				return false
			}
		}
	case syntax.OpAlternate:
		for i, sub := range re.Sub {
			if i > 0 {
				b.WriteString("|")
			}
			if !printRegexp(b, sub) {
				return false
			}
		}
	default: // OpNoMatch, OpBeginLine, OpEndLine, OpWordBoundary, OpNoWordBoundary
		return false
	}
	return true
}

// printOperand prints a quantifier's operand, grouped unless it is one
// character or class.
func printOperand(b *strings.Builder, re *syntax.Regexp) bool {
	single := re.Op == syntax.OpCharClass || re.Op == syntax.OpAnyChar || re.Op == syntax.OpAnyCharNotNL ||
		re.Op == syntax.OpLiteral && len(re.Rune) == 1
	if single {
		return printRegexp(b, re)
	}
	b.WriteString("(?:")
	if !printRegexp(b, re) {
		return false
	}
	b.WriteString(")")
	return true
}

// syntaxChars are escaped by a backslash outside a class, as every
// engine (and ECMA's u flag) allows.
const syntaxChars = `\^$.|?*+()[]{}`

// classChars are escaped by a backslash inside a class; classHex are
// written as \xHH there, since Rust and Python read two in a row as a set
// operation and ECMA's u flag refuses a backslash before them.
const (
	classChars = `\]-^[`
	classHex   = `&~|`
)

func printLiteral(b *strings.Builder, r rune) bool {
	switch {
	case r >= utf8.RuneSelf:
		return writeRune(b, r)
	case strings.ContainsRune(syntaxChars, r):
		b.WriteByte('\\')
		b.WriteRune(r)
	case r > ' ' && r < 0x7f:
		b.WriteRune(r)
	default: // controls and the space
		fmt.Fprintf(b, `\x%02x`, r)
	}
	return true
}

// printClass prints ranges (pairs lo, hi) as a class, or as the negation
// of their complement when that is shorter; all of them as [\s\S].
func printClass(b *strings.Builder, ranges []rune) bool {
	if len(ranges) == 2 && ranges[0] == 0 && ranges[1] == unicode.MaxRune {
		b.WriteString(`[\s\S]`)
		return true
	}
	if len(ranges) == 0 {
		return false // matches nothing
	}
	negate := false
	if comp := complement(ranges); len(comp) < len(ranges) || ranges[len(ranges)-1] == unicode.MaxRune && len(comp) > 0 {
		ranges, negate = comp, true
	}
	b.WriteByte('[')
	if negate {
		b.WriteByte('^')
	}
	for i := 0; i < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		isRange := hi > lo+1 // an endpoint is spelled \xHH, not escaped
		if !classRune(b, lo, isRange) {
			return false
		}
		if hi != lo {
			if isRange {
				b.WriteByte('-')
			}
			if !classRune(b, hi, isRange) {
				return false
			}
		}
	}
	b.WriteByte(']')
	return true
}

func classRune(b *strings.Builder, r rune, endpoint bool) bool {
	switch {
	case r >= utf8.RuneSelf:
		return writeRune(b, r)
	case endpoint && !asciiAlnum(byte(r)):
		fmt.Fprintf(b, `\x%02x`, r)
	case strings.ContainsRune(classChars, r):
		b.WriteByte('\\')
		b.WriteRune(r)
	case r > ' ' && r < 0x7f && !strings.ContainsRune(classHex, r):
		b.WriteRune(r)
	default:
		fmt.Fprintf(b, `\x%02x`, r)
	}
	return true
}

// writeRune writes a character past ASCII as itself; a surrogate has no
// UTF-8 form.
func writeRune(b *strings.Builder, r rune) bool {
	if r >= 0xd800 && r <= 0xdfff || r > unicode.MaxRune {
		return false
	}
	b.WriteRune(r)
	return true
}

// complement is the ranges of code points outside ranges (sorted pairs).
func complement(ranges []rune) []rune {
	var out []rune
	next := rune(0)
	for i := 0; i < len(ranges); i += 2 {
		if ranges[i] > next {
			out = append(out, next, ranges[i]-1)
		}
		next = ranges[i+1] + 1
	}
	if next <= unicode.MaxRune {
		out = append(out, next, unicode.MaxRune)
	}
	return out
}

func foldable(r rune) bool { return unicode.SimpleFold(r) != r }

// foldRanges is r and every rune it folds to, as sorted one-rune ranges.
func foldRanges(r rune) []rune {
	runes := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		runes = append(runes, f)
	}
	for i := 1; i < len(runes); i++ { // a few runes: insertion sort
		for j := i; j > 0 && runes[j] < runes[j-1]; j-- {
			runes[j], runes[j-1] = runes[j-1], runes[j]
		}
	}
	out := make([]rune, 0, 2*len(runes))
	for _, f := range runes {
		out = append(out, f, f)
	}
	return out
}

// quotedPattern is a pattern matching s literally: at the start when
// anchor is "^", at the end when it is "$", anywhere when it is "". Text
// that is not UTF-8 has no such pattern.
func quotedPattern(s, anchor string) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	var b strings.Builder
	if anchor == "^" {
		b.WriteString("^")
	}
	for _, r := range s {
		if !printLiteral(&b, r) {
			return "", false
		}
	}
	if anchor == "$" {
		b.WriteString("$")
	}
	return b.String(), true
}

func asciiAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
