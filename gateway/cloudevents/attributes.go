package cloudevents

import (
	"fmt"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/clip"
)

// What is checked, per event, by the spec:
//   - specversion must be exactly "1.0"; anything else is the event's
//     refusal whatever else is wrong with it, naming the version;
//   - id, source and type are required non-empty strings, subject and
//     dataschema non-empty when present; source must parse as a
//     URI-reference, dataschema as an absolute URI; time is an RFC 3339
//     date-time (checked by its grammar: time.Parse alone takes a one-digit
//     hour) within years 1 to 9999 in UTC, what occurred_at holds; a leap
//     second is refused;
//   - every String is UTF-8 without control characters or noncharacters;
//   - attribute names are lower-case ASCII letters and digits; "data" is
//     reserved; JSON null is unset;
//   - an extension's value is a string, a boolean (kept as true or false)
//     or an Integer: a JSON number of digits and an optional minus sign
//     within 32 bits (kept as its decimal digits); a fraction, an
//     exponent, an object or an array is refused;
//   - datacontenttype is a media type (type/subtype), with or without
//     data;
//   - data and data_base64 are not both present; data_base64 is base64
//     (standard alphabet, padded).

// The context attributes the spec defines, and the JSON format's data
// members, a bit each.
const (
	bitSpecVersion uint16 = 1 << iota
	bitID
	bitSource
	bitType
	bitTime
	bitSubject
	bitDataSchema
	bitDataContentType
	bitData       // JSON format only
	bitDataBase64 // JSON format only
)

// coreBit is the bit of a core attribute or data member, or 0 for an
// extension.
func coreBit(name []byte) uint16 {
	switch string(name) {
	case "specversion":
		return bitSpecVersion
	case "id":
		return bitID
	case "source":
		return bitSource
	case "type":
		return bitType
	case "time":
		return bitTime
	case "subject":
		return bitSubject
	case "dataschema":
		return bitDataSchema
	case "datacontenttype":
		return bitDataContentType
	case "data":
		return bitData
	case "data_base64":
		return bitDataBase64
	}
	return 0
}

// coreName is the name of a core attribute's bit.
func coreName(bit uint16) string {
	switch bit {
	case bitSpecVersion:
		return "specversion"
	case bitID:
		return "id"
	case bitSource:
		return "source"
	case bitType:
		return "type"
	case bitTime:
		return "time"
	case bitSubject:
		return "subject"
	case bitDataSchema:
		return "dataschema"
	case bitDataContentType:
		return "datacontenttype"
	case bitData:
		return "data"
	}
	return "data_base64"
}

// validName reports whether name is a CloudEvents attribute name: one or
// more lower-case ASCII letters and digits.
func validName(name []byte) bool {
	if len(name) == 0 {
		return false
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// textProblem says why s is not a CloudEvents String, or returns "": it
// must be UTF-8 without control characters (U+0000-U+001F,
// U+007F-U+009F) or noncharacters.
func textProblem(s string) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		if c < 0x80 {
			return fmt.Sprintf("control character U+%04X", c)
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return "not valid UTF-8"
		case r <= 0x9f:
			return fmt.Sprintf("control character U+%04X", r)
		case r >= 0xfdd0 && r <= 0xfdef, r&0xfffe == 0xfffe:
			return fmt.Sprintf("noncharacter U+%04X", r)
		}
		i += size
	}
	return ""
}

// builder gathers one event's attributes and its first problem, for every
// mode. Its setters check each attribute as it comes; finish checks what
// needs the whole event.
type builder struct {
	ev  *Event
	lim *Limits
	// first is the event's first problem; the rest are not reported.
	first *Refusal
	seen  uint16
	// exts counts extension attributes, partitionkey aside and nulls
	// included, up to one past lim.MaxAttributes.
	exts int
	// nulls are the extensions sent as null, kept for duplicate keys.
	nulls []string
	// ctx is the bytes of the context attributes kept, names and values.
	ctx int
}

func (b *builder) fail(reason ingestv1.Reason, field, msg string) {
	if b.first == nil {
		b.first = &Refusal{Reason: reason, Field: field, Msg: msg}
	}
}

func (b *builder) malformed(field, msg string) { b.fail(ingestv1.Reason_MALFORMED, field, msg) }

// room charges n context bytes; false, and the event refused, past
// lim.MaxContextBytes.
func (b *builder) room(n int) bool {
	b.ctx += n
	if b.ctx > b.lim.MaxContextBytes {
		b.fail(ingestv1.Reason_EVENT_TOO_LARGE, "", fmt.Sprintf(
			"context attributes over the limit of %d bytes", b.lim.MaxContextBytes))
		return false
	}
	return true
}

