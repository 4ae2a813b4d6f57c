package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/buffer"
)

// TestAdmissionReady: ready while Kafka answers; with Kafka gone, ready
// only when a spool takes appends; never once closed.
func TestAdmissionReady(t *testing.T) {
	check := func(a *Admission) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return a.Ready(ctx)
	}
	c := newCluster(t, []string{"ready"})
	p := newTestProducer(t, c.ListenAddrs(), nil)
	noSpool := newTestAdmission(t, p, nil, nil, nil)
	healthy := openSpool(t, t.TempDir(), nil)
	t.Cleanup(func() { _ = healthy.Close() })
	spooled := newTestAdmission(t, p, healthy, nil, nil)
	full := openSpool(t, t.TempDir(), func(cfg *buffer.Config) { cfg.MinFreeBytes = 1 << 62 })
	t.Cleanup(func() { _ = full.Close() })
	fullSpool := newTestAdmission(t, p, full, nil, nil)
	for _, a := range []*Admission{noSpool, spooled, fullSpool} {
		if err := check(a); err != nil {
			t.Fatalf("with Kafka up: %v", err)
		}
	}

	c.Close()
	if err := check(noSpool); err == nil || !strings.Contains(err.Error(), "no spool") {
		t.Errorf("Kafka down, no spool: %v", err)
	}
	if err := check(spooled); err != nil {
		t.Errorf("Kafka down, healthy spool: %v", err)
	}
	if err := check(fullSpool); err == nil || !strings.Contains(err.Error(), "spool refuses") {
		t.Errorf("Kafka down, full spool: %v", err)
	}
	// While records go to the spool, a spool that refuses appends is not
	// ready, even with Kafka up.
	c2 := newCluster(t, []string{"ready"})
	p2 := newTestProducer(t, c2.ListenAddrs(), nil)
	full2 := openSpool(t, t.TempDir(), func(cfg *buffer.Config) { cfg.MinFreeBytes = 1 << 62 })
	t.Cleanup(func() { _ = full2.Close() })
	spoolFirst := newTestAdmission(t, p2, full2, func(cfg *Config) { cfg.SpoolFirst = true }, nil)
	if err := check(spoolFirst); err == nil || !strings.Contains(err.Error(), "records go to the spool") {
		t.Errorf("spool first, full spool, Kafka up: %v", err)
	}
	healthy2 := openSpool(t, t.TempDir(), nil)
	t.Cleanup(func() { _ = healthy2.Close() })
	spoolFirstHealthy := newTestAdmission(t, p2, healthy2, func(cfg *Config) { cfg.SpoolFirst = true }, nil)
	if err := check(spoolFirstHealthy); err != nil {
		t.Errorf("spool first, healthy spool: %v", err)
	}
	spoolFirst.Close()
	spoolFirstHealthy.Close()
	spooled.Close()
	if err := check(spooled); err == nil {
		t.Error("closed admission is ready")
	}
	noSpool.Close()
	fullSpool.Close()
}
