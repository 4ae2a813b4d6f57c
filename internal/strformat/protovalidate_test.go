package strformat

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// format is one well-known string rule: the field of the test message that
// carries it, the rule, and this package's check for it.
type format struct {
	field string
	rules *validate.StringRules
	check func(string) bool
}

func formats() []format {
	t := proto.Bool(true)
	f := proto.Bool(false)
	name := validate.KnownRegex_KNOWN_REGEX_HTTP_HEADER_NAME.Enum()
	value := validate.KnownRegex_KNOWN_REGEX_HTTP_HEADER_VALUE.Enum()
	return []format{
		{"email", validate.StringRules_builder{Email: t}.Build(), IsEmail},
		{"hostname", validate.StringRules_builder{Hostname: t}.Build(), IsHostname},
		{"ip", validate.StringRules_builder{Ip: t}.Build(), IsIP},
		{"ipv4", validate.StringRules_builder{Ipv4: t}.Build(), IsIPv4},
		{"ipv6", validate.StringRules_builder{Ipv6: t}.Build(), IsIPv6},
		{"uri", validate.StringRules_builder{Uri: t}.Build(), IsURI},
		{"uri_ref", validate.StringRules_builder{UriRef: t}.Build(), IsURIRef},
		{"address", validate.StringRules_builder{Address: t}.Build(), IsAddress},
		{"uuid", validate.StringRules_builder{Uuid: t}.Build(), IsUUID},
		{"tuuid", validate.StringRules_builder{Tuuid: t}.Build(), IsTUUID},
		{"ip_with_prefixlen", validate.StringRules_builder{IpWithPrefixlen: t}.Build(), IsIPWithPrefixLen},
		{"ipv4_with_prefixlen", validate.StringRules_builder{Ipv4WithPrefixlen: t}.Build(), IsIPv4WithPrefixLen},
		{"ipv6_with_prefixlen", validate.StringRules_builder{Ipv6WithPrefixlen: t}.Build(), IsIPv6WithPrefixLen},
		{"ip_prefix", validate.StringRules_builder{IpPrefix: t}.Build(), IsIPPrefix},
		{"ipv4_prefix", validate.StringRules_builder{Ipv4Prefix: t}.Build(), IsIPv4Prefix},
		{"ipv6_prefix", validate.StringRules_builder{Ipv6Prefix: t}.Build(), IsIPv6Prefix},
		{"host_and_port", validate.StringRules_builder{HostAndPort: t}.Build(), func(s string) bool { return IsHostAndPort(s, true) }},
		{"ulid", validate.StringRules_builder{Ulid: t}.Build(), IsULID},
		{"header_name", validate.StringRules_builder{WellKnownRegex: name}.Build(), func(s string) bool { return IsHTTPHeaderName(s, true) }},
		{"header_name_loose", validate.StringRules_builder{WellKnownRegex: name, Strict: f}.Build(), func(s string) bool { return IsHTTPHeaderName(s, false) }},
		{"header_value", validate.StringRules_builder{WellKnownRegex: value}.Build(), func(s string) bool { return IsHTTPHeaderValue(s, true) }},
		{"header_value_loose", validate.StringRules_builder{WellKnownRegex: value, Strict: f}.Build(), func(s string) bool { return IsHTTPHeaderValue(s, false) }},
	}
}

// oracle is protovalidate over a message with one string field per format,
// each carrying its rule.
type oracle struct {
	v    protovalidate.Validator
	desc protoreflect.MessageDescriptor
	fmts []format
}

var (
	oracleOnce sync.Once
	oracleVal  *oracle
	oracleErr  error
)

func newOracle(tb testing.TB) *oracle {
	tb.Helper()
	oracleOnce.Do(func() { oracleVal, oracleErr = buildOracle() })
	if oracleErr != nil {
		tb.Fatal(oracleErr)
	}
	return oracleVal
}

func buildOracle() (*oracle, error) {
	fmts := formats()
	msg := &descriptorpb.DescriptorProto{Name: proto.String("Formats")}
	for i, f := range fmts {
		fd := &descriptorpb.FieldDescriptorProto{
			Name:     proto.String(f.field),
			JsonName: proto.String(f.field),
			Number:   proto.Int32(int32(i + 1)),
			Type:     descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
			Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			Options:  new(descriptorpb.FieldOptions),
		}
		proto.SetExtension(fd.Options, validate.E_Field, validate.FieldRules_builder{String: f.rules}.Build())
		msg.Field = append(msg.Field, fd)
	}
	file, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:        proto.String("strformat/test/formats.proto"),
		Package:     proto.String("strformat.test"),
		Syntax:      proto.String("proto3"),
		Dependency:  []string{"buf/validate/validate.proto"},
		MessageType: []*descriptorpb.DescriptorProto{msg},
	}, protoregistry.GlobalFiles)
	if err != nil {
		return nil, err
	}
	v, err := protovalidate.New()
	if err != nil {
		return nil, err
	}
	return &oracle{v: v, desc: file.Messages().Get(0), fmts: fmts}, nil
}

