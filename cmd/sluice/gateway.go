package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/internal/admin"
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
	cfg, err := loadConfig(*path, osGetenv, fileConfig.validate)
	if err != nil {
		return err
	}
	log := cfg.Log.logger(stderr)
	if limit := cfg.Gateway.RuntimeMemoryLimit(); limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	versions, err := loadContracts(cfg)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, versions, log, nil)
}

// serve runs the gateway until ctx ends, then shuts down in order: stop
// accepting and finish requests in flight, then flush and close the
// producer. started, when set, is called with the running server and the
// admin listener's address. The contracts served are versions' registry,
// reloaded from the config's descriptor set file while it runs.
func serve(ctx context.Context, cfg fileConfig, versions *contract.Versions, log *slog.Logger, started func(srv *gateway.Server, adminAddr string)) error {
	registry := versions.Registry()
	logDecoders(log, registry)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	cfg.warnInsecure(log, true)
	// The kafka block's connection, made once: the producer (and its
	// drainer) and the pollers use it.
	conn, err := cfg.Kafka.Options(log)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	// The producer knows the gateway's topics: admission's readiness asks
	// the cluster for them (adm.Ready, below), and so does the start check.
	producer, err := publish.NewProducer(cfg.Kafka, conn, publish.WithRegisterer(reg), publish.WithLogger(log),
		publish.WithTopics(cfg.topics()...))
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
	// Before anything is produced (the drainer starts with admission), so
	// that a missing topic is the first thing the log says about it.
	if err := checkGatewayKafka(ctx, producer, log); err != nil {
		closeProducer()
		return err
	}
	var spool *buffer.Spool
	if cfg.Spool.Dir != "" {
		if spool, err = buffer.Open(cfg.Spool, buffer.WithRegisterer(reg), buffer.WithLogger(log)); err != nil {
			closeProducer()
			return err
		}
	} else {
		log.Warn("no spool.dir: with Kafka down, events are refused instead of spooled")
	}
	adm, err := admission.New(cfg.Admission, producer, spool, admission.WithRegisterer(reg), admission.WithLogger(log))
	if err != nil {
		closeProducer()
		closeSpool(spool, log)
		return err
	}
	// In order: the drainer stops, the producer flushes what the drainer
	// and requests handed it, then the spool closes consistent.
	closeAll := func() {
		adm.Close()
		closeProducer()
		closeSpool(spool, log)
	}
	svc, err := gateway.New(cfg.Gateway, versions, adm,
		append([]gateway.Option{gateway.WithRegisterer(reg), gateway.WithLogger(log)}, benchGatewayOptions(log)...)...)
	if err != nil {
		closeAll()
		return err
	}
	srv, err := gateway.NewServer(svc, gateway.WithReadiness(adm.Ready), gateway.WithServerRegisterer(reg))
	if err != nil {
		closeAll()
		return err
	}
	reloader, err := startContractReloader(cfg, versions, log, reg, svc.PrepareContracts)
	if err != nil {
		_ = srv.Shutdown(context.Background())
		closeAll()
		return err
	}
	defer reloader.close()
	adminOpts := []admin.Option{admin.WithRegisterer(reg), admin.WithReadiness(srv.Ready), admin.WithLogger(log)}
	if reloader != nil {
		adminOpts = append(adminOpts, admin.WithRoutes(reloader.Routes))
	}
	adminSrv, err := admin.New(cfg.Admin.WithDefaultAddr(admin.DefaultGatewayAddr), reg, adminOpts...)
	if err != nil {
		_ = srv.Shutdown(context.Background()) // never started: closes its listeners at once
		closeAll()
		return fmt.Errorf("gateway: %w", err)
	}
	srv.Start()
	adminSrv.Start()
	// The admin listener goes last, so probes see the shutdown through.
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = adminSrv.Shutdown(sctx)
	}()
	log.Info("gateway serving", "grpc", srv.GRPCAddr(), "http", srv.HTTPAddr(),
		"types", len(registry.Types()), "sources", len(cfg.Gateway.Sources), "mode", adm.Mode().String())
	stopPollers, err := startPollers(ctx, cfg, conn, svc, reg, log)
	if err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = srv.Shutdown(sctx)
		closeAll()
		return err
	}
	if started != nil {
		started(srv, adminSrv.Addr())
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-srv.Err():
	case runErr = <-adminSrv.Err():
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

// logDecoders says, per contract, which decoders its payloads go through:
// the fast ones, or the reflective ones and why (contract.Decoders).
func logDecoders(log *slog.Logger, registry *contract.Registry) {
	for _, typ := range registry.Types() {
		c, _ := registry.Lookup(typ)
		d := c.Decoders()
		attrs := []any{"type", typ, "binary", d.Binary, "json", d.JSON}
		if d.BinaryReason != "" {
			attrs = append(attrs, "binary_because", d.BinaryReason)
		}
		if d.JSONReason != "" {
			attrs = append(attrs, "json_because", d.JSONReason)
		}
		log.Info("contract decoders", attrs...)
	}
}
