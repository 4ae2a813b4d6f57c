package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/internal/devpartner"
	"github.com/sluicehq/sluice/pull"
	"github.com/sluicehq/sluice/pull/ownership"
)

// The gateway judges pulled events.
var _ pull.Ingester = (*gateway.Service)(nil)

// startPollers runs the configured pollers against the gateway's Ingest:
// it creates (or checks) the cursor topic over conn (the kafka block's
// connection, as every Kafka client of the process has it), joins the
// pollers' consumer group and returns a stop that leaves the group and
// waits for every poller. With no pollers configured it does nothing. A bad
// poller config or a cursor topic with the wrong partition count is an
// error, so start-up stops with it. Every poller takes opts.
func startPollers(ctx context.Context, cfg fileConfig, conn []kgo.Opt, ing pull.Ingester, reg prometheus.Registerer, log *slog.Logger, opts ...pull.Option) (stop func(), err error) {
	if len(cfg.Pollers) == 0 {
		return func() {}, nil
	}
	oc := cfg.PollerOwnership
	r, err := ownership.NewRunner(oc, conn, cfg.Pollers, ing, ownership.WithRegisterer(reg), ownership.WithLogger(log),
		ownership.WithPollerOptions(opts...))
	if err != nil {
		return nil, fmt.Errorf("config: pollers: %w", err)
	}
	if err := r.Start(ctx); err != nil {
		r.Close()
		return nil, err
	}
	log.Info("pollers started", "pollers", len(cfg.Pollers), "group", oc.Group, "topic", oc.Topic)
	return r.Close, nil
}

// startDemoPartner starts the in-process demo partner for `sluice dev` and
// adds its poller to cfg.Pollers. stop shuts the partner down; call it
// after the pollers stopped.
func startDemoPartner(ctx context.Context, cfg *fileConfig) (stop func(), err error) {
	url, stop, err := devpartner.Start(ctx)
	if err != nil {
		return nil, err
	}
	cfg.Pollers = append(cfg.Pollers, devpartner.Config(url))
	return stop, nil
}
