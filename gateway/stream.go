package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/tracing"
)

// streamWatch notices a PublishStream that makes no progress for
// Limits.StreamIdleTimeout: no batch arrives and no answer is sent, because
// its client sends nothing or stopped reading its answers. It then calls
// idle, once.
type streamWatch struct {
	timeout time.Duration
	// last is when the stream last made progress, in Unix nanoseconds.
	last  atomic.Int64
	timer *time.Timer
	fired atomic.Bool
	idle  func()
}

func newStreamWatch(timeout time.Duration, idle func()) *streamWatch {
	w := &streamWatch{timeout: timeout, idle: idle}
	w.progress()
	// Only the timer's own function re-arms it: a stream that made
	// progress since is given the rest of its time.
	w.timer = time.AfterFunc(timeout, w.check)
	return w
}

func (w *streamWatch) progress() { w.last.Store(time.Now().UnixNano()) }

func (w *streamWatch) check() {
	if rest := time.Until(time.Unix(0, w.last.Load()).Add(w.timeout)); rest > 0 {
		w.timer.Reset(rest)
		return
	}
	w.fired.Store(true)
	w.idle()
}

func (w *streamWatch) stop() { w.timer.Stop() }

// publishStream serves PublishStream: batch after batch, answered in the
// order they arrived. Each batch in flight is charged to the streams' half
// of the memory budget and to the stream's own window (Limits.StreamWindowBytes,
// and at most Limits.StreamWindow batches); before the next batch is read
// there must be room in both for the largest request, so while they are
// full the stream is not read and HTTP/2 flow control slows the sender. A
// stream waiting for its next batch holds that room: idle streams can keep
// other streams waiting (until StreamIdleTimeout ends them), never
// requests.
//
// When the server shuts down (Service.drain), a stream stops reading
// batches, answers those in flight and ends UNAVAILABLE with a retry
// delay, so that a client's idle stream does not hold the shutdown to its
// deadline; a batch it had not read has no answer and is sent again.
//
// The stream is read and written by two goroutines of its own (the
// session's read and send), so that the handler can end a stream that
// makes no progress with a typed answer: gRPC answers for itself when a
// receive fails, and a send to a client that does not read never returns.
// They end with the stream, once the handler has returned, and
// Server.Shutdown waits for them (Service.streamWorkers).
func (s *Service) publishStream(stream grpc.ServerStream) error {
	src, f := s.source(stream.Context())
	if f != nil {
		s.metrics.requests.WithLabelValues("grpc-stream", f.Reason.String()).Inc()
		return f
	}
	s.metrics.streamsOpen.Inc()
	defer s.metrics.streamsOpen.Dec()
	ss := s.newStreamSession(stream, src)
	defer ss.stopWaits()
	defer ss.watch.stop()
	s.streamWorkers.Add(2)
	go ss.read()
	go ss.send()
	return ss.end(ss.loop())
}

// streamSession is one PublishStream being served: the handler runs loop
// and end, and two goroutines run read and send.
type streamSession struct {
	svc    *Service
	stream grpc.ServerStream
	ctx    context.Context // the stream's
	src    *source
	coding contentCoding // the call's grpc-encoding
	// waits ends every wait of the handler's and the reader's: when the
	// stream ends, or when the watch finds it idle.
	waits     context.Context
	stopWaits context.CancelFunc
	watch     *streamWatch
	// maxCharge is a read's charge to the stream's window (windowBytes);
	// memCharge its charge to the memory budget, a zstd stream's decoder
	// window besides.
	maxCharge, memCharge int64
	windowBytes          *semaphore.Weighted
	// window holds the batches in flight, in the order they arrived: the
	// one the sender waits on is out of it, the rest queued, so at most
	// Limits.StreamWindow. The loop sends on it and closes it; the sender
	// receives.
	window chan *streamBatch
	// sendErr is the sender's outcome: the first send that failed, or nil.
	sendErr chan error
	// next carries a charge to the reader for each message it may read;
	// got carries back what it read.
	next, got chan streamRead
	// drained is set by the loop when it stopped for the server's
	// shutdown.
	drained bool
}