// core sets the core attribute of bit, not data or data_base64, to v, its
// text. (A JSON null never comes here: it is unset.)
func (b *builder) core(bit uint16, v string) {
	ev := b.ev
	if bit == bitSpecVersion {
		ev.SpecVersion = v // anything but 1.0 is refused in finish, quoted
		return
	}
	name := coreName(bit)
	if p := textProblem(v); p != "" {
		b.malformed(name, name+": "+p)
		return
	}
	switch bit {
	case bitTime:
		t, ok := parseTime(v)
		if !ok {
			b.malformed(name, "time: not an RFC 3339 time: "+quote(v))
			return
		}
		if y := t.UTC().Year(); y < 1 || y > 9999 {
			// What a protobuf Timestamp, and so occurred_at, holds.
			b.malformed(name, "time: "+quote(v)+" is out of range (years 1 to 9999 in UTC)")
			return
		}
		if b.room(len(name) + timeLen(t)) {
			ev.Time, ev.HasTime = t, true
		}
		return
	}
	if v == "" {
		b.malformed(name, name+": must be a non-empty string")
		return
	}
	switch bit {
	case bitSource:
		if _, err := url.Parse(v); err != nil {
			b.malformed(name, "source: not a URI-reference: "+quote(v))
			return
		}
	case bitDataSchema:
		if u, err := url.Parse(v); err != nil || !u.IsAbs() {
			b.malformed(name, "dataschema: not an absolute URI: "+quote(v))
			return
		}
	}
	if !b.room(len(name) + len(v)) {
		return
	}
	switch bit {
	case bitID:
		ev.ID = v
	case bitSource:
		ev.Source = v
	case bitType:
		ev.Type = v
	case bitSubject:
		ev.Subject = v
	case bitDataSchema:
		ev.DataSchema = v
	case bitDataContentType:
		ev.DataContentType = v
	}
}

// timeLen is the length of t as RecordHeaders writes it.
func timeLen(t time.Time) int {
	var buf [64]byte
	return len(t.AppendFormat(buf[:0], time.RFC3339Nano))
}

// badName refuses a name that cannot be an extension's: not a
// CloudEvents attribute name, the reserved "data", or longer than an
// attribute key. It reads name before it is copied, so that a huge one
// costs nothing.
func (b *builder) badName(name []byte) bool {
	switch {
	case !validName(name):
		b.malformed(clipName(name), fmt.Sprintf(
			"%s is not a CloudEvents attribute name: lower-case letters and digits only", quoteBytes(name)))
	case string(name) == "data":
		b.malformed("data", `"data" is reserved: it is not an attribute name`)
	case len(name) > maxAttributeKeyChars:
		b.fail(ingestv1.Reason_SCHEMA_VIOLATION, clipName(name), fmt.Sprintf(
			"extension %s: a name of %d characters is over the %d an attribute key holds", quoteBytes(name), len(name), maxAttributeKeyChars))
	default:
		return false
	}
	return true
}

// extension adds the extension name, which badName passed, with value v;
// null is the JSON format's unset. text says v is a String (to be
// checked), not an integer's or boolean's canonical form.
func (b *builder) extension(name string, v string, null, text bool) {
	field := name
	if _, dup := b.ev.Extensions[name]; dup || b.isNull(name) {
		b.malformed(field, "duplicate attribute "+quote(name))
		return
	}
	if name != PartitionKeyExtension {
		if b.exts++; b.exts > b.lim.MaxAttributes {
			b.exts = b.lim.MaxAttributes + 1
			b.fail(ingestv1.Reason_SCHEMA_VIOLATION, field, fmt.Sprintf(
				"more than %d extension attributes: each becomes an attribute, and an event holds at most %d", b.lim.MaxAttributes, b.lim.MaxAttributes))
			return
		}
	}
	if null {
		b.nulls = append(b.nulls, name)
		return
	}
	if text {
		if p := textProblem(v); p != "" {
			b.malformed(field, "extension "+quote(name)+": "+p)
			return
		}
	}
	limit := maxAttributeValueChars
	if name == PartitionKeyExtension {
		limit = maxPartitionKeyChars
	}
	if n := utf8.RuneCountInString(v); n > limit {
		what := "an attribute"
		if name == PartitionKeyExtension {
			what = "a partition key"
		}
		b.fail(ingestv1.Reason_SCHEMA_VIOLATION, field, fmt.Sprintf(
			"extension %s: a value of %d characters is over the %d %s holds", quote(name), n, limit, what))
		return
	}
	if !b.room(len(name) + len(v)) {
		return
	}
	if b.ev.Extensions == nil {
		b.ev.Extensions = make(map[string]string)
	}
	b.ev.Extensions[name] = v
}

