package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/publish"
)

// shutdownGrace bounds a graceful shutdown: requests in flight get this
// long to finish, then the producer gets as long again to flush.
const shutdownGrace = 20 * time.Second

func runGatewayCmd(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "path of the sluice YAML config (required)")
	pprofAddr := fs.String("pprof", "", "serve /debug/pprof/ on this loopback address (for profiling; off when empty)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *path == "" {
		fs.Usage()
		return errors.New("gateway: --config is required")
	}
	cfg, err := loadConfig(*path, osGetenv, fileConfig.validate)
	if err != nil {
		return err
	}
	log := cfg.Log.logger(stderr)
	if limit := cfg.Gateway.RuntimeMemoryLimit(); limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	if *pprofAddr != "" {
		stopPprof, err := servePprof(*pprofAddr, log)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	registry, err := contract.LoadFile(cfg.Contracts.DescriptorSet, cfg.Contracts.Types, contract.WithMaxDepth(cfg.Gateway.Limits.MaxDepth))
	if err != nil {
		return err
	}
	return serve(ctx, cfg, registry, log, nil)
}

// serve runs the gateway until ctx ends, then shuts down in order: stop
// accepting and finish requests in flight, then flush and close the
// producer. started, when set, is called with the running server.
func serve(ctx context.Context, cfg fileConfig, registry *contract.Registry, log *slog.Logger, started func(*gateway.Server)) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	// The kafka block's connection, made once: the producer (and its
	// drainer) and the pollers use it.
	conn, err := cfg.Kafka.Options(log)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	producer, err := publish.NewProducer(cfg.Kafka, publish.WithConnection(conn), publish.WithRegisterer(reg), publish.WithLogger(log))
	if err != nil {
		return err
	}
	closeProducer := func() {
		cctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := producer.Close(cctx); err != nil {
			log.Error("producer close", "err", err)
		}
	}
	if err := checkKafka(ctx, producer, log); err != nil {
		closeProducer()
		return err
	}
	var spool *buffer.Spool
	if cfg.Spool.Dir != "" {
		if spool, err = buffer.Open(cfg.Spool.buffer(), buffer.WithRegisterer(reg), buffer.WithLogger(log)); err != nil {
			closeProducer()
			return err
		}
	} else {
		log.Warn("no spool.dir: with Kafka down, events are refused instead of spooled")
	}
	admission, err := publish.NewAdmission(cfg.Admission, producer, spool, publish.WithRegisterer(reg), publish.WithLogger(log))
	if err != nil {
		closeProducer()
		closeSpool(spool, log)
		return err
	}
	// In order: the drainer stops, the producer flushes what the drainer
	// and requests handed it, then the spool closes consistent.
	closeAll := func() {
		admission.Close()
		closeProducer()
		closeSpool(spool, log)
	}
	svc, err := gateway.New(cfg.Gateway, registry, admission,
		gateway.WithRegisterer(reg), gateway.WithLogger(log))
	if err != nil {
		closeAll()
		return err
	}
	srv, err := gateway.NewServer(svc, gateway.WithGatherer(reg), gateway.WithReadiness(producer.Ping))
	if err != nil {
		closeAll()
		return err
	}
	srv.Start()
	log.Info("gateway serving", "grpc", srv.GRPCAddr(), "http", srv.HTTPAddr(),
		"types", len(registry.Types()), "sources", len(cfg.Gateway.Sources), "mode", admission.Mode().String())
	stopPollers, err := startPollers(ctx, cfg, conn, svc, reg, log)
	if err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = srv.Shutdown(sctx)
		closeAll()
		return err
	}
	if started != nil {
		started(srv)
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-srv.Err():
	}
	log.Info("gateway shutting down")
	// Pollers first: what they admit needs admission open.
	stopPollers()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("shutdown cut requests off", "err", err)
	}
	closeAll()
	log.Info("gateway stopped")
	if runErr != nil {
		return fmt.Errorf("gateway: %w", runErr)
	}
	return nil
}

func closeSpool(s *buffer.Spool, log *slog.Logger) {
	if s == nil {
		return
	}
	if err := s.Close(); err != nil {
		log.Error("spool close", "err", err)
	}
}

// servePprof serves the runtime profiles on addr, which must be a loopback
// address: profiles show the process's internals and cost CPU to take. The
// returned func stops the server and waits for it.
func servePprof(addr string, log *slog.Logger) (stop func(), err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("gateway: --pprof: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("gateway: --pprof: %q is not a loopback address", addr)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return serveHTTP("pprof", addr, mux, log)
}

// serveHTTP serves h on addr until the returned stop is called; stop
// closes the server and waits for its goroutine.
func serveHTTP(name, addr string, h http.Handler, log *slog.Logger) (stop func(), err error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(name+" server", "err", err)
		}
	}()
	log.Info(name+" serving", "addr", lis.Addr().String())
	return func() {
		srv.Close()
		<-done
	}, nil
}
