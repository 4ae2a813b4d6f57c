package gateway

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/tap"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/share"
)

// receiving bounds the unary Publish calls whose request message is still
// arriving: from the call's headers to its handler. On a CPU-bound gateway
// HTTP/2 shares a connection among its streams, so each added call slows
// every body in transfer; without a bound, calls pile up there, unseen by
// the checking gate, until they pass their callers' deadlines unanswered.
// Past the bound a new call is refused at its headers, before its body is
// read, with UNAVAILABLE and RetryInfo: the cheapest answer there is. Only
// authenticated calls are counted, and each holds its place for at most
// timeout (Limits.ReceiveTimeout). The places are shared among the sources
// (tenancy.go): a source past its share while places are left is refused
// RATE_LIMITED instead.
type receiving struct {
	pool    *share.Pool
	timeout time.Duration
}

// streamSlots bounds the authenticated streams open across connections
// (Limits.MaxStreams): PublishStream, and health or reflection calls that
// carry a valid credential; Limits.MaxConcurrentStreams bounds every
// stream per connection. The slots are shared among the sources
// (tenancy.go), and a source may have a bound of its own (max_streams).
type streamSlots struct {
	pool *share.Pool
}

// openCalls bounds the gRPC calls of callers without a valid credential
// (Limits.UnauthenticatedStreams): health, reflection, and methods the
// server does not serve, which gRPC answers UNIMPLEMENTED at once. It is a
// share of their own: a caller without a credential never takes a place
// that an authenticated one needs. Of the share, methods that stream
// (health Watch, reflection), which a caller can hold until its
// connection's age ends it, hold at most half, so a health Check (what
// load balancers probe with) always finds room.
type openCalls struct {
	limit, streamLimit int64
	n, streaming       atomic.Int64
	// streams names the methods that stream, by full name. It is set
	// from the server's registered services before the server serves,
	// and only read after.
	streams map[string]bool
}

func newOpenCalls(limit int) *openCalls {
	return &openCalls{limit: int64(limit), streamLimit: int64(limit / 2)}
}

// take counts a call of method until ctx, the call's, ends; false when
// the share, or its streams' half, is full, and then nothing is counted.
func (o *openCalls) take(ctx context.Context, method string) bool {
	stream := o.streams[method]
	if o.n.Add(1) > o.limit {
		o.n.Add(-1)
		return false
	}
	if stream && o.streaming.Add(1) > o.streamLimit {
		o.streaming.Add(-1)
		o.n.Add(-1)
		return false
	}
	context.AfterFunc(ctx, func() {
		if stream {
			o.streaming.Add(-1)
		}
		o.n.Add(-1)
	})
	return true
}

// streamingMethods are the full names of the methods of services that
// stream (either way).
func streamingMethods(services map[string]grpc.ServiceInfo) map[string]bool {
	m := map[string]bool{}
	for name, svc := range services {
		for _, method := range svc.Methods {
			if method.IsClientStream || method.IsServerStream {
				m["/"+name+"/"+method.Name] = true
			}
		}
	}
	return m
}

// receiptKey carries a call's receipt from the tap to its handler.
type receiptKey struct{}

// sourceKey carries the source that the tap (gRPC) or authenticateREST
// found to the handler, so a call is authenticated once.
type sourceKey struct{}

func withSource(ctx context.Context, src *source) context.Context {
	return context.WithValue(ctx, sourceKey{}, src)
}

func sourceOf(ctx context.Context) (*source, bool) {
	src, ok := ctx.Value(sourceKey{}).(*source)
	return src, ok && src != nil
}

// receipt is one counted call. It is settled once, by whichever comes
// first: its message arriving, the call ending, or the receive deadline.
type receipt struct {
	t       *share.Tenant // the source's account of the receiving places
	settled atomic.Bool
	timer   *time.Timer // set before the receipt is shared
}

// settle uncounts the call; it reports whether this was the first settle.
func (t *receipt) settle() bool {
	if !t.settled.CompareAndSwap(false, true) {
		return false
	}
	t.t.Give(1)
	return true
}

// done settles the call from its handler or its end, and stops the
// receive deadline.
func (t *receipt) done() {
	if t.settle() {
		t.timer.Stop()
	}
}

// receiveContext is a unary call's context that also ends when the
// call's message has not arrived by the receive deadline. gRPC reads the
// message before any handler of sluice's runs, and that read watches only
// this context: ending it is the one way to cut the call off. gRPC then
// answers with the code of the context's error itself, so no ErrorInfo can
// go with it; Err makes that code DEADLINE_EXCEEDED, which says what
// happened (a deadline passed before the request was complete), rather
// than the CANCELED a plain cancel would give, which reads as the caller's
// own doing. Deadline stays the caller's: the handler's publish deadline is
// not shortened by the receive deadline.
type receiveContext struct {
	context.Context
	cancel  context.CancelFunc
	expired atomic.Bool
}

func (c *receiveContext) Err() error {
	err := c.Context.Err()
	if err != nil && c.expired.Load() {
		return context.DeadlineExceeded
	}
	return err
}

// expire ends the context as past its receive deadline.
func (c *receiveContext) expire() {
	c.expired.Store(true) // before Done closes, so Err never says Canceled
	c.cancel()
}

