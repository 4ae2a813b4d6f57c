package contract

import (
	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/reflect/protoreflect"
)

const (
	// timestampWide is what protojson reads as a Timestamp: Go's
	// time.Parse of RFC 3339, which also takes a one-digit hour, a
	// fraction after a comma (of any length) and an offset of up to 24
	// hours and 60 minutes, with at most nine digits after a dot. It is
	// wider by days past their month's end and instants outside years 1
	// to 9999, which are refused.
	timestampWide = `^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01]?[0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]` +
		`(?:\.[0-9]{1,9}|,[0-9]+)?(?:Z|[+-](?:[01][0-9]|2[0-4]):(?:[0-5][0-9]|60))$`
	// timestampNarrow is UTC on days every month has, years 1 to 9999.
	timestampNarrow = `^(?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])T` +
		`(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,9})?Z$`
	// durationWide is what protojson reads as a Duration: a sign or not,
	// whole seconds or not, a dot and up to nine digits or not, and s. It
	// is wider by seconds past 315576000000, which are refused.
	durationWide   = `^[+-]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]{0,9})?|\.[0-9]{0,9})s$`
	durationNarrow = `^-?(?:0|[1-9][0-9]{0,10})(?:\.[0-9]{1,9})?s$`
)

// wellKnown is the JSON form of the well-known types protojson reads
// other than as objects of their fields, under rules; false for any other
// message. In the sound twin the types whose values are any JSON are
// not described (nothing).
func (b *schemaBuilder) wellKnown(md protoreflect.MessageDescriptor, rules *validate.FieldRules, typed protoreflect.Message) (*Schema, bool) {
	var s *Schema
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		s = b.pick(&Schema{Type: "string", Pattern: portable(timestampWide),
			Description: "An RFC 3339 date-time, as Go's time.Parse reads one; years 1 to 9999."},
			&Schema{Type: "string", Pattern: portable(timestampNarrow)})
	case "google.protobuf.Duration":
		s = b.pick(&Schema{Type: "string", Pattern: portable(durationWide),
			Description: "Seconds with up to nine decimals and an s, at most 315576000000 either way."},
			&Schema{Type: "string", Pattern: portable(durationNarrow)})
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value", "google.protobuf.UInt64Value",
		"google.protobuf.Int32Value", "google.protobuf.UInt32Value", "google.protobuf.BoolValue", "google.protobuf.StringValue",
		"google.protobuf.BytesValue":
		return b.value(md.Fields().ByNumber(1), rules, nil), true // the rules are the wrapped kind's
	case "google.protobuf.Empty":
		s = &Schema{Type: "object", MaxProperties: ptr(uint64(0))}
	case "google.protobuf.Struct":
		s = b.pick(&Schema{Type: "object", Description: "Any JSON object (google.protobuf.Struct)."}, &Schema{Nothing: true})
	case "google.protobuf.Value":
		s = b.pick(&Schema{Description: "Any JSON value (google.protobuf.Value)."}, &Schema{Nothing: true})
	case "google.protobuf.ListValue":
		s = b.pick(&Schema{Type: "array", Description: "Any JSON array (google.protobuf.ListValue)."}, &Schema{Nothing: true})
	case "google.protobuf.FieldMask":
		s = b.pick(&Schema{Type: "string", Description: "Field paths in lowerCamelCase, separated by commas (google.protobuf.FieldMask)."}, &Schema{Nothing: true})
	case "google.protobuf.Any":
		s = b.pick(&Schema{Type: "object", Description: `A message with its type URL in "@type" (google.protobuf.Any).`}, &Schema{Nothing: true})
	default:
		return nil, false
	}
	if typed != nil {
		s = b.unstated(s, "the "+string(typed.Descriptor().Name())+" rules")
	}
	return s, true
}
