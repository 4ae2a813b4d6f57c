package contract

import (
	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sluicehq/sluice/internal/fastre"
	"github.com/sluicehq/sluice/internal/strformat"
)

// compilePattern compiles a string's pattern rule with fastre, which
// matches the common shapes without the regexp engine and gives regexp's
// verdict (RE2, an unanchored search) for every expression.
func compilePattern(expr string) (valueCheck, error) {
	re, err := fastre.Compile(expr)
	if err != nil {
		return nil, errNotCompiled("pattern does not compile")
	}
	f := &ruleFail{rule: "string.pattern", msg: "does not match regex pattern `" + expr + "`"}
	return func(v protoreflect.Value) *ruleFail {
		if !re.MatchString(v.String()) {
			return f
		}
		return nil
	}, nil
}

// stringFormat is a well-known string format rule: the rules field that
// sets it, its check, and protovalidate's rule ids and messages. An empty
// value fails with the _empty rule, for every format but uri_ref.
type stringFormat struct {
	field    protoreflect.Name
	valid    func(string) bool
	rule     string
	msg      string
	emptyMsg string
}

var stringFormats = []stringFormat{
	{"email", strformat.IsEmail, "string.email", "must be a valid email address", "value is empty, which is not a valid email address"},
	{"hostname", strformat.IsHostname, "string.hostname", "must be a valid hostname", "value is empty, which is not a valid hostname"},
	{"ip", strformat.IsIP, "string.ip", "must be a valid IP address", "value is empty, which is not a valid IP address"},
	{"ipv4", strformat.IsIPv4, "string.ipv4", "must be a valid IPv4 address", "value is empty, which is not a valid IPv4 address"},
	{"ipv6", strformat.IsIPv6, "string.ipv6", "must be a valid IPv6 address", "value is empty, which is not a valid IPv6 address"},
	{"uri", strformat.IsURI, "string.uri", "must be a valid URI", "value is empty, which is not a valid URI"},
	{"uri_ref", strformat.IsURIRef, "string.uri_ref", "must be a valid URI Reference", ""},
	{"address", strformat.IsAddress, "string.address", "must be a valid hostname, or ip address", "value is empty, which is not a valid hostname, or ip address"},
	{"uuid", strformat.IsUUID, "string.uuid", "must be a valid UUID", "value is empty, which is not a valid UUID"},
	{"tuuid", strformat.IsTUUID, "string.tuuid", "must be a valid trimmed UUID", "value is empty, which is not a valid trimmed UUID"},
	{"ip_with_prefixlen", strformat.IsIPWithPrefixLen, "string.ip_with_prefixlen", "must be a valid IP prefix", "value is empty, which is not a valid IP prefix"},
	{"ipv4_with_prefixlen", strformat.IsIPv4WithPrefixLen, "string.ipv4_with_prefixlen", "must be a valid IPv4 address with prefix length", "value is empty, which is not a valid IPv4 address with prefix length"},
	{"ipv6_with_prefixlen", strformat.IsIPv6WithPrefixLen, "string.ipv6_with_prefixlen", "must be a valid IPv6 address with prefix length", "value is empty, which is not a valid IPv6 address with prefix length"},
	{"ip_prefix", strformat.IsIPPrefix, "string.ip_prefix", "must be a valid IP prefix", "value is empty, which is not a valid IP prefix"},
	{"ipv4_prefix", strformat.IsIPv4Prefix, "string.ipv4_prefix", "must be a valid IPv4 prefix", "value is empty, which is not a valid IPv4 prefix"},
	{"ipv6_prefix", strformat.IsIPv6Prefix, "string.ipv6_prefix", "must be a valid IPv6 prefix", "value is empty, which is not a valid IPv6 prefix"},
	{"host_and_port", func(s string) bool { return strformat.IsHostAndPort(s, true) }, "string.host_and_port", "must be a valid host (hostname or IP address) and port pair", "value is empty, which is not a valid host and port pair"},
	{"ulid", strformat.IsULID, "string.ulid", "must be a valid ULID", "value is empty, which is not a valid ULID"},
}

// compileStringFormat compiles a string's well-known format rule (set to
// true) or well_known_regex; it returns the check and the rules fields it
// covers. A format set to false is left to protovalidate, as its own
// native checks leave it to CEL.
func compileStringFormat(sr *validate.StringRules) (valueCheck, []protoreflect.Name, error) {
	m := sr.ProtoReflect()
	fields := m.Descriptor().Fields()
	for _, sf := range stringFormats {
		fd := fields.ByName(sf.field)
		if !m.Has(fd) {
			continue
		}
		if !m.Get(fd).Bool() {
			return nil, nil, errNotCompiled(string(sf.field) + " = false not compiled")
		}
		bad := &ruleFail{rule: sf.rule, msg: sf.msg}
		var empty *ruleFail
		if sf.emptyMsg != "" {
			empty = &ruleFail{rule: sf.rule + "_empty", msg: sf.emptyMsg}
		}
		valid := sf.valid
		return func(v protoreflect.Value) *ruleFail {
			s := v.String()
			if s == "" && empty != nil {
				return empty
			}
			if !valid(s) {
				return bad
			}
			return nil
		}, []protoreflect.Name{sf.field}, nil
	}
	if !sr.HasWellKnownRegex() {
		return nil, nil, errNotCompiled("string format not compiled")
	}
	strict := !sr.HasStrict() || sr.GetStrict()
	covers := []protoreflect.Name{"well_known_regex", "strict"}
	switch sr.GetWellKnownRegex() {
	case validate.KnownRegex_KNOWN_REGEX_HTTP_HEADER_NAME:
		empty := &ruleFail{rule: "string.well_known_regex.header_name_empty", msg: "value is empty, which is not a valid HTTP header name"}
		bad := &ruleFail{rule: "string.well_known_regex.header_name", msg: "must be a valid HTTP header name"}
		return func(v protoreflect.Value) *ruleFail {
			s := v.String()
			if s == "" {
				return empty
			}
			if !strformat.IsHTTPHeaderName(s, strict) {
				return bad
			}
			return nil
		}, covers, nil
	case validate.KnownRegex_KNOWN_REGEX_HTTP_HEADER_VALUE:
		bad := &ruleFail{rule: "string.well_known_regex.header_value", msg: "must be a valid HTTP header value"}
		return func(v protoreflect.Value) *ruleFail {
			if !strformat.IsHTTPHeaderValue(v.String(), strict) {
				return bad
			}
			return nil
		}, covers, nil
	}
	return nil, nil, errNotCompiled("well_known_regex " + sr.GetWellKnownRegex().String() + " not compiled")
}
