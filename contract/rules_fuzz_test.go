package contract_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
)

const (
	rulesImagePath = "testdata/rules/rules.binpb"
	everythingType = "sluice.testrules.v1.Everything"
)

// ruleContracts are the contracts FuzzCompiledRules holds to
// protovalidate: every example contract and Everything, which uses every
// compiled rule beside rules left to protovalidate.
func ruleContracts(tb testing.TB) []*contract.Contract {
	tb.Helper()
	ex, err := contract.Load(examples.Contracts, append(slices.Clone(examples.Types), examples.StripeEventType))
	if err != nil {
		tb.Fatal(err)
	}
	img, err := os.ReadFile(rulesImagePath)
	if err != nil {
		tb.Fatal(err)
	}
	ev, err := contract.Load(img, []string{everythingType, "sluice.testrules.v1.Mixed", "sluice.testrules.v1.Inner"})
	if err != nil {
		tb.Fatal(err)
	}
	var out []*contract.Contract
	for _, r := range []*contract.Registry{ex, ev} {
		for _, typ := range r.Types() {
			c, _ := r.Lookup(typ)
			out = append(out, c)
		}
	}
	return out
}

// everythingSeeds are JSON payloads of Everything: valid, and breaking
// rules of every kind, compiled and not.
var everythingSeeds = []string{
	`{"sLen":"abc","sMinmax":"abc","sBytes":"abc","sLenBytes":"abcd","sConst":"abc","sAffix":"abmyz","sIn":"bb","sNotIn":"z","sInLong":"j",
	  "sRequired":"x","sPattern":"abc-1","sUuid":"123e4567-e89b-12d3-a456-426614174000","sHostname":"example.com","sIp":"10.0.0.1",
	  "sUri":"https://example.com/a","sAll":"ab","i32Range":3,"i32Excl":20,"i64Gt":"1","i64Lt":"5","u32Const":7,"u64In":"2",
	  "si32NotIn":4,"si64Range":"0","f32Lte":10,"f64Gte":"6","sf32Range":1,"sf64Excl":"11","flRange":1.5,"dbFinite":2,"dbIn":0.5,
	  "flConst":0.1,"i64Required":"9","colorDefined":"COLOR_RED","colorIn":"COLOR_RED","colorConst":"COLOR_BLUE","bConst":true,
	  "rBounds":["a"],"rUnique":["1","2"],"rItems":["ab","cd"],"mBounds":{"ab":1},"innerRequired":{"name":"n"},"choiceA":"ab",
	  "ts":"2020-01-01T00:00:00Z","dur":"5s"}`,
	`{}`,
	`{"sLen":"ab","sMinmax":"a","sBytes":"ééé€","sLenBytes":"é","sConst":"abd","sAffix":"qq","sIn":"d","sNotIn":"yy","sInLong":"z",
	  "sIgnored":"ab","sOptional":"abc","sPattern":"A","sEmail":"nope","sUuid":"x","sAll":"b€€€€€€€€€","i32Range":-5,"i32Excl":0,
	  "i64Gt":"0","i64Lt":"100","u32Const":8,"u64In":"4","si32NotIn":-1,"si64Range":"100","f32Lte":1001,"f64Gte":"4","sf32Range":2,
	  "sf64Excl":"5","flRange":"NaN","dbFinite":"Infinity","dbIn":1,"flConst":0.2,"i32Optional":3,"colorDefined":7,"colorIn":"COLOR_GREEN",
	  "colorConst":1,"bConst":false,"rBounds":["a","b","c","d"],"rUnique":["1","1"],"rItems":["a","abcde","a"],"rFloatUnique":[0,-0],
	  "rEnumItems":[1,9],"rIgnoreItems":[0,5,11],"mBounds":{"a":-1,"bb":2,"cc":3,"dd":4},"mIntKeys":{"0":"x","5":"y"},
	  "rBytesUnique":["YQ==","YQ=="],"inner":{"name":"","count":11,"tags":["x","z"]},"inners":[{},{"name":"abcdefghi"},{}],
	  "innerMap":{"k":{"count":12}},"mixed":{"lo":5,"hi":-1,"code":"ab","x":"a","y":"b","inner":{"count":99},"note":"toolong"},
	  "mixeds":[{"lo":-1},{"hi":101,"x":"xx"}],"tree":{"children":[{"label":""},{"children":[{},{},{},{}]}]},
	  "choiceB":-1,"freeA":"abcd","celField":"a b","byLen":"YWJjZGVm","mixedIgnored":{"lo":-1,"x":"a","y":"b"},"ts":"1960-01-01T00:00:00Z","dur":"120s","ignoredAlways":"a"}`,
	`{"choiceB":0,"freeB":false,"mixed":{},"inner":{},"tree":{},"pick":{}}`,
	`{"pick":{"a":"x","b":"y","c":-1,"d":true},"picks":[{"a":"ab"},{"c":1,"d":true,"e":""},{"b":"b","e":"e"}]}`,
	`{"fIpv4":"10.0.0.256","fIpv6":"::1","fUriRef":"../a?b#c","fAddress":"-bad-","fTuuid":"123e4567e89b12d3a456426614174000",
	  "fIpWithPrefixlen":"10.0.0.1/8","fIpv4WithPrefixlen":"10.0.0.1/33","fIpv6WithPrefixlen":"::1/129","fIpPrefix":"10.0.0.0/8",
	  "fIpv4Prefix":"10.0.0.1/8","fIpv6Prefix":"2001:db8::/32","fHostAndPort":"example.com:80","fUlid":"01ARZ3NDEKTSV4RRFFQ69G5FAV",
	  "fHeaderName":":authority","fHeaderValue":"a\u0001b","fHeaderLoose":"a b","fEmailFalse":"x","pLiterals":"wallet",
	  "pPrefix":"cu_1","pFold":"YES","pFallback":"a word here","pUnicode":"ÄbcdE","mPatterns":{"Key":"x","ok_1":"0b3f9c1e-5a8d-4e2b-9f61-2c7d8e4a1b90"},
	  "rEmails":["a@b.co","nope",""],"sEmail":"someone@example.com","sUuid":"0B3F9C1E-5A8D-4E2B-9F61-2C7D8E4A1B90","sHostname":"a-.com",
	  "sIp":"1.2.3.4","sUri":"not a uri"}`,
	`{"tsRange":"2033-05-18T03:33:20.5Z","tsExcl":"2010-01-01T00:00:00Z","durRange":"0.0015s","durRequired":"-6s",
	  "rTimes":["2100-01-01T00:00:00Z","2100-01-01T00:00:00.000000001Z"],"ts":"1970-01-01T00:00:00Z","dur":"60.000000001s","tsNow":"2999-01-01T00:00:00Z"}`,
	`{"tsRange":"2001-09-09T01:46:39.999999999Z","tsExcl":"2033-05-18T03:33:20Z","durRange":"3599.999999999s","durRequired":"-5s","dur":"-1s"}`,
	`{"rFloatUnique":["NaN","NaN"],"dbIn":-3,"flRange":99.5,"sf32Range":1,"sAll":"aaaaaaaaaaaa"}`,
}

