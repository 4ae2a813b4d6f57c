package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// Server serves a Service over gRPC and REST, with /metrics, /healthz and
// /readyz on the REST listener, and gRPC health and reflection.
type Server struct {
	svc    *Service
	grpc   *grpc.Server
	http   *http.Server
	health *health.Server
	log    *slog.Logger

	grpcLis, httpLis net.Listener
	wg               sync.WaitGroup
	errs             chan error
}

// ServerOption configures NewServer.
type ServerOption interface{ applyServer(*serverOptions) }

type serverOptions struct {
	gatherer prometheus.Gatherer
	ready    func(context.Context) error
	reg      prometheus.Registerer
}

type serverOptionFunc func(*serverOptions)

func (f serverOptionFunc) applyServer(o *serverOptions) { f(o) }

// WithGatherer serves these metrics on /metrics; by default /metrics is
// not served.
func WithGatherer(g prometheus.Gatherer) ServerOption {
	return serverOptionFunc(func(o *serverOptions) { o.gatherer = g })
}

// WithReadiness makes /readyz and the gRPC health status depend on check
// (for example a Kafka ping); by default the server is ready once started.
func WithReadiness(check func(context.Context) error) ServerOption {
	return serverOptionFunc(func(o *serverOptions) { o.ready = check })
}

// WithServerRegisterer registers the listeners' metrics
// (sluice_tls_reloads_total); by default they are not registered.
func WithServerRegisterer(r prometheus.Registerer) ServerOption {
	return serverOptionFunc(func(o *serverOptions) { o.reg = r })
}

// NewServer binds both listeners; Serve starts answering. A listener with
// a TLS block serves TLS, its certificate files reloaded when they change.
func NewServer(svc *Service, opts ...ServerOption) (*Server, error) {
	var o serverOptions
	for _, opt := range opts {
		opt.applyServer(&o)
	}
	cfg := svc.cfg
	s := &Server{svc: svc, log: svc.log, health: health.NewServer(), errs: make(chan error, 2)}
	grpcCreds, httpTLS, tlsErr := listenerTLS(cfg, svc.log, o.reg)
	if tlsErr != nil {
		return nil, tlsErr
	}

	s.grpc = grpc.NewServer(
		// Messages up to twice the limit are read and refused as
		// BATCH_TOO_LARGE; beyond that gRPC cuts them off unread.
		grpc.MaxRecvMsgSize(2*cfg.Limits.MaxRequestBytes),
		grpc.MaxConcurrentStreams(cfg.Limits.MaxConcurrentStreams),
		grpc.InTapHandle(svc.tap),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: cfg.HTTP.IdleTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.ForceServerCodecV2(newServerCodec(svc.decodeFailures)),
		grpc.Creds(grpcCreds), // nil: plaintext
	)
	ingestv1.RegisterIngestServiceServer(s.grpc, svc)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)

	gw := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, newRESTMarshaler(cfg.Limits.MaxDepth)),
		runtime.WithErrorHandler(errorHandler),
		runtime.WithRoutingErrorHandler(routingErrorHandler),
		runtime.WithForwardResponseOption(forwardResponse),
		runtime.WithIncomingHeaderMatcher(headerMatcher),
		runtime.WithOutgoingHeaderMatcher(func(string) (string, bool) { return "", false }),
	)
	if err := ingestv1.RegisterIngestServiceHandlerServer(context.Background(), gw, svc); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", limitBody(cfg.Limits.MaxRequestBytes, gw))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if o.ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			defer cancel()
			if err := o.ready(ctx); err != nil {
				http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	if o.gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(o.gatherer, promhttp.HandlerOpts{}))
	}
	s.http = &http.Server{
		Handler:           restPeer(mux),
		TLSConfig:         httpTLS,
		ReadHeaderTimeout: cfg.HTTP.ReadHeaderTimeout,
		ReadTimeout:       cfg.HTTP.ReadTimeout,
		WriteTimeout:      cfg.HTTP.WriteTimeout,
		IdleTimeout:       cfg.HTTP.IdleTimeout,
		MaxHeaderBytes:    cfg.HTTP.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(svc.log.Handler(), slog.LevelWarn),
	}

	var err error
	if s.grpcLis, err = net.Listen("tcp", cfg.GRPCAddr); err != nil {
		return nil, fmt.Errorf("gateway: grpc listener: %w", err)
	}
	if s.httpLis, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		s.grpcLis.Close()
		return nil, fmt.Errorf("gateway: http listener: %w", err)
	}
	return s, nil
}

// GRPCAddr and HTTPAddr are the bound addresses (useful with port 0).
func (s *Server) GRPCAddr() string { return s.grpcLis.Addr().String() }
func (s *Server) HTTPAddr() string { return s.httpLis.Addr().String() }

// Start serves both listeners in goroutines that Shutdown stops and waits
// for. Errors after start arrive on Err.
func (s *Server) Start() {
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(ingestv1.IngestService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.grpc.Serve(s.grpcLis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.errs <- fmt.Errorf("gateway: grpc: %w", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		serve := s.http.Serve
		if s.http.TLSConfig != nil {
			serve = func(l net.Listener) error { return s.http.ServeTLS(l, "", "") }
		}
		if err := serve(s.httpLis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.errs <- fmt.Errorf("gateway: http: %w", err)
		}
	}()
}

// Err reports a listener that failed after Start.
func (s *Server) Err() <-chan error { return s.errs }

// Shutdown stops accepting, lets requests in flight finish until ctx is
// done, then cuts the rest off. The caller closes the producer afterwards,
// so every answered event was acknowledged first.
func (s *Server) Shutdown(ctx context.Context) error {
	s.health.Shutdown()
	httpErr := s.http.Shutdown(ctx)
	stopped := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		s.grpc.Stop()
		<-stopped
	}
	s.wg.Wait()
	return httpErr
}
