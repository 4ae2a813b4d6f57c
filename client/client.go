package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// apiKeyMetadata is the metadata key the gateway reads the API key from.
const apiKeyMetadata = "x-api-key"

// Result is one event's final result.
type Result struct {
	ID         string                  // the event's id (the client's if it had none)
	Event      *ingestv1.Event         // the event as sent (id and occurred_at filled)
	Outcome    ingestv1.Outcome        // ACCEPTED, DUPLICATE; REJECTED when Err is a *RejectionError; UNSPECIFIED when Err is another error
	Durability ingestv1.Durability     // set when ACCEPTED
	Kafka      *ingestv1.KafkaPosition // where it is (for DUPLICATE: the original's)
	Spool      *ingestv1.SpoolPosition
	Attempts   int   // requests that carried it
	Err        error // nil when ACCEPTED or DUPLICATE
}

// Client publishes events to sluice gateways. Its methods may be called
// from any goroutine.
type Client struct {
	cfg    cfg
	conns  []*conn
	next   atomic.Uint64 // round robin over conns
	budget *budget
	ids    func() string

	// inMu guards inQ, the events Send hands to the batcher, and inShut,
	// set once the batcher takes no more.
	inMu     sync.Mutex
	inQ      []*pending
	inShut   bool
	inSignal chan struct{} // cap 1: inQ has events
	flushReq chan struct{} // cap 1: ship what lingers
	out      chan []*pending
	pace     *pacer
	back     chan returned

	closing chan struct{} // closed by Close: ship without lingering
	quit    chan struct{} // closed by Close at the end: goroutines stop
	// ctx carries the API key; cancel ends every request and stream.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	closed   atomic.Bool
	aborting atomic.Bool
	// abandoned are the ids Close's ctx left without a final result.
	abandonedMu sync.Mutex
	abandoned   []string
}

// pending is an event from Send to its final result. One goroutine owns
// it at a time: the batcher, a sender, or Close's ending.
type pending struct {
	ev       *ingestv1.Event
	done     func(Result)
	size     int // encoded size inside a request, with its field tag
	gen      uint64
	enqueued time.Time
	deadline time.Time
	attempts int
	// splits and waits are the attempts MaxAttempts does not count: a
	// request split as too large, an answer that said when to come back.
	splits, waits int
	last          error
	reason        ingestv1.Reason // of last
}

type conn struct {
	cc      *grpc.ClientConn
	api     ingestv1.IngestServiceClient
	streams *streams // with UseStream
}

// New validates the options and sets up one gRPC connection per address
// (grpc.NewClient; it connects lazily). It starts the client's goroutines
// (the batcher and the request senders); Close stops them.
func New(addrs []string, opts ...Opt) (*Client, error) {
	c := &Client{cfg: newCfg()}
	for _, o := range opts {
		o.apply(&c.cfg)
	}
	if err := c.cfg.validate(addrs); err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	if c.cfg.tls != nil {
		creds = credentials.NewTLS(c.cfg.tls)
	}
	dial := append([]grpc.DialOption{grpc.WithTransportCredentials(creds)}, c.cfg.dialOpts...)
	root := context.Background()
	if c.cfg.apiKey != "" {
		root = metadata.NewOutgoingContext(root, metadata.Pairs(apiKeyMetadata, c.cfg.apiKey))
	}
	c.ctx, c.cancel = context.WithCancel(root)
	for _, a := range addrs {
		cc, err := grpc.NewClient(a, dial...)
		if err != nil {
			c.cancel()
			for _, prev := range c.conns {
				_ = prev.cc.Close()
			}
			return nil, fmt.Errorf("client: address %q: %w", a, err)
		}
		cn := &conn{cc: cc, api: ingestv1.NewIngestServiceClient(cc)}
		if c.cfg.stream {
			cn.streams = &streams{api: cn.api, parent: c.ctx, wg: &c.wg}
		}
		c.conns = append(c.conns, cn)
	}
	c.ids = c.cfg.ids
	if c.ids == nil {
		c.ids = newUUIDv7(c.cfg.clock).next
	}
	c.budget = newBudget(&c.cfg)
	c.inSignal = make(chan struct{}, 1)
	c.flushReq = make(chan struct{}, 1)
	c.out = make(chan []*pending)
	c.back = make(chan returned)
	c.closing = make(chan struct{})
	c.quit = make(chan struct{})
	c.pace = newPacer()
	c.wg.Add(1 + c.cfg.inFlight)
	go c.batch()
	for range c.cfg.inFlight {
		go c.sendLoop()
	}
	return c, nil
}

