package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// Baseline kinds: the transport floors the gateway is measured against.
const (
	BaselineHTTP = "http"
	BaselineGRPC = "grpc"
)

// BaselineHTTPHandler reads the whole body and answers 200 with no body:
// the least a net/http server can do per request.
func BaselineHTTPHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<20))
		w.WriteHeader(http.StatusOK)
	})
}

// BaselineService implements IngestService by answering at once with one
// ACCEPTED result per event: the least a gRPC server can do per request.
type BaselineService struct {
	ingestv1.UnimplementedIngestServiceServer
}

func accepted(events []*ingestv1.Event) []*ingestv1.EventResult {
	d := ingestv1.Durability_KAFKA
	out := make([]*ingestv1.EventResult, len(events))
	for i, ev := range events {
		out[i] = &ingestv1.EventResult{Index: uint32(i), Id: ev.GetId(), Outcome: ingestv1.Outcome_ACCEPTED, Durability: &d}
	}
	return out
}

// Publish answers every event ACCEPTED.
func (BaselineService) Publish(_ context.Context, req *ingestv1.PublishRequest) (*ingestv1.PublishResponse, error) {
	return &ingestv1.PublishResponse{Results: accepted(req.GetEvents())}, nil
}

// PublishStream answers every batch at once, every event ACCEPTED.
func (BaselineService) PublishStream(stream ingestv1.IngestService_PublishStreamServer) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(&ingestv1.PublishStreamResponse{BatchId: req.GetBatchId(), Results: accepted(req.GetEvents())}); err != nil {
			return err
		}
	}
}

// ServeBaseline serves the baseline of kind on addr until ctx ends, then
// stops it and waits for it. listening, when set, gets the bound address.
func ServeBaseline(ctx context.Context, kind, addr string, listening func(net.Addr)) error {
	if kind != BaselineHTTP && kind != BaselineGRPC {
		return fieldErr("kind", fmt.Sprintf("%q is not http or grpc", kind))
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("loadgen: baseline: %w", err)
	}
	if listening != nil {
		listening(lis.Addr())
	}
	var (
		serve func() error
		stop  func()
	)
	if kind == BaselineHTTP {
		srv := &http.Server{Handler: BaselineHTTPHandler(), ReadHeaderTimeout: 5 * time.Second}
		serve = func() error {
			if err := srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		}
		stop = func() { srv.Close() }
	} else {
		srv := grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
		ingestv1.RegisterIngestServiceServer(srv, BaselineService{})
		serve = func() error { return srv.Serve(lis) }
		stop = srv.Stop
	}
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errc <- serve()
	}()
	select {
	case <-ctx.Done():
		stop()
		wg.Wait()
		return nil
	case err := <-errc:
		stop()
		wg.Wait()
		return fmt.Errorf("loadgen: baseline: %w", err)
	}
}
