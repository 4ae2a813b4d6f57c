package contract

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/jsonschematest"
)

const (
	logType      = "examples.logs.v1.LogLine"
	orderType    = "examples.shop.v1.OrderPlaced"
	profileType  = "examples.identity.v1.UserProfileUpdated"
	readmeLogTS  = "2026-12-01T10:00:00Z"
	orderPayload = `"order_id":"7c9e6679-7425-40de-944b-e07fc1f90ae7","items":[{"sku":"BOOK-0451","quantity":2,"unit_price_cents":1999}],` +
		`"currency":"EUR","shipping_address":{"line1":"12 Harbour Lane","city":"Lisbon","postal_code":"1100-148","country_code":"PT"},"payment_method":"PAYMENT_METHOD_CARD"`
)

// TestJSONSchemaAdmitsWhatTheContractTakes: payloads of the example
// contracts that CheckJSON accepts are valid under their schemas, as three
// real validators read them. The first is the README's first event, whose
// host is an IP address; then a Timestamp on each day past the 28th, an
// upper-case email, and protojson's other spellings of the same values.
func TestJSONSchemaAdmitsWhatTheContractTakes(t *testing.T) {
	r, err := Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	logLine := func(fields string) string {
		return `{"service":"checkout-api","severity":"SEVERITY_INFO","message":"hello",` + fields + `}`
	}
	order := func(fields string) string { return `{` + orderPayload + `,` + fields + `}` }
	profile := func(fields string) string {
		return `{"user_id":"0b3f9c1e-5a8d-4e2b-9f61-2c7d8e4a1b90","email":"grace@example.org","display_name":"Grace H.","locale":"en-GB","changed_fields":["display_name"],` + fields + `}`
	}
	for _, tc := range []struct{ name, typ, payload string }{
		{"the README's first event", logType, logLine(`"timestamp":"` + readmeLogTS + `","host":"127.0.0.1"`)},
		{"host an IPv6 address", logType, logLine(`"timestamp":"` + readmeLogTS + `","host":"::1"`)},
		{"host an IPv6 address with a zone", logType, logLine(`"timestamp":"` + readmeLogTS + `","host":"fe80::1%eth0"`)},
		{"host upper case, a trailing dot", logType, logLine(`"timestamp":"` + readmeLogTS + `","host":"Checkout-API.Internal."`)},
		{"host a long label", logType, logLine(`"timestamp":"` + readmeLogTS + `","host":"` + strings.Repeat("a", 63) + `.example"`)},
		{"the 29th", logType, logLine(`"timestamp":"2026-01-29T08:15:02Z","host":"h"`)},
		{"the 30th, nanoseconds", logType, logLine(`"timestamp":"2026-04-30T23:59:59.123456789Z","host":"h"`)},
		{"the 31st, an offset", logType, logLine(`"timestamp":"2026-12-31T10:00:00+02:00","host":"h"`)},
		{"a leap day", logType, logLine(`"timestamp":"2024-02-29T00:00:00Z","host":"h"`)},
		{"a one-digit hour, a comma", logType, logLine(`"timestamp":"2026-01-02T3:04:05,5Z","host":"h"`)},
		{"JSON names, numbers as strings, an enum by number", logType,
			`{"service":"s","severity":4,"message":"m","timestamp":"` + readmeLogTS + `","host":"h","traceId":"4bf92f3577b34da6a3ce929d0e0e4736","source":{"line":"212"}}`},
		{"null for absent", logType, logLine(`"timestamp":"` + readmeLogTS + `","host":"h","labels":null,"source":null,"trace_id":null`)},
		{"a message of 3000 characters", logType,
			`{"service":"s","severity":"SEVERITY_INFO","message":"` + strings.Repeat("x", 3000) + `","timestamp":"` + readmeLogTS + `","host":"h"}`},
		{"an upper-case email", orderType, order(`"customer":{"customer_id":"c1","email":"Ada.Lovelace@Example.COM"},"total_cents":5248`)},
		{"an email the HTML standard allows", orderType, order(`"customer":{"customer_id":"c1","email":"a..b+tag@localhost"},"total_cents":5248`)},
		{"int64 as a string, in JSON names", orderType, order(`"customer":{"customerId":"c1","email":"a@b.c"},"totalCents":"5248"`)},
		{"int64 with an exponent, an enum number", orderType,
			`{"order_id":"7c9e6679-7425-40de-944b-e07fc1f90ae7","customer":{"customer_id":"c1","email":"a@b.c"},"items":[{"sku":"BOOK-0451","quantity":"2"}],` +
				`"currency":"EUR","total_cents":5.248e3,"shipping_address":{"line1":"l","city":"c","postal_code":"12","country_code":"PT"},"paymentMethod":1}`},
		{"an upper-case UUID, a URN", profileType,
			`{"user_id":"0B3F9C1E-5A8D-4E2B-9F61-2C7D8E4A1B90","email":"grace@example.org","display_name":"G","locale":"en","changed_fields":["email"],"avatar_url":"urn:isbn:0451450523"}`},
		{"empty and null where the rule ignores zero", profileType, profile(`"phone":"","avatarUrl":null,"consent":null`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := r.Lookup(tc.typ)
			if _, err := c.CheckJSON([]byte(tc.payload)); err != nil {
				t.Fatalf("the contract refuses %s; the case is wrong: %v", tc.payload, err)
			}
			defs := map[string]*Schema{}
			root, err := c.JSONSchema(defs, "#/$defs/")
			if err != nil {
				t.Fatalf("JSONSchema: %v", err)
			}
			for _, v := range jsonschematest.Compile(t, SchemaDocument(t, root, defs), "") {
				if err := v.Validate([]byte(tc.payload)); err != nil {
					t.Errorf("the schema refuses %s, which the contract accepts: %v", shorten(tc.payload), err)
				}
			}
		})
	}
}