// prepare fills a missing id and occurred_at in a copy of ev; ev itself
// is never changed.
func (c *Client) prepare(ev *ingestv1.Event) *ingestv1.Event {
	if ev.GetId() != "" && ev.GetOccurredAt() != nil {
		return ev
	}
	// A shallow copy: the caller's Event is not changed, and its payload
	// and attributes are shared, not copied (doc.go: they must not change
	// until the event's final result).
	ev = &ingestv1.Event{Id: ev.GetId(), Type: ev.GetType(), OccurredAt: ev.GetOccurredAt(),
		PartitionKey: ev.GetPartitionKey(), Payload: ev.Payload, Attributes: ev.GetAttributes()}
	if ev.Id == "" {
		ev.Id = c.ids()
	}
	if ev.OccurredAt == nil {
		ev.OccurredAt = timestamppb.New(c.cfg.clock())
	}
	return ev
}

// Send enqueues ev and returns once it is buffered; done is called exactly
// once with its final result, on a goroutine of the client's, unless Send
// returns an error (then the event was not enqueued and done is never
// called): ErrClosed, ErrBufferFull (with FailWhenFull), or ctx.Err()
// (the buffer stayed full until ctx ended).
func (c *Client) Send(ctx context.Context, ev *ingestv1.Event, done func(Result)) error {
	if ev == nil {
		return errNilEvent
	}
	if c.closed.Load() {
		return ErrClosed
	}
	return c.enqueue(ctx, c.prepare(ev), done)
}

func (c *Client) enqueue(ctx context.Context, ev *ingestv1.Event, done func(Result)) error {
	n := proto.Size(ev)
	size := 1 + protowire.SizeVarint(uint64(n)) + n
	gen, err := c.budget.take(ctx, size)
	if err != nil {
		return err
	}
	now := c.cfg.clock()
	p := &pending{ev: ev, done: done, size: size, gen: gen, enqueued: now, deadline: now.Add(c.cfg.evTimeout)}
	c.inMu.Lock()
	if c.inShut {
		c.inMu.Unlock()
		c.budget.give(gen, size)
		return ErrClosed
	}
	c.inQ = append(c.inQ, p)
	c.inMu.Unlock()
	select {
	case c.inSignal <- struct{}{}:
	default:
	}
	return nil
}

// Publish hands events to the client and waits until each has its final
// result, or ctx ends. results[i] is events[i]'s. err is non-nil only when
// some event did not get a final result (ctx ended first: those results
// have Err == ctx.Err(); or the client was closed: ErrClosed; or, with
// FailWhenFull, the buffer was full: ErrBufferFull), never for a
// rejection: a rejection is results[i].Err, a *RejectionError.
func (c *Client) Publish(ctx context.Context, events ...*ingestv1.Event) ([]Result, error) {
	results := make([]Result, len(events))
	final := make([]bool, len(events))
	var mu sync.Mutex
	left := len(events) + 1 // one for the loop below
	all := make(chan struct{})
	var gaveUp bool
	settle := func(i int, r Result) {
		mu.Lock()
		defer mu.Unlock()
		if gaveUp {
			return
		}
		if i >= 0 {
			results[i], final[i] = r, true
		}
		if left--; left == 0 {
			close(all)
		}
	}
	var sendErr error
	for i, ev := range events {
		if ev == nil {
			sendErr = errNilEvent
		} else if c.closed.Load() {
			sendErr = ErrClosed
		} else {
			ev = c.prepare(ev)
			results[i].ID, results[i].Event = ev.GetId(), ev
			sendErr = c.enqueue(ctx, ev, func(r Result) { settle(i, r) })
		}
		if sendErr != nil {
			for j := i; j < len(events); j++ {
				settle(j, Result{ID: events[j].GetId(), Event: events[j], Err: sendErr})
			}
			break
		}
	}
	settle(-1, Result{})
	select {
	case <-all:
		return results, sendErr
	case <-ctx.Done():
	}
	mu.Lock()
	defer mu.Unlock()
	gaveUp = true
	err := ctx.Err()
	for i := range results {
		if !final[i] {
			results[i].Err = err
		}
	}
	return results, err
}

