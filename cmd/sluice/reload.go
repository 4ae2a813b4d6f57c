package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/contract/reload"
	"github.com/sluicehq/sluice/examples"
)

// embeddedContracts is the descriptor_set `sluice dev` names when it
// serves the example contracts compiled into the binary: there is no
// file to reload them from.
const embeddedContracts = "(embedded example contracts)"

// loadContracts loads the config's contracts (the embedded examples for
// embeddedContracts) as the versions a process serves, keeping
// contracts.keep_versions of each type.
func loadContracts(cfg fileConfig) (*contract.Versions, error) {
	var registry *contract.Registry
	var err error
	if cfg.Contracts.DescriptorSet == embeddedContracts {
		registry, err = contract.Load(examples.Contracts, cfg.Contracts.Types, contract.WithMaxDepth(cfg.Gateway.Limits.MaxDepth))
	} else {
		registry, err = contract.LoadFile(cfg.Contracts.DescriptorSet, cfg.Contracts.Types, contract.WithMaxDepth(cfg.Gateway.Limits.MaxDepth))
	}
	if err != nil {
		return nil, err
	}
	return contract.NewVersions(registry, cfg.Contracts.KeepVersions)
}

// contractReloader keeps versions current with the config's descriptor
// set file: on a change of its content, on SIGHUP, and on POST
// /admin/contracts/reload (routes, for the admin listener). It is nil for
// the embedded contracts, which have no file. stop ends its goroutine and
// waits for it.
type contractReloader struct {
	*reload.Reloader
	stop func()
}

func startContractReloader(cfg fileConfig, versions *contract.Versions, log *slog.Logger, reg prometheus.Registerer,
	prepare ...func(*contract.Registry) error) (*contractReloader, error) {
	if cfg.Contracts.DescriptorSet == embeddedContracts {
		return nil, nil
	}
	types, depth := cfg.Contracts.Types, cfg.Gateway.Limits.MaxDepth
	hup := make(chan os.Signal, 1)
	opts := []reload.Option{reload.WithLogger(log), reload.WithRegisterer(reg), reload.WithSignals(hup)}
	for _, p := range prepare {
		opts = append(opts, reload.WithPrepare(p))
	}
	r, err := reload.New(reload.Config{
		Path:          cfg.Contracts.DescriptorSet,
		WatchInterval: cfg.Contracts.Reload.WatchInterval,
		Policies:      cfg.Contracts.policies(),
		Load: func(image []byte) (*contract.Registry, error) {
			return contract.Load(image, types, contract.WithMaxDepth(depth))
		},
	}, versions, opts...)
	if err != nil {
		return nil, err
	}
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { r.Run(ctx) })
	return &contractReloader{Reloader: r, stop: func() {
		signal.Stop(hup)
		cancel()
		wg.Wait()
	}}, nil
}

// close stops a reloader that may be nil.
func (c *contractReloader) close() {
	if c != nil {
		c.stop()
	}
}
