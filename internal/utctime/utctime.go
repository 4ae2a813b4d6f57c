package utctime

import "time"

// Layout is the layout of Append, for time.Parse.
const Layout = "2006-01-02T15:04:05.000000000Z07:00"

// Append appends t in UTC as Layout formats it. Every record has
// two times, and the layout interpreter of time.Time.AppendFormat was a
// tenth of the gateway's cost per event; a year outside 0 to 9999 takes
// that path still. FuzzAppend holds the two to the same bytes.
func Append(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, Layout)
	}
	hour, min, sec := t.Clock()
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, min, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	b = append(b, '.')
	b = appendDigits(b, t.Nanosecond(), 9)
	return append(b, 'Z')
}

// appendDigits appends v, which is not negative, in exactly width digits.
func appendDigits(b []byte, v, width int) []byte {
	b = append(b, make([]byte, width)...)
	for i := len(b) - 1; i >= len(b)-width; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return b
}

// Format is Append to a new string.
func Format(t time.Time) string { return string(Append(make([]byte, 0, len(Layout)), t)) }
