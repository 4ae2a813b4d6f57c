package gateway

import (
	"context"
	"fmt"
	"sync/atomic"

	"google.golang.org/grpc/tap"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// receiving bounds the unary Publish calls whose request message is still
// arriving: from the call's headers to its handler. On a CPU-bound gateway
// HTTP/2 shares a connection among its streams, so each added call slows
// every body in transfer; without a bound, calls pile up there, unseen by
// the checking gate, until they pass their callers' deadlines unanswered.
// Past the bound a new call is refused at its headers, before its body is
// read, with UNAVAILABLE and RetryInfo: the cheapest answer there is.
type receiving struct {
	limit int64
	n     atomic.Int64
}

// receiptKey carries a call's receipt from the tap to its handler.
type receiptKey struct{}

// receipt is one counted call; done uncounts it, once.
type receipt struct {
	r    *receiving
	once atomic.Bool
}

func (t *receipt) done() {
	if t.once.CompareAndSwap(false, true) {
		t.r.n.Add(-1)
	}
}

// tap is the gRPC server's InTapHandle. It runs on the connection's reader
// before the call's body is read, so it must be cheap.
func (s *Service) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if info.FullMethodName != ingestv1.IngestService_Publish_FullMethodName {
		return ctx, nil // streams are paced by their window; others are small
	}
	r := &s.receiving
	if r.n.Add(1) > r.limit {
		r.n.Add(-1)
		s.metrics.requests.WithLabelValues("grpc", ingestv1.Reason_UNAVAILABLE.String()).Inc()
		s.metrics.requestsShed.Inc()
		return ctx, &Failure{Reason: ingestv1.Reason_UNAVAILABLE, RetryAfter: s.cfg.UnavailableRetryAfter,
			Message: fmt.Sprintf("the gateway is at capacity: %d requests are already arriving", r.limit)}
	}
	t := &receipt{r: r}
	// The call's context ends with the call on every path, also one that
	// never reaches the handler (a cut-off body, a passed deadline).
	context.AfterFunc(ctx, t.done)
	return context.WithValue(ctx, receiptKey{}, t), nil
}

// received uncounts the call: its request message is in.
func received(ctx context.Context) {
	if t, ok := ctx.Value(receiptKey{}).(*receipt); ok {
		t.done()
	}
}
