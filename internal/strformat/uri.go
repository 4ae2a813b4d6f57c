package strformat

import "unicode/utf8"

// IsURI reports whether s is a URI as RFC 3986 defines one (scheme ":"
// hier-part, optional query and fragment), with IPv6 zones in host literals
// as RFC 6874 writes them ("[fe80::1%25eth0]"). A host's percent-encoded
// bytes must decode to valid UTF-8. As in protovalidate, an IPv6 literal
// with an embedded IPv4 address ("[::ffff:1.2.3.4]") is refused, and
// "IPvFuture" takes only a lower-case "v".
func IsURI(s string) bool {
	ok, _ := uriScan{s}.uri()
	return ok
}

// IsURIRef reports whether s is a URI reference: a URI or a relative
// reference ("./foo?bar", "//host/path", ""). protovalidate reads a URI's
// query or fragment that fails as the start of a relative reference, so
// "a:?//[::1]" is a URI reference although no RFC 3986 reading gives one;
// this does the same.
func IsURIRef(s string) bool {
	u := uriScan{s}
	ok, resume := u.uri()
	return ok || u.relativeRef(resume)
}

// uriScan checks RFC 3986 productions over s. Each method takes the index to
// start at and returns the index after the production, or -1 when it does not
// match there.
type uriScan struct{ s string }

// uri checks the whole string as a URI. When it fails in the query or the
// fragment, resume is the index after the "?" or "#"; otherwise 0.
func (u uriScan) uri() (ok bool, resume int) {
	j := u.scheme(0)
	if j < 0 {
		return false, 0
	}
	if j = u.hierPart(j + 1); j < 0 {
		return false, 0
	}
	if j < len(u.s) && u.s[j] == '?' {
		k := u.query(j + 1)
		if k < 0 {
			return false, j + 1
		}
		j = k
	}
	if j < len(u.s) && u.s[j] == '#' {
		k := u.fragment(j + 1)
		if k < 0 {
			return false, j + 1
		}
		j = k
	}
	return j == len(u.s), 0
}

func (u uriScan) relativeRef(i int) bool {
	j := u.relativePart(i)
	if j < 0 {
		return false
	}
	if j < len(u.s) && u.s[j] == '?' {
		if j = u.query(j + 1); j < 0 {
			return false
		}
	}
	if j < len(u.s) && u.s[j] == '#' {
		if j = u.fragment(j + 1); j < 0 {
			return false
		}
	}
	return j == len(u.s)
}

// scheme returns the index of the ":" that ends a scheme starting at i.
func (u uriScan) scheme(i int) int {
	if i >= len(u.s) || !isAlpha(u.s[i]) {
		return -1
	}
	j := i + 1
	for j < len(u.s) {
		c := u.s[j]
		if !isAlnum(c) && c != '+' && c != '-' && c != '.' {
			break
		}
		j++
	}
	if j < len(u.s) && u.s[j] == ':' {
		return j
	}
	return -1
}

func (u uriScan) hierPart(i int) int {
	if j := u.authorityPath(i); j >= 0 {
		return j
	}
	if j := u.pathAbsolute(i); j >= 0 {
		return j
	}
	if j := u.pathRootless(i); j >= 0 {
		return j
	}
	return u.pathEmpty(i)
}

func (u uriScan) relativePart(i int) int {
	if j := u.authorityPath(i); j >= 0 {
		return j
	}
	if j := u.pathAbsolute(i); j >= 0 {
		return j
	}
	if j := u.pathNoScheme(i); j >= 0 {
		return j
	}
	return u.pathEmpty(i)
}

// authorityPath checks "//" authority path-abempty.
func (u uriScan) authorityPath(i int) int {
	if i+1 >= len(u.s) || u.s[i] != '/' || u.s[i+1] != '/' {
		return -1
	}
	j := u.authority(i + 2)
	if j < 0 {
		return -1
	}
	return u.pathAbEmpty(j)
}

func (u uriScan) authority(i int) int {
	if j := u.userinfo(i); j >= 0 {
		i = j + 1 // the "@"
	}
	j := u.host(i)
	if j < 0 {
		return -1
	}
	if j < len(u.s) && u.s[j] == ':' {
		if j = u.port(j + 1); j < 0 {
			return -1
		}
	}
	if !u.authorityEnd(j) {
		return -1
	}
	return j
}

