package contract

import (
	"bytes"
	"math"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// The well-known types' JSON forms, read as protojson reads them. Their
// plans' fields are in number order (wellKnownOf checked the numbers).

// putInt writes an integer field of a well-known type.
func (d *transcoding) putInt(f *fieldPlan, v int64) {
	if v == 0 && f.implicit {
		return
	}
	d.out = append(d.out, f.tag...)
	d.out = appendInteger(d.out, f.kind, uint64(v))
}

// quoted reads a JSON string, the only form of several well-known types.
func (d *transcoding) quoted(p *msgPlan) (s []byte, start int, err error) {
	if d.next() != '"' {
		return nil, d.pos, d.fail("expected a string for " + p.name)
	}
	start = d.pos
	s, err = d.str()
	return s, start, err
}

func (d *transcoding) timestamp(p *msgPlan) error {
	s, start, err := d.quoted(p)
	if err != nil {
		return err
	}
	secs, nanos, ok := parseTimestamp(s)
	if !ok {
		d.pos = start
		return d.failf("invalid google.protobuf.Timestamp %q", s)
	}
	d.putInt(&p.fields[0], secs)
	d.putInt(&p.fields[1], int64(nanos))
	return nil
}

// parseTimestamp reads s as protojson does: time.Parse with RFC3339Nano,
// then the Timestamp's range and no more than nine fractional digits.
func parseTimestamp(s []byte) (int64, int32, bool) {
	secs, nanos, ok := rfc3339(s)
	if !ok {
		// time.Parse also takes forms the strict reading does not (a
		// one-digit hour, a comma before the fraction, offsets up to
		// 24:60); they are rare enough to pay for the string.
		t, err := time.Parse(time.RFC3339Nano, string(s))
		if err != nil {
			return 0, 0, false
		}
		secs, nanos = t.Unix(), int32(t.Nanosecond())
	}
	if secs < minTimestampSeconds || secs > maxTimestampSeconds {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(s, '.')
	j := bytes.LastIndexAny(s, "Z-+")
	if i >= 0 && j >= i && j-i > len(".999999999") {
		return 0, 0, false
	}
	return secs, nanos, true
}

// rfc3339 is time.Parse's own fast reading of RFC 3339: where it succeeds,
// time.Parse returns what it does.
func rfc3339(s []byte) (secs int64, nanos int32, ok bool) {
	ok = true
	num := func(b []byte, lo, hi int) int {
		x := 0
		for _, c := range b {
			if !jsonDigit(c) {
				ok = false
				return lo
			}
			x = x*10 + int(c-'0')
		}
		if x < lo || x > hi {
			ok = false
			return lo
		}
		return x
	}
	if len(s) < len("2006-01-02T15:04:05") {
		return 0, 0, false
	}
	year := num(s[0:4], 0, 9999)
	month := num(s[5:7], 1, 12)
	day := num(s[8:10], 1, daysIn(month, year))
	hour := num(s[11:13], 0, 23)
	minute := num(s[14:16], 0, 59)
	sec := num(s[17:19], 0, 59)
	if !ok || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return 0, 0, false
	}
	s = s[19:]
	if len(s) >= 2 && s[0] == '.' && jsonDigit(s[1]) {
		n := 2
		for n < len(s) && jsonDigit(s[n]) {
			n++
		}
		// Nine digits count; time.Parse drops the rest.
		digits := s[1:min(n, 10)]
		for _, c := range digits {
			nanos = nanos*10 + int32(c-'0')
		}
		for range 9 - len(digits) {
			nanos *= 10
		}
		s = s[n:]
	}
	offset := 0
	if len(s) != 1 || s[0] != 'Z' {
		if len(s) != len("-07:00") {
			return 0, 0, false
		}
		hh := num(s[1:3], 0, 23)
		mm := num(s[4:6], 0, 59)
		if !ok || s[0] != '-' && s[0] != '+' || s[3] != ':' {
			return 0, 0, false
		}
		offset = (hh*60 + mm) * 60
		if s[0] == '-' {
			offset = -offset
		}
	}
	secs = time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC).Unix() - int64(offset)
	return secs, nanos, true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func (d *transcoding) duration(p *msgPlan) error {
	s, start, err := d.quoted(p)
	if err != nil {
		return err
	}
	secs, nanos, ok := parseDuration(s)
	if !ok || secs < -maxDurationSeconds || secs > maxDurationSeconds {
		d.pos = start
		return d.failf("invalid google.protobuf.Duration %q", s)
	}
	d.putInt(&p.fields[0], secs)
	d.putInt(&p.fields[1], int64(nanos))
	return nil
}

// parseDuration reads s as protojson does: an optional sign, decimal
// seconds with at most nine fractional digits (either part may be
// missing, even both: ".s" is zero), and "s".
func parseDuration(s []byte) (secs int64, nanos int32, ok bool) {
	if len(s) < 2 || s[len(s)-1] != 's' {
		return 0, 0, false
	}
	b := s[:len(s)-1]
	neg := false
	switch b[0] {
	case '-':
		neg = true
		b = b[1:]
	case '+':
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, 0, false
	}
	var intp []byte
	switch {
	case b[0] == '0':
		b = b[1:]
	case '1' <= b[0] && b[0] <= '9':
		n := 1
		for n < len(b) && jsonDigit(b[n]) {
			n++
		}
		intp, b = b[:n], b[n:]
	case b[0] != '.':
		return 0, 0, false
	}
	if len(b) > 0 {
		if b[0] != '.' {
			return 0, 0, false
		}
		b = b[1:]
		n := 0
		for n < len(b) && n < 9 && jsonDigit(b[n]) {
			nanos = nanos*10 + int32(b[n]-'0')
			n++
		}
		if n < len(b) {
			return 0, 0, false
		}
		for range 9 - n {
			nanos *= 10
		}
	}
	if len(intp) > 0 {
		v, ok := decimalDigits(intp)
		if !ok || v > math.MaxInt64 {
			return 0, 0, false
		}
		secs = int64(v)
	}
	if neg {
		secs, nanos = -secs, -nanos
	}
	return secs, nanos, true
}

// value reads a google.protobuf.Value. An object or array in it is a
// Struct or ListValue that protojson reads without counting a message
// level; the Values within them count.
func (d *transcoding) value(p *msgPlan, depth int) error {
	c := d.next()
	start := d.pos
	switch {
	case c == 'n':
		if d.lit("null") {
			d.out = append(d.out, p.fields[0].tag...)
			d.out = append(d.out, 0)
			return nil
		}
	case c == 't' || c == 'f':
		if d.lit("true") || d.lit("false") {
			d.out = append(d.out, p.fields[3].tag...)
			d.out = append(d.out, bool01(c == 't'))
			return nil
		}
	case c == '"':
		s, err := d.str()
		if err != nil {
			return err
		}
		d.out = append(d.out, p.fields[2].tag...)
		d.out = protowire.AppendBytes(d.out, s)
		return nil
	case c == '-' || jsonDigit(c):
		raw, err := d.number()
		if err != nil {
			return err
		}
		v, perr := strconv.ParseFloat(string(raw), 64)
		if perr != nil {
			break
		}
		d.out = append(d.out, p.fields[1].tag...)
		d.out = protowire.AppendFixed64(d.out, math.Float64bits(v))
		return nil
	case c == '{' || c == '[':
		f := &p.fields[4]
		if c == '[' {
			f = &p.fields[5]
		}
		d.out = append(d.out, f.tag...)
		lenAt := len(d.out)
		d.out = append(d.out, 0)
		var err error
		if c == '{' {
			err = d.mapField(&f.msg.fields[0], depth)
		} else {
			err = d.listField(&f.msg.fields[0], depth)
		}
		d.out, _ = endLen(d.out, lenAt)
		return err
	}
	d.pos = start
	return d.fail("invalid value for google.protobuf.Value")
}

func bool01(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// fieldMask reads comma-separated lowerCamelCase paths and writes them in
// snake_case; protojson refuses a path with '_' or one whose snake_case
// is not a valid name.
func (d *transcoding) fieldMask(p *msgPlan) error {
	s, start, err := d.quoted(p)
	if err != nil {
		return err
	}
	s = bytes.TrimSpace(s)
	if len(s) == 0 {
		return nil
	}
	f := &p.fields[0]
	for {
		path, rest, more := bytes.Cut(s, []byte{','})
		if !camelPath(path) {
			d.pos = start
			return d.failf("invalid google.protobuf.FieldMask path %q", path)
		}
		n := len(path)
		for _, c := range path {
			if 'A' <= c && c <= 'Z' {
				n++
			}
		}
		d.out = append(d.out, f.tag...)
		d.out = protowire.AppendVarint(d.out, uint64(n))
		for _, c := range path {
			if 'A' <= c && c <= 'Z' {
				d.out = append(d.out, '_', c+'a'-'A')
			} else {
				d.out = append(d.out, c)
			}
		}
		if !more {
			return nil
		}
		s = rest
	}
}

// camelPath reports whether path, turned to snake_case, is a valid full
// name, and has no '_' of its own: dot-separated segments of ASCII letters
// and digits, each starting with a letter.
func camelPath(path []byte) bool {
	for {
		seg, rest, more := bytes.Cut(path, []byte{'.'})
		if len(seg) == 0 || jsonDigit(seg[0]) {
			return false
		}
		for _, c := range seg {
			if !jsonDigit(c) && !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') {
				return false
			}
		}
		if !more {
			return true
		}
		path = rest
	}
}

func (d *transcoding) empty() error {
	if d.next() != '{' {
		return d.fail("expected an object for google.protobuf.Empty")
	}
	if err := d.open(); err != nil {
		return err
	}
	if c := d.next(); c != '}' {
		if c != '"' {
			return d.fail("expected '}'")
		}
		if !d.skipUnknown {
			return d.fail("unknown field in google.protobuf.Empty")
		}
		// protojson's DiscardUnknown skips any member of an Empty, a
		// "[name]" too.
		for {
			if _, err := d.name(); err != nil {
				return err
			}
			if err := d.skipValue(); err != nil {
				return err
			}
			more, err := d.more('}')
			if err != nil || !more {
				return err
			}
		}
	}
	d.pos++
	d.depth--
	return nil
}