func FuzzCompiledRules(f *testing.F) {
	contracts := ruleContracts(f)
	for i, c := range contracts {
		if c.Type() == everythingType {
			for _, js := range everythingSeeds {
				msg := dynamicpb.NewMessage(c.Descriptor())
				if err := (protojson.UnmarshalOptions{AllowPartial: true}).Unmarshal([]byte(js), msg); err != nil {
					f.Fatalf("seed %s: %v", js, err)
				}
				f.Add(uint8(i), marshal(f, msg))
			}
			// Times CEL does not read (past year 9999, nanos out of
			// range): protovalidate answers for the whole message.
			msg := dynamicpb.NewMessage(c.Descriptor())
			for _, name := range []protoreflect.Name{"ts_range", "dur_range"} {
				fd := c.Descriptor().Fields().ByName(name)
				v := msg.NewField(fd)
				v.Message().Set(fd.Message().Fields().ByNumber(1), protoreflect.ValueOfInt64(1<<40))
				v.Message().Set(fd.Message().Fields().ByNumber(2), protoreflect.ValueOfInt32(-1))
				msg.Set(fd, v)
			}
			f.Add(uint8(i), marshal(f, msg))
			continue
		}
		var js []byte
		switch c.Type() {
		case "examples.shop.v1.OrderPlaced":
			js = examples.OrderPlacedJSON
		case "examples.identity.v1.UserProfileUpdated":
			js = examples.UserProfileUpdatedJSON
		case "examples.logs.v1.LogLine":
			js = examples.LogLineJSON
		default:
			f.Add(uint8(i), []byte{})
			continue
		}
		bin, err := c.DecodeJSON(js)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), bin)
	}
	f.Fuzz(func(t *testing.T, which uint8, payload []byte) {
		c := contracts[int(which)%len(contracts)]
		msg := decodeDynamic(c, payload)
		if msg == nil {
			return
		}
		checkCompiledRules(t, c, msg, len(payload))
		// The gateway's own path: hyperpb's message (where the contract
		// decodes with it) through the compiled checks.
		_, got := c.CheckBinary(payload)
		var malformed *contract.MalformedError
		if got == nil || !errors.As(got, &malformed) {
			want := c.Registry().ProtovalidateSized(msg, len(payload))
			compareRuleErrors(t, c, msg, want, got)
		}
	})
}

