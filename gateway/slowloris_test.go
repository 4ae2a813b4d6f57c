package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// TestUnauthenticatedStreamsHoldNothing: 1,000 gRPC Publish calls without
// an API key that send their headers and never a message, and have no
// deadline, take nothing an authorized call needs: while they are open,
// authorized Publish calls, on the same connections and on another, are
// all accepted.
func TestUnauthenticatedStreamsHoldNothing(t *testing.T) {
	const conns, perConn = 4, 250
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) {
		c.Limits.MaxConcurrentStreams = perConn + 50
	}})
	ctx, cancel := context.WithCancel(context.Background()) // no deadline
	defer cancel()
	var attackers []*grpc.ClientConn
	for range conns {
		cc, err := grpc.NewClient(h.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		for range perConn {
			if _, err := cc.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true}, ingestv1.IngestService_Publish_FullMethodName); err != nil {
				t.Fatal(err)
			}
		}
		attackers = append(attackers, cc)
	}
	// A connection's frames are read in order, so an authorized call on
	// each attacking connection reaches the server after its 250 streams.
	n := 0
	for i, cc := range append(attackers, h.conn) {
		client := ingestv1.NewIngestServiceClient(cc)
		for range 5 {
			n++
			e := ev{ID: fmt.Sprintf("held-%d", n), Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
			cctx, ccancel := context.WithTimeout(withKey(context.Background(), keyAll), 15*time.Second)
			out, err := client.Publish(cctx, &ingestv1.PublishRequest{Events: []*ingestv1.Event{e.proto()}})
			ccancel()
			if err != nil {
				t.Fatalf("authorized Publish %d on connection %d while %d unauthenticated calls are open: %v", n, i, conns*perConn, err)
			}
			wantOutcomes(t, out.GetResults(), ingestv1.Outcome_ACCEPTED)
		}
	}
	if got := counterValue(t, h.reg, "sluice_requests_total", map[string]string{"transport": "grpc", "result": "UNAUTHENTICATED"}); got != conns*perConn {
		t.Errorf("%v calls refused UNAUTHENTICATED, want %d", got, conns*perConn)
	}
}

// counterValue sums the samples of counter name whose labels include
// labels.
func counterValue(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// countingListener counts the bytes its connections' readers took.
type countingListener struct {
	net.Listener
	read *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, read: l.read}, nil
}

