package ownership

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/pull"
)

const typeOrder = "examples.shop.v1.OrderPlaced"

// demoBacklog is the demo partner's backlog: orders there at start.
const demoBacklog = 25

// realGateway is a gateway.Service publishing to an in-process Kafka.
type realGateway struct {
	svc     *gateway.Service
	brokers []string
	cluster *kfake.Cluster
}

func newRealGateway(t testing.TB) *realGateway {
	t.Helper()
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	var topics []string
	for _, typ := range examples.Types {
		topics = append(topics, publish.DefaultTopic(typ))
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	pcfg := publish.NewDefaultConfig()
	pcfg.Brokers = cluster.ListenAddrs()
	producer, err := publish.NewProducer(pcfg, publish.WithLogger(quietLog()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = producer.Close(ctx)
	})
	admission, err := publish.NewAdmission(publish.NewDefaultAdmissionConfig(), producer, nil, publish.WithLogger(quietLog()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admission.Close)
	cfg := gateway.NewDefaultConfig()
	cfg.Sources = []gateway.SourceConfig{{Name: "pushers", KeyHashes: []string{gateway.HashKey("k")}, EventTypes: []string{"*"}}}
	svc, err := gateway.New(cfg, registry, admission, gateway.WithLogger(quietLog()))
	if err != nil {
		t.Fatal(err)
	}
	return &realGateway{svc: svc, brokers: cluster.ListenAddrs(), cluster: cluster}
}

// eventIDs reads the OrderPlaced topic to its end and counts records by
// event id.
func (g *realGateway) eventIDs(t testing.TB, want int) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.brokers...), kgo.ConsumeTopics(publish.DefaultTopic(typeOrder)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ids := map[string]int{}
	n := 0
	deadline := time.Now().Add(10 * time.Second)
	extra := time.Time{}
	for time.Now().Before(deadline) && (extra.IsZero() || time.Now().Before(extra)) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			h, err := publish.ParseHeaders(r)
			if err != nil {
				t.Errorf("record headers: %v", err)
				return
			}
			ids[h.ID]++
			n++
		})
		if n >= want && extra.IsZero() {
			extra = time.Now().Add(300 * time.Millisecond) // catch extra copies
		}
	}
	return ids
}

// TestDemoThroughRunner is `sluice dev`'s wiring: a Runner over the
// in-process Kafka runs the demo poller into a real gateway.
func TestDemoThroughRunner(t *testing.T) {
	g := newRealGateway(t)
	base, stopPartner, err := pull.StartDemoPartner(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer stopPartner()
	oc := NewDefaultConfig()
	r, err := NewRunner(oc, []kgo.Opt{kgo.SeedBrokers(g.brokers...)}, []pull.Config{pull.DemoConfig(base)}, g.svc, WithLogger(quietLog()))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if ids := g.eventIDs(t, demoBacklog); len(ids) < demoBacklog {
		t.Fatalf("%d demo orders in Kafka, want at least %d", len(ids), demoBacklog)
	}
	st := r.Status()
	if len(st) != 1 || st[0].Partner != "demo-shop" || st[0].SavedAt.IsZero() {
		t.Errorf("status %+v", st)
	}
}