// decodeDynamic decodes payload into a dynamic message, or returns nil.
// protobuf-go panics on some map entries whose value is a message (the
// gateway's wire walk refuses them before any decoder sees them): such a
// payload is not one to validate.
func decodeDynamic(c *contract.Contract, payload []byte) (msg *dynamicpb.Message) {
	defer func() {
		if recover() != nil {
			msg = nil
		}
	}()
	msg = dynamicpb.NewMessage(c.Descriptor())
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(payload, msg); err != nil {
		return nil
	}
	return msg
}

// checkCompiledRules compares the compiled checks with protovalidate on
// msg, as a small message (every violation) and a large one (the first).
func checkCompiledRules(t *testing.T, c *contract.Contract, msg proto.Message, size int) {
	t.Helper()
	for _, size := range []int{min(size, contract.FullReportBytes), contract.FullReportBytes + 1} {
		want := c.Registry().ProtovalidateSized(msg, size)
		got := c.ValidateSized(msg, size)
		compareRuleErrors(t, c, msg, want, got)
	}
}

func compareRuleErrors(t *testing.T, c *contract.Contract, msg proto.Message, want, got error) {
	t.Helper()
	var wv, gv *contract.ViolationError
	wok, gok := errors.As(want, &wv), errors.As(got, &gv)
	if (want == nil) != (got == nil) || wok != gok {
		t.Fatalf("%s: verdict differs:\nprotovalidate: %v\ncompiled:      %v\nmessage: %v", c.Type(), want, got, msg)
	}
	if want == nil {
		return
	}
	if !wok {
		if want.Error() != got.Error() {
			t.Fatalf("%s: errors differ:\nprotovalidate: %v\ncompiled:      %v", c.Type(), want, got)
		}
		return
	}
	if wv.Partial != gv.Partial {
		t.Fatalf("%s: Partial %v, protovalidate %v", c.Type(), gv.Partial, wv.Partial)
	}
	w, g := wv.Violations, gv.Violations
	if hasMapEntries(msg.ProtoReflect()) {
		// Map entries are reported in iteration order, which protobuf
		// leaves undefined: compare as sets, and a first failed rule only
		// by its being one of the message's failed rules.
		if wv.Partial {
			full := c.Registry().ProtovalidateSized(msg, 0)
			var fv *contract.ViolationError
			if !errors.As(full, &fv) || len(g) != 1 || !slices.Contains(fv.Violations, g[0]) {
				t.Fatalf("%s: first failed rule %v is not one of protovalidate's %v", c.Type(), g, full)
			}
			return
		}
		w, g = sortedViolations(w), sortedViolations(g)
	}
	if !slices.Equal(w, g) {
		t.Fatalf("%s: violations differ:\nprotovalidate: %v\ncompiled:      %v\nmessage: %v", c.Type(), w, g, msg)
	}
}

func sortedViolations(vs []contract.Violation) []contract.Violation {
	vs = slices.Clone(vs)
	slices.SortFunc(vs, func(a, b contract.Violation) int {
		return cmpString(fmt.Sprint(a), fmt.Sprint(b))
	})
	return vs
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// hasMapEntries reports whether m holds a map with two entries or more
// at any depth.
func hasMapEntries(m protoreflect.Message) bool {
	found := false
	var walk func(m protoreflect.Message)
	walk = func(m protoreflect.Message) {
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsMap():
				if v.Map().Len() > 1 {
					found = true
				}
				if fd.MapValue().Message() != nil {
					v.Map().Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
						walk(v.Message())
						return !found
					})
				}
			case fd.IsList() && fd.Message() != nil:
				for i := range v.List().Len() {
					walk(v.List().Get(i).Message())
				}
			case fd.Message() != nil:
				walk(v.Message())
			}
			return !found
		})
	}
	walk(m)
	return found
}