// shorten shortens a payload for a message.
func shorten(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

const ruledType = "test.rich.v1.Ruled"

// withRules sets a field's protovalidate rules.
func withRules(r *validate.FieldRules) fieldOpt {
	return func(f *descriptorpb.FieldDescriptorProto) {
		if f.Options == nil {
			f.Options = &descriptorpb.FieldOptions{}
		}
		proto.SetExtension(f.Options, validate.E_Field, r)
	}
}

// ruledFile is a proto3 message with a field for each kind of rule the
// schema maps, most of them ignoring their zero value so that a payload
// may set one at a time.
func ruledFile() *descriptorpb.FileDescriptorProto {
	zero := validate.Ignore_IGNORE_IF_ZERO_VALUE.Enum()
	str := func(b validate.StringRules_builder) *validate.FieldRules {
		return validate.FieldRules_builder{Ignore: zero, String: b.Build()}.Build()
	}
	t, f := proto.Bool(true), proto.Bool(false)
	msg := &descriptorpb.DescriptorProto{Name: proto.String("Ruled")}
	add := func(fs ...*descriptorpb.FieldDescriptorProto) { msg.Field = append(msg.Field, fs...) }
	add(
		field("host", 1, tString, "", withRules(str(validate.StringRules_builder{Address: t}))),
		field("hostname", 2, tString, "", withRules(str(validate.StringRules_builder{Hostname: t}))),
		field("email", 3, tString, "", withRules(str(validate.StringRules_builder{Email: t}))),
		field("uuid", 4, tString, "", withRules(str(validate.StringRules_builder{Uuid: t}))),
		field("uri", 5, tString, "", withRules(str(validate.StringRules_builder{Uri: t}))),
		field("ip", 6, tString, "", withRules(str(validate.StringRules_builder{Ip: t}))),
		field("ipv4", 7, tString, "", withRules(str(validate.StringRules_builder{Ipv4: t}))),
		field("ipv6", 8, tString, "", withRules(str(validate.StringRules_builder{Ipv6: t}))),
		field("tuuid", 9, tString, "", withRules(str(validate.StringRules_builder{Tuuid: t}))),
		field("ulid", 10, tString, "", withRules(str(validate.StringRules_builder{Ulid: t}))),
		field("text", 11, tString, "", withRules(str(validate.StringRules_builder{MinLen: proto.Uint64(2), MaxBytes: proto.Uint64(8)}))),
		field("pat", 12, tString, "", withRules(str(validate.StringRules_builder{Pattern: proto.String(`^(?i)ab.\d+\s?$`)}))),
		field("pre", 13, tString, "", withRules(str(validate.StringRules_builder{Prefix: proto.String("a."), Suffix: proto.String("$z"), Contains: proto.String("|")}))),
		field("in_str", 14, tString, "", withRules(str(validate.StringRules_builder{In: []string{"x", "y"}}))),
		field("ts", 15, tMessage, wkt+"Timestamp", withRules(validate.FieldRules_builder{Required: t}.Build())),
		field("dur", 16, tMessage, wkt+"Duration"),
		field("i64", 17, tInt64, "", withRules(validate.FieldRules_builder{Int64: validate.Int64Rules_builder{Gte: proto.Int64(-5), Lte: proto.Int64(1000)}.Build()}.Build())),
		field("u32", 18, tUint32, "", withRules(validate.FieldRules_builder{Ignore: zero, Uint32: validate.UInt32Rules_builder{Gt: proto.Uint32(0)}.Build()}.Build())),
		field("f", 19, tFloat, "", withRules(validate.FieldRules_builder{Ignore: zero, Float: validate.FloatRules_builder{Gte: proto.Float32(0.1), Lt: proto.Float32(10)}.Build()}.Build())),
		field("d", 20, tDouble, ""),
		field("d2", 21, tDouble, "", withRules(validate.FieldRules_builder{Ignore: zero, Double: validate.DoubleRules_builder{Gt: proto.Float64(0), Finite: t}.Build()}.Build())),
		field("color", 22, tEnum, colorEnum, withRules(validate.FieldRules_builder{Ignore: zero, Enum: validate.EnumRules_builder{DefinedOnly: t, NotIn: []int32{0}}.Build()}.Build())),
		field("open_color", 23, tEnum, colorEnum),
		field("by", 24, tBytes, ""),
		field("tags", 25, tString, "", repeated, withRules(validate.FieldRules_builder{Repeated: validate.RepeatedRules_builder{
			Unique: t, MaxItems: proto.Uint64(3), Items: validate.FieldRules_builder{String: validate.StringRules_builder{MinLen: proto.Uint64(1)}.Build()}.Build()}.Build()}.Build())),
		field("a", 28, tString, "", inOneof(0)), field("b", 29, tInt32, "", inOneof(0)),
		field("req", 30, tString, "", withRules(validate.FieldRules_builder{String: validate.StringRules_builder{MinLen: proto.Uint64(1)}.Build()}.Build())),
		field("opt", 31, tInt32, "", optional3(1), withRules(validate.FieldRules_builder{Int32: validate.Int32Rules_builder{Gte: proto.Int32(1)}.Build()}.Build())),
		field("nested", 32, tMessage, ".test.rich.v1.Ruled"),
		field("w", 33, tMessage, wkt+"Int64Value", withRules(validate.FieldRules_builder{Int64: validate.Int64Rules_builder{Gte: proto.Int64(0)}.Build()}.Build())),
		field("st", 34, tMessage, wkt+"Struct"), field("v", 35, tMessage, wkt+"Value"),
		field("ips", 36, tString, "", repeated, withRules(validate.FieldRules_builder{Repeated: validate.RepeatedRules_builder{
			Items: validate.FieldRules_builder{String: validate.StringRules_builder{Ipv4: t}.Build()}.Build()}.Build()}.Build())),
		field("celf", 37, tString, "", withRules(validate.FieldRules_builder{Cel: []*validate.Rule{validate.Rule_builder{
			Id: proto.String("short"), Message: proto.String("short"), Expression: proto.String("this.size() < 5")}.Build()}}.Build())),
		field("flag", 38, tBool, ""),
		field("hp", 39, tString, "", withRules(str(validate.StringRules_builder{HostAndPort: t}))),
		field("ts2", 40, tMessage, wkt+"Timestamp", withRules(validate.FieldRules_builder{Timestamp: validate.TimestampRules_builder{
			Gt: timestamppb.New(time.Unix(0, 0))}.Build()}.Build())),
		field("rd", 41, tDouble, "", repeated, withRules(validate.FieldRules_builder{Repeated: validate.RepeatedRules_builder{Unique: t}.Build()}.Build())),
		field("rdur", 42, tMessage, wkt+"Duration", repeated),
		field("exc", 44, tInt32, "", withRules(validate.FieldRules_builder{Int32: validate.Int32Rules_builder{Gt: proto.Int32(10), Lt: proto.Int32(5)}.Build()}.Build())),
		field("uref", 45, tString, "", withRules(validate.FieldRules_builder{String: validate.StringRules_builder{UriRef: t}.Build()}.Build())),
		field("not_cont", 46, tString, "", withRules(validate.FieldRules_builder{String: validate.StringRules_builder{NotContains: proto.String("bad")}.Build()}.Build())),
		field("lenb", 47, tString, "", withRules(str(validate.StringRules_builder{LenBytes: proto.Uint64(4)}))),
		field("f32c", 48, tFloat, "", withRules(validate.FieldRules_builder{Ignore: zero, Float: validate.FloatRules_builder{Const: proto.Float32(0.1)}.Build()}.Build())),
		field("dins", 49, tDouble, "", withRules(validate.FieldRules_builder{Ignore: zero, Double: validate.DoubleRules_builder{In: []float64{1.5, 2.5}}.Build()}.Build())),
		field("yes", 50, tBool, "", withRules(validate.FieldRules_builder{Ignore: zero, Bool: validate.BoolRules_builder{Const: t}.Build()}.Build())),
		field("no_zero", 51, tInt64, "", withRules(validate.FieldRules_builder{Required: t}.Build())),
		field("oc", 52, tEnum, colorEnum, withRules(validate.FieldRules_builder{Enum: validate.EnumRules_builder{In: []int32{0, 1, 5}}.Build()}.Build())),
		field("lax", 53, tString, "", withRules(validate.FieldRules_builder{Ignore: zero, String: validate.StringRules_builder{
			WellKnownRegex: validate.KnownRegex_KNOWN_REGEX_HTTP_HEADER_VALUE.Enum(), Strict: f}.Build()}.Build())),
		field("camel_case_ip", 54, tString, "", withRules(str(validate.StringRules_builder{Ip: t}))),
	)
	mapOf(msg, "labels", 26, tString, tString, "")
	msg.Field[len(msg.Field)-1].Options = nil
	withRules(validate.FieldRules_builder{Map: validate.MapRules_builder{MaxPairs: proto.Uint64(2),
		Keys: validate.FieldRules_builder{String: validate.StringRules_builder{Pattern: proto.String(`^[a-z]+$`)}.Build()}.Build()}.Build()}.Build())(msg.Field[len(msg.Field)-1])
	mapOf(msg, "nums", 27, tInt32, tInt64, "")
	mapOf(msg, "keyz", 55, tString, tInt32, "")
	withRules(validate.FieldRules_builder{Map: validate.MapRules_builder{
		Keys: validate.FieldRules_builder{Ignore: zero, String: validate.StringRules_builder{MinLen: proto.Uint64(3)}.Build()}.Build()}.Build()}.Build())(msg.Field[len(msg.Field)-1])
	msg.Field = append(msg.Field, field("itemz", 56, tString, "", repeated, withRules(validate.FieldRules_builder{Repeated: validate.RepeatedRules_builder{
		Items: validate.FieldRules_builder{Ignore: zero, String: validate.StringRules_builder{MinLen: proto.Uint64(2)}.Build()}.Build()}.Build()}.Build())))
	mapOf(msg, "wk", 43, tBool, tEnum, colorEnum)
	msg.OneofDecl = []*descriptorpb.OneofDescriptorProto{{Name: proto.String("choice"),
		Options: func() *descriptorpb.OneofOptions {
			o := &descriptorpb.OneofOptions{}
			proto.SetExtension(o, validate.E_Oneof, validate.OneofRules_builder{Required: t}.Build())
			return o
		}()}, {Name: proto.String("_opt")}}
	msg.Options = &descriptorpb.MessageOptions{}
	proto.SetExtension(msg.Options, validate.E_Message, validate.MessageRules_builder{
		Cel: []*validate.Rule{
			validate.Rule_builder{Id: proto.String("flag_needs_nested"), Message: proto.String("m"), Expression: proto.String("!this.flag || has(this.nested)")}.Build(),
			validate.Rule_builder{Id: proto.String("not_seven"), Message: proto.String("m"), Expression: proto.String("this.i64 != 7 && this.open_color != 2")}.Build(),
			validate.Rule_builder{Id: proto.String("odd"), Message: proto.String("m"), Expression: proto.String("this.text.startsWith('z') == false")}.Build(),
		},
		Oneof: []*validate.MessageOneofRule{validate.MessageOneofRule_builder{Fields: []string{"ipv4", "ipv6", "d"}}.Build()},
	}.Build())
	return &descriptorpb.FileDescriptorProto{
		Name:    proto.String("test/rich/v1/ruled.proto"),
		Package: proto.String("test.rich.v1"),
		Syntax:  proto.String("proto3"),
		Dependency: []string{"buf/validate/validate.proto", "google/protobuf/timestamp.proto", "google/protobuf/duration.proto",
			"google/protobuf/struct.proto", "google/protobuf/wrappers.proto", "test/rich/v1/rich.proto"},
		MessageType: []*descriptorpb.DescriptorProto{msg},
	}
}

// schemaTarget is a contract, its schema and its sound twin, compiled.
type schemaTarget struct {
	c           *Contract
	wide, sound []jsonschematest.Validator
}

// schemaTargets are transcodeTargets' contracts, then the ruled one.
func schemaTargets(tb testing.TB) []schemaTarget {
	tb.Helper()
	var cs []*Contract
	for _, tg := range transcodeTargets(tb) {
		cs = append(cs, tg.c)
	}
	set := setOfFiles(tb, protodesc.ToFileDescriptorProto(validate.File_buf_validate_validate_proto), richFile(), ruledFile())
	r, err := Load(set, []string{ruledType})
	if err != nil {
		tb.Fatal(err)
	}
	c, _ := r.Lookup(ruledType)
	cs = append(cs, c)
	var out []schemaTarget
	for _, c := range cs {
		st := schemaTarget{c: c}
		for _, sound := range []bool{false, true} {
			defs := map[string]*Schema{}
			root, err := c.jsonSchema(defs, "#/$defs/", sound)
			if err != nil {
				tb.Fatalf("%s: %v", c.typ, err)
			}
			vs := jsonschematest.Compile(tb, SchemaDocument(tb, root, defs), "")
			if sound {
				st.sound = vs
			} else {
				st.wide = vs
			}
		}
		out = append(out, st)
	}
	return out
}

// tgRuled is the ruled contract's index in schemaTargets.
const tgRuled = tgShallow + 1

// checkDescribed fails unless the schema admits b when the contract
// accepts it (every validator), and the contract accepts b when the sound
// twin admits it (I-JSON only: see decodeJSON). It reports whether the
// contract accepted b.
func checkDescribed(t *testing.T, st schemaTarget, b []byte, validators int) bool {
	t.Helper()
	if !json.Valid(b) {
		// Not a JSON text, which no schema judges; the gateway's REST
		// decoder refuses it before the contract sees it.
		return false
	}
	_, err := st.c.CheckJSON(b)
	if err == nil {
		for _, v := range st.wide[:validators] {
			if verr := v.Validate(b); verr != nil {
				t.Errorf("%s: the schema refuses %s, which the contract accepts: %v", st.c.typ, shorten(string(b)), verr)
			}
		}
	}
	// JSON Schema has no bound on nesting, which the contract has
	// (WithMaxDepth): a refusal for depth is not the twin's to foresee.
	tooDeep := err != nil && strings.Contains(err.Error(), "deeper than")
	if IJSON(b) && !tooDeep && st.sound[0].Validate(b) == nil && err != nil {
		t.Errorf("%s: the sound twin admits %s, which the contract refuses: %v", st.c.typ, shorten(string(b)), err)
	}
	return err == nil
}

// ruledBase is the least the ruled contract accepts; ruledPayload is it
// with fields added (a field named again replaces it).
const ruledBase = `"ts":"2026-01-02T03:04:05Z","req":"r","a":"x","no_zero":1`

func ruledPayload(fields string) string {
	if fields == "" {
		return "{" + ruledBase + "}"
	}
	// The fragment's own names, and the proto names of its JSON names.
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte("{"+fields+"}"), &top); err != nil {
		panic("ruledPayload: " + err.Error())
	}
	names := map[string]bool{}
	for name := range top {
		names[name] = true
		names[map[string]string{"noZero": "no_zero"}[name]] = true
	}
	var kept []string
	for _, kv := range strings.Split(ruledBase, ",") {
		if key, _ := strconv.Unquote(kv[:strings.Index(kv, ":")]); !names[key] {
			kept = append(kept, kv)
		}
	}
	return "{" + strings.Join(append(kept, fields), ",") + "}"
}

