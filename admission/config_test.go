package admission

import (
	"reflect"
	"testing"
	"time"
)

// TestConfigValidate: each message names the field by its YAML path, as
// it is written under the admission: block.
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" for valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"spool first", func(c *Config) { c.SpoolFirst = true }, ""},
		{"zero latency threshold", func(c *Config) { c.LatencyThreshold = 0 }, "admission.latency_threshold: must be > 0"},
		{"zero in-flight budget", func(c *Config) { c.InFlightBudget = 0 }, "admission.in_flight_budget: must be > 0"},
		{"zero drain batch", func(c *Config) { c.DrainBatch = 0 }, "admission.drain_batch: must be in [1, 100000]"},
		{"huge drain batch", func(c *Config) { c.DrainBatch = 100001 }, "admission.drain_batch: must be in [1, 100000]"},
		{"zero drain timeout", func(c *Config) { c.DrainTimeout = 0 }, "admission.drain_timeout: must be > 0"},
		{"drain backoff under its start", func(c *Config) { c.DrainBackoffMax = time.Millisecond }, "admission.drain_backoff_max: must be >= 100ms"},
		{"negative shutdown drain", func(c *Config) { c.ShutdownDrain = -time.Second }, "admission.shutdown_drain: must be >= 0"},
		{"drain backoff at its start", func(c *Config) { c.DrainBackoffMax = 100 * time.Millisecond }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewDefaultConfig()
			tc.edit(&cfg)
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("Validate: got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestNewDefaultConfig(t *testing.T) {
	want := Config{
		LatencyThreshold: 2 * time.Second,
		InFlightBudget:   20000,
		DrainBatch:       500,
		DrainTimeout:     10 * time.Second,
		DrainBackoffMax:  5 * time.Second,
		ShutdownDrain:    15 * time.Second,
	}
	if got := NewDefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("NewDefaultConfig() = %+v, want %+v", got, want)
	}
}

// TestNewRefusesSpoolFirstWithoutSpool: spool_first needs a spool to send
// records through.
func TestNewRefusesSpoolFirstWithoutSpool(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.SpoolFirst = true
	a, err := New(cfg, nil, nil)
	if err == nil {
		a.Close()
		t.Fatal("spool_first without a spool was accepted")
	}
	if want := "admission.spool_first: needs a spool"; err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}
