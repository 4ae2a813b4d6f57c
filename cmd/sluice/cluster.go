package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/peers"
	"github.com/sluicehq/sluice/record"
)

// validateCluster checks the cluster block: its errors name the field's
// path in the file.
func (c fileConfig) validateCluster() error {
	err := c.Cluster.Validate()
	var ce *peers.ConfigError
	if errors.As(err, &ce) {
		return fmt.Errorf("config: cluster.%s: %s", ce.Field, ce.Reason)
	}
	if err != nil {
		return fmt.Errorf("config: cluster: %w", err)
	}
	topic := c.Cluster.HeartbeatTopic
	if topic == "" {
		return nil
	}
	if topic == c.PollerOwnership.Topic {
		return fmt.Errorf("config: cluster.heartbeat_topic: %q is the pollers' cursor topic (poller_ownership.topic)", topic)
	}
	for _, t := range c.topics() {
		if t == topic {
			return fmt.Errorf("config: cluster.heartbeat_topic: %q is an event type's topic", topic)
		}
	}
	if topic == record.AuditTopic {
		return fmt.Errorf("config: cluster.heartbeat_topic: %q is sluice's own audit topic", topic)
	}
	return nil
}

// replicaDivider is the gateway's service: every source's events/s and
// bytes/s become its configured rates ÷ n (gateway.Service.SetReplicas).
type replicaDivider interface {
	SetReplicas(n int)
}

// startCluster registers sluice_gateway_replicas (1 while alone) and, with
// a heartbeat topic, starts counting the replicas, each count given to
// divider before the gateway serves and whenever it changes. The returned
// stop writes this replica's tombstone, so that the others count it gone
// at once; it is pushed on p's pipeline before the servers stop.
func (p *process) startCluster(ctx context.Context, cfg peers.Config, conn []kgo.Opt, divider replicaDivider, reg prometheus.Registerer, log *slog.Logger) error {
	met, err := peers.NewMetrics(reg)
	if err != nil {
		return fmt.Errorf("cluster: register metrics: %w", err)
	}
	p.late.push(met.Unregister)
	if !cfg.Enabled() {
		return nil
	}
	m, err := peers.New(cfg, conn, divider.SetReplicas, peers.WithMetrics(met), peers.WithLogger(log))
	if err != nil {
		return fmt.Errorf("config: cluster: %w", err)
	}
	if err := m.Start(ctx); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	p.pipeline.push(m.Close)
	return nil
}