// ruledAccepted are payloads of the ruled contract it accepts, each at an
// edge of a rule's JSON Schema form.
var ruledAccepted = []string{
	``,
	`"host":"127.0.0.1"`, `"host":"::1"`, `"host":"fe80::1%eth0"`, `"host":"Example.COM."`, `"host":"1-2"`, `"host":"a.1b"`,
	`"hostname":"xn--bcher-kva.example"`, `"hostname":"` + strings.Repeat("a", 63) + `.b"`,
	`"hostname":"` + strings.Repeat("a.", 126) + `b"`, `"hostname":"` + strings.Repeat("a.", 126) + `b."`,
	`"email":"Ada@Example.COM"`, `"email":"a..b@c"`, "\"email\":\"!#$%&'*+/=?^_`{|}~-@x\"",
	`"uuid":"0B3F9C1E-5A8D-4E2B-9F61-2C7D8E4A1B90"`,
	`"uri":"urn:isbn:0451450523"`, `"uri":"HTTP://Example.COM:8080/%41?b=c#d"`, `"uri":"http://[::1%25eth0]:80/"`,
	`"ip":"1.2.3.4"`, `"ip":"::ffff:1.2.3.4"`, `"ipv6":"2001:DB8::1"`, `"ipv6":"::"`, `"ipv6":"1:2:3:4:5:6:7:8%z z"`,
	`"tuuid":"0B3F9C1E5A8D4E2B9F612C7D8E4A1B90"`, `"ulid":"01ARZ3NDEKTSV4RRFFQ69G5FAV"`,
	`"text":"éé"`, `"text":"abcdefgh"`, `"text":"😀😀"`,
	`"pat":"ABx12"`, `"pat":"aBé1 "`, `"pat":"ab\t9\n"`,
	`"pre":"a.|$z"`, `"in_str":"y"`, `"inStr":"x"`,
	`"ts":"2024-02-29T23:59:59.999999999+24:00"`, `"ts":"2026-01-31T3:04:05,1234567891Z"`, `"ts":"9999-12-31T23:59:59Z"`,
	`"dur":".5s"`, `"dur":"+1s"`, `"dur":"-0.000000001s"`, `"dur":"315576000000s"`, `"dur":"0.s"`,
	`"i64":"1e3"`, `"i64":-5`, `"i64":1000`, `"i64":"0.5e1"`, `"i64":null`,
	`"u32":1`, `"u32":"4294967295"`, `"u32":0`,
	`"f":0.1`, `"f":0.09999999999`, `"f":9.999999`, `"f":"0.1"`, `"f":0`,
	`"d":"NaN"`, `"d":"Infinity"`, `"d":"-Infinity"`, `"d":1e308`, `"d":1e-400`, `"d":-0`,
	`"d2":5`, `"d2":"1e-300"`, `"d2":1e-400`,
	`"color":1`, `"color":"COLOR_RED"`, `"color":2`, `"color":"COLOR_NEG"`, `"color":-3`,
	`"open_color":99`, `"openColor":-3`, `"open_color":"COLOR_NEG"`,
	`"by":"AQID"`, `"by":"-_8"`, `"by":"AQ"`, `"by":"AQ\nID"`, `"by":"AQ=="`,
	`"tags":["a","A"]`, `"tags":[]`, `"tags":null`,
	`"labels":{"a":"1","b":""}`, `"labels":null`,
	`"nums":{"+1":"5","007":1,"-2":-2}`,
	`"b":1,"a":null`, `"b":0,"a":null`,
	`"opt":1`, `"opt":null`,
	`"nested":{` + ruledBase + `}`, `"nested":null`,
	`"w":"5"`, `"w":null`, `"w":0`,
	`"st":{"k":[1,null,{"x":"y"}]}`, `"v":null`, `"v":[1,"x"]`, `"st":null`,
	`"ips":["1.2.3.4","255.255.255.255"]`,
	`"celf":"abc"`,
	`"flag":true,"nested":{` + ruledBase + `}`, `"flag":false`,
	`"hp":"h:1"`,
	`"ts2":"1971-01-01T00:00:00Z"`,
	`"rd":["NaN","NaN"]`, `"rd":[1,2]`,
	`"rdur":["1s",".1s"]`,
	`"wk":{"true":"COLOR_RED","false":1}`,
	`"exc":11`, `"exc":4`, `"exc":0`,
	`"uref":"./a?b"`, `"uref":""`,
	`"not_cont":"good"`, `"notCont":"BAD"`,
	`"lenb":"abcd"`, `"lenb":"éé"`, `"lenb":"😀"`,
	`"f32c":0.1`, `"f32c":0.100000001`, `"f32c":"0.1"`,
	`"dins":1.5`, `"dins":2.5000000000000001`, `"dins":"2.5"`,
	`"yes":true`, `"yes":false`,
	`"no_zero":-1`, `"noZero":"7"`,
	`"oc":0`, `"oc":5`, `"oc":"COLOR_UNSPECIFIED"`,
	`"lax":"\u0001x"`,
	`"camel_case_ip":"::1"`, `"camelCaseIp":"1.1.1.1"`,
	`"ipv4":"1.2.3.4","d":0`, `"ipv6":"::","d":0`, `"ipv6":"::","d":1e-400`,
	`"color":0`, `"color":"COLOR_UNSPECIFIED"`, `"d2":1e-400`,
	`"keyz":{"":1,"abc":2}`, `"itemz":["","ab"]`,
}

