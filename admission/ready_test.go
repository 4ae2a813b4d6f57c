package admission

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/publish"
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

// TestAdmissionReadyMissingTopic: a topic the producer writes that the
// cluster does not have makes admission not ready, in DIRECT and with
// spool-first alike, naming UNKNOWN_TOPIC_OR_PARTITION and the topic;
// once it is created, admission is ready.
func TestAdmissionReadyMissingTopic(t *testing.T) {
	const have, lack = "ingest.have", "ingest.lack"
	c := newCluster(t, []string{have})
	cfg := publish.NewDefaultConfig()
	cfg.Brokers = c.ListenAddrs()
	p, err := publish.NewProducer(cfg, nil, publish.WithLogger(discardLogger()), publish.WithTopics(have, lack))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	direct := openSpool(t, t.TempDir(), nil)
	defer direct.Close()
	first := openSpool(t, t.TempDir(), nil)
	defer first.Close()
	for _, a := range []*Admission{
		newTestAdmission(t, p, direct, nil, nil),
		newTestAdmission(t, p, first, func(cfg *Config) { cfg.SpoolFirst = true }, nil),
	} {
		defer a.Close()
		err := ready(a)
		var missing *publish.MissingTopicsError
		if !errors.As(err, &missing) || !strings.Contains(err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") || !strings.Contains(err.Error(), lack) ||
			strings.Contains(err.Error(), have) {
			t.Errorf("%s with %s missing: %v, want not ready naming UNKNOWN_TOPIC_OR_PARTITION and %s only", a.Mode(), lack, err, lack)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(waitCtx(t), 1, 1, nil, lack)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", lack, err)
	}
	a := newTestAdmission(t, p, nil, nil, nil)
	defer a.Close()
	waitFor(t, "readiness once "+lack+" exists", func() bool { return ready(a) == nil })
}
