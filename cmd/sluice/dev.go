package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/gateway/webhook"
	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/internal/eventmap"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// DemoAPIKey is the key of the "demo" source that `sluice dev` configures.
const DemoAPIKey = "sluice-demo-key"

// The demo webhook sources of `sluice dev` and their secrets, fixed and
// printed as the demo API key is, so that a delivery can be signed by
// hand (openssl) or with a provider's library: stripe-demo takes Stripe's
// signed event objects (examples.stripe.v1.Event), hooks-demo Standard
// Webhooks deliveries of orders (examples.shop.v1.OrderPlaced).
const (
	DemoStripeSource   = "stripe-demo"
	DemoStripeSecret   = "whsec_sluice_dev_demo"
	DemoStandardSource = "hooks-demo"
	// DemoStandardSecret is "sluice-dev-standard-webhooks-key" in base64,
	// as Standard Webhooks spells a secret.
	DemoStandardSecret = "whsec_c2x1aWNlLWRldi1zdGFuZGFyZC13ZWJob29rcy1rZXk="
)

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	httpAddr := fs.String("http", "127.0.0.1:8080", "REST listen address")
	grpcAddr := fs.String("grpc", "127.0.0.1:9090", "gRPC listen address")
	adminAddr := fs.String("admin", admin.DefaultGatewayAddr, "admin listen address: /metrics, /healthz, /readyz, /v1/trace")
	kafkaPort := fs.Int("kafka-port", 0, "port of the in-process Kafka on 127.0.0.1 (0: any free port)")
	partitions := fs.Int("partitions", 3, "partitions per topic in the in-process Kafka")
	tail := fs.Bool("tail", true, "print each record as it lands in Kafka")
	spoolDir := fs.String("spool-dir", "", "directory of the disk spool (default: a temporary one, removed at exit)")
	spoolFirst := fs.Bool("spool-first", false, "send every event through the spool")
	demoPartner := fs.Bool("demo-partner", true, "run a demo partner API on loopback and a poller that pulls its orders")
	sinkDB := fs.String("sink-db", "", "SQLite file the consumer tier writes events to (default: a temporary one, removed at exit)")
	contractsFile := fs.String("contracts", "", "descriptor set file (buf image) to serve in place of the embedded example contracts; reloaded when it changes, on SIGHUP and on POST /admin/contracts/reload")
	adminTokenFile := fs.String("admin-token-file", "", "file holding the admin token that POST /admin/... calls send as Authorization: Bearer (default: a random one in a temporary file, removed at exit)")
	types := fs.String("types", strings.Join(examples.Types, ","), "comma-separated event types of --contracts")
	demoWebhooks := fs.Bool("demo-webhooks", true, "serve two demo webhook sources: "+DemoStripeSource+" (Stripe's scheme) and "+DemoStandardSource+" (Standard Webhooks), with the example contracts")
	if err := fs.Parse(args); err != nil {
		return err
	}

	cfg := defaultFileConfig()
	cfg.Log = logConfig{Level: "info", Format: "text"}
	log := cfg.Log.logger(stderr)
	cfg.Contracts.DescriptorSet, cfg.Contracts.Types = embeddedContracts, examples.Types
	if *demoWebhooks {
		cfg.Contracts.Types = append(slices.Clone(examples.Types), examples.StripeEventType)
	}
	if *contractsFile != "" {
		cfg.Contracts.DescriptorSet, cfg.Contracts.Types = *contractsFile, strings.Split(*types, ",")
	}
	versions, err := loadContracts(cfg)
	if err != nil {
		return err
	}
	registry := versions.Registry()
	// dev has no config file: its topics block is empty, every type goes
	// to its default topic, and the gateway and the consumer read the
	// same map.
	topics := cfg.topics()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(*kafkaPort),
		kfake.SeedTopics(int32(*partitions), record.Cluster(topics)...))
	if err != nil {
		return fmt.Errorf("dev: in-process kafka: %w", err)
	}
	defer cluster.Close()

	cfg.Gateway.GRPCAddr, cfg.Gateway.HTTPAddr = *grpcAddr, *httpAddr
	cfg.Admin.Addr = *adminAddr
	cfg.Admin.Auth.TokenFile = *adminTokenFile
	if cfg.Admin.Auth.TokenFile == "" {
		dir, err := os.MkdirTemp("", "sluice-dev-admin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if cfg.Admin.Auth.TokenFile, err = writeDevAdminToken(dir); err != nil {
			return err
		}
	}
	cfg.Gateway.Sources = []gateway.SourceConfig{{
		Name: "demo", KeyHashes: []string{hashKey(DemoAPIKey)}, EventTypes: []string{"*"}, Rate: 5000, Burst: 10000,
		CloudEvents: gateway.CloudEventsConfig{Types: map[string]string{"com.example.shop.order.placed": "examples.shop.v1.OrderPlaced"}},
	}}
	if *demoWebhooks && *contractsFile == "" {
		dir, err := os.MkdirTemp("", "sluice-dev-webhooks-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		sources, err := devWebhookSources(dir)
		if err != nil {
			return err
		}
		cfg.Gateway.Sources = append(cfg.Gateway.Sources, sources...)
	}
	cfg.Kafka.Brokers = cluster.ListenAddrs()
	cfg.Spool.Dir = *spoolDir
	if cfg.Spool.Dir == "" {
		dir, err := os.MkdirTemp("", "sluice-dev-spool-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.Spool.Dir = dir
		// A scratch spool on a developer's disk needs no free-space floor.
		cfg.Spool.MinFreeBytes = 1
	}
	cfg.Admission.SpoolFirst = *spoolFirst
	if *demoPartner {
		stopDemo, err := startDemoPartner(ctx, &cfg)
		if err != nil {
			return err
		}
		defer stopDemo()
	}
	if err := cfg.validate(); err != nil {
		return err
	}

	scfg := sink.NewDefaultConfig().SQLite
	scfg.Path = *sinkDB
	if scfg.Path == "" {
		dir, err := os.MkdirTemp("", "sluice-dev-sink-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir) // after every goroutine below is waited for
		scfg.Path = filepath.Join(dir, "events.db")
	}

	// The consumer tier, into SQLite, started as `sluice consumer` starts
	// it: its metrics and GET /v1/trace are on the admin listener. It
	// stops after the gateway, and the sink closes after it and after the
	// admin listener, whose trace route reads the sink's audit table.
	p := newProcess(log)
	defer p.close()
	db, err := sink.OpenSQLite(ctx, scfg)
	if err != nil {
		return err
	}
	p.late.push(func() { db.Close() })
	var landed sink.Sink = db
	if *tail {
		landed = printingSink{SQLite: db, w: stdout, where: scfg.Path}
	}
	ccfg := consumerConfig(cfg)
	ccfg.Group = "sluice-dev"
	ccfg.WriteBatch, ccfg.SinkConcurrency = 100, 1
	ccfg.LagInterval = time.Second
	conn, err := cfg.Kafka.Options(log)
	if err != nil {
		return err
	}
	// The consumer reads with the versions the gateway serves: a reload
	// swaps both, and the consumer keeps the earlier ones.
	cons, consumerRoutes, err := p.startConsumer(ccfg, versions, landed, conn)
	if err != nil {
		return err
	}
	var consumerRuns sync.WaitGroup
	consCtx, stopConsumer := context.WithCancel(context.Background())
	consumerRuns.Go(func() {
		if err := cons.Run(consCtx); err != nil {
			log.Error("consumer stopped", "err", err)
		}
	})
	p.pipeline.push(func() {
		stopConsumer()
		consumerRuns.Wait()
	})
	if *tail {
		tailer, err := kgo.NewClient(append(slices.Clone(conn), kgo.ConsumeTopics(topics...),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		if err != nil {
			return err
		}
		var tails sync.WaitGroup
		tailCtx, stopTail := context.WithCancel(ctx)
		tails.Go(func() {
			defer tailer.Close()
			tailRecords(tailCtx, tailer, stdout)
		})
		p.pipeline.push(func() {
			stopTail()
			tails.Wait()
		})
	}
	return p.serveGateway(ctx, cfg, versions, consumerRoutes, func(srv *gateway.Server, adminAddr string) {
		contracts := strings.Join(registry.Types(), ", ")
		if cfg.Contracts.DescriptorSet != embeddedContracts {
			contracts += " from " + cfg.Contracts.DescriptorSet + ", reloaded when it changes"
		}
		fmt.Fprint(stdout, devBanner(srv.HTTPAddr(), srv.GRPCAddr(), adminAddr, cfg.Kafka.Brokers, scfg.Path, contracts, cfg.Admin.Auth.TokenFile,
			cfg.Contracts.DescriptorSet != embeddedContracts, *demoWebhooks && *contractsFile == ""))
	})
}

// printingSink prints each event once its write to the sink succeeded.
// It is the SQLite sink otherwise, an Auditor included, so that the
// consumer's decisions land in the file's audit table.
type printingSink struct {
	*sink.SQLite
	w     io.Writer
	where string
}

// The consumer records in a sink that is an audit.Writer; the wrapper must
// stay one, or decisions would go to sluice.audit and written rows twice.
var _ audit.Writer = printingSink{}

func (p printingSink) Write(ctx context.Context, batch []sink.Event) ([]sink.Conflict, error) {
	conflicts, err := p.SQLite.Write(ctx, batch)
	if err != nil {
		return nil, err
	}
	for _, e := range batch {
		fmt.Fprintf(p.w, "sink: %s %s id=%s type=%s source=%s\n", p.Name(), p.where, e.ID, e.Type, e.Source)
	}
	return conflicts, nil
}

// tailRecords prints each record that lands in the dev topics until ctx ends.
func tailRecords(ctx context.Context, cl *kgo.Client, w io.Writer) {
	for {
		fetches := cl.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			return
		}
		fetches.EachRecord(func(r *kgo.Record) {
			h, err := record.ParseEvent(r)
			if err != nil {
				fmt.Fprintf(w, "kafka: %s[%d]@%d: %v\n", r.Topic, r.Partition, r.Offset, err)
				return
			}
			fmt.Fprintf(w, "kafka: %s[%d]@%d key=%s id=%s source=%s bytes=%d\n",
				r.Topic, r.Partition, r.Offset, r.Key, h.ID, h.Source, len(r.Value))
		})
	}
}

// writeDevAdminToken writes a random admin token to a file in dir that
// only its owner reads, and returns the file's path.
// devWebhookSources are the demo webhook sources, their secrets written
// to files in dir (a secret comes from a file or the environment, never a
// config's text).
func devWebhookSources(dir string) ([]gateway.SourceConfig, error) {
	write := func(name, secret string) (string, error) {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("dev: webhook secret: %w", err)
		}
		return path, nil
	}
	stripe := gateway.NewDefaultWebhookConfig()
	stripe.Scheme = webhook.SchemeStripe
	stripe.Mapping.DefaultType = examples.StripeEventType
	stripe.Mapping.PartitionKey = eventmap.Pointer("/data/object/customer")
	stripe.AllowUnknownFields = []string{examples.StripeEventType}
	standard := gateway.NewDefaultWebhookConfig()
	standard.Scheme = webhook.SchemeStandard
	standard.Mapping.Type = eventmap.FixedType("examples.shop.v1.OrderPlaced")
	standard.Mapping.PartitionKey = eventmap.Pointer("/customer/customer_id")
	var err error
	if stripe.SecretFiles, err = oneFile(write("stripe-secret", DemoStripeSecret)); err != nil {
		return nil, err
	}
	if standard.SecretFiles, err = oneFile(write("standard-secret", DemoStandardSecret)); err != nil {
		return nil, err
	}
	return []gateway.SourceConfig{
		{Name: DemoStripeSource, EventTypes: []string{examples.StripeEventType}, Webhook: &stripe},
		{Name: DemoStandardSource, EventTypes: []string{"examples.shop.v1.OrderPlaced"}, Webhook: &standard},
	}, nil
}

func oneFile(path string, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	return []string{path}, nil
}

func writeDevAdminToken(dir string) (string, error) {
	path := filepath.Join(dir, "admin-token")
	if err := os.WriteFile(path, []byte(rand.Text()+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("dev: admin token: %w", err)
	}
	return path, nil
}

func devBanner(httpAddr, grpcAddr, adminAddr string, brokers []string, sinkDB, contracts, adminToken string, reloadable, webhooks bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, `
sluice dev is running: REST http://%[1]s  gRPC %[2]s  Kafka (in-process) %[3]s
API key of the "demo" source: %[4]s

Publish an event over REST:

  curl -s -H 'X-Api-Key: %[4]s' http://%[1]s/v1/events -d '{"events":[{"id":"log-1","type":"examples.logs.v1.LogLine","occurred_at":"'$(date -u +%%FT%%TZ)'","partition_key":"checkout-api","payload":{"service":"checkout-api","severity":"SEVERITY_INFO","message":"hello","timestamp":"'$(date -u +%%FT%%TZ)'","host":"127.0.0.1"}}]}'

Over gRPC (reflection is on; "json" carries the payload as JSON text, "binary" as protobuf):

  grpcurl -plaintext -H 'x-api-key: %[4]s' -d '{"events":[{"id":"log-2","type":"examples.logs.v1.LogLine","occurred_at":"'$(date -u +%%FT%%TZ)'","json":"{\"service\":\"checkout-api\",\"severity\":\"SEVERITY_WARN\",\"message\":\"slow\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"host\":\"127.0.0.1\"}"}]}' %[2]s sluice.ingest.v1.IngestService/Publish

Events land in the SQLite sink %[6]s; the newest:  sluice sink recent --sqlite %[6]s
Where an event is (sink, DLQ, parked or pending):  curl -s http://%[7]s/v1/trace/demo/log-1

CloudEvents: POST http://%[1]s/v1/cloudevents with the API key (structured, batch or binary mode)

Metrics: http://%[7]s/metrics   Contracts: %[5]s
Admin token (POST /admin/... calls send it as Authorization: Bearer): %[8]s
`, httpAddr, grpcAddr, strings.Join(brokers, ","), DemoAPIKey, contracts, sinkDB, adminAddr, adminToken)
	if webhooks {
		fmt.Fprintf(&b, `Webhooks: POST http://%[1]s/v1/webhooks/%[2]s (Stripe-Signature, secret %[3]s)
          POST http://%[1]s/v1/webhooks/%[4]s (Standard Webhooks, secret %[5]s)
`, httpAddr, DemoStripeSource, DemoStripeSecret, DemoStandardSource, DemoStandardSecret)
	}
	if reloadable {
		fmt.Fprintf(&b, `
Reload the contracts now:

  curl -s -X POST -H "Authorization: Bearer $(cat %[2]s)" http://%[1]s/admin/contracts/reload
`, adminAddr, adminToken)
	}
	return b.String()
}