func (u uriScan) authorityEnd(i int) bool {
	return i >= len(u.s) || u.s[i] == '?' || u.s[i] == '#' || u.s[i] == '/'
}

func (u uriScan) pathEnd(i int) bool {
	return i >= len(u.s) || u.s[i] == '?' || u.s[i] == '#'
}

// userinfo returns the index of the "@" that ends a userinfo starting at i.
func (u uriScan) userinfo(i int) int {
	for {
		if j := u.unreservedPctSub(i); j >= 0 {
			i = j
			continue
		}
		if i < len(u.s) && u.s[i] == ':' {
			i++
			continue
		}
		break
	}
	if i < len(u.s) && u.s[i] == '@' {
		return i
	}
	return -1
}

func (u uriScan) host(i int) int {
	j := -1
	if i < len(u.s) && u.s[i] == '[' {
		j = u.ipLiteral(i)
	}
	if j < 0 {
		j = u.regName(i)
	}
	if j < 0 || !pctDecodesToUTF8(u.s[i:j]) {
		return -1
	}
	return j
}

// pctDecodesToUTF8 reports whether h, every "%" in it starting a valid
// triplet and every other byte ASCII, decodes to valid UTF-8.
func pctDecodesToUTF8(h string) bool {
	var buf [64]byte
	var dec []byte
	for i := 0; i < len(h); i++ {
		if h[i] != '%' {
			continue
		}
		// Decode the whole host only when it has a triplet.
		dec = buf[:0]
		for k := 0; k < len(h); {
			if h[k] == '%' {
				dec = append(dec, unhex(h[k+1])<<4|unhex(h[k+2]))
				k += 3
			} else {
				dec = append(dec, h[k])
				k++
			}
		}
		return utf8.Valid(dec)
	}
	return true
}

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c | 0x20 - 'a' + 10
}

func (u uriScan) port(i int) int {
	for i < len(u.s) && isDigit(u.s[i]) {
		i++
	}
	if u.authorityEnd(i) {
		return i
	}
	return -1
}

func (u uriScan) ipLiteral(i int) int {
	c := i + 1
	for _, lit := range [...]func(int) int{u.ipv6Address, u.ipv6AddressZone, u.ipvFuture} {
		if j := lit(c); j >= 0 && j < len(u.s) && u.s[j] == ']' {
			return j + 1
		}
	}
	return -1
}

// ipv6Address takes the run of hex digits and colons at i when it is an IPv6
// address (so never one with an embedded IPv4 address).
func (u uriScan) ipv6Address(i int) int {
	j := i
	for j < len(u.s) && (isHex(u.s[j]) || u.s[j] == ':') {
		j++
	}
	if IsIPv6(u.s[i:j]) {
		return j
	}
	return -1
}

// ipv6AddressZone checks IPv6address "%25" ZoneID.
func (u uriScan) ipv6AddressZone(i int) int {
	j := u.ipv6Address(i)
	if j < 0 || j+3 > len(u.s) || u.s[j:j+3] != "%25" {
		return -1
	}
	k := j + 3
	for {
		if n := u.unreserved(k); n >= 0 {
			k = n
		} else if n := u.pctEncoded(k); n >= 0 {
			k = n
		} else {
			break
		}
	}
	if k == j+3 {
		return -1
	}
	return k
}

// ipvFuture checks "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ).
func (u uriScan) ipvFuture(i int) int {
	if i >= len(u.s) || u.s[i] != 'v' {
		return -1
	}
	j := i + 1
	for j < len(u.s) && isHex(u.s[j]) {
		j++
	}
	if j == i+1 || j >= len(u.s) || u.s[j] != '.' {
		return -1
	}
	j++
	k := j
	for k < len(u.s) && (isUnreserved(u.s[k]) || isSubDelim(u.s[k]) || u.s[k] == ':') {
		k++
	}
	if k == j {
		return -1
	}
	return k
}

func (u uriScan) regName(i int) int {
	i = u.run(i, cUnreserved|cSubDelim)
	if u.authorityEnd(i) || u.s[i] == ':' {
		return i
	}
	return -1
}

