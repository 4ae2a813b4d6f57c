package hostile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// The loads' bounds. Every loop below is bounded by one of these counts,
// every call by callTimeout, every stream by its hold, and everything by
// the context Run is given. Together they take about 60-90 s on two cores
// against a gateway that cannot keep up, less against one that refuses
// fast.
const (
	// Giant-count gRPC: callers, each on its own connection, sending
	// giantRounds times a message of giantEvents empty events (8,000,000
	// bytes) and one of giantEvents/2 (4,000,000 bytes).
	giantCallers = 8
	giantRounds  = 2
	giantEvents  = 4_000_000

	// Giant-count REST: callers, each posting restGiantRounds times the
	// body {"events":[{},...]} with as many events as fit in restBodyBytes
	// (the default max_request_bytes; 1,398,097 events).
	restGiantCallers = 8
	restGiantRounds  = 3
	restBodyBytes    = 4 << 20

	// Violation bombs: callers, each sending bombRounds times one REST
	// body and one gRPC message of one event with bombKeys attribute keys
	// that break the key pattern (~3.8 MB and ~3.6 MB).
	bombCallers = 4
	bombRounds  = 2
	bombKeys    = 300_000

	// Streams that never read: neverReadStreams PublishStream streams over
	// neverReadConns connections, each sending batches of
	// streamBatchEvents valid LogLines with streamMessageBytes messages
	// (~3.6 MB a batch) until flow control stops it or neverReadBatches
	// are out, never reading an answer, for neverReadHold after the last
	// batch that went out.
	neverReadStreams   = 80
	neverReadConns     = 2
	neverReadBatches   = 64
	neverReadHold      = 20 * time.Second
	streamBatchEvents  = 500
	streamMessageBytes = 7000

	// Idle streams: idleStreams PublishStream streams over idleConns
	// connections (at most max_concurrent_streams, 100, each) that send
	// nothing, held for idleHold or until the server ends them.
	idleStreams = 200
	idleConns   = 4
	idleHold    = 30 * time.Second

	// Flood: floodCalls unary Publish calls of garbage, half without an
	// API key and half with a wrong one, in turn (so both are sent when the
	// time bound cuts the flood short), floodWorkers at a time over
	// floodConns connections.
	floodCalls   = 50_000
	floodWorkers = 32
	floodConns   = 2

	// callTimeout is each unary call's and REST request's deadline: an
	// answer not in by then is untyped (no answer). A gateway answers
	// within publish_timeout (10 s) and max_queue_wait (1 s).
	callTimeout = 20 * time.Second
	// maxAnswerBytes bounds what a caller accepts as an answer, so an
	// answer of every violation is read whole rather than cut off by the
	// client (which would count against the server).
	maxAnswerBytes = 256 << 20
	// drainBound bounds the responses read from a stream the server ended.
	drainBound = 100_000
)

// wrongKey is an API key no source has.
const wrongKey = "hostile-not-a-key-of-any-source"

// target is the gateway under load.
type target struct {
	GRPCAddr string
	HTTPAddr string
	// APIKey is a key of a source that may publish every type, without a
	// rate limit.
	APIKey string
	// Flooded is a webhook source of the Stripe scheme, the webhook
	// flood's target; Beside is a webhook source of the Standard Webhooks
	// scheme beside it. Only the webhook loads use them.
	Flooded, Beside webhookSource
}

// load is one hostile load.
type load struct {
	Name string
	// Streams says the tally's answers are how streams ended, and Open
	// ones are streams the server left open.
	Streams bool
	// Unread: its streams read none of their answers, so the server's
	// end of them cannot reach the client (see TestHostileLoad).
	Unread bool
	Run    func(ctx context.Context, tgt target) *tally
}

// loads are the hostile loads, meant to run at once. Each builds its
// messages once, closes every connection it opened before it returns, and
// returns by ctx's end (plus callTimeout at most).
func loads() []load {
	return []load{
		{Name: "giant-count gRPC", Run: giantGRPC},
		{Name: "giant-count REST", Run: giantREST},
		{Name: "violation bombs", Run: violationBombs},
		{Name: "never-read streams", Streams: true, Unread: true, Run: neverReadStreamsLoad},
		{Name: "idle streams", Streams: true, Run: idleStreamsLoad},
		{Name: "unauthenticated flood", Run: flood},
	}
}

