package hostile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	stripewebhook "github.com/stripe/stripe-go/v82/webhook"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/examples"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// The webhook flood's bounds: every sender's loop is bounded by its
// rounds and by the context Run is given, every request by callTimeout.
const (
	// WebhookBodyBytes is each flood body's Content-Length: the default
	// webhook.max_body_bytes (1 MiB), the most a delivery may announce
	// and still be read.
	WebhookBodyBytes = 1 << 20

	// wholeSenders post whole bodies as fast as the connection takes
	// them, wholeRounds times each: read, verified and refused 401 when
	// the source's pool has room, refused 503 unread when it has none.
	wholeSenders = 100
	wholeRounds  = 2000
	// slowSenders post their bodies slowChunk bytes every slowEvery
	// (16 chunks, about 2 s a body, within the default read_timeout of
	// 10 s), slowRounds times each: an admitted one holds its share of
	// the pool while it trickles in.
	slowSenders = 100
	slowRounds  = 100
	slowChunk   = 64 << 10
	slowEvery   = 125 * time.Millisecond
)

// floodSenders is how many unsigned deliveries are in flight at once.
const floodSenders = wholeSenders + slowSenders

// Figures of the webhook flood's tally, which TestHostileLoadWebhookFlood
// holds the gateway to.
const (
	// FigureWrong counts answers no unsigned delivery may get: anything
	// but 401 UNAUTHENTICATED or 503 UNAVAILABLE with Retry-After.
	FigureWrong = "answers other than 401 or 503 with Retry-After"
	// FigureWhole401 and FigureSlow401 count bodies that were read whole,
	// verified and refused, FigureRefused503 those refused unread.
	FigureWhole401   = "whole bodies read, verified and refused 401"
	FigureSlow401    = "slow bodies read, verified and refused 401"
	FigureRefused503 = "bodies refused 503 unread (the source's pool full)"
)

// webhookSource is a webhook source of the gateway: its name (its path
// is /v1/webhooks/<name>) and the secret its senders sign with.
type webhookSource struct {
	Name   string
	Secret string
}

// webhookFloodLoad is the unauthenticated webhook flood: floodSenders
// concurrent POST /v1/webhooks/<Target.Flooded> of WebhookBodyBytes each,
// without a Stripe-Signature or with one that does not verify, in turn;
// half send their bodies whole, half slowly. See TestHostileLoadWebhookFlood.
func webhookFloodLoad() load { return load{Name: "webhook flood", Run: webhookFlood} }

func webhookFlood(ctx context.Context, tgt target) *tally {
	t := newTally("webhook flood")
	body := unsignedDelivery(WebhookBodyBytes)
	var wg sync.WaitGroup
	send := func(rounds int, slow bool) {
		for r := range rounds {
			if over(ctx) {
				return
			}
			signed := r%2 == 1
			k, what := tgt.floodDelivery(ctx, body, slow, signed, t)
			label := "whole"
			if slow {
				label = "slow"
			}
			if signed {
				label += ", bad signature: "
			} else {
				label += ", no signature: "
			}
			t.answer(k, label+what)
		}
	}
	for range wholeSenders {
		wg.Go(func() { send(wholeRounds, false) })
	}
	for range slowSenders {
		wg.Go(func() { send(slowRounds, true) })
	}
	wg.Wait()
	return t
}

// floodDelivery posts one unsigned delivery of body, whole or slowly, on
// a connection of its own, and judges its answer: typed, and 401 or 503
// with Retry-After, or one of FigureWrong. A delivery cut off by the
// load's time bound is Open; one not answered within callTimeout is
// untyped.
func (tgt target) floodDelivery(ctx context.Context, body []byte, slow, badSignature bool, t *tally) (kind, string) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var r io.Reader = bytes.NewReader(body)
	if slow {
		r = &pacedBody{rest: body, chunk: slowChunk, every: slowEvery, done: cctx.Done()}
	}
	header := http.Header{}
	if badSignature {
		// Well formed and fresh, so the gateway computes the HMAC over
		// the whole body before it refuses it.
		header.Set("Stripe-Signature", "t="+strconv.FormatInt(time.Now().Unix(), 10)+",v1="+strings.Repeat("0", 64))
	}
	resp, answer, err := deliverRaw(cctx, tgt.HTTPAddr, "/v1/webhooks/"+tgt.Flooded.Name, header, r, int64(len(body)))
	switch {
	case err != nil && over(ctx):
		return kindOpen, "cut off by the load's time bound"
	case err != nil && over(cctx):
		return kindUntyped, fmt.Sprintf("no answer within %s", callTimeout)
	case err != nil:
		return kindUntyped, "transport: " + transportCause(err)
	}
	k, what := restAnswer(resp, answer, nil)
	if k != kindTyped {
		return k, what
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized && strings.Contains(what, "UNAUTHENTICATED"):
		if slow {
			t.add(FigureSlow401, 1)
		} else {
			t.add(FigureWhole401, 1)
		}
	case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
		t.add(FigureRefused503, 1)
	default:
		t.add(FigureWrong, 1)
		if resp.StatusCode == http.StatusServiceUnavailable {
			what += " without Retry-After"
		}
	}
	return k, what
}

