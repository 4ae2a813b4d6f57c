package contract

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"
)

// transcodeSeed is an input for one of transcodeTargets.
type transcodeSeed struct {
	tg int
	in string
}

// malformedSeeds are TestCheckRejectsMalformed's JSON cases.
func malformedSeeds() []transcodeSeed {
	deep := `{"customer":{"email":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}}`
	return []transcodeSeed{
		{tgShop, `{"orderId": `},
		{tgShop, `{"orderId":"x","bogus":1}`},
		{tgShop, `{"customer":{"email":"a@b.c","age":3}}`},
		{tgShop, `{"customer":"ada"}`},
		{tgShop, `{"currency":978}`},
		{tgLogs, `{"severity":"LOUD"}`},
		{tgLogs, `{"timestamp":"yesterday"}`},
		{tgShop, `{"currency":"EUR","currency":"USD"}`},
		{tgShop, `{} {}`},
		{tgShop, deep},
		{tgShop, `[]`},
		{tgShop, `1`},
		{tgShop, `null`},
		{tgShop, `"{}"`},
		{tgShop, " \n"},
		{tgShop, "{\"note\":\"caf\xe9\"}"},
	}
}

// edgeSeeds are the edge cases of protojson's reading that the
// transcoder must match, for the fuzzer to start from.
func edgeSeeds() []transcodeSeed {
	s := []transcodeSeed{
		// Examples' own quirks.
		{tgShop, `{"order_id":"a","orderId":"b"}`},
		{tgShop, `{"items":[{"quantity":1e0},{"quantity":"2"},{"quantity":3.0}]}`},
		{tgShop, `{"items":[{"quantity":1e}]}`},
		{tgShop, `{"items":[null]}`},
		{tgShop, `{"items":null,"customer":null}`},
		{tgShop, `{"paymentMethod":1}`},
		{tgShop, `{"paymentMethod":99}`},
		{tgShop, `{"paymentMethod":null}`},
		{tgShop, `{"totalCents":"-0"}`},
		{tgLogs, `{"labels":{"b":"1","a":"2","a\u0000":"3"}}`},
		{tgLogs, `{"labels":{"a":"1","a":"2"}}`},
		{tgLogs, `{"labels":{"k":null}}`},
		{tgLogs, `{"timestamp":"2025-03-14T09:26:53.589+01:00"}`},
		{tgLogs, `{"timestamp":"2025-03-14T9:26:53Z"}`},
		{tgLogs, `{"timestamp":"2025-03-14T09:26:53,5Z"}`},
		{tgLogs, `{"timestamp":"0001-01-01T00:00:00Z"}`},
		{tgLogs, `{"timestamp":"0000-12-31T23:59:59Z"}`},
		{tgLogs, `{"timestamp":"9999-12-31T23:59:59.999999999Z"}`},
		{tgLogs, `{"timestamp":"9999-12-31T23:59:59.9999999999Z"}`},
		{tgLogs, `{"timestamp":"2024-02-29T00:00:00Z"}`},
		{tgLogs, `{"timestamp":"2023-02-29T00:00:00Z"}`},
		{tgLogs, `{"timestamp":"2025-01-01T00:00:00+24:00"}`},
		{tgLogs, `{"timestamp":"2025-01-01T00:00:60Z"}`},
		{tgLogs, `{"timestamp":"2025-01-01t00:00:00z"}`},
		{tgLogs, `{"timestamp":null}`},
		{tgLogs, `{"source":{"line":2147483648}}`},
		{tgLogs, `{"source":{"line":-2147483648}}`},
		{tgIdentity, `{"changed_fields":["a",null]}`},
		{tgIdentity, `{"consent":{"source":"CONSENT_SOURCE_SETTINGS","source":1}}`},

		// Names, duplicates, unknowns.
		{tgRich, `{"customName":1,"renamed":2}`},
		{tgRich, `{"snake_case_name":"x","snakeCaseName":"y"}`},
		{tgRich, `{"shadow":"x","snake_case_name":"y"}`},
		{tgRich, `{"snakeCaseName":"a","shadow":"b"}`},
		{tgRich, `{"i\u0033\u0032":5}`},
		{tgRich, `{"[test.rich.v1.ext]":1}`},
		{tgRich, `{"bigTag":1,"maxTag":"x","big_tag":2}`},

		// Scalars.
		{tgRich, `{"i32":"1e3","i64":"-9223372036854775808","u64":"18446744073709551615","u32":4294967295}`},
		{tgRich, `{"i64":9223372036854775808}`},
		{tgRich, `{"u32":-0,"u64":-1}`},
		{tgRich, `{"i32":1.5e1,"s32":-15e-1,"sf32":100e-2,"f32":0.00000000000000000000001e23}`},
		{tgRich, `{"i32":0.05e3,"i64":1E+2,"s64":"0e99999999999","sf64":1e-0}`},
		{tgRich, `{"i32":" 1"}`},
		{tgRich, `{"i32":"1 "}`},
		{tgRich, `{"i32":01}`},
		{tgRich, `{"i32":-}`},
		{tgRich, `{"i32":1e+}`},
		{tgRich, `{"i32":0e}`},
		{tgRich, `{"i32":true}`},
		{tgRich, `{"fl":3.4028235e38,"db":1.7976931348623157e308}`},
		{tgRich, `{"fl":3.5e38}`},
		{tgRich, `{"fl":"NaN","db":"-Infinity","rFl":["Infinity","-0",1e-50]}`},
		{tgRich, `{"db":"1e5","fl":" 1"}`},
		{tgRich, `{"db":1e400}`},
		{tgRich, `{"db":-0,"fl":-0.0}`},
		{tgRich, `{"db":1e-400}`},
		{tgRich, `{"b":"true"}`},
		{tgRich, `{"b":false,"s":"","by":""}`},
		{tgRich, `{"by":"AQID","rBy":["AQI","AQI=","-_8","+/8=","AQ\nID","AQ==="]}`},
		{tgRich, `{"by":"QR=="}`},
		{tgRich, `{"by":"A"}`},
		{tgRich, `{"color":"COLOR_NEG","rColor":[1,"COLOR_RED",-3,7,null]}`},
		{tgRich, `{"color":"1"}`},
		{tgRich, `{"color":-2147483649}`},
		{tgRich, `{"nv":null,"rNv":[null,"NULL_VALUE",0,3],"oNv":null}`},
		{tgRich, `{"s":"\ud83d\ude00 \u00e9 \/ \b\f\n\r\t \"\\"}`},
		{tgRich, `{"s":"\ud83d"}`},
		{tgRich, `{"s":"\ude00\ud83d"}`},
		{tgRich, `{"s":"\ud83d\u0041"}`},
		{tgRich, `{"s":"\u00"}`},
		{tgRich, `{"s":"\x"}`},
		{tgRich, "{\"s\":\"a\tb\"}"},
		{tgRich, "{\"s\":\"\xed\xa0\x80\"}"},
		{tgRich, "{\"s\":\"\xef\xbf\xbd\"}"},

		// Lists and maps.
		{tgRich, `{"rI32":[],"rS":[],"mSi":{}}`},
		{tgRich, `{"rI32":[1,],"rS":["a"]}`},
		{tgRich, `{"rI32":[,1]}`},
		{tgRich, `{"rI32":null,"mSi":null}`},
		{tgRich, `{"rI32":[null]}`},
		{tgRich, `{"rB":[true,false],"rF32":[1,"2"],"rSf64":["-1"],"rU64":["1"],"rS64":[-1,1]}`},
		{tgRich, `{"mIs":{"1":"a","01":"b"}}`},
		{tgRich, `{"mIs":{"+1":"a","-0":"b"," 1":"c"}}`},
		{tgRich, `{"mBc":{"true":1,"false":"COLOR_RED"},"mUb":{"4294967295":"AQ=="}}`},
		{tgRich, `{"mBc":{"True":1}}`},
		{tgRich, `{"mUd":{"18446744073709551615":1.5,"0":"NaN"},"mS32":{"-1":"-2"},"mS64":{"-9223372036854775808":true}}`},
		{tgRich, `{"mF32":{"7":"8"},"mF64":{"9":1},"mSf32":{"-1":-1},"mSf64":{"-5":"x"}}`},
		{tgRich, `{"mIr":{"2":{"i32":1},"1":{}}}`},
		{tgRich, `{"mIr":{"1":null}}`},
		{tgRich, `{"mSv":{"a":null,"b":[1,"x",{}]},"mSnv":{"a":null,"b":"NULL_VALUE"}}`},
		{tgRich, `{"mSt":{"a":"1970-01-01T00:00:00Z"},"mSw":{"a":0,"b":5},"mSe":{"x":{}}}`},
		{tgRich, `{"mSi":{"é":1,"e":2,"z":3,"":4}}`},

		// Oneofs and presence.
		{tgRich, `{"oS":"a","oI":1}`},
		{tgRich, `{"oS":null,"oI":1}`},
		{tgRich, `{"oV":null,"oS":"a"}`},
		{tgRich, `{"oNv":null}`},
		{tgRich, `{"oI":0,"xB":false,"optI32":0,"optS":"","optColor":0,"optDb":0}`},
		{tgRich, `{"oRich":{},"xBy":""}`},
		{tgRich, `{"oTs":null,"oRich":{"oRich":{"oS":"x"}}}`},
		{tgLegacy, `{"i32":0,"s":"","b":false,"d":0,"shade":"SHADE_LIGHT","sixtyFour":"0","u64":0}`},
		{tgLegacy, `{"shade":0,"shades":[5,"SHADE_DARK"],"color":7}`},
		{tgLegacy, `{"unpacked":[1,2],"packed":[1,2,3],"pI":0,"pS":"x"}`},
		{tgLegacy, `{"m":{"1":{"i32":1}},"colors":{"a":"COLOR_RED"},"next":{"next":{}}}`},
		{tgLegacy, `{"i64":1,"sixtyFour":2}`},
		{tgEd, `{"a":0,"b":0,"c":[1,2],"d":[1,2],"e":9,"s":"","by":"","db":-0}`},
		{tgEd, `{"e":"TONE_HIGH","next":{"a":1}}`},

		// Nesting.
		{tgRich, `{"child":{"child":{"child":{"i32":1}}},"kids":[{},{"kids":[{}]}]}`},
		{tgRich, `{"inner":{"next":{"next":{"name":"x"}},"many":[{"byName":{"k":{}}}]}}`},
		{tgShallow, `{"child":{"child":{"child":{"child":{}}}}}`},
		{tgShallow, `{"child":{"child":{"child":{"child":{"child":{}}}}}}`},
		{tgShallow, `{"child":{"child":{"child":{"ts":"1970-01-01T00:00:01Z"}}}}`},
		{tgShallow, `{"child":{"child":{"child":{"child":{"ts":"1970-01-01T00:00:01Z"}}}}}`},
		{tgShallow, `{"st":{"a":{"b":{"c":1}}}}`},
		{tgShallow, `{"st":{"a":{"b":{"c":{}}}}}`},
		{tgShallow, `{"lv":[[[1]]]}`},
		{tgShallow, `{"lv":[[[[1]]]]}`},
		{tgShallow, `{"child":{"mIr":{"1":{"mIr":{"2":{}}}}}}`},
		{tgShallow, `{"rI32":[1],"child":{"child":{"rS":["a"]}}}`},
		{tgShallow, `{"v":{"a":[{"b":1}]}}`},
		{tgShallow, `{"v":[[[{}]]]}`},

		// Well-known types.
		{tgRich, `{"dur":"1.5s","rDur":["-0.5s","0s","+1s",".5s","1.s","-.s","315576000000.999999999s","-315576000000s"]}`},
		{tgRich, `{"dur":"315576000001s"}`},
		{tgRich, `{"dur":"1.0000000001s"}`},
		{tgRich, `{"dur":"01s"}`},
		{tgRich, `{"dur":"s"}`},
		{tgRich, `{"dur":"1"}`},
		{tgRich, `{"dur":"9223372036854775808s"}`},
		{tgRich, `{"dur":1}`},
		{tgRich, `{"st":{},"v":{},"lv":[],"fm":"","empty":{}}`},
		{tgRich, `{"st":{"b":1,"a":"x","c":[true,null,{"d":false}]}}`},
		{tgRich, `{"st":{"a":1,"a":2}}`},
		{tgRich, `{"st":[],"v":1e400}`},
		{tgRich, `{"v":null,"rV":[null,1,"s",true,{"a":[]},[]]}`},
		{tgRich, `{"v":"NaN"}`},
		{tgRich, `{"v":-0}`},
		{tgRich, `{"lv":[1,[2,[3]],{"a":{}}]}`},
		{tgRich, `{"lv":null,"st":null,"v":[]}`},
		{tgRich, `{"rLv":[[],[1]],"rSt":[{},{"a":null}]}`},
		{tgRich, `{"rSt":[null]}`},
		{tgRich, `{"rLv":[null]}`},
		{tgRich, `{"fm":"a,bC.dEf,g1"}`},
		{tgRich, `{"fm":" a , b "}`},
		{tgRich, `{"fm":"a,,b"}`},
		{tgRich, `{"fm":"a_b"}`},
		{tgRich, `{"fm":"1a"}`},
		{tgRich, `{"fm":"A.B"}`},
		{tgRich, `{"fm":"a.","rFm":["","x"]}`},
		{tgRich, "{\"fm\":\"\\u00a0a\\u2003\"}"},
		{tgRich, `{"empty":{"a":1}}`},
		{tgRich, `{"empty":[]}`},
		{tgRich, `{"rEmpty":[{},{}],"rTs":["1970-01-01T00:00:00Z","2000-01-01T00:00:00.5-01:30"]}`},
		{tgRich, `{"wI64":"5","wU64":0,"wI32":-1,"wU32":"7","wB":false,"wS":"","wBy":"AQ==","wFl":-0,"wDb":"NaN"}`},
		{tgRich, `{"wI64":null,"rW":[1,0]}`},
		{tgRich, `{"rW":[null]}`},
		{tgRich, `{"wB":"true"}`},
		{tgRich, `{"rTs":[null]}`},

		// Grammar.
		{tgRich, `{"i32":1,}`},
		{tgRich, `{"i32" : 1 , "b" : true }`},
		{tgRich, "\t{\r\n}\n "},
		{tgRich, `{"i32":1 "b":true}`},
		{tgRich, `{"i32"}`},
		{tgRich, `{i32:1}`},
		{tgRich, `{"b":tru}`},
		{tgRich, `{"b":truee}`},
		{tgRich, `{"b":nul}`},
		{tgRich, `{"s":"x"`},
		{tgRich, `{"s":"x`},
		{tgRich, `{`},
		{tgRich, `{}]`},
		{tgRich, "{}\x00"},
		{tgRich, "\ufeff{}"},
		{tgRich, ``},
	}
	for _, ts := range []string{
		"2025-03-14T09:26:53.589+24:00", "2025-03-14T09:26:53.589-00:60", "+2025-03-14T09:26:53Z",
		"2025-3-14T09:26:53Z", "2025-03-14T09:26:53.Z", "2025-03-14T09:26:53.1234567891+01:00",
		"2025-03-14T09:26:53,1234567891Z", "2025-03-14 09:26:53Z", "2025-03-14T09:26:53+01:00:00",
		"2025-03-14T24:00:00Z", "2025-03-14T09:26:53+0100", "0001-01-01T00:00:00+00:01",
		"0001-01-01T00:00:00-00:01", "9999-12-31T23:59:59-00:01", "2025-03-14T09:26:53.1234567890123Z",
		"2025-03-14T09:26:53.12,3Z", "2025-03-14T1:2:03Z", "2025-03-14T09:26:53+1:00",
	} {
		s = append(s, transcodeSeed{tgLogs, `{"timestamp":"` + ts + `"}`})
	}
	for _, dur := range []string{
		"1", "1.", ".", "-", "+.s", "--1s", "1e1s", "0.000000001s", "-0s", "1.5S", " 1s", "0x1s",
		"١s", "00.5s", "0.s", "315576000000.9999999999s",
	} {
		s = append(s, transcodeSeed{tgRich, `{"dur":"` + dur + `"}`})
	}
	for _, fm := range []string{"a.b.c", ".a", "a..b", "aB1.c2D", "a b", "aé", "a,b,", ",", "a"} {
		s = append(s, transcodeSeed{tgRich, `{"fm":"` + fm + `"}`})
	}
	s = append(s, []transcodeSeed{
		{tgRich, `{"mSi":{"\u0000":1,"\u00e9":2,"é":3}}`},
		{tgRich, `{"st":{"a":1,"\u0061":2}}`},
		{tgRich, `{"rDb":[1e308,-1e-320,5e-324,2.2250738585072014e-308]}`},
		{tgRich, `{"fl":1.401298464324817e-45,"rFl":[1e-46,3.4028234663852886e38]}`},
		{tgRich, `{"i64":"1e18","u64":1e19,"i32":"-2147483648","s32":-2147483648,"sf32":2147483647}`},
		{tgRich, `{"u64":"18446744073709551616"}`},
		{tgRich, `{"i32":123456789012345678901234567890e-25}`},
		{tgRich, `{"i32":100000000000000000000e-19,"u64":100000000000000000000e-1}`},
		{tgRich, `{"i32":1e2147483648}`},
		{tgRich, `{"i32":0e2147483648}`},
		{tgRich, `{"i32":1e-2147483648}`},
		{tgRich, `{"color":1e0,"rColor":[1.0,"COLOR_RED"]}`},
		{tgRich, `{"color":2147483648}`},
	}...)
	return append(s, malformedSeeds()...)
}

