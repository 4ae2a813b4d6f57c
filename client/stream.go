package client

import (
	"context"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// streams is a connection's PublishStream: opened on first use, and again
// after it ends. The senders share it; each waits for its batch's answer.
type streams struct {
	api    ingestv1.IngestServiceClient
	parent context.Context // the client's; cancelled by Close
	wg     *sync.WaitGroup // the client's

	mu  sync.Mutex
	cur *stream
}

// stream is one PublishStream and the goroutine that reads its answers.
type stream struct {
	cs     ingestv1.IngestService_PublishStreamClient
	cancel context.CancelFunc

	sendMu sync.Mutex // one SendMsg at a time, in batch id order

	mu      sync.Mutex
	nextID  uint64
	waiting map[uint64]chan streamAnswer
	ended   error
}

type streamAnswer struct {
	results []*ingestv1.EventResult
	err     error
}

// errStreamEnded answers the batches after the first unanswered one when
// a stream ends: the gateway read none of them, so they are sent again.
var errStreamEnded = status.Error(codes.Unavailable, "client: the stream ended before this batch was read")

// roundTrip sends one batch on the stream and waits for its answer. When
// ctx ends first, the stream is cancelled: its answers come in order, so
// the later batches would wait behind this one.
func (s *streams) roundTrip(ctx context.Context, events []*ingestv1.Event) ([]*ingestv1.EventResult, error) {
	st, err := s.open(ctx)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, st.cancel)
	defer stop()
	st.sendMu.Lock()
	st.mu.Lock()
	if st.ended != nil {
		err := st.ended
		st.mu.Unlock()
		st.sendMu.Unlock()
		return nil, err
	}
	id := st.nextID
	st.nextID++
	ch := make(chan streamAnswer, 1)
	st.waiting[id] = ch
	st.mu.Unlock()
	// A failed send ends the stream; the reader then answers every batch
	// with the stream's status.
	_ = st.cs.Send(&ingestv1.PublishStreamRequest{BatchId: id, Events: events})
	st.sendMu.Unlock()
	a := <-ch
	if a.err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return a.results, a.err
}

// open returns the current stream, or opens one; the opening is bounded
// by ctx.
func (s *streams) open(ctx context.Context) (*stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		return s.cur, nil
	}
	sctx, cancel := context.WithCancel(s.parent)
	stop := context.AfterFunc(ctx, cancel)
	cs, err := s.api.PublishStream(sctx)
	if !stop() || err != nil {
		cancel()
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	st := &stream{cs: cs, cancel: cancel, waiting: map[uint64]chan streamAnswer{}}
	s.cur = st
	s.wg.Add(1)
	go s.read(st)
	return st, nil
}

// read hands each answer to its batch's sender until the stream ends,
// then answers the batches still waiting: the first with the stream's
// status (the gateway answers every batch before the one that ended it),
// the rest with errStreamEnded, or with the status when it refused the
// caller (an authentication failure ends the stream for every batch).
func (s *streams) read(st *stream) {
	defer s.wg.Done()
	var err error
	for {
		var resp *ingestv1.PublishStreamResponse
		if resp, err = st.cs.Recv(); err != nil {
			break
		}
		st.mu.Lock()
		ch := st.waiting[resp.GetBatchId()]
		delete(st.waiting, resp.GetBatchId())
		st.mu.Unlock()
		if ch != nil {
			ch <- streamAnswer{results: resp.GetResults()}
		}
	}
	s.mu.Lock()
	if s.cur == st {
		s.cur = nil
	}
	s.mu.Unlock()
	st.cancel()
	st.mu.Lock()
	st.ended = err
	ids := make([]uint64, 0, len(st.waiting))
	for id := range st.waiting {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for i, id := range ids {
		e := errStreamEnded
		if i == 0 || status.Code(err) == codes.Unauthenticated {
			e = err
		}
		st.waiting[id] <- streamAnswer{err: e}
		delete(st.waiting, id)
	}
	st.mu.Unlock()
}