// ruledRefused are payloads the ruled contract refuses for a rule the
// schema states exactly, which it must refuse too.
var ruledRefused = []string{
	`"host":"a-.b"`, `"host":"1.2.3"`, `"host":"` + strings.Repeat("a", 64) + `"`, `"hostname":"1.2.3.4"`,
	`"hostname":"` + strings.Repeat("a.", 126) + `bc"`, `"email":"a@-b"`, `"email":"a@b..c"`,
	`"uuid":"0b3f9c1e-5a8d-4e2b-9f61-2c7d8e4a1b9g"`, `"tuuid":"0B3F"`, `"ulid":"81ARZ3NDEKTSV4RRFFQ69G5FAV"`,
	`"ipv4":"01.2.3.4"`, `"ips":["1.2.3.4",""]`,
	`"text":"a"`, `"pat":"abx"`, `"pat":"ab\n1"`, `"pre":"a.$z"`, `"in_str":"z"`,
	`"i64":1001`, `"color":7`, `"open_color":2147483648`, `"ipv6":"::","d":5`,
	`"tags":["a","a"]`, `"tags":["a","b","c","d"]`, `"tags":[""]`, `"labels":{"A":"1"}`, `"labels":{"a":"1","b":"2","c":"3"}`,
	`"a":"x","b":1`, `"req":null`, `"req":""`, `"ts":null`, `"exc":7`, `"not_cont":"a bad one"`, `"i64":7`,
	`"open_color":2`, `"open_color":"COLOR_GREEN"`, `"flag":true`, `"yes":"true"`, `"no_zero":0`, `"noZero":null`,
	`"oc":2`, `"ipv4":"1.2.3.4","d":1`, `"d2":"NaN"`, `"d2":"Infinity"`, `"d2":-1`, `"f":"NaN"`, `"f":10`,
	`"f32c":0.2`, `"dins":2`, `"opt":0`, `"u32":-1`, `"in_str":"x","inStr":"y"`, `"keyz":{"ab":1}`, `"itemz":["a"]`,
}

