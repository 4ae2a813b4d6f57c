package contract

import "google.golang.org/protobuf/reflect/protoreflect"

// Binary payloads are decoded with hyperpb, a table-driven decoder
// compiled for each contract at load, onto arenas recycled from one
// payload to the next (payloads up to 64 KiB; a larger one gets an arena
// of its own). Its messages are read by protovalidate like any other and
// never outlive the check: nothing a Check returns points into them. The
// wire walk before it (wire.go) keeps the decoder's unchecked reads on
// well-formed data. A contract that is not proto3, can hold extensions or
// has a map with message values decodes with dynamicpb instead.
//
// JSON payloads are transcoded straight to the deterministic binary that
// protojson and proto.Marshal would make of them, by a transcoder compiled
// from the descriptor (transcode*.go), then decoded and validated as a
// binary payload is. A contract the transcoder does not cover
// (newJSONTranscoder says which) goes through protojson and a dynamic
// message. FuzzBinaryDecoders, FuzzTranscodeJSON and FuzzJSONDecoders hold
// each fast path to the answers, and the bytes, of the reflective one.

// Decoders names the decoders a contract's payloads go through, chosen at
// load: the fast ones unless the contract has a shape they do not handle
// as protobuf-go does, when the reason says which.
type Decoders struct {
	// Binary is "hyperpb", or "dynamicpb" with BinaryReason.
	Binary, BinaryReason string
	// JSON is "transcoder", or "protojson" with JSONReason.
	JSON, JSONReason string
}

// Decoders returns the decoders chosen for the contract at load.
func (c *Contract) Decoders() Decoders { return c.decoders }

// hyperpbRefuses returns why hyperpb v0.1.3 may not decode md's payloads,
// or "". hyperpb decodes a contract only where FuzzBinaryDecoders has held
// it to protobuf-go's answers: messages of proto3 files, without
// extensions. And it misreads map entries whose value is a message when
// the entry is not exactly its key then its value (a key alone, the value
// first, a key twice), refusing some that protobuf-go takes and panicking
// on others. Such contracts decode with dynamicpb.
func hyperpbRefuses(md protoreflect.MessageDescriptor) string {
	seen := make(map[protoreflect.FullName]bool)
	var walk func(md protoreflect.MessageDescriptor) string
	walk = func(md protoreflect.MessageDescriptor) string {
		if seen[md.FullName()] {
			return ""
		}
		seen[md.FullName()] = true
		switch {
		case md.ParentFile().Syntax() != protoreflect.Proto3:
			return string(md.FullName()) + " is not in a proto3 file"
		case md.ExtensionRanges().Len() > 0:
			return string(md.FullName()) + " can hold extensions"
		}
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			if fd.IsMap() && fd.MapValue().Message() != nil {
				return "field " + string(fd.FullName()) + " is a map with message values"
			}
			if fd.Message() != nil {
				if why := walk(fd.Message()); why != "" {
					return why
				}
			}
		}
		return ""
	}
	return walk(md)
}
