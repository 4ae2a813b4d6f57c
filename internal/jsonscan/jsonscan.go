package jsonscan

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Scanner reads JSON tokens from Buf[Pos:]. Its methods skip whitespace
// before a token (Peek), read exactly one token or value, leave Pos after
// it, and return a *SyntaxError where the input is not JSON. The zero
// value with Buf set is ready; a Scanner is not safe for concurrent use.
type Scanner struct {
	Buf []byte // the input, valid UTF-8
	Pos int    // the next byte to read
	// open has a bit for each container Skip has open: 1 object, 0
	// array. It stands in for recursion; its words are reused.
	open []uint64
	// scratch holds the last escaped key unescaped.
	scratch []byte
}

// SyntaxError is input that is not JSON, at a byte offset of Buf.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return "invalid JSON at offset " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// Str is a string token.
type Str struct {
	Raw     []byte // the text between the quotes, as sent
	Escaped bool   // raw has a backslash escape
	Lone    bool   // raw escapes a lone surrogate, so it is not Unicode text
}

// Text is s unescaped, a lone surrogate as U+FFFD.
func (sc *Scanner) Text(s Str) string {
	if !s.Escaped {
		return string(s.Raw)
	}
	return string(Unescape(nil, s.Raw))
}

// Key is s unescaped, valid until the next call: it may be the
// Scanner's scratch, which the next Key reuses.
func (sc *Scanner) Key(s Str) []byte {
	if !s.Escaped {
		return s.Raw
	}
	sc.scratch = Unescape(sc.scratch[:0], s.Raw)
	return sc.scratch
}

// Ws skips JSON whitespace.
func (sc *Scanner) Ws() { sc.Pos = SkipSpace(sc.Buf, sc.Pos) }

// SkipSpace returns the offset of the first byte at or after i that is
// not JSON whitespace, len(b) if there is none.
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Peek skips whitespace and returns the next byte, 0 at the end.
func (sc *Scanner) Peek() byte {
	if sc.Ws(); sc.Pos == len(sc.Buf) {
		return 0
	}
	return sc.Buf[sc.Pos]
}

// Unexpected is a *SyntaxError at Pos: what is there, and what was wanted
// instead.
func (sc *Scanner) Unexpected(want string) error {
	if sc.Pos >= len(sc.Buf) {
		return &SyntaxError{Offset: len(sc.Buf), Msg: "unexpected end of input, want " + want}
	}
	r, _ := utf8.DecodeRune(sc.Buf[sc.Pos:])
	return &SyntaxError{Offset: sc.Pos, Msg: fmt.Sprintf("unexpected %q, want %s", r, want)}
}

// Expect reads the byte c after whitespace, or returns Unexpected(want).
func (sc *Scanner) Expect(c byte, want string) error {
	if sc.Peek() != c {
		return sc.Unexpected(want)
	}
	sc.Pos++
	return nil
}

// Literal reads word (true, false or null) at Pos.
func (sc *Scanner) Literal(word string) error {
	if !HasLiteral(sc.Buf, sc.Pos, word) {
		return &SyntaxError{Offset: sc.Pos, Msg: "invalid literal, want " + word}
	}
	sc.Pos += len(word)
	return nil
}

// HasLiteral reports whether b holds word at i. What follows it is the
// caller's grammar.
func HasLiteral(b []byte, i int, word string) bool {
	return len(b)-i >= len(word) && string(b[i:i+len(word)]) == word
}

// ReadString reads a string token, checking its escapes and noting
// whether a \u escape is a lone surrogate. Buf is valid UTF-8 already (the
// caller checks it once, for the whole input).
func (sc *Scanner) ReadString() (Str, error) {
	if sc.Peek() != '"' {
		return Str{}, sc.Unexpected("a string")
	}
	start := sc.Pos + 1
	s, end, bad, at := scanString(sc.Buf, start, start, false) // ScanString without strict, a call less
	switch bad {
	case StrOK:
		sc.Pos = end
		return s, nil
	case StrUnterminated:
		sc.Pos = at
		return s, sc.Unexpected("'\"'")
	case StrEndsInEscape:
		sc.Pos = at + 1
		return s, sc.Unexpected("an escape")
	case StrControl:
		return s, &SyntaxError{Offset: at, Msg: fmt.Sprintf("control character %q in a string", sc.Buf[at])}
	case StrBadEscape:
		return s, &SyntaxError{Offset: at, Msg: fmt.Sprintf("invalid escape %q", sc.Buf[at:at+2])}
	}
	return s, &SyntaxError{Offset: at, Msg: "invalid \\u escape: want four hex digits"}
}