// TestJSONSchemaRuleForms: the ruled contract's payloads at the edges of
// each rule's form are admitted when accepted and, for rules the schema
// states exactly, refused when refused; the sound twin admits none the
// contract refuses.
func TestJSONSchemaRuleForms(t *testing.T) {
	st := schemaTargets(t)[tgRuled]
	for _, fields := range ruledAccepted {
		p := ruledPayload(fields)
		if !checkDescribed(t, st, []byte(p), 3) {
			_, err := st.c.CheckJSON([]byte(p))
			t.Errorf("the contract refuses %s; the case is wrong: %v", p, err)
		}
	}
	for _, fields := range ruledRefused {
		p := ruledPayload(fields)
		if checkDescribed(t, st, []byte(p), 3) {
			t.Errorf("the contract accepts %s; the case is wrong", p)
			continue
		}
		for _, v := range st.wide {
			if v.Validate([]byte(p)) == nil {
				t.Errorf("%s: the schema admits %s, which the contract refuses by a rule it states", v.Name, p)
			}
		}
	}
}

// corpus is every seed and stored fuzz input the decoders' tests hold
// the transcoder to, by target, with the JSON protojson writes of any
// that is a binary message, and the ruled contract's payloads.
func corpus(t testing.TB) map[int][][]byte {
	t.Helper()
	targets := transcodeTargets(t)
	out := map[int][][]byte{}
	addWithBinary := func(tg int, in []byte) {
		out[tg] = append(out[tg], in)
		if tg >= len(targets) {
			return
		}
		m, ok := binaryMessage(targets[tg], in)
		if !ok {
			return
		}
		for _, opts := range jsonSpellings {
			if js, err := opts.Marshal(m); err == nil {
				out[tg] = append(out[tg], js)
			}
		}
	}
	for _, s := range append(eventSeeds(t), edgeSeeds()...) {
		addWithBinary(s.tg, []byte(s.in))
	}
	entries, err := os.ReadDir(filepath.Join("testdata", "fuzz", "FuzzTranscodeJSON"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		vals := fuzzCorpusFile(t, filepath.Join("testdata", "fuzz", "FuzzTranscodeJSON", e.Name()))
		if len(vals) == 2 {
			addWithBinary(int(vals[0][0])%len(targets), vals[1])
		}
	}
	for _, dir := range []string{"FuzzJSONSchemaSound", "FuzzJSONSchemaWire"} {
		entries, _ := os.ReadDir(filepath.Join("testdata", "fuzz", dir))
		for _, e := range entries {
			vals := fuzzCorpusFile(t, filepath.Join("testdata", "fuzz", dir, e.Name()))
			switch len(vals) {
			case 1:
				for tg := tgIdentity; tg <= tgShop; tg++ {
					out[tg] = append(out[tg], vals[0])
				}
			case 2:
				addWithBinary(int(vals[0][0])%(tgRuled+1), vals[1])
			}
		}
	}
	for _, fields := range append(append([]string(nil), ruledAccepted...), ruledRefused...) {
		out[tgRuled] = append(out[tgRuled], []byte(ruledPayload(fields)))
	}
	return out
}

// jsonSpellings are protojson's ways of writing a message that the
// gateway reads back.
var jsonSpellings = []protojson.MarshalOptions{
	{},
	{UseProtoNames: true, UseEnumNumbers: true},
	{EmitUnpopulated: true, Multiline: true},
	{UseProtoNames: true, EmitDefaultValues: true},
}

// fuzzCorpusFile reads a stored fuzz input: its values, a byte as a
// one-byte slice.
func fuzzCorpusFile(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var out [][]byte
	for _, line := range lines[1:] {
		switch {
		case strings.HasPrefix(line, "[]byte(") && strings.HasSuffix(line, ")"):
			s, err := strconv.Unquote(line[len("[]byte(") : len(line)-1])
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			out = append(out, []byte(s))
		case strings.HasPrefix(line, "byte(") && strings.HasSuffix(line, ")"):
			s, err := strconv.Unquote(line[len("byte(") : len(line)-1])
			if err != nil || len(s) != 1 {
				r, _, _, uerr := strconv.UnquoteChar(strings.Trim(line[len("byte("):len(line)-1], "'"), '\'')
				if uerr != nil {
					t.Fatalf("%s: %v", path, err)
				}
				s = string([]byte{byte(r)})
			}
			out = append(out, []byte(s))
		case strings.HasPrefix(line, "uint8(") && strings.HasSuffix(line, ")"):
			n, err := strconv.Atoi(line[len("uint8(") : len(line)-1])
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			out = append(out, []byte{byte(n)})
		}
	}
	return out
}

// TestJSONSchemaAdmitsAccepted: every payload of the decoders' seeds and
// stored fuzz inputs (and protojson's JSON of the binary ones) that a
// contract accepts is valid under its schema, for the example contracts,
// the rich ones with every kind and well-known type, and the ruled one;
// and the sound twin admits none it refuses.
func TestJSONSchemaAdmitsAccepted(t *testing.T) {
	targets := schemaTargets(t)
	accepted := 0
	for tg, inputs := range corpus(t) {
		for _, in := range inputs {
			if checkDescribed(t, targets[tg], in, 3) {
				accepted++
			}
		}
	}
	t.Logf("%d accepted payloads", accepted)
	if accepted < 250 {
		t.Errorf("only %d accepted payloads: the corpus is not what it was", accepted)
	}
}

// FuzzJSONSchemaWire: every payload a contract accepts is valid under its
// schema, and none its sound twin admits is refused. The input is tried
// as JSON, and as protobuf binary whose protojson spellings are tried.
func FuzzJSONSchemaWire(f *testing.F) {
	targets := schemaTargets(f)
	for tg, inputs := range corpus(f) {
		for _, in := range inputs {
			f.Add(uint8(tg), in)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, in []byte) {
		tg := int(which) % len(targets)
		checkDescribed(t, targets[tg], in, 2)
		m, ok := binaryMessage(transcodeTarget{c: targets[tg].c}, in)
		if !ok {
			return
		}
		for _, opts := range jsonSpellings {
			if js, err := opts.Marshal(m); err == nil {
				checkDescribed(t, targets[tg], js, 2)
			}
		}
	})
}
