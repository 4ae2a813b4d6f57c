package strformat

// IsEmail reports whether s is an email address as the HTML standard defines a
// valid e-mail address: a local part of one or more of a-z A-Z 0-9 and
// .!#$%&'*+/=?^_`{|}~- then "@" then one or more dot-separated labels, each
// 1 to 63 letters, digits and hyphens that neither starts nor ends with a
// hyphen. Unlike a hostname the domain has no length limit and no trailing dot.
func IsEmail(s string) bool {
	at := -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '@' {
			at = i
			break
		}
		if !isEmailLocal(c) {
			return false
		}
	}
	if at <= 0 {
		return false
	}
	domain := s[at+1:]
	for {
		n := 0
		for n < len(domain) && domain[n] != '.' {
			n++
		}
		if !isLabel(domain[:n]) {
			return false
		}
		if n == len(domain) {
			return true
		}
		domain = domain[n+1:]
	}
}

func isEmailLocal(c byte) bool {
	if isAlnum(c) {
		return true
	}
	switch c {
	case '.', '!', '#', '$', '%', '&', '\'', '*', '+', '/', '=', '?', '^', '_', '`', '{', '|', '}', '~', '-':
		return true
	}
	return false
}

// isLabel reports whether l is 1 to 63 letters, digits and hyphens, not
// starting or ending with a hyphen.
func isLabel(l string) bool {
	if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		if c := l[i]; !isAlnum(c) && c != '-' {
			return false
		}
	}
	return true
}

// IsHostname reports whether s is a hostname: one or more dot-separated
// labels (1 to 63 letters, digits and hyphens, not starting or ending with a
// hyphen), the last not all digits, an optional trailing dot, and at most 253
// bytes without that dot.
func IsHostname(s string) bool {
	if len(s) > 0 && s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	if len(s) > 253 {
		return false
	}
	for {
		n := 0
		for n < len(s) && s[n] != '.' {
			n++
		}
		if !isLabel(s[:n]) {
			return false
		}
		if n == len(s) {
			return !allDigits(s)
		}
		s = s[n+1:]
	}
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// IsAddress reports whether s is a hostname or an IP address of either
// version.
func IsAddress(s string) bool { return IsHostname(s) || IsIP(s) }

// IsHostAndPort reports whether s is a host and a port: a hostname or an IPv4
// address, or an IPv6 address in square brackets (a zone allowed), then ":"
// and a decimal port 0 to 65535 without leading zeros. With portRequired
// false the ":" and port may be left out. protovalidate's host_and_port rule
// requires the port.
func IsHostAndPort(s string, portRequired bool) bool {
	if len(s) == 0 {
		return false
	}
	colon := lastIndexByte(s, ':')
	if s[0] == '[' {
		end := lastIndexByte(s, ']')
		switch {
		case end == len(s)-1:
			return !portRequired && IsIPv6(s[1:end])
		case end >= 0 && end+1 == colon:
			return IsIPv6(s[1:end]) && isPort(s[colon+1:])
		default:
			return false
		}
	}
	if colon < 0 {
		return !portRequired && (IsHostname(s) || IsIPv4(s))
	}
	host := s[:colon]
	return (IsHostname(host) || IsIPv4(host)) && isPort(s[colon+1:])
}

func isPort(s string) bool {
	if len(s) == 0 || len(s) > 5 || (len(s) > 1 && s[0] == '0') {
		return false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
		v = v*10 + int(s[i]-'0')
	}
	return v <= 65535
}

func lastIndexByte(s string, c byte) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// IsUUID reports whether s is a UUID in its 36-character text form: hex
// digits of either case in groups of 8-4-4-4-12 separated by hyphens. The
// version and variant bits are not checked.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !isHex(s[i]) {
				return false
			}
		}
	}
	return true
}

// IsTUUID reports whether s is a trimmed UUID: 32 hex digits of either case.
func IsTUUID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < 32; i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

// IsULID reports whether s is a ULID: 26 characters of Crockford's base32
// (digits and letters but I, L, O and U, either case), the first 0 to 7.
func IsULID(s string) bool {
	if len(s) != 26 || s[0] < '0' || s[0] > '7' {
		return false
	}
	for i := 1; i < 26; i++ {
		c := s[i] | 0x20 // lower-cases letters; digits are unchanged
		switch {
		case isDigit(s[i]):
		case c >= 'a' && c <= 'z' && c != 'i' && c != 'l' && c != 'o' && c != 'u':
		default:
			return false
		}
	}
	return true
}

// IsHTTPHeaderName reports whether s is an HTTP header name under
// well_known_regex KNOWN_REGEX_HTTP_HEADER_NAME. With strict (the rule's
// default) that is an optional ":" then one or more token characters
// (RFC 7230); without, any non-empty string without NUL, LF or CR.
func IsHTTPHeaderName(s string, strict bool) bool {
	if !strict {
		return isLooseHeader(s)
	}
	if len(s) > 0 && s[0] == ':' {
		s = s[1:]
	}
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}

// IsHTTPHeaderValue reports whether s is an HTTP header value under
// well_known_regex KNOWN_REGEX_HTTP_HEADER_VALUE. With strict (the rule's
// default) that is any string, empty included, without the control bytes
// 0x00-0x08, 0x0A-0x1F and 0x7F (so horizontal tab and bytes from 0x80 are
// allowed); without, any non-empty string without NUL, LF or CR.
func IsHTTPHeaderValue(s string, strict bool) bool {
	if !strict {
		return isLooseHeader(s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

func isLooseHeader(s string) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 0, '\n', '\r':
			return false
		}
	}
	return true
}

func isTokenChar(c byte) bool {
	if isAlnum(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '.', '-', '^', '_', '|', '~', '`':
		return true
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlpha(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }

func isHex(c byte) bool { return isDigit(c) || ((c|0x20) >= 'a' && (c|0x20) <= 'f') }
