package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *path == "" {
		fs.Usage()
		return errors.New("gateway: --config is required")
	}
	cfg, err := loadConfig(*path, osGetenv)
	if err != nil {
		return err
	}
	log := cfg.Log.logger(stderr)
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

	producer, err := publish.NewProducer(cfg.Kafka, publish.WithRegisterer(reg), publish.WithLogger(log))
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
	if started != nil {
		started(srv)
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-srv.Err():
	}
	log.Info("gateway shutting down")
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
