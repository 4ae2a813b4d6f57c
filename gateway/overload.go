package gateway

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/tap"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// receiving bounds the unary Publish calls whose request message is still
// arriving: from the call's headers to its handler. On a CPU-bound gateway
// HTTP/2 shares a connection among its streams, so each added call slows
// every body in transfer; without a bound, calls pile up there, unseen by
// the checking gate, until they pass their callers' deadlines unanswered.
// Past the bound a new call is refused at its headers, before its body is
// read, with UNAVAILABLE and RetryInfo: the cheapest answer there is. Only
// authenticated calls are counted, and each holds its place for at most
// timeout (Limits.ReceiveTimeout).
type receiving struct {
	limit   int64
	timeout time.Duration
	n       atomic.Int64
}

// streamSlots bounds the PublishStream streams open across connections
// (Limits.MaxStreams); Limits.MaxConcurrentStreams bounds them per
// connection. Only authenticated streams are counted.
type streamSlots struct {
	limit int64
	n     atomic.Int64
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
	r       *receiving
	settled atomic.Bool
	timer   *time.Timer // set before the receipt is shared
}

// settle uncounts the call; it reports whether this was the first settle.
func (t *receipt) settle() bool {
	if !t.settled.CompareAndSwap(false, true) {
		return false
	}
	t.r.n.Add(-1)
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

// tap is the gRPC server's InTapHandle. It runs on the connection's reader
// before the call's body is read, so it must be cheap. Publish and
// PublishStream are authenticated here from their headers: a call without
// a valid key is refused UNAUTHENTICATED before it takes a receiving place
// or a stream slot, and its message is never read. The source found goes
// to the handler in the context.
func (s *Service) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	var transport string
	switch info.FullMethodName {
	case ingestv1.IngestService_Publish_FullMethodName:
		transport = "grpc"
	case ingestv1.IngestService_PublishStream_FullMethodName:
		transport = "grpc-stream"
	default:
		return ctx, nil // health and reflection are small and open to all
	}
	// ctx also carries the peer, for identities other than the API key.
	src, f := s.sources.authenticate(metadata.NewIncomingContext(ctx, info.Header))
	if f != nil {
		s.metrics.requests.WithLabelValues(transport, f.Reason.String()).Inc()
		return ctx, f
	}
	ctx = withSource(ctx, src)
	if transport == "grpc-stream" {
		return s.openStream(ctx)
	}
	return s.receive(ctx)
}

// openStream takes a stream slot until the stream ends.
func (s *Service) openStream(ctx context.Context) (context.Context, error) {
	st := &s.streams
	if st.n.Add(1) > st.limit {
		st.n.Add(-1)
		s.metrics.requests.WithLabelValues("grpc-stream", ingestv1.Reason_UNAVAILABLE.String()).Inc()
		s.metrics.streamsRefused.Inc()
		return ctx, &Failure{Reason: ingestv1.Reason_UNAVAILABLE, RetryAfter: s.cfg.UnavailableRetryAfter,
			Message: fmt.Sprintf("the gateway is at capacity: %d streams are already open", st.limit)}
	}
	// The stream's context ends with the stream on every path.
	context.AfterFunc(ctx, func() { st.n.Add(-1) })
	return ctx, nil
}

// receive takes a receiving place for a unary call until its message is
// in, the call ends, or Limits.ReceiveTimeout passes; at that deadline the
// call is cut off (see receiveContext).
func (s *Service) receive(ctx context.Context) (context.Context, error) {
	r := &s.receiving
	if r.n.Add(1) > r.limit {
		r.n.Add(-1)
		s.metrics.requests.WithLabelValues("grpc", ingestv1.Reason_UNAVAILABLE.String()).Inc()
		s.metrics.requestsShed.Inc()
		return ctx, &Failure{Reason: ingestv1.Reason_UNAVAILABLE, RetryAfter: s.cfg.UnavailableRetryAfter,
			Message: fmt.Sprintf("the gateway is at capacity: %d requests are already arriving", r.limit)}
	}
	inner, cancel := context.WithCancel(ctx)
	rc := &receiveContext{Context: inner, cancel: cancel}
	t := &receipt{r: r}
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