// over says ctx is done or past its deadline: an operation cut off by
// the deadline may return before the context says it is done.
func over(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// deliverRaw posts size bytes of body to path on a connection of its
// own, writing the request from a goroutine of its own while it reads the
// answer, and returns the answer whatever became of the write. A server
// may answer before it has read a body (the gateway does when a source's
// pool is full) and then close the connection; net/http's Transport
// reports the write's failure instead of the answer when it sees the
// failure first, which a busy client does, and an answer the gateway
// gave would be counted as none. The connection is closed and the writer
// waited for before it returns; ctx's end cuts everything short.
func deliverRaw(ctx context.Context, addr, path string, header http.Header, body io.Reader, size int64) (*http.Response, []byte, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	var head bytes.Buffer
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", path, addr, size)
	if err := header.Write(&head); err != nil {
		conn.Close()
		return nil, nil, err
	}
	head.WriteString("\r\n")
	var writer sync.WaitGroup
	defer writer.Wait()
	defer conn.Close() // ends the writer's copy, before it is waited for
	writer.Go(func() {
		if _, err := conn.Write(head.Bytes()); err == nil {
			_, _ = io.Copy(conn, io.LimitReader(body, size))
		}
	})
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, nil, err
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	resp.Body.Close()
	return resp, answer, err
}

// transportCause is what a transport error comes to at the socket, when
// it came from one: "read: connection reset by peer" rather than the
// addresses.
func transportCause(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return normalize(op.Op + ": " + op.Err.Error())
	}
	return normalize(err.Error())
}

// postWebhook posts a delivery of size bytes from body to the source's
// endpoint and reads the whole answer.
func (tgt target) postWebhook(ctx context.Context, client *http.Client, source string, body io.Reader, size int64, headers map[string]string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+tgt.HTTPAddr+"/v1/webhooks/"+source, body)
	if err != nil {
		return nil, nil, err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	return resp, answer, err
}

// errLetGo ends a paced body whose request is over.
var errLetGo = errors.New("hostile: the request is over")

// pacedBody gives out rest chunk bytes at a time, one chunk every every,
// until it is all out or done is closed. The transport reads it from one
// goroutine.
type pacedBody struct {
	rest  []byte
	chunk int
	every time.Duration
	done  <-chan struct{}
	left  int       // of the current chunk
	next  time.Time // when the next chunk may start
}

func (p *pacedBody) Read(b []byte) (int, error) {
	if len(p.rest) == 0 {
		return 0, io.EOF
	}
	if p.left == 0 {
		if wait := time.Until(p.next); !p.next.IsZero() && wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-p.done:
				timer.Stop()
				return 0, errLetGo
			}
		}
		p.left, p.next = p.chunk, time.Now().Add(p.every)
	}
	n := copy(b[:min(len(b), p.left)], p.rest)
	p.rest, p.left = p.rest[n:], p.left-n
	return n, nil
}

// unsignedDelivery is a Stripe event of exactly n bytes (at least 200),
// its description padded: what a Stripe sender posts, without the
// signature.
func unsignedDelivery(n int) []byte {
	head := `{"id":"evt_hostile_flood","object":"event","type":"payment_intent.succeeded","created":` +
		strconv.FormatInt(time.Now().Unix(), 10) + `,"data":{"object":{"object":"payment_intent","description":"`
	const tail = `"}}}`
	pad := max(n-len(head)-len(tail), 0)
	return []byte(head + strings.Repeat("x", pad) + tail)
}

// The well-behaved traffic, which a hostile load must leave unaffected.

// Well-behaved callers: each makes a call every pushEvery while its
// phase lasts, and at most pushCalls(phase) calls.
const (
	restPushers   = 2
	grpcPushers   = 2
	pushEvery     = 20 * time.Millisecond
	pushEventType = "examples.shop.v1.OrderPlaced"
)

// pushStats are one kind of well-behaved caller's calls in one phase:
// how many were answered ACCEPTED, what the others were answered, and
// how long each took. It is safe for concurrent use.
type pushStats struct {
	Name string
	// MustAccept says every call must be answered ACCEPTED; without it
	// the figures are reported only.
	MustAccept bool

	mu        sync.Mutex
	latencies []time.Duration
	accepted  int
	others    *tally
	elapsed   time.Duration
}

