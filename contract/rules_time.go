package contract

import (
	"strconv"
	"time"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Timestamp and duration ranges. protovalidate states them in CEL, which
// compares the values as protobuf-go's AsTime and AsDuration read them
// and prints a bound as RFC 3339 in UTC, or as seconds and "s". A value
// that is not a valid Timestamp or Duration is handed to protovalidate
// whole (ruleFallback): its answer there is CEL's.

// compileTimeRange compiles the gt, gte, lt and lte of a timestamp or
// duration field; the rules' other fields (const, lt_now, gt_now, within)
// are left, and so leave the field to protovalidate.
func compileTimeRange[R proto.Message, V any](rules R, typ string, read func(protoreflect.Message) (V, bool),
	bound func(protoreflect.Message) V, less func(a, b V) bool, format func(V) string,
) ([]valueCheck, error) {
	rules = proto.CloneOf(rules)
	m := rules.ProtoReflect()
	fields := m.Descriptor().Fields()
	var lo, hi V
	var hasLo, loExcl, hasHi, hiExcl bool
	for _, name := range []protoreflect.Name{"gt", "gte"} {
		if fd := fields.ByName(name); m.Has(fd) {
			lo, hasLo, loExcl = bound(m.Get(fd).Message()), true, name == "gt"
			m.Clear(fd)
		}
	}
	for _, name := range []protoreflect.Name{"lt", "lte"} {
		if fd := fields.ByName(name); m.Has(fd) {
			hi, hasHi, hiExcl = bound(m.Get(fd).Message()), true, name == "lt"
			m.Clear(fd)
		}
	}
	if err := rulesLeft(rules); err != nil {
		return nil, err
	}
	if !hasLo && !hasHi {
		return nil, nil
	}
	loRule, loMsg := typ+".gte", "greater than or equal to "+format(lo)
	if loExcl {
		loRule, loMsg = typ+".gt", "greater than "+format(lo)
	}
	hiRule, hiMsg := typ+".lte", "less than or equal to "+format(hi)
	if hiExcl {
		hiRule, hiMsg = typ+".lt", "less than "+format(hi)
	}
	below := func(x V) bool { return less(x, lo) || (loExcl && !less(lo, x)) }
	above := func(x V) bool { return less(hi, x) || (hiExcl && !less(x, hi)) }
	var fail *ruleFail
	var bad func(V) bool
	switch {
	case !hasLo:
		fail, bad = &ruleFail{rule: hiRule, msg: "must be " + hiMsg}, above
	case !hasHi:
		fail, bad = &ruleFail{rule: loRule, msg: "must be " + loMsg}, below
	case !less(hi, lo):
		hiName := hiRule[len(typ)+1:]
		fail = &ruleFail{rule: loRule + "_" + hiName, msg: "must be " + loMsg + " and " + hiMsg}
		bad = func(x V) bool { return below(x) || above(x) }
	default:
		hiName := hiRule[len(typ)+1:]
		fail = &ruleFail{rule: loRule + "_" + hiName + "_exclusive", msg: "must be " + loMsg + " or " + hiMsg}
		bad = func(x V) bool { return below(x) && above(x) }
	}
	return []valueCheck{func(v protoreflect.Value) *ruleFail {
		x, ok := read(v.Message())
		if !ok {
			return &ruleFallback
		}
		if bad(x) {
			return fail
		}
		return nil
	}}, nil
}

// timeParts reads a Timestamp's or Duration's two fields.
func timeParts(m protoreflect.Message) (int64, int32) {
	fields := m.Descriptor().Fields()
	return m.Get(fields.ByNumber(1)).Int(), int32(m.Get(fields.ByNumber(2)).Int())
}

func compileTimestamp(fd protoreflect.FieldDescriptor, tr *validate.TimestampRules) ([]valueCheck, error) {
	if fd.Message() == nil || fd.Message().FullName() != "google.protobuf.Timestamp" {
		return nil, errNotCompiled("rules do not fit the field")
	}
	read := func(m protoreflect.Message) (time.Time, bool) {
		s, n := timeParts(m)
		ts := timestamppb.Timestamp{Seconds: s, Nanos: n}
		return ts.AsTime(), ts.IsValid()
	}
	bound := func(m protoreflect.Message) time.Time { t, _ := read(m); return t }
	return compileTimeRange(tr, "timestamp", read, bound, time.Time.Before,
		func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) })
}

func compileDuration(fd protoreflect.FieldDescriptor, dr *validate.DurationRules) ([]valueCheck, error) {
	if fd.Message() == nil || fd.Message().FullName() != "google.protobuf.Duration" {
		return nil, errNotCompiled("rules do not fit the field")
	}
	read := func(m protoreflect.Message) (time.Duration, bool) {
		s, n := timeParts(m)
		d := durationpb.Duration{Seconds: s, Nanos: n}
		return d.AsDuration(), d.IsValid()
	}
	bound := func(m protoreflect.Message) time.Duration { d, _ := read(m); return d }
	return compileTimeRange(dr, "duration", read, bound, func(a, b time.Duration) bool { return a < b },
		func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s" })
}
