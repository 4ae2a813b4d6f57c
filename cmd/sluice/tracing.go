package main

import (
	"context"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sluicehq/sluice/internal/tracing"
)

// startTracing makes p's tracer provider from cfg, for role (the
// service.name is sluice-<role> unless the block names one). Its
// shutdown, which exports what the batcher still holds, is a late step:
// it runs after the pipeline has stopped, so the spans of the last
// requests and of the spool's drain at the stop are exported too.
func (p *process) startTracing(ctx context.Context, cfg tracing.Config, role string) error {
	tp, err := tracing.New(ctx, cfg, role)
	if err != nil {
		return err
	}
	p.tracing = tp
	if cfg.Enabled {
		p.log.Info("tracing on", "protocol", cfg.Exporter.Protocol, "endpoint", cfg.Exporter.Endpoint,
			"sampler.ratio", cfg.Sampler.Ratio)
	}
	p.late.push(func() {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.Exporter.Timeout)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			p.log.Warn("tracing: spans not exported at the stop", "err", err)
		}
	})
	return nil
}

// tracerProvider is what p's components trace with: the provider
// startTracing made, or a no-op one.
func (p *process) tracerProvider() trace.TracerProvider {
	if p.tracing == nil {
		return noop.NewTracerProvider()
	}
	return p.tracing.TracerProvider()
}
