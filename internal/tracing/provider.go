package tracing

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Provider is a role's tracer provider: the SDK's, exporting over OTLP,
// when the config enables tracing, a no-op one otherwise.
type Provider struct {
	tp  trace.TracerProvider
	sdk *sdktrace.TracerProvider // nil when off
}

// New builds role's provider from cfg (validated). Every exporter option
// comes from cfg: the OTEL_* environment does not override the file.
// Nothing is dialled here; the exporter connects on its first export.
func New(ctx context.Context, cfg Config, role string) (*Provider, error) {
	if !cfg.Enabled {
		return &Provider{tp: noop.NewTracerProvider()}, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	exp, err := newExporter(ctx, cfg.Exporter)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	name := cfg.ServiceName
	if name == "" {
		name = "sluice-" + role
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", name), attribute.String("sluice.role", role)}
	for _, k := range slices.Sorted(maps.Keys(cfg.Resource)) {
		attrs = append(attrs, attribute.String(k, cfg.Resource[k]))
	}
	sdk := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp,
			sdktrace.WithMaxQueueSize(cfg.Batch.MaxQueue),
			sdktrace.WithMaxExportBatchSize(cfg.Batch.MaxExport),
			sdktrace.WithBatchTimeout(cfg.Batch.ScheduleDelay),
			sdktrace.WithExportTimeout(cfg.Exporter.Timeout)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.Sampler.Ratio))),
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
	)
	return &Provider{tp: sdk, sdk: sdk}, nil
}

func newExporter(ctx context.Context, e ExporterConfig) (sdktrace.SpanExporter, error) {
	tlsCfg, err := e.TLS.Load()
	if err != nil {
		return nil, err
	}
	if e.Protocol == "http" {
		u, err := url.Parse(e.Endpoint)
		if err != nil {
			return nil, err
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(u.String()), otlptracehttp.WithTimeout(e.Timeout)}
		switch {
		case e.Insecure:
			opts = append(opts, otlptracehttp.WithInsecure())
		case tlsCfg != nil:
			opts = append(opts, otlptracehttp.WithTLSClientConfig(tlsCfg))
		}
		return otlptracehttp.New(ctx, opts...)
	}
	opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(e.Endpoint), otlptracegrpc.WithTimeout(e.Timeout)}
	switch {
	case e.Insecure:
		opts = append(opts, otlptracegrpc.WithInsecure())
	case tlsCfg != nil:
		opts = append(opts, otlptracegrpc.WithTLSCredentials(credentialsFrom(tlsCfg)))
	}
	return otlptracegrpc.New(ctx, opts...)
}

// TracerProvider is the provider components take.
func (p *Provider) TracerProvider() trace.TracerProvider { return p.tp }

// Shutdown exports what is buffered, within ctx, and stops exporting.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p.sdk == nil {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}