func giantGRPC(ctx context.Context, tgt target) *tally {
	t := newTally("giant-count gRPC")
	msgs := []struct {
		label string
		msg   wire
	}{
		{fmt.Sprintf("%d events", giantEvents), giantCountBatch(giantEvents)},
		{fmt.Sprintf("%d events", giantEvents/2), giantCountBatch(giantEvents / 2)},
	}
	var wg sync.WaitGroup
	for range giantCallers {
		conn, err := dial(tgt.GRPCAddr)
		if err != nil {
			t.answer(kindUntyped, "dial: "+normalize(err.Error()))
			continue
		}
		wg.Go(func() {
			defer conn.Close()
			for range giantRounds {
				for _, m := range msgs {
					k, what := publish(ctx, tgt.APIKey, conn, m.msg, t)
					t.answer(k, m.label+": "+what)
				}
			}
		})
	}
	wg.Wait()
	return t
}

func giantREST(ctx context.Context, tgt target) *tally {
	t := newTally("giant-count REST")
	body := giantCountREST(restBodyBytes)
	client, closeClient := httpClient(restGiantCallers)
	defer closeClient()
	var wg sync.WaitGroup
	for range restGiantCallers {
		wg.Go(func() {
			for range restGiantRounds {
				t.answer(tgt.post(ctx, client, body, t))
			}
		})
	}
	wg.Wait()
	return t
}

func violationBombs(ctx context.Context, tgt target) *tally {
	t := newTally("violation bombs")
	now := time.Now()
	rest, grpcMsg := violationREST(bombKeys, now), violationGRPC(bombKeys, now)
	client, closeClient := httpClient(bombCallers)
	defer closeClient()
	var wg sync.WaitGroup
	for range bombCallers {
		conn, err := dial(tgt.GRPCAddr)
		if err != nil {
			t.answer(kindUntyped, "dial: "+normalize(err.Error()))
			continue
		}
		wg.Go(func() {
			defer conn.Close()
			for range bombRounds {
				k, what := tgt.post(ctx, client, rest, t)
				t.answer(k, "REST: "+what)
				k, what = publish(ctx, tgt.APIKey, conn, grpcMsg, t)
				t.answer(k, "gRPC: "+what)
			}
		})
	}
	wg.Wait()
	return t
}

var publishStream = &ingestv1.IngestService_ServiceDesc.Streams[0]

func neverReadStreamsLoad(ctx context.Context, tgt target) *tally {
	t := newTally("never-read streams")
	batch := streamBatch(streamBatchEvents, streamMessageBytes, time.Now())
	t.max("batch bytes", int64(len(batch)))
	// Fixed 64 KiB windows: answers left unread fill them and stop the
	// gateway's sends. With gRPC's growing windows the client's own
	// buffers would take the answers, and a stream that is answered makes
	// progress, so it is rightly not idle.
	conns, closeConns, err := dialN(tgt.GRPCAddr, neverReadConns,
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.answer(kindUntyped, "dial: "+normalize(err.Error()))
		return t
	}
	defer closeConns()
	var wg sync.WaitGroup
	for i := range neverReadStreams {
		wg.Go(func() {
			t.answer(neverRead(withKey(ctx, tgt.APIKey), conns[i%len(conns)], batch, t))
		})
	}
	wg.Wait()
	return t
}

// neverRead sends batch on a new stream until a send fails, the count is
// out or the hold ends, and never reads an answer while it sends. Then it
// reads what the server sent, to learn how the stream ended.
func neverRead(ctx context.Context, conn *grpc.ClientConn, batch wire, t *tally) (kind, string) {
	// Cancelled, not a deadline: a deadline would go to the server, which
	// would then end the stream for it.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hold := time.AfterFunc(neverReadHold, cancel)
	defer hold.Stop()
	cs, err := conn.NewStream(sctx, publishStream, ingestv1.IngestService_PublishStream_FullMethodName)
	if err != nil {
		return streamOutcome(sctx, err)
	}
	// The hold runs from the last batch that went out: a stream still
	// being read is not idle, and the server's clock starts when it stops.
	sent := 0
	for sent < neverReadBatches && cs.SendMsg(batch) == nil {
		sent++
		hold.Reset(neverReadHold)
	}
	t.add("batches sent", int64(sent))
	t.max("most batches sent on one stream", int64(sent))
	if sent == neverReadBatches {
		// Every batch went out: the server read them all. What it does
		// with a stream that sends no more is for the hold to show.
		<-sctx.Done()
	}
	return streamOutcome(sctx, drain(cs, t))
}

func idleStreamsLoad(ctx context.Context, tgt target) *tally {
	t := newTally("idle streams")
	conns, closeConns, err := dialN(tgt.GRPCAddr, idleConns)
	if err != nil {
		t.answer(kindUntyped, "dial: "+normalize(err.Error()))
		return t
	}
	defer closeConns()
	var wg sync.WaitGroup
	for i := range idleStreams {
		wg.Go(func() {
			sctx, cancel := context.WithCancel(withKey(ctx, tgt.APIKey))
			defer cancel()
			hold := time.AfterFunc(idleHold, cancel)
			defer hold.Stop()
			start := time.Now()
			cs, err := conns[i%len(conns)].NewStream(sctx, publishStream, ingestv1.IngestService_PublishStream_FullMethodName)
			if err == nil {
				err = drain(cs, t)
			}
			k, what := streamOutcome(sctx, err)
			if k != kindOpen {
				t.max("latest end by the server, ms after opening", time.Since(start).Milliseconds())
			}
			t.answer(k, what)
		})
	}
	wg.Wait()
	return t
}

