package strformat

// IsIP reports whether s is an IPv4 or an IPv6 address (see IsIPv4, IsIPv6).
func IsIP(s string) bool { return IsIPv4(s) || IsIPv6(s) }

// IsIPv4 reports whether s is an IPv4 address in dotted decimal: four
// decimal octets of 1 to 3 digits, 0 to 255, without leading zeros.
func IsIPv4(s string) bool {
	_, n, ok := parseIPv4(s)
	return ok && n == len(s)
}

// IsIPv6 reports whether s is an IPv6 address in the text forms of RFC 4291,
// optionally with a zone ("fe80::1%eth0", any non-empty zone). As
// protovalidate does, it accepts a single ":" before the zone when eight
// pieces precede it ("1:2:3:4:5:6:7:8:%z"), and an embedded IPv4 address
// after "::" whatever the number of pieces before it ("1:2:3:4:5:6:7::1.2.3.4").
func IsIPv6(s string) bool {
	a, ok := parseIPv6(s)
	return ok && a.end == len(s)
}

// IsIPWithPrefixLen reports whether s is an IPv4 or IPv6 address with a
// prefix length ("192.168.1.5/24"); host bits may be set.
func IsIPWithPrefixLen(s string) bool { return IsIPv6WithPrefixLen(s) || IsIPv4WithPrefixLen(s) }

// IsIPv4WithPrefixLen reports whether s is an IPv4 address, "/" and a prefix
// length 0 to 32 without leading zeros; host bits may be set.
func IsIPv4WithPrefixLen(s string) bool {
	_, _, ok := ipv4Prefix(s)
	return ok
}

// IsIPv6WithPrefixLen reports whether s is an IPv6 address without a zone,
// "/" and a prefix length 0 to 128 without leading zeros; host bits may be
// set.
func IsIPv6WithPrefixLen(s string) bool {
	_, _, ok := ipv6Prefix(s)
	return ok
}

// IsIPPrefix reports whether s is an IPv4 or IPv6 prefix: an address with a
// prefix length whose host bits are all zero ("192.168.1.0/24").
func IsIPPrefix(s string) bool { return IsIPv6Prefix(s) || IsIPv4Prefix(s) }

// IsIPv4Prefix reports whether s is an IPv4 prefix: IsIPv4WithPrefixLen with
// the host bits all zero.
func IsIPv4Prefix(s string) bool {
	bits, plen, ok := ipv4Prefix(s)
	if !ok {
		return false
	}
	return plen == 32 || bits<<plen == 0
}

// IsIPv6Prefix reports whether s is an IPv6 prefix: IsIPv6WithPrefixLen with
// the host bits all zero. An address written with an embedded IPv4 address
// that makes more than eight pieces has no bits protovalidate can compute,
// and it counts them as zero; so does this.
func IsIPv6Prefix(s string) bool {
	a, plen, ok := ipv6Prefix(s)
	if !ok {
		return false
	}
	hi, lo := a.bits()
	switch {
	case plen == 0:
		return hi == 0 && lo == 0
	case plen < 64:
		return hi<<plen == 0 && lo == 0
	case plen == 64:
		return lo == 0
	case plen < 128:
		return lo<<(plen-64) == 0
	}
	return true
}

// parseIPv4 reads a dotted-decimal address at the start of s and returns its
// value and the bytes it took.
func parseIPv4(s string) (bits uint32, n int, ok bool) {
	for octet := 0; octet < 4; octet++ {
		if octet > 0 {
			if n >= len(s) || s[n] != '.' {
				return 0, 0, false
			}
			n++
		}
		v, m, ok := decimal(s[n:], 3)
		if !ok || v > 255 {
			return 0, 0, false
		}
		bits = bits<<8 | uint32(v)
		n += m
	}
	return bits, n, true
}

// decimal reads the run of decimal digits at the start of s: it is valid when
// it is 1 to max digits long without a leading zero.
func decimal(s string, max int) (v, n int, ok bool) {
	for n < len(s) && isDigit(s[n]) {
		if n == max {
			return 0, 0, false
		}
		v = v*10 + int(s[n]-'0')
		n++
	}
	if n == 0 || (n > 1 && s[0] == '0') {
		return 0, 0, false
	}
	return v, n, true
}