func (b *builder) isNull(name string) bool {
	for _, n := range b.nulls {
		if n == name {
			return true
		}
	}
	return false
}

// clipName is a name, valid or not, for Refusal.Field: at most quoteMax
// bytes of UTF-8.
func clipName(name []byte) string { return clip.Bytes(name, quoteMax) }

// quoteBytes is quote of b, copying at most what it quotes.
func quoteBytes(b []byte) string { return fmt.Sprintf("%q", clip.Bytes(b, quoteMax)) }

// integer is the canonical string of a JSON number sent as an extension
// value: a CloudEvents Integer has no fraction or exponent and fits in
// 32 bits.
func integer(raw []byte) (string, bool) {
	for i, c := range raw {
		if !(c >= '0' && c <= '9' || c == '-' && i == 0) {
			return "", false
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 32)
	if err != nil {
		return "", false
	}
	return strconv.FormatInt(n, 10), true
}

// finish checks what needs the whole event: the spec version, the
// required attributes and the partition key. Data is the caller's, before.
// A specversion other than 1.0 is the refusal whatever else is wrong:
// nothing else of such an event is read as 1.0 would have it.
func (b *builder) finish() *Refusal {
	ev := b.ev
	switch {
	case ev.SpecVersion == "" && b.first != nil && b.first.Field == "specversion":
		return b.first // sent, but not readable as text
	case ev.SpecVersion == "":
		return &Refusal{Reason: ingestv1.Reason_MALFORMED, Field: "specversion", Msg: "specversion is required"}
	case ev.SpecVersion != "1.0":
		return &Refusal{Reason: ingestv1.Reason_MALFORMED, Field: "specversion", Msg: fmt.Sprintf(
			"specversion %s is not supported: sluice reads CloudEvents 1.0", quote(ev.SpecVersion))}
	}
	b.room(len("specversion") + len(ev.SpecVersion))
	for _, req := range [...]struct {
		bit uint16
		v   string
	}{{bitID, ev.ID}, {bitSource, ev.Source}, {bitType, ev.Type}} {
		if req.v == "" {
			b.malformed(coreName(req.bit), coreName(req.bit)+" is required")
		}
	}
	if pk, ok := ev.Extensions[PartitionKeyExtension]; ok {
		ev.PartitionKey = pk
	} else if ev.Subject != "" {
		if n := utf8.RuneCountInString(ev.Subject); n > maxPartitionKeyChars {
			b.fail(ingestv1.Reason_SCHEMA_VIOLATION, "subject", fmt.Sprintf(
				"subject: %d characters, over the %d a partition key holds; send a partitionkey extension to choose the key", n, maxPartitionKeyChars))
		}
		ev.PartitionKey = ev.Subject
	}
	return b.first
}

// parseTime reads an RFC 3339 date-time (section 5.6): time.Parse alone
// also takes what RFC 3339 does not, a one-digit hour or an offset hour
// of 24, and not what it does, a lower-case 't' or 'z'. A leap second
// (:60) is refused, as time.Parse refuses it.
func parseTime(s string) (time.Time, bool) {
	const shortest = len("2006-01-02T15:04:05Z")
	digits := func(i, n int) bool {
		for ; n > 0; i, n = i+1, n-1 {
			if i >= len(s) || s[i] < '0' || s[i] > '9' {
				return false
			}
		}
		return true
	}
	if len(s) < shortest || !digits(0, 4) || s[4] != '-' || !digits(5, 2) || s[7] != '-' || !digits(8, 2) ||
		s[10] != 'T' && s[10] != 't' || !digits(11, 2) || s[13] != ':' || !digits(14, 2) || s[16] != ':' || !digits(17, 2) {
		return time.Time{}, false
	}
	i := 19
	if s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i+1 {
			return time.Time{}, false
		}
		i = j
	}
	switch off := s[i:]; {
	case off == "Z" || off == "z":
	case len(off) == 6 && (off[0] == '+' || off[0] == '-') && digits(i+1, 2) && off[3] == ':' && digits(i+4, 2):
		if off[1:3] > "23" || off[4:6] > "59" {
			return time.Time{}, false
		}
	default:
		return time.Time{}, false
	}
	if s[10] == 't' || s[len(s)-1] == 'z' {
		b := []byte(s)
		b[10] = 'T'
		if b[len(b)-1] == 'z' {
			b[len(b)-1] = 'Z'
		}
		s = string(b)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}
