package contract

import "strconv"

// One rule bounds nesting in both forms: a payload may nest as deep as
// WithMaxDepth, counted as its protojson form nests. The payload's object
// is level 1, and each JSON object or array within it one more: a message,
// a map (its object; the values are a level below), a repeated field (its
// array; a message in it a level below that), a google.protobuf.Struct,
// ListValue or Empty. A google.protobuf.Value is the level of what it
// holds; a Timestamp, Duration, FieldMask or wrapper is a string or number,
// no level. JSON text is counted as written (CheckJSONDepth: an empty
// array counts too); binary by the wire walk, as the JSON protojson would
// write of it (a map entry without its value counts the value, as {}). So
// a message's binary and its protojson get the same verdict. The exception
// is google.protobuf.Any, whose value is bytes to every binary decoder and
// is not walked. In binary one JSON level of Struct is three levels of
// messages, so the decoders run with a recursion limit of 3*max+1
// (binaryLevels), which no payload within the rule reaches.

// CheckJSONDepth scans JSON text and returns a *MalformedError if objects
// and arrays nest deeper than max; a top-level object is depth 1. It makes
// one pass over b, skips string contents (escapes included) and allocates
// nothing unless it fails. It does not check that b is valid JSON:
// unbalanced or otherwise broken text is left to the decoder.
func CheckJSONDepth(b []byte, max int) error {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			// Skip to the closing quote; a backslash escapes the byte after
			// it, so `\"` and `\\` are handled alike.
			for i++; i < len(b); i++ {
				if b[i] == '\\' {
					i++
				} else if b[i] == '"' {
					break
				}
			}
		case '{', '[':
			depth++
			if depth > max {
				return &MalformedError{Msg: "JSON nests deeper than " + strconv.Itoa(max) + " at offset " + strconv.Itoa(i)}
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}
