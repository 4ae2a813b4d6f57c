package gateway

import (
	"sync"

	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// gRPC answers a request message that does not decode with a bare INTERNAL
// status, written before any handler runs. sluice's promise is a typed
// MALFORMED instead, so the server's codec lets a publish request that
// fails to decode through as an empty message and notes the error, keyed
// by the message, for the handler to take and answer with.

// decodeFailures holds the decode errors of messages on their way to a
// handler. Entries live from the codec to the handler's take: at most one
// per request being received.
type decodeFailures struct {
	mu sync.Mutex
	m  map[proto.Message]error
}

func newDecodeFailures() *decodeFailures {
	return &decodeFailures{m: map[proto.Message]error{}}
}

func (d *decodeFailures) put(m proto.Message, err error) {
	d.mu.Lock()
	d.m[m] = err
	d.mu.Unlock()
}

// take returns and forgets the decode error of m, if it had one.
func (d *decodeFailures) take(m proto.Message) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.m) == 0 {
		return nil
	}
	err, ok := d.m[m]
	if ok {
		delete(d.m, m)
	}
	return err
}

// noteDecodeFailures is the "proto" codec, except that a publish request
// that does not decode is noted rather than failed.
type noteDecodeFailures struct {
	encoding.CodecV2
	failures *decodeFailures
}

func newServerCodec(f *decodeFailures) encoding.CodecV2 {
	return noteDecodeFailures{CodecV2: encoding.GetCodecV2("proto"), failures: f}
}

func (c noteDecodeFailures) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	switch m := v.(type) {
	case *ingestv1.PublishRequest:
		proto.Reset(m)
		c.failures.put(m, err)
		return nil
	case *ingestv1.PublishStreamRequest:
		proto.Reset(m)
		c.failures.put(m, err)
		return nil
	}
	return err
}

func malformedRequest(err error) *Failure {
	return &Failure{Reason: ingestv1.Reason_MALFORMED, Message: "request does not decode: " + err.Error()}
}