// valid returns protovalidate's verdict on s for each format, in formats()
// order.
func (o *oracle) valid(tb testing.TB, s string) []bool {
	tb.Helper()
	m := dynamicpb.NewMessage(o.desc)
	fields := o.desc.Fields()
	for i := range o.fmts {
		m.Set(fields.Get(i), protoreflect.ValueOfString(s))
	}
	ok := make([]bool, len(o.fmts))
	for i := range ok {
		ok[i] = true
	}
	err := o.v.Validate(m)
	if err == nil {
		return ok
	}
	var verr *protovalidate.ValidationError
	if !errors.As(err, &verr) {
		tb.Fatalf("protovalidate: %v", err)
	}
	for _, v := range verr.Violations {
		f := v.FieldDescriptor
		if f == nil {
			tb.Fatalf("violation without a field: %v", v)
		}
		ok[f.Index()] = false
	}
	return ok
}

// FuzzFormats holds every IsX to protovalidate v1.4.0's verdict for the same
// string under the rule it implements.
func FuzzFormats(f *testing.F) {
	for _, s := range seeds() {
		f.Add(s)
	}
	o := newOracle(f)
	f.Fuzz(func(t *testing.T, s string) {
		want := o.valid(t, s)
		for i, fm := range o.fmts {
			if got := fm.check(s); got != want[i] {
				t.Errorf("%s(%q) = %v, protovalidate says %v", fm.field, s, got, want[i])
			}
		}
	})
}

// TestAgreesWithProtovalidate runs the seeds through the oracle, so the
// differential check runs under plain go test too.
func TestAgreesWithProtovalidate(t *testing.T) {
	o := newOracle(t)
	for _, s := range seeds() {
		want := o.valid(t, s)
		for i, fm := range o.fmts {
			if got := fm.check(s); got != want[i] {
				t.Errorf("%s(%q) = %v, protovalidate says %v", fm.field, s, got, want[i])
			}
		}
	}
}

func seeds() []string {
	l63, l64 := strings.Repeat("a", 63), strings.Repeat("b", 64)
	h253 := strings.Repeat(l63+".", 3) + strings.Repeat("c", 61)
	long := []string{
		l63, l64, l63 + ".com", l64 + ".com", "x@" + l63 + ".com", "x@" + l64 + ".com", h253, h253 + ".", h253 + "d", h253 + "d.",
		"x@" + h253 + "d", h253 + ":443", "http://" + h253 + "d/", strings.Repeat("1:", 9) + ":1", strings.Repeat("1:", 7) + "1",
		"fe80::1%" + l64, "::" + strings.Repeat("f", 64),
	}
	return append(long, []string{
		"", " ", ".", "a", "-", "0", "@", ":", "/", "?", "#", "%", "[", "]", "::", ":::",
		"foo@example.com", "a.b+c@x-y.example.org", "@example.com", "a@", "a@-b.com", "a@b-.com", "a@b..com", "a@b.com.",
		"foo.example.com", "foo.example.com.", "example", "123", "1.2.3.4", "a.123", "123.a", "-a.com", "a-.com", "xn--bcher-kva.example",
		"1.2.3.4", "255.255.255.255", "256.1.1.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "1.2.3.4 ", "0.0.0.0",
		"::1", "::", "1::", "::ffff:1.2.3.4", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:7::1.2.3.4",
		"fe80::1%eth0", "fe80::1%", "1:2:3:4:5:6:7:8:%z", ":1::", "1::2::3", "12345::", "1:2:3:4:5:6:7:8:/64", "::1.2.3",
		"1.2.3.4/24", "1.2.3.0/24", "1.2.3.4/32", "0.0.0.0/0", "1.2.3.4/33", "1.2.3.4/024", "1.2.3.4/", "::/0", "::1/128",
		"2001:db8::/32", "2001:db8::1/32", "fe80::1%eth0/64", "::/129", "::/01", "1:2:3:4:5:6:7::1.2.3.4/96", "::ffff:1.2.3.0/120",
		"https://example.com/foo/bar?baz=quux#frag", "http://[::1]:8080/", "http://[fe80::1%25eth0]/", "http://[v1.x]/", "http://[V1.x]/",
		"http://[::ffff:1.2.3.4]/", "http://a:b@c:1/", "http://%C3%A9.example/", "http://%C3%28.example/", "mailto:a@b", "urn:isbn:0451450523",
		"a:?//[::1]", "a:#//[::1]", "a:?%zz", "./foo/bar?query", "//host/path", "foo:bar", "1a:b", "a b", "http://a b/", "http://a:99999999/",
		"example.com:8080", "[::1]:80", "[::1]", "example.com", "1.2.3.4:0", "host:080", "host:65536", "host:", "[fe80::1%eth0]:443", ":80",
		"7f3c2a9e-5b1d-4c8e-9a6f-2d4b8e1c3f70", "7F3C2A9E-5B1D-4C8E-9A6F-2D4B8E1C3F70", "7f3c2a9e5b1d4c8e9a6f2d4b8e1c3f70", "7f3c2a9e-5b1d-4c8e-9a6f-2d4b8e1c3f7",
		"01ARZ3NDEKTSV4RRFFQ69G5FAV", "81ARZ3NDEKTSV4RRFFQ69G5FAV", "01ARZ3NDEKTSV4RRFFQ69G5FAI", "01arz3ndektsv4rrffq69g5fav",
		"Content-Type", ":authority", "bad header", "x\x00y", "tab\there", "line\nbreak", "cr\r", "del\x7f", "\xff\xfe", "é",
	}...)
}
