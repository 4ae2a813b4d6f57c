package client_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/gatewaytest"
	"github.com/sluicehq/sluice/record"
)

const orderType = "examples.shop.v1.OrderPlaced"

var orderTopic = record.EventTopic(orderType)

// serve starts a real gateway on loopback with its gRPC listener.
func serve(t *testing.T, configure func(*gateway.Config)) *gatewaytest.Gateway {
	t.Helper()
	return gatewaytest.Start(t, gatewaytest.Options{Serve: true, Configure: configure})
}

// open is a client of addrs with the test key, plaintext on loopback and
// short backoffs; Close runs at cleanup when the test did not close it.
func open(t *testing.T, addrs []string, opts ...client.Opt) *client.Client {
	t.Helper()
	base := []client.Opt{client.WithInsecure(), client.WithAPIKey(gatewaytest.Key),
		client.Backoff(5*time.Millisecond, 50*time.Millisecond), client.RequestTimeout(10 * time.Second)}
	c, err := client.New(addrs, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// order is a valid OrderPlaced; id may be empty, then the client fills it.
func order(id string) *ingestv1.Event {
	return &ingestv1.Event{Id: id, Type: orderType, OccurredAt: timestamppb.Now(),
		Payload: &ingestv1.Event_Json{Json: string(examples.OrderPlacedJSON)}}
}

// badEmail breaks the contract's email rule: SCHEMA_VIOLATION with a
// violation on payload.customer.email.
func badEmail(id string) *ingestv1.Event {
	ev := order(id)
	ev.Payload = &ingestv1.Event_Json{Json: string(bytes.Replace(examples.OrderPlacedJSON, []byte("ada@example.com"), []byte("not-an-email"), 1))}
	return ev
}

func unknownType(id string) *ingestv1.Event {
	ev := order(id)
	ev.Type = "examples.nowhere.v1.Missing"
	return ev
}

// freeAddr is a loopback address nothing listens on (just now).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// calls counts the unary Publish calls a client makes, and can stand in
// for the network: fail makes a call fail with its error instead of
// (before=true) or after (before=false) reaching the gateway.
type calls struct {
	n    atomic.Int64
	mu   sync.Mutex
	fail func(n int64) (err error, before bool)
}

func (c *calls) opt() client.Opt {
	return client.WithDialOptions(grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		n := c.n.Add(1)
		c.mu.Lock()
		fail := c.fail
		c.mu.Unlock()
		if fail != nil {
			if err, before := fail(n); err != nil {
				if before {
					return err
				}
				if callErr := invoker(ctx, method, req, reply, cc, opts...); callErr != nil {
					return callErr
				}
				return err
			}
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}))
}

// recorder is a client.Metrics that counts.
type recorder struct {
	mu       sync.Mutex
	requests int
	failed   int
	retries  map[ingestv1.Reason]int
	finals   map[string]int
}

func newRecorder() *recorder {
	return &recorder{retries: map[ingestv1.Reason]int{}, finals: map[string]int{}}
}

func (r *recorder) Request(_ int, _ time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if err != nil {
		r.failed++
	}
}

func (r *recorder) Final(o ingestv1.Outcome, reason ingestv1.Reason, _ int, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finals[fmt.Sprintf("%s/%s", o, reason)]++
}

func (r *recorder) Retry(reason ingestv1.Reason, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retries[reason] += n
}

func (r *recorder) Buffered(int, int) {}

func (r *recorder) retried(reason ingestv1.Reason) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.retries[reason]
}

// results collects Send's done calls by id and fails the test on a second
// call for one id.
type results struct {
	t  *testing.T
	mu sync.Mutex
	by map[string]client.Result
}

func newResults(t *testing.T) *results { return &results{t: t, by: map[string]client.Result{}} }

func (rs *results) done(r client.Result) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if _, ok := rs.by[r.ID]; ok {
		rs.t.Errorf("done called twice for %s", r.ID)
	}
	rs.by[r.ID] = r
}

func (rs *results) len() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.by)
}

func (rs *results) get(id string) (client.Result, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.by[id]
	return r, ok
}