// StrProblem is why ScanString found no string token.
type StrProblem uint8

// ScanString's problems; each comes with the offset it names.
const (
	StrOK           StrProblem = iota
	StrUnterminated            // the input ends in the string: at len(b)
	StrEndsInEscape            // the input ends after a backslash: at the backslash
	StrControl                 // a control character: at it
	StrBadEscape               // a backslash before no escape letter: at the backslash
	StrBadHex                  // \u without four hex digits: at the backslash
	// Only with strict:
	StrBadUTF8       // bytes that are not UTF-8: at the first
	StrLoneSurrogate // a \u surrogate not followed by a \u escape: at its backslash
	StrBadSurrogates // a \u surrogate and a \u escape that are not a pair: at the first's backslash
)

// ScanString reads the string token whose opening quote is b[i], left to
// right: it returns the token and the offset after its closing quote, or
// the first problem and its offset. Without strict, b is valid UTF-8 (the
// caller checked it whole) and a \u surrogate not in a pair only sets
// Str.Lone; with strict, both are problems, as protojson refuses them.
func ScanString(b []byte, i int, strict bool) (s Str, end int, bad StrProblem, at int) {
	j := i + 1
	if strict {
		// A decoder held to protojson reads mostly names and short
		// values, plain ASCII: a byte at a time costs less for them than
		// setting up the runs scanString reads. (Without strict, strings
		// are more often a payload's text, skipped: runs pay.)
		if j = PlainEnd(b, j); j < len(b) && b[j] == '"' {
			return Str{Raw: b[i+1 : j]}, j + 1, StrOK, 0
		}
	}
	return scanString(b, i+1, j, strict)
}

// PlainEnd is the offset of the first byte at or after i that is not
// plain ASCII in a string (plainASCII), len(b) if there is none. A
// decoder may inline it to read a short plain string before calling
// ScanString.
func PlainEnd(b []byte, i int) int {
	for i < len(b) && plainASCII[b[i]] {
		i++
	}
	return i
}

// plainASCII holds the bytes a string holds as they are and that are
// UTF-8 by themselves: ASCII but for control characters, '"' and '\\'.
var plainASCII = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString is ScanString from i, b[start:i] being plain ASCII.
func scanString(b []byte, start, i int, strict bool) (s Str, end int, bad StrProblem, at int) {
	for {
		j := plainRun(b, i)
		if strict && !utf8.Valid(b[i:j]) {
			return s, 0, StrBadUTF8, firstInvalid(b, i)
		}
		if i = j; i == len(b) {
			return s, 0, StrUnterminated, i
		}
		switch b[i] {
		case '"':
			s.Raw = b[start:i]
			return s, i + 1, StrOK, 0
		case '\\':
		default:
			return s, 0, StrControl, i
		}
		s.Escaped = true
		if i+1 == len(b) {
			return s, 0, StrEndsInEscape, i
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
			continue
		case 'u':
		default:
			return s, 0, StrBadEscape, i
		}
		u, ok := Hex4(b[i+2:])
		if !ok {
			return s, 0, StrBadHex, i
		}
		if !utf16.IsSurrogate(u) {
			i += 6
			continue
		}
		// A surrogate is text only as the high half of a pair, its low
		// half the very next escape.
		low, ok := rune(0), false
		if i+8 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
			low, ok = Hex4(b[i+8:])
		}
		switch {
		case ok && utf16.DecodeRune(u, low) != utf8.RuneError:
			i += 12
			continue
		case !strict:
			s.Lone = true
			i += 6
			continue
		case !ok:
			return s, 0, StrLoneSurrogate, i
		}
		return s, 0, StrBadSurrogates, i
	}
}

// firstInvalid is the offset of the first byte at or after i that starts
// no UTF-8 sequence.
func firstInvalid(b []byte, i int) int {
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return i
}