func ipv4Prefix(s string) (bits uint32, plen uint, ok bool) {
	bits, n, ok := parseIPv4(s)
	if !ok || n >= len(s) || s[n] != '/' {
		return 0, 0, false
	}
	v, m, ok := decimal(s[n+1:], 2)
	if !ok || v > 32 || n+1+m != len(s) {
		return 0, 0, false
	}
	return bits, uint(v), true
}

func ipv6Prefix(s string) (a ipv6, plen uint, ok bool) {
	a, ok = parseIPv6(s)
	if !ok || a.zone || a.end >= len(s) || s[a.end] != '/' {
		return a, 0, false
	}
	v, m, ok := decimal(s[a.end+1:], 3)
	if !ok || v > 128 || a.end+1+m != len(s) {
		return a, 0, false
	}
	return a, uint(v), true
}

// ipv6 is an IPv6 address read by parseIPv6.
type ipv6 struct {
	pieces  [10]uint16 // up to 8 hex pieces, then the embedded IPv4's two
	n       int        // pieces used
	gap     int        // pieces before "::", or -1
	zone    bool       // a "%zone" took the rest of the string
	dotted  bool       // the last two pieces came from an embedded IPv4
	tooMany bool       // an embedded IPv4 made more than eight pieces
	end     int        // bytes read
}

// bits returns the address's 128 bits, or zeros when it has more than eight
// pieces (see IsIPv6Prefix).
func (a *ipv6) bits() (hi, lo uint64) {
	if a.tooMany || a.n > 8 {
		return 0, 0
	}
	var full [8]uint16
	if a.gap >= 0 {
		copy(full[:], a.pieces[:a.gap])
		tail := a.n - a.gap
		copy(full[8-tail:], a.pieces[a.gap:a.n])
	} else {
		if a.n != 8 {
			return 0, 0
		}
		copy(full[:], a.pieces[:8])
	}
	for i := 0; i < 4; i++ {
		hi = hi<<16 | uint64(full[i])
		lo = lo<<16 | uint64(full[i+4])
	}
	return hi, lo
}

// parseIPv6 reads an IPv6 address at the start of s, stopping at the first
// byte that cannot continue it (for a prefix, the "/"). It follows
// protovalidate's reading: an embedded IPv4 address is tried wherever "::"
// has been seen or six pieces have been read, and ends the address.
func parseIPv6(s string) (a ipv6, ok bool) {
	a.gap = -1
	i := 0
	for i < len(s) {
		if a.gap >= 0 || a.n == 6 {
			// A run of digits and dots of 7 bytes or more can only be an
			// embedded IPv4 address.
			j := i
			for j < len(s) && (isDigit(s[j]) || s[j] == '.') {
				j++
			}
			if j-i >= 7 {
				bits, m, ok4 := parseIPv4(s[i:j])
				if !ok4 || m != j-i {
					return a, false
				}
				if a.n > 8 {
					a.tooMany = true
				} else {
					a.pieces[a.n] = uint16(bits >> 16)
					a.pieces[a.n+1] = uint16(bits)
				}
				a.n += 2
				a.dotted = true
				a.end = j
				return a, true
			}
		}
		// A piece: 1 to 4 hex digits; a fifth is an error.
		j := i
		for j < len(s) && isHex(s[j]) {
			if j-i == 4 {
				return a, false
			}
			j++
		}
		if j > i {
			if a.n >= 8 {
				// more than eight pieces never parses; stop counting
				a.tooMany = true
			} else {
				a.pieces[a.n] = hexValue(s[i:j])
			}
			a.n++
			i = j
			continue
		}
		if s[i] == ':' {
			i++
			if i < len(s) && s[i] == ':' {
				i++
				if a.gap >= 0 {
					return a, false
				}
				a.gap = a.n
				if i < len(s) && s[i] == ':' {
					return a, false
				}
			} else if i == 1 || i == len(s) {
				// a single colon can neither start nor end the string
				return a, false
			}
			continue
		}
		if s[i] == '%' {
			if i+1 == len(s) {
				return a, false
			}
			a.zone = true
			i = len(s)
		}
		break
	}
	a.end = i
	if a.gap >= 0 {
		return a, a.n < 8
	}
	return a, a.n == 8
}

func hexValue(s string) uint16 {
	var v uint16
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c <= '9':
			c -= '0'
		default:
			c = c | 0x20 - 'a' + 10
		}
		v = v<<4 | uint16(c)
	}
	return v
}
