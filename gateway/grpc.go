package gateway

import (
	"fmt"

	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec
	"google.golang.org/grpc/mem"

	"github.com/sluicehq/sluice/gateway/envelope"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/tracing"
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
//     where gRPC's own decoding would answer a bare INTERNAL before it;
//     and so is a compressed one that does not decompress, which the
//     codec decompresses itself (compress.go), bounded by
//     MaxRequestBytes.

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
	// coding is the call's grpc-encoding (callCoding): a message that
	// came compressed in it arrives marked, and is decompressed here.
	coding contentCoding
	// prepay, when set, takes an uncompressed Publish message's bytes from
	// its source's bytes_rate bucket once its size is known (within
	// MaxRequestBytes), before it is decoded (source.prepay); a refusal is
	// the call's failure. A stream's
	// batches are charged once decoded instead, so that a batch over the
	// rate is answered event by event and its stream goes on.
	prepay  func(size int) (*rate.Reservation, *Failure)
	batch   *batch
	failure *Failure
}

// serverCodec is the "proto" codec, except that a wireRequest is decoded
// by decodeWireBatch, the answers are written by marshalAnswer, and a
// message that came compressed (marked, see compress.go) is decompressed
// here, bounded.
type serverCodec struct {
	encoding.CodecV2
	limits   envelope.Limits
	maxBytes int
	// decoders decompress Publish messages, to at most maxBytes, as REST
	// bodies are; others those of the other services (health,
	// reflection), to at most otherMessageBytes with a zstd window of at
	// most that: they are open to callers without a credential, and
	// charged to no budget.
	decoders, others *bodyDecoders
}

// otherMessageBytes bounds a compressed health or reflection request once
// decompressed, and its zstd window: each is a name or two, and an
// encoder given a message whole writes a frame whose window is its size.
const otherMessageBytes = 64 << 10

// maxReceiveBytes is what the gRPC transport reads of one message: twice
// Limits.MaxRequestBytes, and a byte for the mark a compressed one gets
// before the codec. A message over the limit and within this is read and
// refused BATCH_TOO_LARGE with ErrorInfo, undecoded; a larger one is
// refused by the transport from its length prefix, unread, with a bare
// RESOURCE_EXHAUSTED (gRPC answers a failed receive itself). Both are
// within what the handler charged before reading (requestCost).
func maxReceiveBytes(l LimitsConfig) int { return 2*l.MaxRequestBytes + 1 }

func newServerCodec(l LimitsConfig) encoding.CodecV2 {
	return serverCodec{CodecV2: encoding.GetCodecV2("proto"), limits: envelopeLimitsOf(l), maxBytes: l.MaxRequestBytes,
		decoders: newMessageDecoders(l.MaxRequestBytes, zstdWindowFor(l.MaxRequestBytes)),
		others:   newMessageDecoders(otherMessageBytes, otherMessageBytes+1)}
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
		return c.unmarshalOther(data, v)
	}
	if w.coding != codingIdentity && markedCoding(data) == w.coding {
		w.batch, w.failure = c.decodeCompressed(w.coding, newMarkedMessage(data), w.stream)
		return nil
	}
	if n := data.Len(); n > c.maxBytes {
		w.failure = &Failure{Reason: ingestv1.Reason_BATCH_TOO_LARGE,
			Message: fmt.Sprintf("%d bytes is over the limit of %d per request", n, c.maxBytes)}
		return nil
	}
	var paid *rate.Reservation
	if w.prepay != nil {
		if paid, w.failure = w.prepay(data.Len()); w.failure != nil {
			return nil
		}
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
	// A message that does not decode keeps its charge: its bytes were
	// sent and read.
	if w.batch, w.failure = decodeWireBatch(msg, w.stream, c.limits); w.batch != nil {
		w.batch.paid = paid
	}
	return nil
}

// decodeCompressed decodes a message that came compressed in coding: over
// maxBytes as it came, BATCH_TOO_LARGE, as a REST body over it is; else
// decompressed by the decoders REST uses, so it is refused as a REST body
// is: DECOMPRESSED_TOO_LARGE past maxBytes decoded (or for a zstd window
// over the limit), MALFORMED when it does not decompress.
func (c serverCodec) decodeCompressed(coding contentCoding, m *markedMessage, stream bool) (*batch, *Failure) {
	if n := m.Len(); n > c.maxBytes {
		return nil, &Failure{Reason: ingestv1.Reason_BATCH_TOO_LARGE,
			Message: fmt.Sprintf("%d bytes compressed is over the limit of %d per request", n, c.maxBytes)}
	}
	msg, f := readBody(c.decoders.reader(coding, m), c.maxBytes, false, c.decoders.failure)
	if f != nil {
		return nil, f
	}
	return decodeWireBatch(msg, stream, c.limits)
}

// unmarshalOther decodes a message of another service (health,
// reflection), decompressing a marked one first. grpc-go answers an error
// here with INTERNAL: those services have no typed answers.
func (c serverCodec) unmarshalOther(data mem.BufferSlice, v any) error {
	coding := markedCoding(data)
	if coding == codingIdentity {
		return c.CodecV2.Unmarshal(data, v)
	}
	msg, f := readBody(c.others.reader(coding, newMarkedMessage(data)), otherMessageBytes, false, c.others.failure)
	if f != nil {
		return f
	}
	return c.CodecV2.Unmarshal(mem.BufferSlice{mem.SliceBuffer(msg)}, v)
}

// receiveCost is what a gRPC receive in coding is charged before its
// message arrives, whose size is not known yet: a request of
// MaxRequestBytes, and for zstd the decoder's window besides, as REST
// charges a zstd body.
func (s *Service) receiveCost(coding contentCoding) int64 {
	n := requestCost(s.cfg.Limits.MaxRequestBytes)
	if coding == codingZstd {
		n += zstdWindowFor(s.cfg.Limits.MaxRequestBytes)
	}
	return n
}

// prepayMessage is a wireRequest's prepay for src's messages, or nil when
// src has no bytes_rate.
func (s *Service) prepayMessage(src *source) func(int) (*rate.Reservation, *Failure) {
	if src.bytes == nil {
		return nil
	}
	return func(size int) (*rate.Reservation, *Failure) { return src.prepay(s.now(), int64(size)) }
}

// publishUnary serves Publish: one request message, one answer.
func (s *Service) publishUnary(stream grpc.ServerStream) error {
	start := s.now()
	ctx, span := s.startRequest(stream.Context(), spanPublish, "grpc", nil)
	defer func() {
		tracing.Observe(ctx, s.metrics.requestDuration.WithLabelValues("grpc"), s.now().Sub(start).Seconds())
		span.end()
	}()
	fail := func(f *Failure) error {
		s.metrics.requests.WithLabelValues("grpc", f.Reason.String()).Inc()
		span.fail(f)
		return f
	}
	src, f := s.source(ctx)
	if f != nil {
		return fail(f)
	}
	span.source(src)
	// The message's size is not known before it arrives: the largest's
	// charge is taken, and the rest handed back once it is in.
	coding := callCoding(ctx)
	hold, f := s.holdMemory(ctx, src, s.receiveCost(coding))
	if f != nil {
		return fail(f)
	}
	defer hold.release()
	in := wireRequest{coding: coding, prepay: s.prepayMessage(src)}
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
	span.decoded(in.batch)
	resp, f := s.publishBatch(ctx, "grpc", src, in.batch)
	if f != nil {
		span.fail(f)
		return f // counted by publishBatch
	}
	return stream.SendMsg(resp)
}