func newPushStats(name string, mustAccept bool, calls int) *pushStats {
	return &pushStats{Name: name, MustAccept: mustAccept, latencies: make([]time.Duration, 0, calls), others: newTally(name)}
}

func (s *pushStats) observe(d time.Duration, accepted bool, k kind, what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latencies = append(s.latencies, d)
	if accepted {
		s.accepted++
		return
	}
	s.others.answer(k, what)
}

// calls and acceptedCalls are how many calls were made and answered ACCEPTED.
func (s *pushStats) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.latencies)
}

func (s *pushStats) acceptedCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// otherLines are the answers that were not ACCEPTED.
func (s *pushStats) otherLines() []line { return s.others.lines() }

// latency is the q-quantile (0 to 1) of the calls' durations, nearest
// rank; 0 without calls.
func (s *pushStats) latency(q float64) time.Duration {
	s.mu.Lock()
	ls := append([]time.Duration(nil), s.latencies...)
	s.mu.Unlock()
	if len(ls) == 0 {
		return 0
	}
	slices.Sort(ls)
	i := int(q*float64(len(ls))+0.5) - 1
	return ls[min(max(i, 0), len(ls)-1)]
}

// rate is calls a second over the phase.
func (s *pushStats) rate() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.elapsed <= 0 {
		return 0
	}
	return float64(len(s.latencies)) / s.elapsed.Seconds()
}

// push runs the well-behaved traffic for window, or until stop is
// closed: restPushers POST /v1/events and grpcPushers Publish calls with
// the API key, one OrderPlaced of a new id each; a Standard Webhooks
// sender signing OrderPlaced deliveries to tgt.Beside, a webhook source
// beside the flooded one; and a Stripe sender signing deliveries to
// tgt.Flooded, the flooded source itself, whose figures are reported
// only: its pool is the flood's to fill. Each caller makes a call every
// pushEvery; phase names the ids, which are new in every phase. A call
// made is answered and counted, whenever the phase ends: each runs under
// ctx with callTimeout, which only a failing test cuts short.
func push(ctx context.Context, tgt target, phase string, window time.Duration, stop <-chan struct{}) []*pushStats {
	calls := int(window/pushEvery) + 1
	rest := newPushStats(fmt.Sprintf("REST /v1/events, API key (%d callers)", restPushers), true, restPushers*calls)
	grpcStats := newPushStats(fmt.Sprintf("gRPC Publish, API key (%d callers)", grpcPushers), true, grpcPushers*calls)
	beside := newPushStats("signed webhooks, another source (1 sender)", true, calls)
	flooded := newPushStats("signed webhooks, the flooded source (1 sender)", false, calls)
	all := []*pushStats{rest, grpcStats, beside, flooded}

	client, closeClient := httpClient(restPushers + 2)
	defer closeClient()
	conns, closeConns, dialErr := dialN(tgt.GRPCAddr, grpcPushers)
	if dialErr == nil {
		defer closeConns()
	}
	standard, standardErr := standardwebhooks.NewWebhook(tgt.Beside.Secret)

	end := time.NewTimer(window)
	defer end.Stop()
	// ended closes when the phase ends: no call starts after it.
	ended, finished := make(chan struct{}), make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		defer close(ended)
		select {
		case <-end.C:
		case <-stop:
		case <-ctx.Done():
		case <-finished: // every caller made all its calls
		}
	})
	start := time.Now()
	var wg sync.WaitGroup
	paced := func(s *pushStats, call func(i int) (bool, kind, string)) {
		wg.Go(func() {
			tick := time.NewTicker(pushEvery)
			defer tick.Stop()
			for i := range calls {
				began := time.Now()
				ok, k, what := call(i)
				s.observe(time.Since(began), ok, k, what)
				select {
				case <-ended:
					return
				case <-tick.C:
				}
			}
		})
	}
	for c := range restPushers {
		paced(rest, func(i int) (bool, kind, string) {
			return tgt.pushREST(ctx, client, fmt.Sprintf("push-%s-rest-%d-%d", phase, c, i))
		})
	}
	for c := range grpcPushers {
		paced(grpcStats, func(i int) (bool, kind, string) {
			if dialErr != nil {
				return false, kindUntyped, "dial: " + normalize(dialErr.Error())
			}
			return pushGRPC(ctx, tgt.APIKey, conns[c], fmt.Sprintf("push-%s-grpc-%d-%d", phase, c, i))
		})
	}
	paced(beside, func(i int) (bool, kind, string) {
		if standardErr != nil {
			return false, kindUntyped, "standard webhooks: " + standardErr.Error()
		}
		id := fmt.Sprintf("msg_push_%s_%d", phase, i)
		at := time.Now()
		sig, err := standard.Sign(id, at, orderPlacedJSON)
		if err != nil {
			return false, kindUntyped, "standard webhooks: " + err.Error()
		}
		return tgt.pushWebhook(ctx, client, tgt.Beside.Name, orderPlacedJSON, map[string]string{
			"webhook-id": id, "webhook-timestamp": strconv.FormatInt(at.Unix(), 10), "webhook-signature": sig})
	})
	paced(flooded, func(i int) (bool, kind, string) {
		at := time.Now()
		body := stripeEvent(fmt.Sprintf("evt_push_%s_%d", phase, i), at)
		p := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: tgt.Flooded.Secret, Timestamp: at})
		return tgt.pushWebhook(ctx, client, tgt.Flooded.Name, body, map[string]string{"Stripe-Signature": p.Header})
	})
	wg.Wait()
	elapsed := time.Since(start)
	close(finished)
	watch.Wait()
	for _, s := range all {
		s.elapsed = elapsed
	}
	return all
}

