package cloudevents

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/jsonscan"
)

// The JSON event format, read strictly by RFC 8259 with the shared
// tokenizer (internal/jsonscan): what breaks the body's syntax refuses the
// request; what is wrong inside one event refuses that event, whose
// members are still read, for their syntax and for its id.

// jsonReader reads one structured or batch body.
type jsonReader struct {
	jsonscan.Scanner
	lim *Limits
	// at is the event being read, for a syntax error's message; -1
	// outside one.
	at int
}

// bodyProblem refuses a body that is not UTF-8 or starts with a byte
// order mark, before any of it is read.
func bodyProblem(body []byte) *Refusal {
	if !utf8.Valid(body) {
		return requestMalformed("", "body is not valid UTF-8")
	}
	if bytes.HasPrefix(body, []byte("\xef\xbb\xbf")) {
		return requestMalformed("", "body starts with a byte order mark")
	}
	return nil
}

// syntax is a whole-request refusal for a syntax error err.
func (d *jsonReader) syntax(err error) *Refusal {
	msg := err.Error()
	if d.at >= 0 {
		msg = "event " + strconv.Itoa(d.at) + ": " + msg
	}
	return requestMalformed("", msg)
}

// notA refuses a body whose top value is not want.
func (d *jsonReader) notA(want string) *Refusal {
	what := "not JSON"
	switch c := d.Peek(); {
	case c == 0:
		what = "empty"
	case c == '{':
		what = "an object"
	case c == '[':
		what = "an array"
	case c == '"':
		what = "a string"
	case c == 'n':
		what = "null"
	case c == 't' || c == 'f':
		what = "a boolean"
	case c == '-' || c >= '0' && c <= '9':
		what = "a number"
	}
	return requestMalformed("", "body is "+what+", want "+want)
}

// end refuses data after the top value.
func (d *jsonReader) end() *Refusal {
	if d.Ws(); d.Pos != len(d.Buf) {
		d.at = -1
		return d.syntax(&jsonscan.SyntaxError{Offset: d.Pos, Msg: "data after the top value"})
	}
	return nil
}

func decodeStructured(body []byte, lim *Limits) (Decoded, *Refusal) {
	if r := bodyProblem(body); r != nil {
		return Decoded{}, r
	}
	d := &jsonReader{Scanner: jsonscan.Scanner{Buf: body}, lim: lim, at: -1}
	if d.Peek() != '{' {
		return Decoded{}, d.notA("one CloudEvent, a JSON object")
	}
	dec := Decoded{Mode: Structured, Events: make([]Event, 1)}
	rej, err := d.event(&dec.Events[0])
	if err != nil {
		return Decoded{}, d.syntax(err)
	}
	if r := d.end(); r != nil {
		return Decoded{}, r
	}
	if rej != nil {
		dec.Refused = []*Refusal{rej}
	}
	return dec, nil
}

func decodeBatch(body []byte, lim *Limits) (Decoded, *Refusal) {
	if r := bodyProblem(body); r != nil {
		return Decoded{}, r
	}
	d := &jsonReader{Scanner: jsonscan.Scanner{Buf: body}, lim: lim, at: -1}
	if d.Peek() != '[' {
		return Decoded{}, d.notA("a batch of CloudEvents, a JSON array")
	}
	d.Pos++
	dec := Decoded{Mode: Batch}
	if d.Peek() == ']' {
		d.Pos++
		if r := d.end(); r != nil {
			return Decoded{}, r
		}
		return dec, nil
	}
	for {
		n := len(dec.Events)
		if n >= lim.MaxEvents {
			return Decoded{}, &Refusal{Reason: ingestv1.Reason_BATCH_TOO_LARGE,
				Msg: fmt.Sprintf("more than %d events in one request", lim.MaxEvents)}
		}
		d.at = n
		if n == cap(dec.Events) {
			c := min(max(2*n, 8), lim.MaxEvents)
			dec.Events = append(make([]Event, 0, c), dec.Events...)
			if dec.Refused != nil {
				dec.Refused = append(make([]*Refusal, 0, c), dec.Refused...)
			}
		}
		dec.Events = dec.Events[:n+1]
		var rej *Refusal
		if d.Peek() == '{' {
			var err error
			if rej, err = d.event(&dec.Events[n]); err != nil {
				return Decoded{}, d.syntax(err)
			}
		} else {
			if err := d.Skip(); err != nil {
				return Decoded{}, d.syntax(err)
			}
			rej = requestMalformed("", "event is not a JSON object")
		}
		if rej != nil && dec.Refused == nil {
			dec.Refused = make([]*Refusal, n, cap(dec.Events))
		}
		if dec.Refused != nil {
			dec.Refused = append(dec.Refused, rej)
		}
		d.at = -1
		switch d.Peek() {
		case ']':
			d.Pos++
			if r := d.end(); r != nil {
				return Decoded{}, r
			}
			return dec, nil
		case ',':
			d.Pos++
		default:
			return Decoded{}, d.syntax(d.Unexpected("',' or ']'"))
		}
	}
}

