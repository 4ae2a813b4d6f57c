package tracing

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/sluicehq/sluice/internal/tlsfiles"
)

// Config is the tracing block, the same for every role.
type Config struct {
	// Enabled exports spans over OTLP. Off by default: no span is made
	// and a caller's traceparent is passed on into records as it is.
	Enabled bool `yaml:"enabled"`
	// ServiceName is the service.name resource attribute. Default
	// sluice-<role> (sluice-gateway, sluice-consumer, …).
	ServiceName string `yaml:"service_name"`
	// Resource holds more resource attributes (deployment.environment,
	// k8s.pod.name, …).
	Resource map[string]string `yaml:"resource"`
	// Exporter is where spans go.
	Exporter ExporterConfig `yaml:"exporter"`
	// Sampler decides which new traces are kept.
	Sampler SamplerConfig `yaml:"sampler"`
	// Batch is the exporter's queue: ended spans wait in it for an export.
	Batch BatchConfig `yaml:"batch"`
}

// BatchConfig bounds the spans waiting for an export. A span ended while
// the queue is full is dropped: tracing never slows an event down. At
// 100% sampling a gateway makes about one span per event and one per
// request, so MaxQueue should hold what it ends in ScheduleDelay at its
// peak rate.
type BatchConfig struct {
	// MaxQueue is the most ended spans held. Default 8192.
	MaxQueue int `yaml:"max_queue"`
	// MaxExport is the most spans one export carries. Default 512; at most
	// MaxQueue.
	MaxExport int `yaml:"max_export"`
	// ScheduleDelay is the longest a span waits before an export starts
	// (one starts sooner when MaxExport are waiting). Default 2s.
	ScheduleDelay time.Duration `yaml:"schedule_delay"`
}

// ExporterConfig is the OTLP exporter: protocol, endpoint, transport
// security and a deadline for each export.
type ExporterConfig struct {
	// Protocol is grpc (OTLP/gRPC) or http (OTLP/HTTP, protobuf). Default
	// grpc.
	Protocol string `yaml:"protocol"`
	// Endpoint is host:port for grpc, or an http(s) URL for http, whose
	// path is kept (default path /v1/traces). Required when enabled.
	Endpoint string `yaml:"endpoint"`
	// Insecure sends spans in plaintext; the default is TLS against the
	// system roots, or against TLS's files.
	Insecure bool `yaml:"insecure"`
	// TLS is the client's TLS: CA, client certificate, server name.
	TLS tlsfiles.ClientConfig `yaml:"tls"`
	// Timeout bounds one export. Default 10s.
	Timeout time.Duration `yaml:"timeout"`
}

// SamplerConfig is the sampler: a caller's sampled flag is followed, and
// a trace sluice starts is kept with probability Ratio.
type SamplerConfig struct {
	// Ratio is the share of new traces kept, in [0, 1]. Default 0.01.
	Ratio float64 `yaml:"ratio"`
}

// NewDefaultConfig returns the defaults documented on Config.
func NewDefaultConfig() Config {
	return Config{
		Exporter: ExporterConfig{Protocol: "grpc", Timeout: 10 * time.Second},
		Sampler:  SamplerConfig{Ratio: 0.01},
		Batch:    BatchConfig{MaxQueue: 8192, MaxExport: 512, ScheduleDelay: 2 * time.Second},
	}
}

// Validate names the first wrong field as "tracing.<key>: <why>". A block
// that is not enabled is not checked further than its types.
func (c Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	e := c.Exporter
	switch {
	case e.Protocol != "grpc" && e.Protocol != "http":
		return fmt.Errorf("tracing.exporter.protocol: %q is not grpc or http", e.Protocol)
	case e.Endpoint == "":
		return errors.New("tracing.exporter.endpoint: must be set when tracing is enabled")
	case e.Timeout <= 0:
		return errors.New("tracing.exporter.timeout: must be > 0")
	case c.Sampler.Ratio < 0 || c.Sampler.Ratio > 1:
		return fmt.Errorf("tracing.sampler.ratio: %v is not in [0, 1]", c.Sampler.Ratio)
	case e.Insecure && e.TLS.On():
		return errors.New("tracing.exporter.insecure: set with tls: choose one")
	case c.Batch.MaxQueue <= 0:
		return errors.New("tracing.batch.max_queue: must be > 0")
	case c.Batch.MaxExport <= 0 || c.Batch.MaxExport > c.Batch.MaxQueue:
		return fmt.Errorf("tracing.batch.max_export: %d is not in [1, max_queue %d]", c.Batch.MaxExport, c.Batch.MaxQueue)
	case c.Batch.ScheduleDelay <= 0:
		return errors.New("tracing.batch.schedule_delay: must be > 0")
	}
	if e.Protocol == "http" {
		u, err := url.Parse(e.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("tracing.exporter.endpoint: %q is not an http(s) URL, as protocol http needs", e.Endpoint)
		}
		if u.Scheme == "http" && !e.Insecure {
			return fmt.Errorf("tracing.exporter.endpoint: %q is plaintext: set insecure: true to send spans so", e.Endpoint)
		}
		if u.Scheme == "https" && e.Insecure {
			return fmt.Errorf("tracing.exporter.endpoint: %q is https but insecure is set", e.Endpoint)
		}
	}
	for k := range c.Resource {
		if k == "" {
			return errors.New("tracing.resource: an attribute has an empty key")
		}
	}
	if _, err := e.TLS.Load(); err != nil {
		if ce, ok := errors.AsType[*tlsfiles.ConfigError](err); ok {
			return fmt.Errorf("tracing.exporter.tls.%s: %w", ce.Field, ce.Err)
		}
		return fmt.Errorf("tracing.exporter.tls: %w", err)
	}
	return nil
}
