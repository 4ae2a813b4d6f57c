package contract

import (
	"strconv"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// The patterns of protovalidate's string formats. Each with no "loose"
// in its name admits exactly the strings the rule does; the others say
// less (wide) or more (narrow, for the sound twin). All are written in
// the portable subset portablePattern prints.
const (
	// The HTML standard's valid e-mail address, which string.email is.
	emailPattern = "^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
	// A hostname's labels: 1 to 63 letters, digits and inner hyphens,
	// separated by dots, and a dot at the end or not.
	hostnameLabels = `^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$`
	// Its last label is not digits only.
	hostnameLastLabel = `[A-Za-z-][0-9A-Za-z-]*\.?$`
	ipv4Pattern       = `^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$`
	// Every IPv6 address protovalidate reads is hex digits, colons and
	// dots with a colon among them, and a zone after a % or not.
	ipv6Loose = `^[0-9A-Fa-f.:]*:[0-9A-Fa-f.:]*(?:%[\s\S]+)?$`
	// The eight groups spelled out, a subset of what it reads.
	ipv6Full     = `^[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){7}$`
	uuidPattern  = `^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`
	tuuidPattern = `^[0-9A-Fa-f]{32}$`
	ulidPattern  = `^[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}$`
	// A scheme, then only the characters RFC 3986 allows.
	uriLoose = `^[A-Za-z][A-Za-z0-9+.\x2d]*:[A-Za-z0-9\x2d._~:/?#\[\]@!$&'()*+,;=%]*$`
	// https URIs of plain host names and paths, a subset of RFC 3986.
	uriNarrow = `^https://[a-z][a-z0-9]{0,30}(?:\.[a-z][a-z0-9]{0,30}){0,4}(?:/[A-Za-z0-9._~-]{1,32}){0,8}$`
)

// portable is p as portablePattern prints it: the patterns above are
// written for reading, and printed so that every engine reads them alike.
func portable(p string) string {
	out, ok := portablePattern(p)
	if !ok {
		panic("contract: a format pattern has no portable form: " + p)
	}
	return out
}

func hostnameSchema() *Schema {
	return &Schema{AllOf: []*Schema{
		{Pattern: portable(hostnameLabels)},
		{Pattern: portable(hostnameLastLabel)},
		{AnyOf: []*Schema{{MaxLength: ptr(uint64(253))}, {MaxLength: ptr(uint64(254)), Pattern: portable(`\.$`)}}},
	}}
}

func ipSchema(b *schemaBuilder) *Schema {
	return &Schema{AnyOf: []*Schema{{Pattern: portable(ipv4Pattern)}, b.pick(&Schema{Pattern: portable(ipv6Loose)}, &Schema{Pattern: portable(ipv6Full)})}}
}

// formatSchema is the schema of a string format rule of protovalidate's,
// and a description of it.
func (b *schemaBuilder) formatSchema(name string) (*Schema, string) {
	switch name {
	case "email":
		return &Schema{Pattern: portable(emailPattern)}, "An e-mail address as the HTML standard defines a valid one (string.email)."
	case "hostname":
		return hostnameSchema(), "A hostname (string.hostname)."
	case "ipv4":
		return &Schema{Pattern: portable(ipv4Pattern), Format: "ipv4"}, "An IPv4 address (string.ipv4)."
	case "ipv6":
		return b.pick(&Schema{Pattern: portable(ipv6Loose)}, &Schema{Pattern: portable(ipv6Full)}), "An IPv6 address, with a zone or not (string.ipv6)."
	case "ip":
		return ipSchema(b), "An IPv4 or IPv6 address (string.ip)."
	case "address":
		return &Schema{AnyOf: []*Schema{hostnameSchema(), ipSchema(b)}}, "A hostname or an IP address (string.address)."
	case "uuid":
		return &Schema{Pattern: portable(uuidPattern), Format: "uuid"}, "A UUID, in either case (string.uuid)."
	case "tuuid":
		return &Schema{Pattern: portable(tuuidPattern)}, "A UUID without hyphens (string.tuuid)."
	case "ulid":
		return &Schema{Pattern: portable(ulidPattern)}, "A ULID (string.ulid)."
	case "uri":
		return b.pick(&Schema{Pattern: portable(uriLoose)}, &Schema{Pattern: portable(uriNarrow)}), "An absolute URI, as RFC 3986 defines one (string.uri)."
	case "uri_ref":
		return b.pick(&Schema{}, &Schema{Pattern: portable(uriNarrow)}), "A URI reference, as RFC 3986 defines one (string.uri_ref)."
	}
	return b.pick(&Schema{}, &Schema{Nothing: true}), "Not stated here: rule string." + name + "."
}

// stringSchema is one string under typed (its string rules, or nil).
func (b *schemaBuilder) stringSchema(typed protoreflect.Message) *Schema {
	s := &Schema{Type: "string"}
	if typed == nil {
		return s
	}
	var all []*Schema
	var notes []string
	typed.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch name := string(fd.Name()); name {
		case "const":
			s.Const = v.String()
		case "len":
			s.MinLength, s.MaxLength = maxPtr(s.MinLength, v.Uint()), minPtr(s.MaxLength, v.Uint())
		case "min_len":
			s.MinLength = maxPtr(s.MinLength, v.Uint())
		case "max_len":
			s.MaxLength = minPtr(s.MaxLength, v.Uint())
		case "len_bytes", "min_bytes", "max_bytes":
			// UTF-8 takes one to four bytes a character: as many bytes
			// are at most as many characters and at least a quarter. The
			// twin takes ASCII, a byte a character, for exact lengths.
			n := v.Uint()
			lo, hi := (n+3)/4, n
			narrow := &Schema{}
			switch name {
			case "len_bytes":
				narrow.Pattern, narrow.MinLength, narrow.MaxLength = `^[\x00-\x7f]*$`, ptr(n), ptr(n)
			case "min_bytes":
				narrow.MinLength, hi = ptr(n), 0
			default:
				narrow.MaxLength, lo = ptr(n/4), 0
			}
			wide := &Schema{}
			if lo > 0 {
				wide.MinLength = ptr(lo)
			}
			if name != "min_bytes" {
				wide.MaxLength = ptr(hi)
			}
			all = append(all, b.pick(wide, narrow))
			notes = append(notes, "Its UTF-8 is "+map[string]string{"len_bytes": "exactly", "min_bytes": "at least", "max_bytes": "at most"}[name]+
				" "+v.String()+" bytes (string."+name+").")
		case "pattern":
			if p, ok := portablePattern(v.String()); ok {
				all = append(all, &Schema{Pattern: p})
			} else {
				all = append(all, b.unstated(&Schema{}, "pattern "+v.String()+", which no portable pattern says"))
			}
		case "prefix", "suffix", "contains", "not_contains":
			anchor := map[string]string{"prefix": "^", "suffix": "$"}[name]
			p, ok := quotedPattern(v.String(), anchor)
			switch {
			case !ok:
				all = append(all, b.unstated(&Schema{}, "rule string."+name))
			case name == "not_contains":
				all = append(all, &Schema{Not: &Schema{Pattern: p}})
			default:
				all = append(all, &Schema{Pattern: p})
			}
		case "in":
			s.Enum = stringList(v.List())
		case "not_in":
			all = append(all, &Schema{Not: &Schema{Enum: stringList(v.List())}})
		case "email", "hostname", "ip", "ipv4", "ipv6", "uri", "uri_ref", "address", "uuid", "tuuid",
			"ip_with_prefixlen", "ipv4_with_prefixlen", "ipv6_with_prefixlen", "ip_prefix", "ipv4_prefix", "ipv6_prefix",
			"host_and_port", "ulid":
			if !v.Bool() {
				break
			}
			f, note := b.formatSchema(name)
			all = append(all, f)
			notes = append(notes, note)
		case "well_known_regex":
			all = append(all, b.unstated(&Schema{}, "rule string.well_known_regex "+strconv.Itoa(int(v.Enum()))))
		case "strict", "example":
		default:
			all = append(all, b.unstated(&Schema{}, "rule "+string(fd.FullName())))
		}
		return true
	})
	if len(typed.GetUnknown()) > 0 {
		all = append(all, b.unstated(&Schema{}, "(unknown rule fields)"))
	}
	for _, p := range all {
		if p.Nothing {
			return &Schema{Nothing: true}
		}
	}
	// A lone pattern goes on s itself, for generators that read no allOf.
	var rest []*Schema
	for _, p := range all {
		switch {
		case p.Description != "" && p.Pattern == "" && p.Not == nil && p.AllOf == nil && p.AnyOf == nil && p.MinLength == nil && p.MaxLength == nil:
			notes = append(notes, p.Description)
		case s.Pattern == "" && p.Pattern != "" && p.Not == nil && p.AllOf == nil && p.AnyOf == nil && p.MinLength == nil && p.MaxLength == nil && p.Format == "":
			s.Pattern = p.Pattern
		case p.Pattern == "" && p.Not == nil && p.AllOf == nil && p.AnyOf == nil && p.Format == "" && (p.MinLength != nil || p.MaxLength != nil):
			if p.MinLength != nil {
				s.MinLength = maxPtr(s.MinLength, *p.MinLength)
			}
			if p.MaxLength != nil {
				s.MaxLength = minPtr(s.MaxLength, *p.MaxLength)
			}
		case p.Pattern == "" && p.Not == nil && p.AllOf == nil && p.AnyOf == nil && p.Format == "" && p.MinLength == nil && p.MaxLength == nil:
			// says nothing
		default:
			rest = append(rest, p)
		}
	}
	if len(rest) == 1 && rest[0].Format != "" && s.Pattern == "" && s.Format == "" {
		s.Pattern, s.Format = rest[0].Pattern, rest[0].Format
		rest = nil
	}
	s.AllOf = rest
	for _, n := range notes {
		s = described(s, n)
	}
	return s
}

func stringList(l protoreflect.List) []any {
	out := make([]any, l.Len())
	for i := range out {
		out[i] = l.Get(i).String()
	}
	return out
}