func flood(ctx context.Context, tgt target) *tally {
	t := newTally("unauthenticated flood")
	conns, closeConns, err := dialN(tgt.GRPCAddr, floodConns)
	if err != nil {
		t.answer(kindUntyped, "dial: "+normalize(err.Error()))
		return t
	}
	defer closeConns()
	phases := []struct{ label, key string }{{"no key", ""}, {"wrong key", wrongKey}}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range floodWorkers {
		wg.Go(func() {
			for i := next.Add(1); i <= floodCalls; i = next.Add(1) {
				if ctx.Err() != nil {
					t.add("calls not made (time bound)", 1)
					continue
				}
				phase := phases[i%2]
				k, what := publish(ctx, phase.key, conns[w%len(conns)], garbage, nil)
				t.answer(k, phase.label+": "+what)
			}
		})
	}
	wg.Wait()
	return t
}

// publish makes one unary Publish call of msg, with key as its API key
// unless it is empty. A call cut off because the load's ctx ended is Open:
// the client let go. t, when set, gets the size of the largest response.
func publish(ctx context.Context, key string, conn *grpc.ClientConn, msg wire, t *tally) (kind, string) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if key != "" {
		cctx = withKey(cctx, key)
	}
	var resp ingestv1.PublishResponse
	err := conn.Invoke(cctx, ingestv1.IngestService_Publish_FullMethodName, msg, &resp)
	if err != nil && ctx.Err() != nil {
		return kindOpen, "cut off by the load's time bound"
	}
	if err == nil && t != nil {
		t.max("largest answer bytes", int64(proto.Size(&resp)))
	}
	return grpcAnswer(&resp, err)
}

// post makes one REST publish of body and reads the whole answer.
func (tgt target) post(ctx context.Context, client *http.Client, body []byte, t *tally) (kind, string) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, "http://"+tgt.HTTPAddr+"/v1/events", bytes.NewReader(body))
	if err != nil {
		return kindUntyped, "request: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", tgt.APIKey)
	resp, err := client.Do(req)
	var answer []byte
	if err == nil {
		answer, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
		resp.Body.Close()
	}
	if err != nil && ctx.Err() != nil {
		return kindOpen, "cut off by the load's time bound"
	}
	if err == nil {
		t.max("largest answer bytes", int64(len(answer)))
	}
	return restAnswer(resp, answer, err)
}

// drain reads a stream's responses until its end, and returns the error
// that ends it (io.EOF for OK).
func drain(cs grpc.ClientStream, t *tally) error {
	for range drainBound {
		var resp ingestv1.PublishStreamResponse
		if err := cs.RecvMsg(&resp); err != nil {
			return err
		}
		t.add("responses read after the sends", 1)
	}
	return fmt.Errorf("hostile: %d responses and the stream still goes on", drainBound)
}

// streamOutcome is how a stream ended: Open when the client cancelled
// it (its hold ended, or the load's time bound), else what the server
// said.
func streamOutcome(sctx context.Context, err error) (kind, string) {
	if sctx.Err() != nil && status.Code(err) == codes.Canceled {
		return kindOpen, "open when the client let go"
	}
	return streamEnd(err)
}

func withKey(ctx context.Context, key string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-api-key", key)
}

// dial opens a plaintext connection whose calls may send wire messages of
// any size and accept answers up to maxAnswerBytes.
func dial(addr string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(sendWire(),
			grpc.MaxCallSendMsgSize(64<<20), grpc.MaxCallRecvMsgSize(maxAnswerBytes)),
	}, opts...)...)
}

// dialN opens n connections and returns the function that closes them.
func dialN(addr string, n int, opts ...grpc.DialOption) ([]*grpc.ClientConn, func(), error) {
	conns := make([]*grpc.ClientConn, 0, n)
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for range n {
		c, err := dial(addr, opts...)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		conns = append(conns, c)
	}
	return conns, closeAll, nil
}

// httpClient is a client of its own for a load, with a connection per
// caller; the returned function closes its connections.
func httpClient(callers int) (*http.Client, func()) {
	tr := &http.Transport{
		MaxIdleConnsPerHost: callers,
		DisableCompression:  true,
		// The gateway's own bounds decide; these only keep a caller from
		// waiting without end.
		ResponseHeaderTimeout: callTimeout,
	}
	return &http.Client{Transport: tr}, tr.CloseIdleConnections
}