// Hex4 reads four hex digits at the start of b.
func Hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Unescape appends the text of a string token that ReadString accepted to
// dst: escapes decoded, surrogate pairs combined, a lone surrogate as
// U+FFFD.
func Unescape(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			return append(dst, raw[i:]...)
		}
		dst = append(dst, raw[i:i+j]...)
		i += j
		c := raw[i+1]
		i += 2
		switch c {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := Hex4(raw[i:])
			i += 4
			if utf16.IsSurrogate(r) {
				low := utf8.RuneError
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					low, _ = Hex4(raw[i+2:])
				}
				if r = utf16.DecodeRune(r, low); r != utf8.RuneError {
					i += 6
				}
			}
			dst = utf8.AppendRune(dst, r)
		default: // '"', '\\', '/'
			dst = append(dst, c)
		}
	}
	return dst
}

// Number reads a number token at Pos, which holds '-' or a digit (Peek
// said so).
func (sc *Scanner) Number() error {
	b, i := sc.Buf, sc.Pos
	bad := func(i int) error {
		sc.Pos = i
		return sc.Unexpected("a digit")
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digitsEnd(b, i+1)
	default:
		return bad(i)
	}
	if i < len(b) && b[i] == '.' {
		j := digitsEnd(b, i+1)
		if j == i+1 {
			return bad(j)
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digitsEnd(b, i)
		if j == i {
			return bad(j)
		}
		i = j
	}
	sc.Pos = i
	return nil
}

// ProtojsonNumberLen is the length of the number token b starts with, as
// protojson's tokenizer reads one, for decoders held to protojson rather
// than RFC 8259: an 'e' is taken without digits when any byte follows it,
// and the number must not run into a letter, digit or one of "-+._". What
// it takes that is not a number is refused when its value is parsed.
func ProtojsonNumberLen(b []byte) (int, bool) {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digitsEnd(b, i+1)
	default:
		return 0, false
	}
	if i+1 < len(b) && b[i] == '.' && isDigit(b[i+1]) {
		i = digitsEnd(b, i+2)
	}
	if i+1 < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if b[i] == '+' || b[i] == '-' {
			i++
			if i == len(b) {
				return 0, false
			}
		}
		i = digitsEnd(b, i)
	}
	if i < len(b) && runsOn(b[i]) {
		return 0, false
	}
	return i, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digitsEnd is the offset of the first byte at or after i that is not an