func (u uriScan) pathAbEmpty(i int) int {
	for i < len(u.s) && u.s[i] == '/' {
		i = u.segment(i + 1)
	}
	if u.pathEnd(i) {
		return i
	}
	return -1
}

func (u uriScan) pathAbsolute(i int) int {
	if i >= len(u.s) || u.s[i] != '/' {
		return -1
	}
	i++
	if j := u.pchar(i); j >= 0 {
		i = u.pathAbEmpty0(u.segment(j))
	}
	if u.pathEnd(i) {
		return i
	}
	return -1
}

// pathAbEmpty0 takes *( "/" segment ) at i.
func (u uriScan) pathAbEmpty0(i int) int {
	for i < len(u.s) && u.s[i] == '/' {
		i = u.segment(i + 1)
	}
	return i
}

func (u uriScan) pathNoScheme(i int) int {
	j := i
	for {
		if k := u.unreservedPctSub(j); k >= 0 {
			j = k
			continue
		}
		if j < len(u.s) && u.s[j] == '@' {
			j++
			continue
		}
		break
	}
	if j == i {
		return -1
	}
	j = u.pathAbEmpty0(j)
	if u.pathEnd(j) {
		return j
	}
	return -1
}

func (u uriScan) pathRootless(i int) int {
	j := u.pchar(i)
	if j < 0 {
		return -1
	}
	j = u.pathAbEmpty0(u.segment(j))
	if u.pathEnd(j) {
		return j
	}
	return -1
}

func (u uriScan) pathEmpty(i int) int {
	if u.pathEnd(i) {
		return i
	}
	return -1
}

func (u uriScan) segment(i int) int {
	return u.run(i, cPchar)
}

// run takes bytes of the classes in mask and percent-encoded triplets.
func (u uriScan) run(i int, mask uint8) int {
	for i < len(u.s) {
		if uriClass[u.s[i]]&mask != 0 {
			i++
			continue
		}
		j := u.pctEncoded(i)
		if j < 0 {
			break
		}
		i = j
	}
	return i
}

func (u uriScan) query(i int) int {
	i = u.run(i, cQuery)
	if i == len(u.s) || u.s[i] == '#' {
		return i
	}
	return -1
}

func (u uriScan) fragment(i int) int {
	if u.run(i, cQuery) == len(u.s) {
		return len(u.s)
	}
	return -1
}

// pchar takes unreserved / pct-encoded / sub-delims / ":" / "@".
func (u uriScan) pchar(i int) int {
	if i < len(u.s) && uriClass[u.s[i]]&cPchar != 0 {
		return i + 1
	}
	return u.pctEncoded(i)
}

// unreservedPctSub takes unreserved / pct-encoded / sub-delims.
func (u uriScan) unreservedPctSub(i int) int {
	if i < len(u.s) && uriClass[u.s[i]]&(cUnreserved|cSubDelim) != 0 {
		return i + 1
	}
	return u.pctEncoded(i)
}

func (u uriScan) unreserved(i int) int {
	if i < len(u.s) && isUnreserved(u.s[i]) {
		return i + 1
	}
	return -1
}

func (u uriScan) pctEncoded(i int) int {
	if i+2 < len(u.s) && u.s[i] == '%' && isHex(u.s[i+1]) && isHex(u.s[i+2]) {
		return i + 3
	}
	return -1
}

// Byte classes of RFC 3986, as bits of uriClass.
const (
	cUnreserved = 1 << iota // ALPHA / DIGIT / "-" / "." / "_" / "~"
	cSubDelim               // "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="
	cPchar                  // unreserved / sub-delims / ":" / "@" (without pct-encoded)
	cQuery                  // pchar / "/" / "?" (without pct-encoded)
)

var uriClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		if isAlnum(b) || b == '-' || b == '.' || b == '_' || b == '~' {
			t[c] |= cUnreserved | cPchar | cQuery
		}
	}
	for _, b := range []byte("!$&'()*+,;=") {
		t[b] |= cSubDelim | cPchar | cQuery
	}
	t[':'] |= cPchar | cQuery
	t['@'] |= cPchar | cQuery
	t['/'] |= cQuery
	t['?'] |= cQuery
	return t
}()

func isUnreserved(c byte) bool { return uriClass[c]&cUnreserved != 0 }

func isSubDelim(c byte) bool { return uriClass[c]&cSubDelim != 0 }
