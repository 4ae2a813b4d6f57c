package main

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sluicehq/sluice/internal/tracing"
)

// closers is a stack of shutdown steps: each component's step is pushed
// once it has started, and close runs them last pushed first, on a stop
// and on a failed start alike. A step logs its own failure, so one that
// fails does not keep the steps under it from running.
type closers struct{ steps []func() }

func (c *closers) push(step func()) { c.steps = append(c.steps, step) }

// close pops and runs every step; a second close runs nothing.
func (c *closers) close() {
	for len(c.steps) > 0 {
		step := c.steps[len(c.steps)-1]
		c.steps = c.steps[:len(c.steps)-1]
		step()
	}
}

// process is what a serving command (gateway, consumer, dev) starts: one
// registry that its admin listener serves, and two stacks of closers.
// pipeline holds the tiers that move events (pollers, servers, admission,
// producer, spool, the consumer); late holds the admin listener and what
// its routes read (a contract reloader, a tracer, the sink), so that
// probes and scrapes see the pipeline's shutdown through.
type process struct {
	reg      registry
	log      *slog.Logger
	pipeline closers
	late     closers
	tracing  *tracing.Provider // nil until startTracing
}

func newProcess(log *slog.Logger) *process { return newProcessOn(prometheus.NewRegistry(), log) }

// registry is where a process's components register their metrics and
// what its admin listener serves.
type registry interface {
	prometheus.Registerer
	prometheus.Gatherer
}

// newProcessOn is a process whose metrics go to reg, the Go runtime's and
// the process's own among them.
func newProcessOn(reg registry, log *slog.Logger) *process {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &process{reg: reg, log: log}
}

// close stops the pipeline, then the late steps.
func (p *process) close() {
	p.pipeline.close()
	p.late.close()
}
