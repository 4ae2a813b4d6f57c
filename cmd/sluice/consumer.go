package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/consumer"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/sink"
)

const consumerUsage = `usage: sluice consumer --config FILE

Runs the consumer tier: reads the ingest topics as one consumer group and
writes each event to the sink, with retries, a circuit breaker, the DLQ and
parked topics and their drain, and the admin listener (/metrics, /healthz,
/readyz, /v1/trace). It reads the same config file as the gateway (blocks
consumer, sink, kafka, contracts, topics, log, admin).
`

// runConsumerCmd is `sluice consumer --config FILE`: the consumer tier
// from the same config file as the gateway (blocks consumer, sink, kafka,
// contracts, log).
func runConsumerCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("consumer", flag.ContinueOnError)
	path := fs.String("config", "", "path of the sluice YAML config (required)")
	if err := parseFlags(fs, args, stdout, stderr, consumerUsage, configPointer); err != nil {
		return err
	}
	if *path == "" {
		fs.Usage()
		return errors.New("consumer: --config is required")
	}
	cfg, err := loadConfig(*path, nil, fileConfig.validateConsumer)
	if err != nil {
		return err
	}
	log := cfg.Log.logger(stderr)
	ccfg := consumerConfig(cfg)
	versions, err := loadContracts(cfg)
	if err != nil {
		return err
	}
	cfg.warnInsecure(log, false)
	// The kafka block's connection: the group and its DLQ and parked
	// producer use it. A refused one stops start-up here.
	conn, err := cfg.Kafka.Options(log)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := checkConn(ctx, conn, log); err != nil {
		return err
	}
	p := newProcess(log)
	defer p.close()
	if err := p.startTracing(ctx, cfg.Tracing, "consumer"); err != nil {
		return err
	}
	s, err := sink.Open(ctx, cfg.Sink)
	if err != nil {
		return err
	}
	p.late.push(func() {
		if err := s.Close(); err != nil {
			log.Error("sink close", "err", err)
		}
	})
	c, adminOpts, err := p.startConsumer(ccfg, versions, s, conn, consumerSources(cfg))
	if err != nil {
		return err
	}
	reloader, err := startContractReloader(cfg, versions, log, p.reg)
	if err != nil {
		return err
	}
	p.late.push(reloader.close)
	if reloader != nil {
		adminOpts = append(adminOpts, admin.WithRoutes(reloader.Routes))
	}
	stopAdmin, err := serveConsumerAdmin(cfg.Admin.WithDefaultAddr(admin.DefaultConsumerAddr), p.reg, c, log, adminOpts...)
	if err != nil {
		return err
	}
	p.late.push(stopAdmin)
	log.Info("consumer running", "group", ccfg.Group, "topics", ccfg.SourceTopics(), "sink", s.Name())
	err = c.Run(ctx)
	log.Info("consumer stopped")
	return err
}

// startConsumer builds the consumer tier on p: the consumer of ccfg,
// reading with versions and writing to s over conn, its metrics on p's
// registry, and its tracer, whose GET /v1/trace route it returns as an
// admin option. The tracer is a late step of p: it reads s, which must
// close after it. The caller runs the consumer. opts are added to the
// consumer's registerer and logger.
func (p *process) startConsumer(ccfg consumer.Config, versions *contract.Versions, s sink.Sink, conn []kgo.Opt, opts ...consumer.Option) (*consumer.Consumer, []admin.Option, error) {
	opts = append([]consumer.Option{consumer.WithRegisterer(p.reg), consumer.WithLogger(p.log),
		consumer.WithTracerProvider(p.tracerProvider())}, opts...)
	c, err := consumer.New(ccfg, versions, s, conn, opts...)
	if err != nil {
		return nil, nil, err
	}
	tracer, err := consumerTracer(ccfg, conn, s, p.log)
	if err != nil {
		return nil, nil, err
	}
	p.late.push(tracer.Close)
	return c, []admin.Option{admin.WithRoutes(tracer.Routes)}, nil
}

// serveConsumerAdmin serves the consumer's admin listener: /metrics of
// reg, readiness (Consumer.Ready) checked in a goroutine of its own, and
// what opts add. stop ends both and waits for them.
func serveConsumerAdmin(cfg admin.Config, reg registry, c *consumer.Consumer, log *slog.Logger, opts ...admin.Option) (stop func(), err error) {
	ready := admin.NewChecker(c.Ready, admin.OnChange(func(err error) {
		if err != nil {
			log.Warn("consumer not ready", "err", err)
		} else {
			log.Info("consumer ready")
		}
	}))
	srv, err := admin.New(cfg, reg, append([]admin.Option{admin.WithReadiness(ready.Ready), admin.WithRegisterer(reg), admin.WithLogger(log)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	ready.Start()
	srv.Start()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		ready.Stop()
	}, nil
}

// consumerSources names the configured sources to the consumer
// (consumer.WithSources), the values of its source label.
func consumerSources(cfg fileConfig) consumer.Option {
	return consumer.WithSources(consumerSourceNames(cfg)...)
}

// consumerSourceNames are the configured sources: the push sources' and the
// pollers'.
func consumerSourceNames(cfg fileConfig) []string {
	names := make([]string, 0, len(cfg.Gateway.Sources)+len(cfg.Pollers))
	for _, s := range cfg.Gateway.Sources {
		names = append(names, s.Name)
	}
	for _, p := range cfg.Pollers {
		names = append(names, p.SourceName())
	}
	return names
}

// consumerConfig is the file's consumer block, its event_types resolved
// through the topics block, as the gateway publishes; without event_types
// and topics it consumes every contract type. Its dead letters must take
// the largest event the gateway's limits let through.
func consumerConfig(cfg fileConfig) consumer.Config {
	c := cfg.Consumer
	c.MaxEventBytes = cfg.Gateway.Limits.MaxEventBytes
	c.TypeTopics = cfg.Topics
	if len(c.SourceTopics()) == 0 {
		c.EventTypes = cfg.Contracts.Types
	}
	return c
}