// ASCII digit.
func digitsEnd(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

// runsOn reports whether c may not directly follow a number or literal
// for protojson.
func runsOn(c byte) bool {
	return c == '-' || c == '+' || c == '.' || c == '_' ||
		'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigit(c)
}

// Scalar reads a string, number, true, false or null.
func (sc *Scanner) Scalar() error {
	switch c := sc.Peek(); {
	case c == '"':
		_, err := sc.ReadString()
		return err
	case c == 't':
		return sc.Literal("true")
	case c == 'f':
		return sc.Literal("false")
	case c == 'n':
		return sc.Literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return sc.Number()
	}
	return sc.Unexpected("a value")
}

func (sc *Scanner) push(depth int, object bool) {
	w := depth / 64
	if w == len(sc.open) {
		sc.open = append(sc.open, 0)
	}
	if bit := uint64(1) << (depth % 64); object {
		sc.open[w] |= bit
	} else {
		sc.open[w] &^= bit
	}
}

func (sc *Scanner) isObject(depth int) bool {
	return sc.open[depth/64]&(1<<(depth%64)) != 0
}

// Problem is what SkipProtojson found wrong, at a byte offset of Buf,
// for the caller to word as protojson's readers do.
type Problem struct {
	Kind   ProblemKind
	Offset int
	Str    StrProblem // with BadString
	Close  byte       // with WantMore: '}' or ']'
}

func (p *Problem) Error() string {
	return fmt.Sprintf("JSON problem %d at offset %d", p.Kind, p.Offset)
}

// ProblemKind says what a Problem is.
type ProblemKind uint8

// SkipProtojson's problems.
const (
	BadValue  ProblemKind = iota // no value starts at Offset
	BadString                    // a string token ScanString refuses (strict), Str says why
	BadNumber                    // a number token ProtojsonNumberLen refuses
	WantName                     // no member name at Offset
	WantColon                    // no ':' after a member name
	WantMore                     // neither ',' nor Close after a member or element
	TooDeep                      // the container at Offset nests past the limit
)

// memberKey reads an object member's key and its ':'.
func (sc *Scanner) memberKey(pj bool) error {
	if !pj {
		if _, err := sc.ReadString(); err != nil {
			return err
		}
		return sc.Expect(':', "':'")
	}
	if sc.Peek() != '"' {
		return &Problem{Kind: WantName, Offset: sc.Pos}
	}
	if err := sc.strictString(); err != nil {
		return err
	}
	if sc.Peek() != ':' {
		return &Problem{Kind: WantColon, Offset: sc.Pos}
	}
	sc.Pos++
	return nil
}

// strictString reads the string token at Pos as protojson does.
func (sc *Scanner) strictString() error {
	_, end, bad, at := ScanString(sc.Buf, sc.Pos, true)
	if bad != StrOK {
		return &Problem{Kind: BadString, Offset: at, Str: bad}
	}
	sc.Pos = end
	return nil
}

// protojsonScalar reads a string, number, true, false or null as
// protojson's tokenizer does.
func (sc *Scanner) protojsonScalar() error {
	switch c := sc.Peek(); {
	case c == '"':
		return sc.strictString()
	case c == '-' || isDigit(c):
		n, ok := ProtojsonNumberLen(sc.Buf[sc.Pos:])
		if !ok {
			return &Problem{Kind: BadNumber, Offset: sc.Pos}
		}
		sc.Pos += n
		return nil
	}
	for _, word := range [...]string{"true", "false", "null"} {
		if HasLiteral(sc.Buf, sc.Pos, word) {
			sc.Pos += len(word)
			return nil
		}
	}
	return &Problem{Kind: BadValue, Offset: sc.Pos}
}

// Skip reads one value, checking only its syntax, to any depth: the
// containers open are kept a bit each in sc.open, not on the stack.
func (sc *Scanner) Skip() error { return sc.skip(false, 0) }

// SkipProtojson is Skip for a decoder held to protojson rather than RFC
// 8259: strings strict (ScanString's), numbers as ProtojsonNumberLen reads
// them, containers nested at most maxDepth deep (the value itself is
// depth 1), and what is wrong returned as a *Problem. Member names may
// repeat: a value skipped has no fields.
func (sc *Scanner) SkipProtojson(maxDepth int) error { return sc.skip(true, maxDepth) }

// skip is Skip, in protojson's dialect with pj.
func (sc *Scanner) skip(pj bool, maxDepth int) error {
	depth := 0
	for {
		// A value starts here.
		switch c := sc.Peek(); c {
		case '{', '[':
			if pj && depth >= maxDepth {
				return &Problem{Kind: TooDeep, Offset: sc.Pos}
			}
			sc.Pos++
			if close := c + 2; sc.Peek() == close { // '{'+2 is '}', '['+2 is ']'
				sc.Pos++
				break
			}
			sc.push(depth, c == '{')
			depth++
			if c == '{' {
				if err := sc.memberKey(pj); err != nil {
					return err
				}
			}
			continue
		default:
			var err error
			if pj {
				err = sc.protojsonScalar()
			} else {
				err = sc.Scalar()
			}
			if err != nil {
				return err
			}
		}
		// A value ended: close the containers it ends, or go on to the
		// next member or element.
		for {
			if depth == 0 {
				return nil
			}
			object := sc.isObject(depth - 1)
			c := sc.Peek()
			if c == ',' {
				sc.Pos++
				if object {
					if err := sc.memberKey(pj); err != nil {
						return err
					}
				}
				break
			}
			close := byte(']')
			if object {
				close = '}'
			}
			switch {
			case c == close:
				sc.Pos++
				depth--
			case pj:
				return &Problem{Kind: WantMore, Offset: sc.Pos, Close: close}
			default:
				return sc.Unexpected("',' or '" + string(close) + "'")
			}
		}
	}
}

// plainRun returns the index of the first byte at or after i that ends a
// run of plain string bytes: a control character, '"' or '\\'. It tests
// eight bytes at a time, as most of a payload is such a run.
func plainRun(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		quote, slash := x^(ones*'"'), x^(ones*'\\')
		// Each term has a high bit set in some byte iff a byte of x is
		// below 0x20, or equals '"' or '\\' (a zero byte of quote or
		// slash): the classic has-less and has-zero tests.
		if ((x-ones*0x20)&^x|(quote-ones)&^quote|(slash-ones)&^slash)&highs != 0 {
			break
		}
	}
	for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' {
		i++
	}
	return i
}