// Flush sends what is lingering now and waits until every event enqueued
// before the call has its final result, or ctx ends.
func (c *Client) Flush(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	gen := c.budget.mark()
	select {
	case c.flushReq <- struct{}{}:
	default:
	}
	return c.budget.waitGen(ctx, gen)
}

// Close stops accepting events, sends what is buffered and waits for every
// final result until ctx ends. At ctx's end, every event still without a
// final result gets Result.Err = *UndeliveredError (done called), requests
// in flight are cancelled, and Close returns an *UndeliveredError naming
// exactly those events. A second Close returns ErrClosed.
func (c *Client) Close(ctx context.Context) error {
	if !c.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	c.budget.close()
	close(c.closing)
	waitErr := c.budget.waitEmpty(ctx)
	if waitErr != nil {
		c.aborting.Store(true)
	}
	close(c.quit)
	c.cancel()
	c.wg.Wait()
	var err error
	for _, cn := range c.conns {
		err = errors.Join(err, cn.cc.Close())
	}
	if err != nil {
		c.cfg.log.Warn("closing connections", "err", err)
	}
	c.abandonedMu.Lock()
	defer c.abandonedMu.Unlock()
	if len(c.abandoned) > 0 {
		c.cfg.log.Warn("closed with events undelivered", "events", len(c.abandoned), "err", waitErr)
		return &UndeliveredError{IDs: c.abandoned, Last: waitErr}
	}
	return nil
}

// finish gives p its final result: done first, so that Flush and Close
// return only after it, then its room in the buffer.
func (c *Client) finish(p *pending, r Result) {
	r.ID, r.Event, r.Attempts = p.ev.GetId(), p.ev, p.attempts
	reason := ingestv1.Reason_REASON_UNSPECIFIED
	var rej *RejectionError
	switch {
	case errors.As(r.Err, &rej):
		r.Outcome, reason = ingestv1.Outcome_REJECTED, rej.Reason
	case r.Err != nil:
		r.Outcome, reason = ingestv1.Outcome_OUTCOME_UNSPECIFIED, p.reason
	}
	c.cfg.metrics.Final(r.Outcome, reason, p.attempts, c.cfg.clock().Sub(p.enqueued))
	if p.done != nil {
		p.done(r)
	}
	c.budget.give(p.gen, p.size)
}

// undeliver ends p with an *UndeliveredError: its retries ran out, or
// Close's ctx ended (then Close names it). Last is the last retryable
// answer p met, or why when it met none.
func (c *Client) undeliver(p *pending, why error) {
	last := p.last
	if last == nil {
		last = why
	}
	id := p.ev.GetId()
	if c.aborting.Load() {
		c.abandonedMu.Lock()
		c.abandoned = append(c.abandoned, id)
		c.abandonedMu.Unlock()
	}
	c.cfg.log.Debug("event undelivered", "id", id, "attempts", p.attempts, "err", last)
	c.finish(p, Result{Err: &UndeliveredError{IDs: []string{id}, Last: last}})
}

// Why an event that met no retryable answer is undelivered.
var (
	errEventTimeout = errors.New("client: EventTimeout passed before an answer")
	errAbandoned    = errors.New("client: Close's ctx ended before an answer")
)
