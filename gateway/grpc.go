package gateway

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec
	"google.golang.org/grpc/mem"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// gRPC: sluice serves sluice.ingest.v1.IngestService with a ServiceDesc of
// its own, under the generated one's names (reflection and clients see the
// same service), for three reasons:
//   - both methods are served as streams, so the handler runs before the
//     request message is read and charges the memory budget first. On the
//     wire a unary call is a stream of one message each way, so unary
//     clients are unaffected;
//   - the request is decoded by decodeWireBatch (strict: unknown and
//     mistyped envelope fields are MALFORMED, the count is enforced while
//     decoding), through the server codec, into a wireRequest;
//   - a request that does not decode is typed MALFORMED by the handler,
//     where gRPC's own decoding would answer a bare INTERNAL before it.

// batchServer is what ingestService's handlers serve.
type batchServer interface {
	publishUnary(grpc.ServerStream) error
	publishStream(grpc.ServerStream) error
}

var ingestService = grpc.ServiceDesc{
	ServiceName: ingestv1.IngestService_ServiceDesc.ServiceName,
	HandlerType: (*batchServer)(nil),
	Streams: []grpc.StreamDesc{
		{
			StreamName: "Publish",
			Handler:    func(srv any, st grpc.ServerStream) error { return srv.(batchServer).publishUnary(st) },
		},
		{
			StreamName:    "PublishStream",
			Handler:       func(srv any, st grpc.ServerStream) error { return srv.(batchServer).publishStream(st) },
			ServerStreams: true,
			ClientStreams: true,
		},
	},
	Metadata: ingestv1.IngestService_ServiceDesc.Metadata,
}

// wireRequest receives one PublishRequest (stream false) or
// PublishStreamRequest message through the server codec: the decoded batch,
// or why it did not decode.
type wireRequest struct {
	stream bool
	// compressed: the call's messages come compressed (callCompressed),
	// so one over the limit was larger once decompressed.
	compressed bool
	batch      *batch
	failure    *Failure
}

// serverCodec is the "proto" codec, except that a wireRequest is decoded
// by decodeWireBatch, and the answers are written by marshalAnswer.
type serverCodec struct {
	encoding.CodecV2
	limits   envelopeLimits
	maxBytes int
}

// maxReceiveBytes is what the gRPC transport reads of one message: twice
// Limits.MaxRequestBytes. A message over the limit and within this is read
// and refused BATCH_TOO_LARGE with ErrorInfo, undecoded; a larger one is
// refused by the transport from its length prefix, unread, with a bare
// RESOURCE_EXHAUSTED (gRPC answers a failed receive itself). Both are
// within what the handler charged before reading (requestCost).
func maxReceiveBytes(l LimitsConfig) int { return 2 * l.MaxRequestBytes }

func newServerCodec(l LimitsConfig) encoding.CodecV2 {
	return serverCodec{CodecV2: encoding.GetCodecV2("proto"), limits: envelopeLimitsOf(l), maxBytes: l.MaxRequestBytes}
}

func envelopeLimitsOf(l LimitsConfig) envelopeLimits {
	return envelopeLimits{maxEvents: l.MaxEventsPerRequest, maxAttributeKeys: maxAttributes + 1}
}

func (c serverCodec) Marshal(v any) (mem.BufferSlice, error) {
	if data, ok := marshalAnswer(v); ok {
		return data, nil
	}
	return c.CodecV2.Marshal(v)
}

func (c serverCodec) Unmarshal(data mem.BufferSlice, v any) error {
	w, ok := v.(*wireRequest)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	if n := data.Len(); n > c.maxBytes {
		w.failure = &Failure{Reason: ingestv1.Reason_BATCH_TOO_LARGE,
			Message: fmt.Sprintf("%d bytes is over the limit of %d per request", n, c.maxBytes)}
		if w.compressed {
			w.failure = &Failure{Reason: ingestv1.Reason_DECOMPRESSED_TOO_LARGE,
				Message: fmt.Sprintf("%d bytes once decompressed is over the limit of %d per request", n, c.maxBytes)}
		}
		return nil
	}
	// The decoder copies what it keeps, so the message's buffers go back
	// to their pool when this returns. gRPC reads a message into one
	// buffer, which is decoded where it is; only a message in pieces is
	// first copied into one (into a pooled buffer, which the pool clears).
	var msg []byte
	switch len(data) {
	case 0: // an empty message
	case 1:
		msg = data[0].ReadOnlyData()
	default:
		buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
		defer buf.Free()
		msg = buf.ReadOnlyData()
	}
	w.batch, w.failure = decodeWireBatch(msg, w.stream, c.limits)
	return nil
}

// publishUnary serves Publish: one request message, one answer.
func (s *Service) publishUnary(stream grpc.ServerStream) error {
	ctx := stream.Context()
	start := s.now()
	defer func() { s.metrics.requestDuration.WithLabelValues("grpc").Observe(s.now().Sub(start).Seconds()) }()
	fail := func(f *Failure) error {
		s.metrics.requests.WithLabelValues("grpc", f.Reason.String()).Inc()
		return f
	}
	src, f := s.source(ctx)
	if f != nil {
		return fail(f)
	}
	// The message's size is not known before it arrives: the largest's
	// charge is taken, and the rest handed back once it is in.
	hold, f := s.holdMemory(ctx, requestCost(s.cfg.Limits.MaxRequestBytes))
	if f != nil {
		return fail(f)
	}
	defer hold.release()
	in := wireRequest{compressed: callCompressed(ctx)}
	if err := stream.RecvMsg(&in); err != nil {
		// gRPC has answered: the call ended, passed its receive deadline,
		// or sent a message over maxReceiveBytes.
		return err
	}
	received(ctx)
	if in.failure != nil {
		return fail(in.failure)
	}
	hold.shrink(requestCost(in.batch.size))
	resp, f := s.publishBatch(ctx, "grpc", src, in.batch)
	if f != nil {
		return f // counted by publishBatch
	}
	return stream.SendMsg(resp)
}