type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// TestRESTUnauthenticatedBodyUnread: a REST request without a valid key
// gets 401 with the typed body after the server read its headers and no
// more of its 4 MiB body; and a malformed body without a key is 401, not
// 400: the key is judged first.
func TestRESTUnauthenticatedBodyUnread(t *testing.T) {
	const bodySize = 4 << 20
	var read atomic.Int64
	h := newHarness(t, harnessOpts{
		// A body this size is within the limit: only authentication
		// keeps it unread.
		config: func(c *gateway.Config) { c.Limits.MaxRequestBytes = 2 * bodySize },
		beforeStart: func(s *gateway.Server) {
			gateway.WrapHTTPListener(s, func(l net.Listener) net.Listener { return countingListener{Listener: l, read: &read} })
		},
	})
	conn, err := net.Dial("tcp", h.srv.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("POST /v1/events HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", bodySize)
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		// The server stops reading, so this ends in an error, or at the
		// deadline, or by the deferred Close; what it wrote is not the
		// point, what the server read is.
		_, _ = conn.Write(bytes.Repeat([]byte("{"), bodySize))
	}()
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"reason":"UNAUTHENTICATED"`) {
		t.Fatalf("status %d, body %s", resp.StatusCode, body)
	}
	// The server closes the connection rather than read the body: wait
	// for its end, then count.
	if _, err := io.Copy(io.Discard, br); err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Fatalf("after the answer: %v", err)
	}
	t.Logf("the server read %d bytes", read.Load())
	if n := read.Load(); n >= 64<<10 {
		t.Fatalf("the server read %d bytes of an unauthenticated request", n)
	}
	conn.Close()

	resp2, body2 := h.postREST("", []byte("{not json"))
	if resp2.StatusCode != http.StatusUnauthorized {
		t.Fatalf("malformed body without a key: status %d, body %s", resp2.StatusCode, body2)
	}
	var eb ingestv1.ErrorBody
	if err := protojson.Unmarshal(body2, &eb); err != nil || eb.GetReason() != ingestv1.Reason_UNAUTHENTICATED || eb.GetRetryable() {
		t.Fatalf("body %s: %v", body2, err)
	}
	if got := counterValue(t, h.reg, "sluice_requests_total", map[string]string{"transport": "rest", "result": "UNAUTHENTICATED"}); got != 2 {
		t.Errorf("%v REST requests counted UNAUTHENTICATED, want 2", got)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "reset")
}

// TestReceiveTimeout: a Publish call that sends its headers and never its
// message is cut off at limits.receive_timeout with DEADLINE_EXCEEDED,
// counted, and its receiving place is free again; a call whose message is
// in is not cut off however long it then waits for Kafka.
func TestReceiveTimeout(t *testing.T) {
	held := &holdingPublisher{entered: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, harnessOpts{
		config: func(c *gateway.Config) {
			c.Limits.ReceivingRequests = 1
			c.Limits.ReceiveTimeout = 50 * time.Millisecond
		},
		publisher: func(p gateway.Admitter) gateway.Admitter { held.Admitter = p; return held },
	})
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(held.release) }) }
	t.Cleanup(release)
	event := func(id string) ev {
		return ev{ID: id, Type: typeLog, Key: id, At: h.clock.Now(), JSON: examples.LogLineJSON}
	}
	heldDone := make(chan error, 1)
	go func() {
		_, err := h.publishGRPC(keyAll, event("recv-held"))
		heldDone <- err
	}()
	<-held.entered

	// The call's own deadline only keeps a broken gateway from hanging the
	// test: the counter below tells the gateway's cut-off from it.
	ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 30*time.Second)
	defer cancel()
	cs, err := h.conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true}, ingestv1.IngestService_Publish_FullMethodName)
	if err != nil {
		t.Fatal(err)
	}
	var out ingestv1.PublishResponse
	if err := cs.RecvMsg(&out); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("a call without its message: %v, want DEADLINE_EXCEEDED", err)
	}
	if got := counterValue(t, h.reg, "sluice_receive_timeouts_total", nil); got != 1 {
		t.Fatalf("sluice_receive_timeouts_total %v, want 1", got)
	}
	// The only receiving place is free: the next call gets it at once.
	if out, err := h.publishGRPC(keyAll, event("recv-next")); err != nil {
		t.Fatalf("after the cut-off: %v", err)
	} else {
		wantOutcomes(t, out.GetResults(), ingestv1.Outcome_ACCEPTED)
	}
	// The held call's message was in before the other call's deadline
	// passed: it is answered, not cut off.
	release()
	if err := <-heldDone; err != nil {
		t.Fatalf("a call waiting on Kafka past the receive timeout: %v", err)
	}
	if got := counterValue(t, h.reg, "sluice_receive_timeouts_total", nil); got != 1 {
		t.Fatalf("sluice_receive_timeouts_total %v, want 1", got)
	}
}

// TestStreamsBound: past limits.max_streams open PublishStream streams,
// across connections, a new one is refused at its headers with
// UNAVAILABLE, ErrorInfo and RetryInfo, and counted; an unauthenticated
// one is still UNAUTHENTICATED; once a stream ends its slot is free.
func TestStreamsBound(t *testing.T) {
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) {
		c.Limits.MaxStreams = 2
		c.UnavailableRetryAfter = 3 * time.Second
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	other, err := grpc.NewClient(h.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	open := func(cc *grpc.ClientConn, key string) (ingestv1.IngestService_PublishStreamClient, context.CancelFunc) {
		t.Helper()
		sctx, scancel := context.WithCancel(withKey(ctx, key))
		st, err := ingestv1.NewIngestServiceClient(cc).PublishStream(sctx)
		if err != nil {
			scancel()
			t.Fatal(err)
		}
		return st, scancel
	}
	// roundTrip sends a batch and reads its answer: the stream is open.
	roundTrip := func(st ingestv1.IngestService_PublishStreamClient, id string) error {
		e := ev{ID: id, Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
		if err := st.Send(&ingestv1.PublishStreamRequest{BatchId: 1, Events: []*ingestv1.Event{e.proto()}}); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		_, err := st.Recv()
		return err
	}
	first, closeFirst := open(h.conn, keyAll)
	defer closeFirst()
	if err := roundTrip(first, "s-1"); err != nil {
		t.Fatal(err)
	}
	second, closeSecond := open(other, keyAll)
	defer closeSecond()
	if err := roundTrip(second, "s-2"); err != nil {
		t.Fatal(err)
	}

	third, closeThird := open(other, keyAll)
	defer closeThird()
	err = roundTrip(third, "s-3")
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("a third stream: %v, want UNAVAILABLE", err)
	}
	var info, retry bool
	for _, d := range status.Convert(err).Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			info = d.GetReason() == ingestv1.Reason_UNAVAILABLE.String() && d.GetDomain() == gateway.ErrorDomain
		case *errdetails.RetryInfo:
			retry = d.GetRetryDelay().AsDuration() == 3*time.Second
		}
	}
	if !info || !retry {
		t.Fatalf("refusal without ErrorInfo or RetryInfo of 3s: %v", status.Convert(err).Details())
	}
	if got := counterValue(t, h.reg, "sluice_streams_refused_total", nil); got != 1 {
		t.Errorf("sluice_streams_refused_total %v, want 1", got)
	}
	noKey, closeNoKey := open(other, "")
	defer closeNoKey()
	if err := roundTrip(noKey, "s-x"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("an unauthenticated stream at the bound: %v, want UNAUTHENTICATED", err)
	}

	// The first stream ends; its slot frees when the server has let go of
	// it, so a new stream gets in within a bounded number of tries.
	if err := first.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("first stream's end: %v", err)
	}
	var last error
	eventually(t, "a stream slot freed", func() bool {
		st, closeSt := open(h.conn, keyAll)
		defer closeSt()
		last = roundTrip(st, "s-4")
		return last == nil
	})
}

// TestHeaderListBound: a call whose metadata is over
// limits.max_header_list_bytes fails without reaching the service; one
// within it is served.
func TestHeaderListBound(t *testing.T) {
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) { c.Limits.MaxHeaderListBytes = 4096 }})
	e := ev{ID: "hdr-1", Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
	if _, err := h.publishGRPC(keyAll, e); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 15*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "x-padding", strings.Repeat("p", 8<<10))
	_, err := h.client.Publish(ctx, &ingestv1.PublishRequest{Events: []*ingestv1.Event{e.proto()}})
	if err == nil {
		t.Fatal("a call with 8 KiB of metadata was served")
	}
	if got := counterValue(t, h.reg, "sluice_requests_total", nil); got != 1 {
		t.Errorf("%v requests reached the service, want 1 (the first)", got)
	}
}

// TestMaxConnectionAge: past limits.max_connection_age the server sends
// GOAWAY, so the client's connection leaves READY; the next call
// reconnects and is served.
func TestMaxConnectionAge(t *testing.T) {
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) {
		c.Limits.MaxConnectionAge = 200 * time.Millisecond
		c.Limits.MaxConnectionAgeGrace = time.Second
	}})
	e := ev{ID: "age-1", Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
	if _, err := h.publishGRPC(keyAll, e); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for st := h.conn.GetState(); st == connectivity.Ready; st = h.conn.GetState() {
		if !h.conn.WaitForStateChange(ctx, st) {
			t.Fatal("the connection stayed READY past max_connection_age")
		}
	}
	e.ID = "age-2"
	if _, err := h.publishGRPC(keyAll, e); err != nil {
		t.Fatalf("after the connection aged out: %v", err)
	}
}