// event reads one event object, from its '{', into ev. err is a syntax
// error, which refuses the request; the refusal is the event's.
func (d *jsonReader) event(ev *Event) (*Refusal, error) {
	b := &builder{ev: ev, lim: d.lim}
	var data, b64 []byte
	d.Pos++
	if d.Peek() == '}' {
		d.Pos++
		return b.finish(), nil
	}
	for {
		k, err := d.ReadString()
		if err != nil {
			return nil, err
		}
		if err := d.Expect(':', "':'"); err != nil {
			return nil, err
		}
		if err := d.member(b, k, &data, &b64); err != nil {
			return nil, err
		}
		switch d.Peek() {
		case '}':
			d.Pos++
			b.jsonFormatData(data, b64)
			return b.finish(), nil
		case ',':
			d.Pos++
		default:
			return nil, d.Unexpected("',' or '}'")
		}
	}
}

// member reads the value of the member named k.
func (d *jsonReader) member(b *builder, k jsonscan.Str, data, b64 *[]byte) error {
	if k.Lone {
		b.malformed("", "a member name is not Unicode text: it has a lone surrogate")
		return d.Skip()
	}
	name := d.Key(k)
	bit := coreBit(name)
	if bit == 0 {
		return d.extension(b, name)
	}
	if b.seen&bit != 0 {
		b.malformed(coreName(bit), "duplicate member "+quote(coreName(bit)))
		return d.Skip()
	}
	b.seen |= bit
	switch bit {
	case bitData:
		start := d.Pos
		if err := d.Skip(); err != nil {
			return err
		}
		*data = d.Buf[start:d.Pos]
		return nil
	case bitDataBase64:
		switch d.Peek() {
		case 'n':
			return d.Literal("null") // unset
		case '"':
		default:
			b.malformed(fieldDataBase64, "data_base64: must be a string")
			return d.Skip()
		}
		s, err := d.ReadString()
		if err != nil {
			return err
		}
		switch {
		case s.Lone:
			b.malformed(fieldDataBase64, "data_base64: not Unicode text: a \\u escape is a lone surrogate")
		case s.Escaped:
			*b64 = jsonscan.Unescape(nil, s.Raw)
		default:
			*b64 = s.Raw[:len(s.Raw):len(s.Raw)] // read, never written
		}
		if *b64 == nil && !s.Lone {
			*b64 = []byte{}
		}
		return nil
	}
	v, ok, err := d.text(b, coreName(bit))
	if ok {
		b.core(bit, v)
	}
	return err
}

// text reads a string member's value; ok is false for null (unset) and
// for what the builder refused.
func (d *jsonReader) text(b *builder, name string) (string, bool, error) {
	switch d.Peek() {
	case 'n':
		return "", false, d.Literal("null")
	case '"':
		s, err := d.ReadString()
		if err != nil {
			return "", false, err
		}
		if s.Lone {
			b.malformed(name, name+": not Unicode text: a \\u escape is a lone surrogate")
			return "", false, nil
		}
		return d.Text(s), true, nil
	}
	b.malformed(name, name+": must be a string")
	return "", false, d.Skip()
}

// extension reads the value of an extension member named name (the
// scanner's scratch until the next Key).
func (d *jsonReader) extension(b *builder, raw []byte) error {
	if b.badName(raw) {
		return d.Skip()
	}
	name := string(raw)
	switch c := d.Peek(); {
	case c == 'n':
		if err := d.Literal("null"); err != nil {
			return err
		}
		b.extension(name, "", true, false)
	case c == 't' || c == 'f':
		v := "true"
		if c == 'f' {
			v = "false"
		}
		if err := d.Literal(v); err != nil {
			return err
		}
		b.extension(name, v, false, false)
	case c == '-' || c >= '0' && c <= '9':
		start := d.Pos
		if err := d.Number(); err != nil {
			return err
		}
		v, ok := integer(d.Buf[start:d.Pos])
		if !ok {
			b.malformed(name, fmt.Sprintf(
				"extension %s: %s is not a CloudEvents Integer (digits and an optional minus sign, -2147483648 to 2147483647)",
				quote(name), quoteBytes(d.Buf[start:d.Pos])))
			return nil
		}
		b.extension(name, v, false, false)
	case c == '"':
		s, err := d.ReadString()
		if err != nil {
			return err
		}
		if s.Lone {
			b.malformed(name, "extension "+quote(name)+": not Unicode text: a \\u escape is a lone surrogate")
			return nil
		}
		b.extension(name, d.Text(s), false, true)
	default:
		b.malformed(name, "extension "+quote(name)+": must be a string, an integer or a boolean")
		return d.Skip()
	}
	return nil
}
