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
// The stream is read and written by two goroutines of its own, so that
// the handler can end a stream that makes no progress with a typed answer:
// gRPC answers for itself when a receive fails, and a send to a client
// that does not read never returns. They end with the stream, once the
// handler has returned, and Server.Shutdown waits for them.
func (s *Service) publishStream(stream grpc.ServerStream) error {
	ctx := stream.Context()
	src, f := s.source(ctx)
	if f != nil {
		s.metrics.requests.WithLabelValues("grpc-stream", f.Reason.String()).Inc()
		return f
	}
	s.metrics.streamsOpen.Inc()
	defer s.metrics.streamsOpen.Dec()
	// waits ends every wait of the handler's: when the stream ends, or when
	// the watch finds it idle.
	waits, stopWaits := context.WithCancel(ctx)
	defer stopWaits()
	watch := newStreamWatch(s.cfg.Limits.StreamIdleTimeout, stopWaits)
	defer watch.stop()

	type inFlight struct {
		batchID uint64
		results []*ingestv1.EventResult
		done    chan struct{}
		hold    *memoryHold
		charge  int64 // of the stream's window
	}
	// A read: the charge taken for it, and what arrived.
	type read struct {
		hold   *memoryHold
		charge int64
		in     wireRequest
		err    error
	}
	// maxCharge is a read's charge to the stream's window; the memory
	// budget is charged a zstd stream's decoder window besides.
	maxCharge := requestCost(s.cfg.Limits.MaxRequestBytes)
	coding := callCoding(ctx)
	memCharge := s.receiveCost(coding)
	windowBytes := semaphore.NewWeighted(s.cfg.Limits.StreamWindowBytes)
	release := func(hold *memoryHold, charge int64) {
		hold.release()
		windowBytes.Release(charge)
	}
	window := make(chan *inFlight, s.cfg.Limits.StreamWindow-1)
	sendErr := make(chan error, 1)
	next, got := make(chan read), make(chan read)
	s.streamWorkers.Add(2)
	// The reader reads one message for each charge the handler gives it.
	go func() {
		defer s.streamWorkers.Done()
		for r := range next {
			r.in.stream, r.in.coding = true, coding
			r.err = stream.RecvMsg(&r.in)
			select {
			case got <- r:
			case <-waits.Done(): // the handler is gone or going
				release(r.hold, r.charge)
				return
			}
		}
	}()
	// The sender owns the window's receive side; it keeps draining after a
	// send fails so that no batch goroutine is left unwaited, and every
	// batch's memory is handed back.
	go func() {
		defer s.streamWorkers.Done()
		var failed error
		for b := range window {
			<-b.done
			if failed == nil {
				failed = stream.SendMsg(&ingestv1.PublishStreamResponse{BatchId: b.batchID, Results: b.results})
				watch.progress()
			}
			release(b.hold, b.charge)
		}
		sendErr <- failed
	}()

	var recvErr error
	drained := false
recv:
	for {
		if err := windowBytes.Acquire(waits, maxCharge); err != nil {
			break
		}
		// A stream waits for room as long as it lives; its idle bound
		// ends the wait of one that never gets it.
		hold, err := s.streamMemory.take(waits, memCharge)
		if err != nil {
			windowBytes.Release(maxCharge)
			break
		}
		r := read{hold: hold, charge: maxCharge}
		select {
		case next <- r:
		case <-waits.Done():
			release(r.hold, r.charge)
			break recv
		}
		select {
		case r = <-got:
		case <-waits.Done():
			break recv // the reader hands r's charge back
		case <-s.draining:
			// The batch being read, if any, is not judged: the client
			// has no answer for it and sends it again.
			drained = true
			break recv // the reader hands r's charge back when the stream ends
		}
		if r.err == nil && r.in.failure != nil {
			r.err = r.in.failure
		}
		if r.err != nil {
			release(r.hold, r.charge)
			if !errors.Is(r.err, io.EOF) {
				recvErr = r.err
			}
			break
		}
		watch.progress()
		b := &inFlight{batchID: r.in.batch.batchID, done: make(chan struct{}), hold: r.hold, charge: requestCost(r.in.batch.size)}
		b.hold.shrink(b.charge)
		windowBytes.Release(r.charge - b.charge)
		start := s.now()
		// Taking a place in the window before starting the batch bounds the
		// batches in flight to StreamWindow: one the sender waits on, the
		// rest queued in the channel.
		select {
		case window <- b:
		case <-waits.Done():
			release(b.hold, b.charge)
			break recv
		}
		go func() {
			defer close(b.done)
			defer func() {
				s.metrics.requestDuration.WithLabelValues("grpc-stream").Observe(s.now().Sub(start).Seconds())
			}()
			b.results = s.judgeStreamBatch(ctx, src, r.in.batch)
		}()
	}
	close(window)
	close(next)
	var err error
	select {
	case err = <-sendErr:
	case <-waits.Done():
	}
	switch {
	case drained && err == nil:
		s.metrics.requests.WithLabelValues("grpc-stream", ingestv1.Reason_UNAVAILABLE.String()).Inc()
		return &Failure{Reason: ingestv1.Reason_UNAVAILABLE, RetryAfter: s.cfg.UnavailableRetryAfter,
			Message: "the gateway is shutting down: the batches answered before this are final, send the rest again"}
	case watch.fired.Load():
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
	if f := s.admitBatch(src, b.events, b.size); f != nil {
		s.metrics.requests.WithLabelValues("grpc-stream", f.Reason.String()).Inc()
		return s.refuseAll(src, b.events, f)
	}
	s.metrics.requests.WithLabelValues("grpc-stream", "ok").Inc()
	s.metrics.requestEvents.Observe(float64(len(b.events)))
	return s.judge(ctx, src, b)
}

// drain tells the streams the server is shutting down; see publishStream.
func (s *Service) drain() { s.drainOnce.Do(func() { close(s.draining) }) }
