package gatewaytest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
)

// The source a Gateway accepts unless Options.Configure sets others: any
// event type, API key Key.
const (
	Source = "pushers"
	Key    = "k"
)

// Options shape a Gateway; the zero value is one partition per topic and
// the Source above.
type Options struct {
	// Partitions per topic; 0 is 1.
	Partitions int32
	// Configure edits the gateway's config before the Service is built.
	Configure func(*gateway.Config)
	// Serve also starts the gRPC and REST listeners on loopback ports.
	Serve bool
}

// Gateway is a gateway.Service publishing to an in-process Kafka.
type Gateway struct {
	Service *gateway.Service
	// Server is the listening server; nil unless Options.Serve.
	Server  *gateway.Server
	Cluster *kfake.Cluster
	Brokers []string
}

// cleanupWait bounds each stop at cleanup.
const cleanupWait = 10 * time.Second

// Start builds a Gateway; it fails the test on any error.
func Start(t testing.TB, o Options) *Gateway {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	cluster := kafkatest.Fake(t, max(o.Partitions, 1), record.TopicsOf(nil, examples.Types))
	pcfg := publish.NewDefaultConfig()
	pcfg.Brokers = cluster.ListenAddrs()
	producer, err := publish.NewProducer(pcfg, nil, publish.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupWait)
		defer cancel()
		_ = producer.Close(ctx)
	})
	adm, err := admission.New(admission.NewDefaultConfig(), producer, nil, admission.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adm.Close)
	cfg := gateway.NewDefaultConfig()
	cfg.GRPCAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Sources = []gateway.SourceConfig{{Name: Source, KeyHashes: []string{gateway.HashKey(Key)}, EventTypes: []string{"*"}}}
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	versions, err := contract.NewVersions(registry, 1)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := gateway.New(cfg, versions, adm, gateway.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{Service: svc, Cluster: cluster, Brokers: cluster.ListenAddrs()}
	if o.Serve {
		if g.Server, err = gateway.NewServer(svc); err != nil {
			t.Fatal(err)
		}
		g.Server.Start()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), cleanupWait)
			defer cancel()
			_ = g.Server.Shutdown(ctx)
		})
	}
	return g
}

// EventIDs reads topic from its start and counts its records by event id.
// It reads until want records have come and a little longer, to catch
// copies beyond them, or for ten seconds at most; a record whose headers do
// not parse fails the test.
func (g *Gateway) EventIDs(t testing.TB, topic string, want int) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.Brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ids := map[string]int{}
	n := 0
	deadline := time.Now().Add(10 * time.Second)
	var extra time.Time
	for time.Now().Before(deadline) && (extra.IsZero() || time.Now().Before(extra)) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			h, err := record.ParseEvent(r)
			if err != nil {
				t.Errorf("record %s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
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