// orderPlacedJSON is the example OrderPlaced, compacted.
var orderPlacedJSON = func() []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, examples.OrderPlacedJSON); err != nil {
		panic("hostile: the example OrderPlaced is not JSON: " + err.Error()) // embedded: cannot fail
	}
	return b.Bytes()
}()

// stripeEvent is the example Stripe event with the id, created at.
func stripeEvent(id string, at time.Time) []byte {
	var m map[string]any
	if err := json.Unmarshal(examples.StripeEventJSON, &m); err != nil {
		panic("hostile: the example Stripe event is not JSON: " + err.Error()) // embedded: cannot fail
	}
	m["id"], m["created"] = id, at.Unix()
	b, err := json.Marshal(m)
	if err != nil {
		panic("hostile: a Stripe event does not marshal: " + err.Error()) // built here: cannot fail
	}
	return b
}

// pushREST publishes one OrderPlaced of the id over REST.
func (tgt target) pushREST(ctx context.Context, client *http.Client, id string) (bool, kind, string) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	body := fmt.Sprintf(`{"events":[{"id":%q,"type":%q,"occurred_at":%q,"payload":%s}]}`,
		id, pushEventType, time.Now().UTC().Format(time.RFC3339Nano), orderPlacedJSON)
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, "http://"+tgt.HTTPAddr+"/v1/events", strings.NewReader(body))
	if err != nil {
		return false, kindUntyped, "request: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", tgt.APIKey)
	resp, err := client.Do(req)
	var answer []byte
	if err == nil {
		answer, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
		resp.Body.Close()
	}
	return restAccepted(resp, answer, err)
}

// pushWebhook posts one signed delivery and reads its answer.
func (tgt target) pushWebhook(ctx context.Context, client *http.Client, source string, body []byte, headers map[string]string) (bool, kind, string) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, answer, err := tgt.postWebhook(cctx, client, source, bytes.NewReader(body), int64(len(body)), headers)
	return restAccepted(resp, answer, err)
}

// restAccepted judges a REST answer: accepted when it is a 200 whose
// every result is ACCEPTED.
func restAccepted(resp *http.Response, answer []byte, err error) (bool, kind, string) {
	k, what := restAnswer(resp, answer, err)
	if k != kindTyped || resp.StatusCode != http.StatusOK {
		return false, k, what
	}
	var b struct {
		Results []struct {
			Outcome string `json:"outcome"`
		} `json:"results"`
	}
	if json.Unmarshal(answer, &b) != nil || len(b.Results) == 0 {
		return false, k, what
	}
	for _, r := range b.Results {
		if r.Outcome != "ACCEPTED" {
			return false, k, what
		}
	}
	return true, k, what
}

// pushGRPC publishes one OrderPlaced of the id over gRPC.
func pushGRPC(ctx context.Context, key string, conn *grpc.ClientConn, id string) (bool, kind, string) {
	cctx, cancel := context.WithTimeout(withKey(ctx, key), callTimeout)
	defer cancel()
	req := &ingestv1.PublishRequest{Events: []*ingestv1.Event{{
		Id:         id,
		Type:       pushEventType,
		OccurredAt: timestamppb.Now(),
		Payload:    &ingestv1.Event_Json{Json: string(orderPlacedJSON)},
	}}}
	var resp ingestv1.PublishResponse
	err := conn.Invoke(cctx, ingestv1.IngestService_Publish_FullMethodName, req, &resp)
	k, what := grpcAnswer(&resp, err)
	if err != nil || len(resp.GetResults()) == 0 {
		return false, k, what
	}
	for _, r := range resp.GetResults() {
		if r.GetOutcome() != ingestv1.Outcome_ACCEPTED {
			return false, k, what
		}
	}
	return true, k, what
}
