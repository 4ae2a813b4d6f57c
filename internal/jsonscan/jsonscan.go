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
func (sc *Scanner) Ws() {
	for sc.Pos < len(sc.Buf) {
		switch sc.Buf[sc.Pos] {
		case ' ', '\t', '\n', '\r':
			sc.Pos++
		default:
			return
		}
	}
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
	if !bytes.HasPrefix(sc.Buf[sc.Pos:], []byte(word)) {
		return &SyntaxError{Offset: sc.Pos, Msg: "invalid literal, want " + word}
	}
	sc.Pos += len(word)
	return nil
}

// ReadString reads a string token, checking its escapes and noting
// whether a \u escape is a lone surrogate. Buf is valid UTF-8 already (the
// caller checks it once, for the whole input).
func (sc *Scanner) ReadString() (Str, error) {
	if sc.Peek() != '"' {
		return Str{}, sc.Unexpected("a string")
	}
	b := sc.Buf
	start := sc.Pos + 1
	var s Str
	high := false // the last \u escape was a high surrogate, waiting for its low half
	for i := start; ; {
		j := plainRun(b, i)
		if j > i && high {
			s.Lone, high = true, false
		}
		if i = j; i == len(b) {
			sc.Pos = i
			return s, sc.Unexpected("'\"'")
		}
		switch b[i] {
		case '"':
			s.Lone = s.Lone || high
			s.Raw = b[start:i]
			sc.Pos = i + 1
			return s, nil
		case '\\':
		default:
			return s, &SyntaxError{Offset: i, Msg: fmt.Sprintf("control character %q in a string", b[i])}
		}
		s.Escaped = true
		if i+1 == len(b) {
			sc.Pos = i + 1
			return s, sc.Unexpected("an escape")
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.Lone = s.Lone || high
			high = false
			i += 2
			continue
		case 'u':
		default:
			return s, &SyntaxError{Offset: i, Msg: fmt.Sprintf("invalid escape %q", b[i:i+2])}
		}
		u, ok := hex4(b[i+2:])
		if !ok {
			return s, &SyntaxError{Offset: i, Msg: "invalid \\u escape: want four hex digits"}
		}
		i += 6
		switch {
		case u >= 0xd800 && u < 0xdc00:
			s.Lone = s.Lone || high
			high = true
		case u >= 0xdc00 && u < 0xe000:
			s.Lone = s.Lone || !high
			high = false
		default:
			s.Lone = s.Lone || high
			high = false
		}
	}
}

func hex4(b []byte) (rune, bool) {
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
			r, _ := hex4(raw[i:])
			i += 4
			if utf16.IsSurrogate(r) {
				low := utf8.RuneError
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					low, _ = hex4(raw[i+2:])
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
	digits := func(i int) int {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i
	}
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
		i = digits(i + 1)
	default:
		return bad(i)
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
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
		j := digits(i)
		if j == i {
			return bad(j)
		}
		i = j
	}
	sc.Pos = i
	return nil
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

// memberKey reads an object member's key and its ':'.
func (sc *Scanner) memberKey() error {
	if _, err := sc.ReadString(); err != nil {
		return err
	}
	return sc.Expect(':', "':'")
}

// Skip reads one value, checking only its syntax, to any depth: the
// containers open are kept a bit each in sc.open, not on the stack.
func (sc *Scanner) Skip() error {
	depth := 0
	for {
		// A value starts here.
		switch sc.Peek() {
		case '{':
			sc.Pos++
			if sc.Peek() == '}' {
				sc.Pos++
				break
			}
			sc.push(depth, true)
			depth++
			if err := sc.memberKey(); err != nil {
				return err
			}
			continue
		case '[':
			sc.Pos++
			if sc.Peek() == ']' {
				sc.Pos++
				break
			}
			sc.push(depth, false)
			depth++
			continue
		default:
			if err := sc.Scalar(); err != nil {
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
					if err := sc.memberKey(); err != nil {
						return err
					}
				}
				break
			}
			switch {
			case object && c == '}', !object && c == ']':
				sc.Pos++
				depth--
			case object:
				return sc.Unexpected("',' or '}'")
			default:
				return sc.Unexpected("',' or ']'")
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
