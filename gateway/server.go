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
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/tap"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/admin"
)

// Server serves a Service over gRPC and REST, with gRPC health and
// reflection. The REST listener serves only the API (/v1/...); metrics and
// the health probes are internal/admin's, on their own listener, and read
// readiness from Ready.
type Server struct {
	svc    *Service
	grpc   *grpc.Server
	http   *http.Server
	health *health.Server
	log    *slog.Logger
	// ready checks readiness in its own goroutine and drives the gRPC
	// health status; nil when no check was given (ready once started).
	ready *admin.Checker

	grpcLis, httpLis net.Listener
	wg               sync.WaitGroup
	errs             chan error
}

// ServerOption configures NewServer.
type ServerOption interface{ applyServer(*serverOptions) }

type serverOptions struct {
	ready      func(context.Context) error
	readyEvery []admin.CheckerOption
	reg        prometheus.Registerer
}

type serverOptionFunc func(*serverOptions)

func (f serverOptionFunc) applyServer(o *serverOptions) { f(o) }

// WithReadiness makes Ready and the gRPC health status depend on check
// (for example admission.Admission.Ready), run from Start to Shutdown every
// admin.DefaultCheckInterval, each bounded by admin.DefaultCheckTimeout.
// By default the server is ready once started.
func WithReadiness(check func(context.Context) error) ServerOption {
	return serverOptionFunc(func(o *serverOptions) { o.ready = check })
}

// WithReadinessEvery replaces the readiness check's interval and timeout.
func WithReadinessEvery(interval, timeout time.Duration) ServerOption {
	return serverOptionFunc(func(o *serverOptions) {
		o.readyEvery = []admin.CheckerOption{admin.CheckEvery(interval, timeout)}
	})
}

// WithServerRegisterer registers the listeners' metrics
// (sluice_tls_reloads_total); by default they are not registered.
func WithServerRegisterer(r prometheus.Registerer) ServerOption {
	return serverOptionFunc(func(o *serverOptions) { o.reg = r })
}

// streamFlowWindow and connFlowWindow are the gRPC server's HTTP/2
// flow-control windows, per stream and per connection: gRPC's defaults
// before its window growth, which lets a window grow to 16 MiB.
const (
	streamFlowWindow = 64 << 10
	connFlowWindow   = 1 << 20
)

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
	if o.ready != nil {
		s.ready = admin.NewChecker(o.ready, append(o.readyEvery, admin.OnChange(s.readinessChanged))...)
	}

	l := cfg.Limits
	open := newOpenCalls(l.UnauthenticatedStreams)
	s.grpc = grpc.NewServer(
		grpc.MaxRecvMsgSize(maxReceiveBytes(l)),
		// Fixed flow-control windows, which also turn off gRPC's window
		// growth: a stream whose handler is not reading buffers at most
		// its window, so a stream's memory is what the handler charges.
		grpc.InitialWindowSize(streamFlowWindow),
		grpc.InitialConnWindowSize(connFlowWindow),
		grpc.MaxConcurrentStreams(l.MaxConcurrentStreams),
		grpc.MaxHeaderListSize(uint32(l.MaxHeaderListBytes)),
		// Authentication, the receiving bound, the receive deadline, the
		// stream bound and the unauthenticated share: before a call's
		// message is read.
		grpc.InTapHandle(func(ctx context.Context, info *tap.Info) (context.Context, error) {
			return svc.tap(ctx, info, open)
		}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle:     cfg.HTTP.IdleTimeout,
			MaxConnectionAge:      l.MaxConnectionAge,
			MaxConnectionAgeGrace: l.MaxConnectionAgeGrace,
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.ForceServerCodecV2(newServerCodec(l)),
		// gzip messages reach the codec undecoded (compress.go), so that
		// one that does not decompress is refused typed; zstd ones do by
		// the registered "zstd". RPCDecompressor is deprecated, but it is
		// the one decompressor grpc-go takes per server, and is supported
		// throughout grpc-go 1.x.
		grpc.RPCDecompressor(gzipMarker{}),
		grpc.Creds(grpcCreds), // nil: plaintext
	)
	s.grpc.RegisterService(&ingestService, svc)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	// Before Serve, so the tap only reads it.
	open.streams = streamingMethods(s.grpc.GetServiceInfo())

	gw := runtime.NewServeMux(
		runtime.WithErrorHandler(errorHandler),
		runtime.WithRoutingErrorHandler(routingErrorHandler),
		runtime.WithIncomingHeaderMatcher(headerMatcher),
		runtime.WithOutgoingHeaderMatcher(func(string) (string, bool) { return "", false }),
		runtime.WithDisableHTTPMethodOverride(),
		runtime.WithDisablePathLengthFallback(),
	)
	if err := gw.HandlePath(http.MethodPost, "/v1/events", svc.servePublish()); err != nil {
		return nil, err
	}
	if err := gw.HandlePath(http.MethodPost, "/v1/cloudevents", svc.serveCloudEvents()); err != nil {
		return nil, err
	}
	// The caller is known before its body is read or its size judged.
	// A webhook delivery is authenticated by its signature, over its body,
	// under its source's own bounds (webhooks.go).
	routes := restRoutes(svc.webhookRoutes(svc.authenticateREST(limitBody(l.MaxRequestBytes, gw))))
	if svc.docs != nil {
		routes = svc.docsRoutes(routes)
	}
	routes = encodeAnswers(routes)
	s.http = &http.Server{
		Handler:           restPeer(routes),
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

// Ready reports whether the gateway can make an event durable, as of the
// last readiness check: nil, admin.ErrNotChecked before the first one, or
// why not. Without WithReadiness it is always nil.
func (s *Server) Ready() error {
	if s.ready == nil {
		return nil
	}
	return s.ready.Ready()
}

// readinessChanged gives the gRPC health service a new readiness answer.
func (s *Server) readinessChanged(notReady error) {
	if notReady != nil {
		s.log.Warn("gateway not ready", "err", notReady)
		s.setServing(healthpb.HealthCheckResponse_NOT_SERVING)
		return
	}
	s.log.Info("gateway ready")
	s.setServing(healthpb.HealthCheckResponse_SERVING)
}

func (s *Server) setServing(st healthpb.HealthCheckResponse_ServingStatus) {
	s.health.SetServingStatus("", st)
	s.health.SetServingStatus(ingestv1.IngestService_ServiceDesc.ServiceName, st)
}

// Start serves both listeners in goroutines that Shutdown stops and waits
// for, and starts the readiness check. Errors after start arrive on Err.
func (s *Server) Start() {
	if s.ready != nil {
		s.setServing(healthpb.HealthCheckResponse_NOT_SERVING) // until the first check
		s.ready.Start()
	} else {
		s.setServing(healthpb.HealthCheckResponse_SERVING)
	}
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
// done, then cuts the rest off; a server never started just closes its
// listeners. The caller closes the producer afterwards, so every answered
// event was acknowledged first.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.ready != nil {
		s.ready.Stop()
	}
	s.health.Shutdown()
	s.svc.drain()
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
	s.svc.streamWorkers.Wait()
	// A server shut down before Start never served its listeners, so
	// neither server above closed them.
	_ = s.grpcLis.Close()
	_ = s.httpLis.Close()
	return httpErr
}