// streamBatch is a batch in flight: judged on a goroutine of its own,
// which closes done, and answered by the sender.
type streamBatch struct {
	batchID uint64
	results []*ingestv1.EventResult
	done    chan struct{}
	hold    *memoryHold
	charge  int64 // of the stream's window
}

// streamRead is a read: the charge taken for it, and what arrived.
type streamRead struct {
	hold   *memoryHold
	charge int64
	in     wireRequest
	err    error
}

func (s *Service) newStreamSession(stream grpc.ServerStream, src *source) *streamSession {
	ctx := stream.Context()
	coding := callCoding(ctx)
	ss := &streamSession{
		svc:         s,
		stream:      stream,
		ctx:         ctx,
		src:         src,
		coding:      coding,
		maxCharge:   requestCost(s.cfg.Limits.MaxRequestBytes),
		memCharge:   s.receiveCost(coding),
		windowBytes: semaphore.NewWeighted(s.cfg.Limits.StreamWindowBytes),
		window:      make(chan *streamBatch, s.cfg.Limits.StreamWindow-1),
		sendErr:     make(chan error, 1),
		next:        make(chan streamRead),
		got:         make(chan streamRead),
	}
	ss.waits, ss.stopWaits = context.WithCancel(ctx)
	ss.watch = newStreamWatch(s.cfg.Limits.StreamIdleTimeout, ss.stopWaits)
	return ss
}

// release hands back a read's or a batch's charges.
func (ss *streamSession) release(hold *memoryHold, charge int64) {
	hold.release()
	ss.windowBytes.Release(charge)
}

// read is the reader: it reads one message for each charge the loop gives
// it, until the loop closes next or the waits end.
func (ss *streamSession) read() {
	defer ss.svc.streamWorkers.Done()
	for r := range ss.next {
		r.in.stream, r.in.coding = true, ss.coding
		r.err = ss.stream.RecvMsg(&r.in)
		select {
		case ss.got <- r:
		case <-ss.waits.Done(): // the handler is gone or going
			ss.release(r.hold, r.charge)
			return
		}
	}
}

// send is the sender: it answers the batches of window in order. It
// keeps draining after a send fails so that no batch goroutine is left
// unwaited, and every batch's memory is handed back.
func (ss *streamSession) send() {
	defer ss.svc.streamWorkers.Done()
	var failed error
	for b := range ss.window {
		<-b.done
		if failed == nil {
			failed = ss.stream.SendMsg(&ingestv1.PublishStreamResponse{BatchId: b.batchID, Results: b.results})
			ss.watch.progress()
		}
		ss.release(b.hold, b.charge)
	}
	ss.sendErr <- failed
}

// loop reads batches and starts judging each, until the stream ends, a
// read fails, the waits end or the server shuts down. It returns the
// read's error, or nil for the others.
func (ss *streamSession) loop() error {
	for {
		r, ok := ss.receive()
		if !ok {
			return nil
		}
		if r.err == nil && r.in.failure != nil {
			r.err = r.in.failure
		}
		if r.err != nil {
			ss.release(r.hold, r.charge)
			if errors.Is(r.err, io.EOF) {
				return nil
			}
			return r.err
		}
		ss.watch.progress()
		if !ss.start(r) {
			return nil
		}
	}
}

// receive takes the charges for one read, the largest request's, and has
// the reader read. It reports false, its charges handed back (or left to
// the reader to hand back), when the waits end or the server shuts down
// first.
func (ss *streamSession) receive() (streamRead, bool) {
	if err := ss.windowBytes.Acquire(ss.waits, ss.maxCharge); err != nil {
		return streamRead{}, false
	}
	// A stream waits for room as long as it lives; its idle bound ends
	// the wait of one that never gets it.
	hold, err := ss.svc.streamMemory.take(ss.waits, ss.src.streamMemory, ss.memCharge)
	if err != nil {
		ss.windowBytes.Release(ss.maxCharge)
		return streamRead{}, false
	}
	r := streamRead{hold: hold, charge: ss.maxCharge}
	select {
	case ss.next <- r:
	case <-ss.waits.Done():
		ss.release(r.hold, r.charge)
		return streamRead{}, false
	}
	select {
	case r = <-ss.got:
		return r, true
	case <-ss.waits.Done():
		return streamRead{}, false // the reader hands r's charge back
	case <-ss.svc.draining:
		// The batch being read, if any, is not judged: the client has
		// no answer for it and sends it again.
		ss.drained = true
		return streamRead{}, false // the reader hands r's charge back when the stream ends
	}
}