// tap is the gRPC server's InTapHandle: every call passes it, on the
// connection's reader, before the call's body is read, so it must be
// cheap. Publish and PublishStream are authenticated here from their
// headers: a call without a valid key is refused UNAUTHENTICATED before it
// takes a receiving place or a stream slot, and its message is never
// read. The source found goes to the handler in the context. Every other
// call (health, reflection) is open to all and counted by tapOpen.
func (s *Service) tap(ctx context.Context, info *tap.Info, open *openCalls) (context.Context, error) {
	var transport string
	switch info.FullMethodName {
	case ingestv1.IngestService_Publish_FullMethodName:
		transport = "grpc"
	case ingestv1.IngestService_PublishStream_FullMethodName:
		transport = "grpc-stream"
	default:
		return s.tapOpen(ctx, info, open)
	}
	// ctx also carries the peer, for identities other than the API key.
	src, f := s.sources.authenticate(metadata.NewIncomingContext(ctx, info.Header))
	if f != nil {
		s.metrics.requests.WithLabelValues(transport, f.Reason.String()).Inc()
		return ctx, f
	}
	ctx = withSource(ctx, src)
	if transport == "grpc-stream" {
		return s.openStream(ctx, src)
	}
	if f := s.enterRequestUntil(ctx, src); f != nil {
		s.metrics.requests.WithLabelValues(transport, f.Reason.String()).Inc()
		return ctx, f
	}
	return s.receive(ctx, src)
}

// openStream takes a stream slot until the stream ends.
func (s *Service) openStream(ctx context.Context, src *source) (context.Context, error) {
	if f := s.takeStream(ctx, src); f != nil {
		s.metrics.requests.WithLabelValues("grpc-stream", f.Reason.String()).Inc()
		return ctx, f
	}
	return ctx, nil
}

// takeStream takes one of src's stream slots until ctx, the stream's,
// ends: refused RATE_LIMITED past the source's max_streams or its share
// while slots are left, UNAVAILABLE when none is.
func (s *Service) takeStream(ctx context.Context, src *source) *Failure {
	t := src.tenancy
	if !t.openStreams.take() {
		s.metrics.streamsRefused.Inc()
		return &Failure{Reason: ingestv1.Reason_RATE_LIMITED, RetryAfter: s.cfg.UnavailableRetryAfter,
			Message: fmt.Sprintf("source %s is over its max_streams: %d streams are already open", src.name, t.openStreams.limit)}
	}
	if !t.streams.TryTake(1) {
		t.openStreams.give()
		s.metrics.streamsRefused.Inc()
		if f := s.overShare(src, t.streams, s.streams.pool, 1, "the stream slots (limits.max_streams)"); f != nil {
			return f
		}
		return &Failure{Reason: ingestv1.Reason_UNAVAILABLE, RetryAfter: s.cfg.UnavailableRetryAfter,
			Message: fmt.Sprintf("the gateway is at capacity: %d streams are already open", s.streams.pool.Capacity())}
	}
	// The stream's context ends with the stream on every path.
	context.AfterFunc(ctx, func() {
		t.streams.Give(1)
		t.openStreams.give()
	})
	return nil
}

// tapOpen counts a call of a method open to all. A caller that presents a
// valid credential takes a stream slot (Limits.MaxStreams), as a
// PublishStream does, and is refused the same way past it; any other,
// with no credential or a wrong one, takes a place in the unauthenticated
// share, and is refused UNAVAILABLE with RetryInfo past it. UNAVAILABLE,
// not RESOURCE_EXHAUSTED: the share is the gateway's capacity, as
// max_streams and receiving_requests are, not a quota of the caller's
// (RESOURCE_EXHAUSTED is RATE_LIMITED, a source's rate, in the rejection
// table), and gRPC clients' retry policies retry UNAVAILABLE.
func (s *Service) tapOpen(ctx context.Context, info *tap.Info, open *openCalls) (context.Context, error) {
	if src, f := s.sources.authenticate(metadata.NewIncomingContext(ctx, info.Header)); f == nil {
		if f := s.takeStream(ctx, src); f != nil {
			return ctx, f
		}
		return withSource(ctx, src), nil
	}
	if !open.take(ctx, info.FullMethodName) {
		s.metrics.unauthenticatedRefused.Inc()
		return ctx, &Failure{Reason: ingestv1.Reason_UNAVAILABLE, RetryAfter: s.cfg.UnavailableRetryAfter,
			Message: fmt.Sprintf("the gateway is at capacity for callers without a credential: %d calls are open, at most %d of them streams (limits.unauthenticated_streams); send an API key or a client certificate to be counted apart",
				open.limit, open.streamLimit)}
	}
	return ctx, nil
}

// receive takes one of src's receiving places for a unary call until its
// message is in, the call ends, or Limits.ReceiveTimeout passes; at that
// deadline the call is cut off (see receiveContext).
func (s *Service) receive(ctx context.Context, src *source) (context.Context, error) {
	r := &s.receiving
	if !src.receiving.TryTake(1) {
		s.metrics.requestsShed.Inc()
		f := s.overShare(src, src.receiving, r.pool, 1, "the receiving places (limits.receiving_requests)")
		if f == nil {
			f = &Failure{Reason: ingestv1.Reason_UNAVAILABLE, RetryAfter: s.cfg.UnavailableRetryAfter,
				Message: fmt.Sprintf("the gateway is at capacity: %d requests are already arriving", r.pool.Capacity())}
		}
		s.metrics.requests.WithLabelValues("grpc", f.Reason.String()).Inc()
		return ctx, f
	}
	inner, cancel := context.WithCancel(ctx)
	rc := &receiveContext{Context: inner, cancel: cancel}
	t := &receipt{t: src.receiving}
	t.timer = time.AfterFunc(r.timeout, func() {
		if t.settle() {
			s.metrics.receiveTimeouts.Inc()
			rc.expire()
		}
	})
	// The call's context ends with the call on every path, also one that
	// never reaches the handler (a cut-off body, a passed deadline).
	context.AfterFunc(ctx, t.done)
	return context.WithValue(rc, receiptKey{}, t), nil
}

// received uncounts the call: its request message is in.
func received(ctx context.Context) {
	if t, ok := ctx.Value(receiptKey{}).(*receipt); ok {
		t.done()
	}
}
