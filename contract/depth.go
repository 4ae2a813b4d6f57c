package contract

import "strconv"

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
