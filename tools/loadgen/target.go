package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// Target is what a run sends to. Each worker gets a Sender of its own.
type Target interface {
	NewSender() (Sender, error)
	Close() error
}

// Sender sends one request at a time. Send returns the answer, or an error
// when there was none (the transport failed or ctx ended first).
type Sender interface {
	Send(ctx context.Context, events []*ingestv1.Event) (Answer, error)
	Close() error
}

// NewTarget connects to cfg.Target at cfg.Addr. gen is needed by direct,
// which publishes the binary form of each payload.
func NewTarget(cfg Config, gen *Generator) (Target, error) {
	switch cfg.Target {
	case TargetGRPC, TargetStream:
		return newGRPCTarget(cfg)
	case TargetREST:
		return newRESTTarget(cfg)
	case TargetClient:
		return newClientTarget(cfg)
	case TargetDirect:
		return newDirectTarget(cfg, gen)
	}
	return nil, fieldErr("target", fmt.Sprintf("%q is not grpc, stream, rest, client or direct", cfg.Target))
}

// grpcTarget shares Connections connections among its senders.
type grpcTarget struct {
	stream bool
	key    string
	conns  []*grpc.ClientConn
	mu     sync.Mutex
	n      int
}

func newGRPCTarget(cfg Config) (*grpcTarget, error) {
	t := &grpcTarget{stream: cfg.Target == TargetStream, key: cfg.APIKey}
	tc, err := cfg.clientTLS()
	if err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	if tc != nil {
		creds = credentials.NewTLS(tc)
	}
	for range cfg.Connections {
		conn, err := grpc.NewClient(cfg.Addr, grpc.WithTransportCredentials(creds), grpcRecvLimit())
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("loadgen: grpc %s: %w", cfg.Addr, err)
		}
		t.conns = append(t.conns, conn)
	}
	return t, nil
}

// grpcRecvLimit lets the gRPC targets read the answer to a large batch.
func grpcRecvLimit() grpc.DialOption {
	return grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64 << 20))
}

func (t *grpcTarget) NewSender() (Sender, error) {
	t.mu.Lock()
	conn := t.conns[t.n%len(t.conns)]
	t.n++
	t.mu.Unlock()
	client := ingestv1.NewIngestServiceClient(conn)
	if t.stream {
		return &streamSender{client: client, key: t.key}, nil
	}
	return &unarySender{client: client, key: t.key}, nil
}

func (t *grpcTarget) Close() error {
	var errs []error
	for _, c := range t.conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

type unarySender struct {
	client ingestv1.IngestServiceClient
	key    string
}

func (s *unarySender) Send(ctx context.Context, events []*ingestv1.Event) (Answer, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, "x-api-key", s.key)
	resp, err := s.client.Publish(ctx, &ingestv1.PublishRequest{Events: events})
	if err != nil {
		if f := grpcFailure(err); f != nil {
			return Answer{Failure: f}, nil
		}
		return Answer{}, err
	}
	rs, err := resultsOf(resp.GetResults(), len(events))
	return Answer{Results: rs}, err
}

func (s *unarySender) Close() error { return nil }

// grpcFailure reads a gateway's typed whole-request refusal: a status with
// an ErrorInfo detail. A status without one came from the transport, not
// the gateway, and is not an answer (nil).
func grpcFailure(err error) *Failure {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	var f *Failure
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			f = &Failure{Code: "grpc:" + codeName(st), Reason: info.GetReason(), Retryable: info.GetMetadata()["retryable"] == "true"}
		}
	}
	if f == nil {
		return nil
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			f.RetryAfter = ri.GetRetryDelay().AsDuration()
		}
	}
	return f
}

func codeName(st *status.Status) string {
	// codes.Code's String is "ResourceExhausted"; the table in docs/api.md
	// and the proto comments use the upper-case names.
	return upperSnake(st.Code().String())
}

func upperSnake(s string) string {
	out := make([]byte, 0, len(s)+4)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			if i > 0 {
				out = append(out, '_')
			}
			out = append(out, c)
			continue
		}
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		out = append(out, c)
	}
	return string(out)
}

// streamSender keeps one PublishStream open and has one batch in flight on
// it. A request whose ctx ends before its answer tears the stream down, so
// the next Send opens a new one.
type streamSender struct {
	client ingestv1.IngestServiceClient
	key    string
	stream ingestv1.IngestService_PublishStreamClient
	cancel context.CancelFunc
	batch  uint64
}

func (s *streamSender) Send(ctx context.Context, events []*ingestv1.Event) (Answer, error) {
	if s.stream == nil {
		// The stream lives across requests: its context is not the
		// request's, and a request's deadline ends it through AfterFunc.
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		sctx = metadata.AppendToOutgoingContext(sctx, "x-api-key", s.key)
		stream, err := s.client.PublishStream(sctx)
		if err != nil {
			cancel()
			return Answer{}, err
		}
		s.stream, s.cancel = stream, cancel
	}
	stop := context.AfterFunc(ctx, s.cancel)
	s.batch++
	ans, err := s.roundTrip(events)
	if stopped := stop(); !stopped || err != nil || ans.Failure != nil {
		s.reset()
	}
	if err != nil && ctx.Err() != nil {
		return Answer{}, ctx.Err()
	}
	return ans, err
}

func (s *streamSender) roundTrip(events []*ingestv1.Event) (Answer, error) {
	if err := s.stream.Send(&ingestv1.PublishStreamRequest{BatchId: s.batch, Events: events}); err != nil {
		if errors.Is(err, io.EOF) {
			// The server ended the stream; Recv has its status.
			_, err = s.stream.Recv()
		}
		return s.streamEnded(err)
	}
	resp, err := s.stream.Recv()
	if err != nil {
		return s.streamEnded(err)
	}
	if resp.GetBatchId() != s.batch {
		return Answer{}, &AnswerError{Msg: fmt.Sprintf("answer to batch %d, sent %d", resp.GetBatchId(), s.batch)}
	}
	rs, err := resultsOf(resp.GetResults(), len(events))
	return Answer{Results: rs}, err
}

// streamEnded turns the end of a stream into the gateway's typed refusal
// when it is one, and otherwise into an error.
func (s *streamSender) streamEnded(err error) (Answer, error) {
	if errors.Is(err, io.EOF) {
		err = errors.New("stream closed by the server without an answer")
	}
	if f := grpcFailure(err); f != nil {
		return Answer{Failure: f}, nil
	}
	return Answer{}, err
}

func (s *streamSender) reset() {
	if s.stream == nil {
		return
	}
	s.cancel()
	s.stream, s.cancel = nil, nil
}

func (s *streamSender) Close() error {
	if s.stream != nil {
		err := s.stream.CloseSend()
		s.reset()
		return err
	}
	return nil
}

// sharedSender is a sender over a target's shared client; closing it
// leaves the client to the target's Close.
type sharedSender struct {
	send func(ctx context.Context, events []*ingestv1.Event) (Answer, error)
}

func (s sharedSender) Send(ctx context.Context, events []*ingestv1.Event) (Answer, error) {
	return s.send(ctx, events)
}

func (sharedSender) Close() error { return nil }
