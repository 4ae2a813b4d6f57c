package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/pull"
)

// shutdownGrace bounds a graceful shutdown: requests in flight get this
// long to finish, then the producer gets as long again to flush.
const shutdownGrace = 20 * time.Second

const gatewayUsage = `usage: sluice gateway --config FILE

Runs the gateway: the REST and gRPC listeners, admission with the disk
spool, the producer to Kafka, the pollers, and the admin listener
(/metrics, /healthz, /readyz, /admin/contracts/reload), as the config
file sets them.
`

// runGatewayCmd is `sluice gateway --config FILE`.
func runGatewayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	path := fs.String("config", "", "path of the sluice YAML config (required)")
	if err := parseFlags(fs, args, stdout, stderr, gatewayUsage, configPointer); err != nil {
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
	p := newProcess(log)
	defer p.close()
	if err := p.startTracing(ctx, cfg.Tracing, "gateway"); err != nil {
		return err
	}
	return p.serveGateway(ctx, cfg, versions, nil, started)
}

// gatewayTier is the gateway's pipeline, built and not yet serving.
type gatewayTier struct {
	registry *contract.Registry // served at start
	conn     []kgo.Opt
	adm      *admission.Admission
	svc      *gateway.Service
	srv      *gateway.Server
	reloader *contractReloader
}

// startGateway builds the gateway's pipeline on p: producer, spool,
// admission, service, servers (not started) and the contract reloader.
// Each step is pushed on p's stacks as it succeeds, so that a failure
// closes what was built.
func (p *process) startGateway(ctx context.Context, cfg fileConfig, versions *contract.Versions) (*gatewayTier, error) {
	log, reg, tp := p.log, p.reg, p.tracerProvider()
	registry := versions.Registry()
	logDecoders(log, registry)
	cfg.warnInsecure(log, true)
	// The kafka block's connection, made once: the producer (and its
	// drainer) and the pollers use it.
	conn, err := cfg.Kafka.Options(log)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	// In order: the drainer stops, the producer flushes what the drainer
	// and requests handed it, then the spool closes consistent. The
	// spool's step goes under the producer's, before either exists.
	var spool *buffer.Spool
	p.pipeline.push(func() { closeSpool(spool, log) })
	// The producer knows the gateway's topics: admission's readiness asks
	// the cluster for them (adm.Ready, below), and so does the start check.
	producer, err := publish.NewProducer(cfg.Kafka, conn, publish.WithRegisterer(reg), publish.WithLogger(log),
		publish.WithTopics(cfg.topics()...), publish.WithTracerProvider(tp))
	if err != nil {
		return nil, err
	}
	p.pipeline.push(func() {
		cctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := producer.Close(cctx); err != nil {
			log.Error("producer close", "err", err)
		}
	})
	// Before anything is produced (the drainer starts with admission), so
	// that a missing topic is the first thing the log says about it.
	if err := checkGatewayKafka(ctx, producer, log); err != nil {
		return nil, err
	}
	if cfg.Spool.Dir != "" {
		if spool, err = buffer.Open(cfg.Spool, buffer.WithRegisterer(reg), buffer.WithLogger(log)); err != nil {
			return nil, err
		}
	} else {
		log.Warn("no spool.dir: with Kafka down, events are refused instead of spooled")
	}
	adm, err := admission.New(cfg.Admission, producer, spool, admission.WithRegisterer(reg), admission.WithLogger(log),
		admission.WithSourceShares(cfg.Gateway.SourceShares(), cfg.Gateway.Limits.ReservedShare), admission.WithTracerProvider(tp))
	if err != nil {
		return nil, err
	}
	p.pipeline.push(adm.Close)
	// Once the servers take no more requests (their step is pushed
	// below, so it runs first), the drainer goes on emptying the spool
	// for up to admission.shutdown_drain: a replica that leaves leaves
	// nothing on its disk.
	p.pipeline.push(func() { flushSpool(adm, cfg.Admission.ShutdownDrain, log) })
	svc, err := gateway.New(cfg.Gateway, versions, adm,
		append([]gateway.Option{gateway.WithRegisterer(reg), gateway.WithLogger(log), gateway.WithTracerProvider(tp)},
			benchGatewayOptions(log)...)...)
	if err != nil {
		return nil, err
	}
	srv, err := gateway.NewServer(svc, gateway.WithReadiness(adm.Ready), gateway.WithServerRegisterer(reg))
	if err != nil {
		return nil, err
	}
	// Stop accepting and finish requests in flight, before admission
	// closes. A server never started closes its listeners at once.
	p.pipeline.push(func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			log.Warn("shutdown cut requests off", "err", err)
		}
	})
	// The reloader's routes are on the admin listener: it stops after it.
	reloader, err := startContractReloader(cfg, versions, log, reg, svc.PrepareContracts)
	if err != nil {
		return nil, err
	}
	p.late.push(reloader.close)
	return &gatewayTier{registry: registry, conn: conn, adm: adm, svc: svc, srv: srv, reloader: reloader}, nil
}