// start cuts r's charges to its batch's size, queues the batch for the
// sender and judges it on a goroutine of its own, which the sender waits
// for. It reports false, the charges handed back, when the waits end
// before there is room in the window.
func (ss *streamSession) start(r streamRead) bool {
	b := &streamBatch{batchID: r.in.batch.batchID, done: make(chan struct{}), hold: r.hold, charge: requestCost(r.in.batch.size)}
	b.hold.shrink(b.charge)
	ss.windowBytes.Release(r.charge - b.charge)
	begun := ss.svc.now()
	// Taking a place in the window before starting the batch bounds the
	// batches in flight to StreamWindow: one the sender waits on, the
	// rest queued in the channel.
	select {
	case ss.window <- b:
	case <-ss.waits.Done():
		ss.release(b.hold, b.charge)
		return false
	}
	go ss.judge(b, r.in.batch, begun)
	return true
}

// judge answers batch in b and closes b.done.
func (ss *streamSession) judge(b *streamBatch, in *batch, begun time.Time) {
	s := ss.svc
	defer close(b.done)
	// A span per batch, not per stream: a stream may live for hours.
	ctx, span := s.startRequest(ss.ctx, spanPublishStream, "grpc-stream", ss.src)
	defer func() {
		tracing.Observe(ctx, s.metrics.requestDuration.WithLabelValues("grpc-stream"), s.now().Sub(begun).Seconds())
		span.end()
	}()
	span.decoded(in)
	b.results = s.judgeStreamBatch(ctx, ss.src, in)
}

// end closes the reader's and the sender's queues, waits for the sender's
// outcome unless the waits end first, and gives the stream's answer.
// recvErr is loop's.
func (ss *streamSession) end(recvErr error) error {
	s := ss.svc
	close(ss.window)
	close(ss.next)
	var err error
	select {
	case err = <-ss.sendErr:
	case <-ss.waits.Done():
	}
	switch {
	case ss.drained && err == nil:
		s.metrics.requests.WithLabelValues("grpc-stream", ingestv1.Reason_UNAVAILABLE.String()).Inc()
		return &Failure{Reason: ingestv1.Reason_UNAVAILABLE, RetryAfter: s.cfg.UnavailableRetryAfter,
			Message: "the gateway is shutting down: the batches answered before this are final, send the rest again"}
	case ss.watch.fired.Load():
		s.metrics.streamsIdle.Inc()
		return &Failure{Reason: ingestv1.Reason_UNAVAILABLE, RetryAfter: s.cfg.UnavailableRetryAfter,
			Message: fmt.Sprintf("the stream made no progress for %v (no batch arrived and no answer could be sent): closed", s.cfg.Limits.StreamIdleTimeout)}
	case err != nil:
		return err
	}
	if f, ok := recvErr.(*Failure); ok {
		// A batch that does not decode or is too large ends the stream
		// once the batches before it are answered.
		s.metrics.requests.WithLabelValues("grpc-stream", f.Reason.String()).Inc()
	}
	return recvErr
}

// judgeStreamBatch answers one stream batch: a batch refused as a whole
// (rate, size) is answered event by event, and the stream goes on.
func (s *Service) judgeStreamBatch(ctx context.Context, src *source, b *batch) []*ingestv1.EventResult {
	if f := s.admitBatch(src, b); f != nil {
		s.metrics.requests.WithLabelValues("grpc-stream", f.Reason.String()).Inc()
		return s.refuseAll(src, b.events, f)
	}
	s.metrics.requests.WithLabelValues("grpc-stream", "ok").Inc()
	s.metrics.requestEvents.Observe(float64(len(b.events)))
	return s.judge(ctx, src, b)
}

// drain tells the streams the server is shutting down; see publishStream.
func (s *Service) drain() { s.drainOnce.Do(func() { close(s.draining) }) }
