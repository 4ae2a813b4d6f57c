package admission

import (
	"errors"
	"time"
)

// Config is the admission: block of the config file. Start from
// NewDefaultConfig.
type Config struct {
	// SpoolFirst sends every record through the spool, whatever Kafka does.
	SpoolFirst bool `yaml:"spool_first"`
	// LatencyThreshold bounds how long a record waits for Kafka in DIRECT
	// mode: past it the record is spooled instead and admission switches to
	// SPOOLING. Default 2s.
	LatencyThreshold time.Duration `yaml:"latency_threshold"`
	// InFlightBudget bounds the records waiting for Kafka in DIRECT mode; a
	// request that would pass it is spooled and switches to SPOOLING.
	// Default 20000.
	InFlightBudget int `yaml:"in_flight_budget"`
	// DrainBatch is how many spooled records the drainer publishes at once.
	// Default 500.
	DrainBatch int `yaml:"drain_batch"`
	// DrainTimeout bounds one drain publish. Default 10s.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// DrainBackoffMax caps the wait between failed drain attempts (full
	// jitter, doubling from 100ms). Default 5s.
	DrainBackoffMax time.Duration `yaml:"drain_backoff_max"`
	// ShutdownDrain bounds how long a stopping gateway goes on draining
	// its spool into Kafka once its servers take no more requests, so
	// that a replica that leaves (a rolling restart, a scale-down) leaves
	// nothing on its disk. What is still spooled when it ends stays on
	// disk and is sent at the next start. 0 stops at once. Default 15s.
	ShutdownDrain time.Duration `yaml:"shutdown_drain"`
}

// NewDefaultConfig returns the defaults documented on Config.
func NewDefaultConfig() Config {
	return Config{
		LatencyThreshold: 2 * time.Second,
		InFlightBudget:   20000,
		DrainBatch:       500,
		DrainTimeout:     10 * time.Second,
		DrainBackoffMax:  5 * time.Second,
		ShutdownDrain:    15 * time.Second,
	}
}

// Validate reports the first field out of range as "admission.<key>:
// <why>", by its YAML path.
func (c Config) Validate() error {
	switch {
	case c.LatencyThreshold <= 0:
		return errors.New("admission.latency_threshold: must be > 0")
	case c.InFlightBudget <= 0:
		return errors.New("admission.in_flight_budget: must be > 0")
	case c.DrainBatch <= 0 || c.DrainBatch > 100000:
		return errors.New("admission.drain_batch: must be in [1, 100000]")
	case c.DrainTimeout <= 0:
		return errors.New("admission.drain_timeout: must be > 0")
	case c.DrainBackoffMax < drainBackoffStart:
		return errors.New("admission.drain_backoff_max: must be >= 100ms")
	case c.ShutdownDrain < 0:
		return errors.New("admission.shutdown_drain: must be >= 0")
	}
	return nil
}
