package contract

import (
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// canonical re-encodes a message for fingerprints: map entries sorted,
// fields in the order the marshaler always uses.
var canonical = proto.MarshalOptions{Deterministic: true}

// Render decodes b, a message of the contract in protobuf binary as the
// gateway published it, for a reader: its protojson form and its
// deterministic binary (Render of two encodings of one message gives the
// same canonical bytes). It applies none of CheckBinary's refusals and
// none of the rules: the gateway did before publishing, and what was
// published must be readable. A value that does not decode is a
// *MalformedError; a decoder panic is that value's error, not the
// caller's crash.
func (c *Contract) Render(b []byte) (js, canonicalBinary []byte, err error) {
	m, err := c.decodeDynamic(b)
	if err != nil {
		return nil, nil, err
	}
	if js, err = protojson.Marshal(m); err != nil {
		return nil, nil, &MalformedError{Msg: "render " + c.typ + " as JSON", Err: err}
	}
	if canonicalBinary, err = canonical.Marshal(m); err != nil {
		return nil, nil, &MalformedError{Msg: "re-encode " + c.typ, Err: err}
	}
	return js, canonicalBinary, nil
}