// serveGateway starts the gateway on p, with its admin listener (which
// adds more's options) and its pollers, and serves until ctx ends or a
// listener fails. It then stops p's pipeline: pollers first (what they
// admit needs admission open), then the servers, admission, producer and
// spool, and whatever p's pipeline held before. The admin listener stops
// with p's late steps, so probes see the shutdown through.
func (p *process) serveGateway(ctx context.Context, cfg fileConfig, versions *contract.Versions, more []admin.Option,
	started func(srv *gateway.Server, adminAddr string)) error {
	log := p.log
	g, err := p.startGateway(ctx, cfg, versions)
	if err != nil {
		return err
	}
	// The replicas are counted, and the sources' rates divided, before the
	// servers take a request.
	if err := p.startCluster(ctx, cfg.Cluster, g.conn, g.svc, p.reg, log); err != nil {
		return err
	}
	adminOpts := []admin.Option{admin.WithRegisterer(p.reg), admin.WithReadiness(g.srv.Ready), admin.WithLogger(log)}
	if g.reloader != nil {
		adminOpts = append(adminOpts, admin.WithRoutes(g.reloader.Routes))
	}
	adminSrv, err := admin.New(cfg.Admin.WithDefaultAddr(admin.DefaultGatewayAddr), p.reg, append(adminOpts, more...)...)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	g.srv.Start()
	adminSrv.Start()
	p.late.push(func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = adminSrv.Shutdown(sctx)
	})
	log.Info("gateway serving", "grpc", g.srv.GRPCAddr(), "http", g.srv.HTTPAddr(),
		"types", len(g.registry.Types()), "sources", len(cfg.Gateway.Sources), "mode", g.adm.Mode().String())
	stopPollers, err := startPollers(ctx, cfg, g.conn, g.svc, p.reg, log, pull.WithTracerProvider(p.tracerProvider()))
	if err != nil {
		return err
	}
	p.pipeline.push(stopPollers)
	if started != nil {
		started(g.srv, adminSrv.Addr())
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-g.srv.Err():
	case runErr = <-adminSrv.Err():
	}
	log.Info("gateway shutting down")
	p.pipeline.close()
	log.Info("gateway stopped")
	if runErr != nil {
		return fmt.Errorf("gateway: %w", runErr)
	}
	return nil
}

// flushSpool waits up to within for adm's drainer to publish everything
// spooled, and says what it left.
func flushSpool(adm *admission.Admission, within time.Duration, log *slog.Logger) {
	if within <= 0 {
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if left := adm.Flush(ctx); left > 0 {
		log.Warn("the spool was not drained before the stop: its records stay on disk for the next start",
			"records", left, "waited", time.Since(start).Round(time.Millisecond), "admission.shutdown_drain", within)
		return
	}
	log.Info("spool drained before the stop", "took", time.Since(start).Round(time.Millisecond))
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
// the fast ones, or the reflective ones and why (contract.Decoders); and
// which fields' rules run as compiled checks and which protovalidate
// checks, and why (contract.FieldRules).
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
		var compiled, left []string
		for _, f := range c.Rules() {
			if f.Compiled {
				compiled = append(compiled, f.Field)
			} else {
				left = append(left, f.Field+" ("+f.Reason+")")
			}
		}
		log.Info("contract rules", "type", typ, "compiled", strings.Join(compiled, ", "),
			"protovalidate", strings.Join(left, ", "))
	}
}
