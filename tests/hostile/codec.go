package hostile

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec
	"google.golang.org/grpc/mem"
)

// wire is a request message already in protobuf wire form. The client
// codec sends it as it is, without a copy, so one giant message serves
// every caller, and so can bytes that are no protobuf at all.
type wire []byte

// wireCodec is the "proto" codec, except that a wire goes out untouched.
// Answers are decoded as protobuf.
type wireCodec struct{ proto encoding.CodecV2 }

func (c wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	if w, ok := v.(wire); ok {
		// A SliceBuffer is not pooled: freeing it leaves w as it is.
		return mem.BufferSlice{mem.SliceBuffer(w)}, nil
	}
	return c.proto.Marshal(v)
}

func (c wireCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return c.proto.Unmarshal(data, v)
}

func (wireCodec) Name() string { return "proto" }

// sendWire is the call option that lets calls send wire messages.
func sendWire() grpc.CallOption {
	return grpc.ForceCodecV2(wireCodec{proto: encoding.GetCodecV2("proto")})
}