// eventSeeds are the example events, as they are and as protojson writes
// them back, with proto names and JSON names.
func eventSeeds(tb testing.TB) []transcodeSeed {
	tb.Helper()
	targets := transcodeTargets(tb)
	var out []transcodeSeed
	for path, b := range exampleEvents(tb) {
		tg := eventTarget(path)
		out = append(out, transcodeSeed{tg, string(b)})
		m := dynamicpb.NewMessage(targets[tg].c.desc)
		if err := (protojson.UnmarshalOptions{}).Unmarshal(b, m); err != nil {
			tb.Fatal(err)
		}
		for _, opts := range []protojson.MarshalOptions{{}, {UseProtoNames: true, EmitUnpopulated: true}} {
			js, err := opts.Marshal(m)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, transcodeSeed{tg, string(js)})
		}
		if bin, err := (proto.MarshalOptions{Deterministic: true}).Marshal(m); err == nil {
			out = append(out, transcodeSeed{tg, string(bin)})
		}
	}
	return out
}

// FuzzTranscodeJSON holds the transcoder to the protojson path: the same
// inputs accepted, refusals MalformedErrors, and the same bytes published;
// and so with unknown fields allowed, against protojson's DiscardUnknown.
//
// The input is also read as the contract's message in protobuf binary;
// when it is one, protojson's JSON of it is checked too. Mutating binary
// reaches every field's shape far sooner than mutating JSON text does.
func FuzzTranscodeJSON(f *testing.F) {
	targets := transcodeTargets(f)
	seeds := append(eventSeeds(f), edgeSeeds()...)
	for _, c := range allowUnknownCases() {
		seeds = append(seeds, transcodeSeed{c.tg, c.in})
	}
	for _, s := range seeds {
		f.Add(uint8(s.tg), []byte(s.in))
		if bin, err := targets[s.tg].c.reflectJSON([]byte(s.in), false); err == nil && len(bin) > 0 {
			f.Add(uint8(s.tg), bin)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, in []byte) {
		tg := targets[int(which)%len(targets)]
		compareTranscode(t, tg, in)
		compareTranscodeAllowUnknown(t, tg, in)
		m, ok := binaryMessage(tg, in)
		if !ok {
			return
		}
		for _, opts := range []protojson.MarshalOptions{
			{},
			{UseProtoNames: true, UseEnumNumbers: true},
			{EmitUnpopulated: true, Multiline: true},
		} {
			if js, err := opts.Marshal(m); err == nil {
				compareTranscode(t, tg, js)
				compareTranscodeAllowUnknown(t, tg, js)
			}
		}
	})
}

// binaryMessage decodes in as tg's message in protobuf binary, if it is
// one. The decoder has panicked on hostile map entries; such input is
// simply not one.
func binaryMessage(tg transcodeTarget, in []byte) (m *dynamicpb.Message, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	m = dynamicpb.NewMessage(tg.c.desc)
	return m, proto.Unmarshal(in, m) == nil
}
