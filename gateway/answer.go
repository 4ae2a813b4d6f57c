package gateway

import (
	"strconv"
	"unicode/utf8"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// appendAnswer appends the REST form of resp to b: the compact text that
// answerJSON and json.Compact give, written without reflection, which
// cost a REST request more than checking its event. 64-bit integers are
// quoted, as protojson prints them. It reports false,
// having appended part of it, for a string that is not UTF-8, which
// protojson refuses to print. FuzzAnswerJSON holds the two to the same
// bytes, and must change with the messages.
func appendAnswer(b []byte, resp *ingestv1.PublishResponse) ([]byte, bool) {
	b = append(b, `{"results":[`...)
	for i, r := range resp.GetResults() {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendResult(b, r); !ok {
			return b, false
		}
	}
	return append(b, "]}"...), true
}

func appendResult(b []byte, r *ingestv1.EventResult) ([]byte, bool) {
	b = append(b, `{"index":`...)
	b = strconv.AppendUint(b, uint64(r.GetIndex()), 10)
	b = append(b, `,"id":`...)
	b, ok := appendJSONString(b, r.GetId())
	if !ok {
		return b, false
	}
	b = append(b, `,"outcome":`...)
	b = appendEnum(b, int32(r.GetOutcome()), ingestv1.Outcome_name)
	if r.Durability != nil {
		b = append(b, `,"durability":`...)
		b = appendEnum(b, int32(r.GetDurability()), ingestv1.Durability_name)
	}
	if rej := r.GetRejection(); rej != nil {
		b = append(b, `,"rejection":{"reason":`...)
		b = appendEnum(b, int32(rej.GetReason()), ingestv1.Reason_name)
		b = append(b, `,"retryable":`...)
		b = strconv.AppendBool(b, rej.GetRetryable())
		if d := rej.GetRetryAfter(); d != nil {
			if b, ok = appendDuration(b, d.GetSeconds(), d.GetNanos()); !ok {
				return b, false
			}
		}
		b = append(b, `,"violations":[`...)
		for i, v := range rej.GetViolations() {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"field":`...)
			for j, text := range [...]string{v.GetField(), v.GetRule(), v.GetMessage()} {
				b = append(b, [...]string{"", `,"rule":`, `,"message":`}[j]...)
				if b, ok = appendJSONString(b, text); !ok {
					return b, false
				}
			}
			b = append(b, '}')
		}
		b = append(b, `],"message":`...)
		if b, ok = appendJSONString(b, rej.GetMessage()); !ok {
			return b, false
		}
		if c := rej.GetConflict(); c != nil {
			b = append(b, `,"conflict":{"fingerprint":`...)
			if b, ok = appendJSONString(b, c.GetFingerprint()); !ok {
				return b, false
			}
			b = append(b, `,"accepted_fingerprint":`...)
			if b, ok = appendJSONString(b, c.GetAcceptedFingerprint()); !ok {
				return b, false
			}
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	switch {
	case r.GetKafka() != nil:
		k := r.GetKafka()
		b = append(b, `,"kafka":{"topic":`...)
		if b, ok = appendJSONString(b, k.GetTopic()); !ok {
			return b, false
		}
		b = append(b, `,"partition":`...)
		b = strconv.AppendInt(b, int64(k.GetPartition()), 10)
		b = append(b, `,"offset":"`...)
		b = strconv.AppendInt(b, k.GetOffset(), 10)
		b = append(b, `"}`...)
	case r.GetSpool() != nil:
		p := r.GetSpool()
		b = append(b, `,"spool":{"segment":"`...)
		b = strconv.AppendUint(b, p.GetSegment(), 10)
		b = append(b, `","offset":"`...)
		b = strconv.AppendInt(b, p.GetOffset(), 10)
		b = append(b, `"}`...)
	}
	return append(b, '}'), true
}

// appendEnum is an enum as protojson prints it: its name, or its number
// when it has none.
func appendEnum(b []byte, n int32, names map[int32]string) []byte {
	if name, ok := names[n]; ok {
		b = append(b, '"')
		b = append(b, name...)
		return append(b, '"')
	}
	return strconv.AppendInt(b, int64(n), 10)
}

// appendDuration is `,"retry_after":` and a google.protobuf.Duration as
// protojson prints it: seconds with 0, 3, 6 or 9 fractional digits. It
// reports false for one out of range, which protojson refuses.
func appendDuration(b []byte, secs int64, nanos int32) ([]byte, bool) {
	const maxSeconds = 315576000000
	if secs < -maxSeconds || secs > maxSeconds || nanos <= -1e9 || nanos >= 1e9 || secs > 0 && nanos < 0 || secs < 0 && nanos > 0 {
		return b, false
	}
	b = append(b, `,"retry_after":"`...)
	if secs < 0 || nanos < 0 {
		b = append(b, '-')
		secs, nanos = -secs, -nanos
	}
	b = strconv.AppendInt(b, secs, 10)
	if nanos != 0 {
		// 1e9+nanos, trailing zeros dropped three at a time, is "1" and
		// the fraction's digits: the "1" becomes the point.
		frac := int64(1e9 + nanos)
		for frac%1000 == 0 {
			frac /= 1000
		}
		point := len(b)
		b = strconv.AppendInt(b, frac, 10)
		b[point] = '.'
	}
	return append(b, `s"`...), true
}

// appendJSONString is a string as protojson prints it: `"` and `\`
// escaped, control characters as \b, \f, \n, \r, \t or \u00XX, nothing
// else. It reports false for a string that is not UTF-8.
func appendJSONString(b []byte, s string) ([]byte, bool) {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				return b, false
			}
			i += n
			continue
		}
		if c >= ' ' && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"'), true
}
