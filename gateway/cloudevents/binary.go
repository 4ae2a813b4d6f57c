package cloudevents

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/clip"
)

// Interop: the CloudEvents Go SDK (v2.16.2) neither percent-encodes
// binary-mode header values nor decodes them (its issue 1331). Its values
// read the same here unless they hold '%', which this package decodes as
// the binding requires: "100%" is refused (a '%' not followed by two hex
// digits), "%41" reads "A". Non-ASCII text it sends as raw UTF-8 reads as
// sent.

// headerPrefix starts the name of a header that carries a context
// attribute in binary mode (matched case-insensitively).
const headerPrefix = "ce-"

// ceHeader is one ce-* header: the attribute name (lower-cased) and the
// values sent under it.
type ceHeader struct {
	name   string
	values []string
}

// decodeBinary reads a binary-mode request: ct is its Content-Type (the
// datacontenttype), the ce-* headers of h its other attributes, body its
// data. It is one event, judged on its own.
func decodeBinary(h http.Header, ct string, body []byte, lim *Limits) Decoded {
	dec := Decoded{Mode: Binary, Events: make([]Event, 1)}
	if r := readBinary(&dec.Events[0], h, ct, body, lim); r != nil {
		dec.Refused = []*Refusal{r}
	}
	return dec
}

func readBinary(ev *Event, h http.Header, ct string, body []byte, lim *Limits) *Refusal {
	b := &builder{ev: ev, lim: lim}
	// Bound the work before any of it: a header per attribute at most,
	// and the bytes an event's context may take, percent-encoded (three
	// bytes a byte at most).
	var hs []ceHeader
	raw, most := 0, coreAttributes+lim.MaxAttributes+1
	for k, vs := range h {
		if len(k) < len(headerPrefix) || !strings.EqualFold(k[:len(headerPrefix)], headerPrefix) {
			continue
		}
		if len(hs) == most {
			return &Refusal{Reason: ingestv1.Reason_SCHEMA_VIOLATION, Msg: fmt.Sprintf(
				"more than %d ce-* headers: an event holds at most %d extension attributes", most, lim.MaxAttributes)}
		}
		raw += len(k)
		for _, v := range vs {
			raw += len(v)
		}
		if raw > 3*lim.MaxContextBytes {
			return &Refusal{Reason: ingestv1.Reason_EVENT_TOO_LARGE, Msg: fmt.Sprintf(
				"ce-* headers over the limit of %d bytes of context attributes", lim.MaxContextBytes)}
		}
		hs = append(hs, ceHeader{name: lowerASCII(k[len(headerPrefix):]), values: vs})
	}
	// In name order, so that the first problem reported does not depend
	// on the map's order, and a name sent twice (in two letter cases) is
	// next to itself.
	sort.Slice(hs, func(i, j int) bool { return hs[i].name < hs[j].name })
	for i, c := range hs {
		field := clip.String(c.name, quoteMax)
		if len(c.values) > 1 || i > 0 && hs[i-1].name == c.name {
			b.malformed(field, "header "+quote(headerPrefix+c.name)+" appears more than once")
			continue
		}
		if len(c.values) == 0 {
			continue
		}
		v, problem := headerValue(c.values[0])
		if problem != "" {
			b.malformed(field, "header "+quote(headerPrefix+c.name)+": "+problem)
			continue
		}
		name := []byte(c.name)
		switch bit := coreBit(name); bit {
		case 0:
			if !b.badName(name) {
				b.extension(c.name, v, false, true)
			}
		case bitDataContentType:
			b.malformed("datacontenttype", "header ce-datacontenttype must not be sent: in binary mode Content-Type is the datacontenttype")
		case bitData, bitDataBase64:
			b.malformed(c.name, "header "+quote(headerPrefix+c.name)+": "+quote(c.name)+" is not an attribute: the body is the data")
		default:
			b.seen |= bit
			b.core(bit, v)
		}
	}
	if ct = strings.Trim(ct, " \t"); ct != "" {
		b.core(bitDataContentType, ct)
	}
	b.binaryModeData(body)
	return b.finish()
}

// lowerASCII lower-cases the ASCII letters of s.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// headerValue decodes a ce-* header's value as the binding says: a
// double-quoted string is unquoted first (RFC 7230, section 3.2.6), then
// one round of percent-decoding; what results must be UTF-8. problem says
// why the value cannot be decoded, or is "".
func headerValue(v string) (string, string) {
	v = strings.Trim(v, " \t")
	if strings.HasPrefix(v, `"`) {
		var b strings.Builder
		i := 1
		for ; i < len(v) && v[i] != '"'; i++ {
			if v[i] == '\\' {
				if i++; i == len(v) {
					break
				}
			}
			b.WriteByte(v[i])
		}
		switch {
		case i >= len(v):
			return "", "a quoted string without its closing quote"
		case i != len(v)-1:
			return "", "text after a quoted string's closing quote"
		}
		v = b.String()
	}
	if strings.IndexByte(v, '%') < 0 {
		if !utf8.ValidString(v) {
			return "", "not valid UTF-8"
		}
		return v, ""
	}
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '%' {
			out = append(out, c)
			continue
		}
		hi, ok1 := unhex(v, i+1)
		lo, ok2 := unhex(v, i+2)
		if !ok1 || !ok2 {
			return "", fmt.Sprintf("invalid percent-encoding at byte %d: %s", i, quote(v[i:min(i+3, len(v))]))
		}
		out = append(out, hi<<4|lo)
		i += 2
	}
	if !utf8.Valid(out) {
		return "", "percent-decoded, it is not valid UTF-8"
	}
	return string(out), ""
}

func unhex(s string, i int) (byte, bool) {
	if i >= len(s) {
		return 0, false
	}
	switch c := s[i]; {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
