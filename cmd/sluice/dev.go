package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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

const devUsage = `usage: sluice dev [flags]

Runs a gateway, an in-process Kafka, the consumer tier into an SQLite sink
and a demo partner API, with the example contracts, a demo API key, two demo
webhook sources and a dev sink that refuses chosen events (to try the DLQ
and replay), all on loopback. It prints how to try each feature; docs/dev.md
walks through them.

With --config FILE, dev serves that file's sources, pollers, contracts and
topics instead of the demo ones; everything else (listeners, Kafka, spool,
sink, admin token) takes dev's defaults and flags.
`

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	httpAddr := fs.String("http", "127.0.0.1:8080", "REST listen address")
	grpcAddr := fs.String("grpc", "127.0.0.1:9090", "gRPC listen address")
	adminAddr := fs.String("admin", admin.DefaultGatewayAddr, "admin listen address: /metrics, /healthz, /readyz, /v1/trace, /admin/contracts, /dev/config")
	kafkaPort := fs.Int("kafka-port", 0, "port of the in-process Kafka on 127.0.0.1 (0: any free port)")
	partitions := fs.Int("partitions", 3, "partitions per topic in the in-process Kafka")
	tail := fs.Bool("tail", true, "print each record as it lands in Kafka")
	spoolDir := fs.String("spool-dir", "", "directory of the disk spool (default: a temporary one, removed at exit)")
	spoolFirst := fs.Bool("spool-first", false, "send every event through the spool")
	demoPartner := fs.Bool("demo-partner", true, "run a demo partner API on loopback and a poller that pulls its orders")
	sinkDB := fs.String("sink-db", "", "SQLite file the consumer tier writes events to (default: a temporary one, removed at exit)")
	contractsFile := fs.String("contracts", "", "descriptor set file (buf image) to serve in place of the example contracts; reloaded when it changes, on SIGHUP and on POST /admin/contracts/reload")
	adminTokenFile := fs.String("admin-token-file", "", "file holding the admin token that POST /admin/... calls send as Authorization: Bearer (default: a random one in a temporary file, removed at exit)")
	types := fs.String("types", strings.Join(examples.Types, ","), "comma-separated event types of --contracts")
	demoWebhooks := fs.Bool("demo-webhooks", true, "serve two demo webhook sources: "+DemoStripeSource+" (Stripe's scheme) and "+DemoStandardSource+" (Standard Webhooks), with the example contracts")
	refuse := fs.String("refuse-ids", DemoRefusePrefix, "the dev sink refuses, as a permanent failure (the event goes to its DLQ topic), each event whose id begins with this, unless sluice dlq replay produced it (empty: refuse none)")
	configFile := fs.String("config", "", "a sluice config file whose sources, pollers, contracts and topics dev serves instead of the demo ones")
	if err := parseFlags(fs, args, stdout, stderr, devUsage, ""); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("dev: unexpected argument %q", fs.Arg(0))
	}

	// dev's own files: the example contracts (a file, so that they are
	// reloadable), the admin token, the webhook secrets, and the config
	// the operator commands (sluice dlq, trace) reach this dev with.
	files, err := os.MkdirTemp("", "sluice-dev-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(files)

	cfg := defaultFileConfig()
	cfg.Log = logConfig{Level: "info", Format: "text"}
	log := cfg.Log.logger(stderr)
	cfg.Contracts.DescriptorSet = filepath.Join(files, "example-contracts.binpb")
	if err := os.WriteFile(cfg.Contracts.DescriptorSet, examples.Contracts, 0o600); err != nil {
		return fmt.Errorf("dev: example contracts: %w", err)
	}
	cfg.Contracts.Types = examples.Types
	if *demoWebhooks {
		cfg.Contracts.Types = append(slices.Clone(examples.Types), examples.StripeEventType)
	}
	if *contractsFile != "" {
		cfg.Contracts.DescriptorSet, cfg.Contracts.Types = *contractsFile, strings.Split(*types, ",")
	}
	demo := *configFile == ""
	if !demo {
		fc, err := loadConfig(*configFile, osGetenv, fileConfig.validateContracts)
		if err != nil {
			return err
		}
		cfg.Contracts, cfg.Topics, cfg.Gateway.Topics, cfg.Pollers = fc.Contracts, fc.Topics, fc.Gateway.Topics, fc.Pollers
		cfg.Gateway.Sources = fc.Gateway.Sources
		if *contractsFile != "" {
			cfg.Contracts.DescriptorSet, cfg.Contracts.Types = *contractsFile, strings.Split(*types, ",")
		}
	}
	versions, err := loadContracts(cfg)
	if err != nil {
		return err
	}
	registry := versions.Registry()
	// Every type goes to its topic (the default one without a topics
	// block), and the gateway and the consumer read the same map.
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
		if cfg.Admin.Auth.TokenFile, err = writeDevAdminToken(files); err != nil {
			return err
		}
	}
	if demo {
		cfg.Gateway.Sources = []gateway.SourceConfig{{
			Name: "demo", KeyHashes: []string{hashKey(DemoAPIKey)}, EventTypes: []string{"*"}, Rate: 5000, Burst: 10000,
			CloudEvents: gateway.CloudEventsConfig{Types: map[string]string{"com.example.shop.order.placed": "examples.shop.v1.OrderPlaced"}},
		}}
	}
	webhooks := demo && *demoWebhooks && *contractsFile == ""
	if webhooks {
		sources, err := devWebhookSources(files)
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
	if demo && *demoPartner {
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
	if err := p.startTracing(ctx, cfg.Tracing, "dev"); err != nil {
		return err
	}
	db, err := sink.OpenSQLite(ctx, scfg)
	if err != nil {
		return err
	}
	p.late.push(func() { db.Close() })
	var landed sink.Sink = db
	if *tail {
		landed = printingSink{SQLite: db, w: stdout, where: scfg.Path}
	}
	if *refuse != "" {
		landed = refusingSink{Sink: landed, prefix: *refuse}
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
	cons, consumerRoutes, err := p.startConsumer(ccfg, versions, landed, conn, consumerSources(cfg))
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
	devCfg := devClientConfig(cfg, ccfg.Group, scfg.Path)
	devCfgPath := filepath.Join(files, "sluice-dev.yaml")
	if err := os.WriteFile(devCfgPath, devCfg, 0o600); err != nil {
		return fmt.Errorf("dev: its config: %w", err)
	}
	routes := append(consumerRoutes, admin.WithRoutes(func(mux *http.ServeMux) {
		mux.HandleFunc("GET /dev/config", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/yaml")
			w.Write(devCfg)
		})
	}))
	return p.serveGateway(ctx, cfg, versions, routes, func(srv *gateway.Server, adminAddr string) {
		contracts := strings.Join(registry.Types(), ", ")
		if *contractsFile != "" || !demo {
			contracts += " from " + cfg.Contracts.DescriptorSet + ", reloaded when it changes"
		}
		fmt.Fprint(stdout, devBanner(devBannerInfo{
			http: srv.HTTPAddr(), grpc: srv.GRPCAddr(), admin: adminAddr, brokers: cfg.Kafka.Brokers,
			sinkDB: scfg.Path, contracts: contracts, adminToken: cfg.Admin.Auth.TokenFile, config: devCfgPath,
			demo: demo, webhooks: webhooks, refuse: *refuse, sources: cfg.Gateway.Sources,
		}))
	})
}

// DemoRefusePrefix is the id prefix of the events the dev sink refuses by
// default: an event "reject-1" goes to its DLQ topic, where sluice dlq
// lists, shows and replays it.
const DemoRefusePrefix = "reject-"

// errDevRefused is the dev sink's refusal of an event it was told to
// refuse (--refuse-ids).
var errDevRefused = errors.New("dev sink: refuses ids with this prefix (sluice dev --refuse-ids), unless replayed")

// refusingSink is the dev sink that refuses, as permanent failures, the
// events whose id begins with prefix, unless an operator's replay
// produced them: so an event can be sent to the DLQ on purpose, and a
// replay of it lands. A batch holding one is refused whole; the consumer
// then writes its events one by one, and only that one is dead-lettered.
type refusingSink struct {
	sink.Sink
	prefix string
}

func (r refusingSink) Write(ctx context.Context, batch []sink.Event) ([]sink.Conflict, error) {
	for _, e := range batch {
		if strings.HasPrefix(e.ID, r.prefix) && e.ReplayID == "" {
			return nil, sink.PermanentError(fmt.Errorf("event %s: %w", e.ID, errDevRefused))
		}
	}
	return r.Sink.Write(ctx, batch)
}

// devClientConfig is a config file of this dev for the commands that reach
// it from outside (sluice dlq, sluice trace, sluice sink recent --config,
// sluice contracts list): its Kafka, contracts, topics, consumer group,
// sink and admin token file.
func devClientConfig(cfg fileConfig, group, sinkDB string) []byte {
	var b strings.Builder
	b.WriteString("# The config of a running sluice dev, for the commands that reach it:\n")
	b.WriteString("# sluice dlq, sluice trace, sluice sink recent --config, sluice contracts list.\n")
	fmt.Fprintf(&b, "kafka:\n  brokers: [%s]\n", strings.Join(quoteAll(cfg.Kafka.Brokers), ", "))
	fmt.Fprintf(&b, "contracts:\n  descriptor_set: %s\n  types: [%s]\n", yamlString(cfg.Contracts.DescriptorSet), strings.Join(quoteAll(cfg.Contracts.Types), ", "))
	if len(cfg.Topics) > 0 {
		b.WriteString("topics:\n")
		for _, typ := range slices.Sorted(maps.Keys(cfg.Topics)) {
			fmt.Fprintf(&b, "  %s: %s\n", yamlString(typ), yamlString(cfg.Topics[typ]))
		}
	}
	fmt.Fprintf(&b, "consumer:\n  group: %s\n", yamlString(group))
	fmt.Fprintf(&b, "sink:\n  kind: sqlite\n  sqlite:\n    path: %s\n", yamlString(sinkDB))
	fmt.Fprintf(&b, "admin:\n  auth:\n    token_file: %s\n", yamlString(cfg.Admin.Auth.TokenFile))
	b.WriteString("log:\n  level: warn\n  format: text\n")
	return []byte(b.String())
}

func quoteAll(ss []string) []string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = yamlString(s)
	}
	return q
}

// plainYAML matches the strings YAML reads as themselves unquoted; a
// path written so is easy to take from the file with a shell one-liner.
// (not a number, a boolean or null).
var plainYAML = regexp.MustCompile(`^[A-Za-z_/][A-Za-z0-9_./:@-]*$`)

// yamlString is s as a YAML scalar: plain when that reads back as s,
// else double-quoted (a Go quoted string is a YAML double-quoted one for
// the text sluice writes).
func yamlString(s string) string {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "null", "y", "n":
		return strconv.Quote(s)
	}
	if plainYAML.MatchString(s) && !strings.HasSuffix(s, ":") {
		return s
	}
	return strconv.Quote(s)
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

// devBannerInfo is what the dev banner says.
type devBannerInfo struct {
	http, grpc, admin  string
	brokers            []string
	sinkDB, contracts  string
	adminToken, config string
	demo, webhooks     bool
	refuse             string
	sources            []gateway.SourceConfig
}

// demoLogLine is the body of a REST publish of the README's LogLine with
// id, for the banner's commands.
func demoLogLine(id, severity, message string) string {
	return `{"events":[{"id":"` + id + `","type":"examples.logs.v1.LogLine","occurred_at":"'$(date -u +%FT%TZ)'","partition_key":"checkout-api","payload":{"service":"checkout-api","severity":"` +
		severity + `","message":"` + message + `","timestamp":"'$(date -u +%FT%TZ)'","host":"127.0.0.1"}}]}`
}

func devBanner(i devBannerInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nsluice dev is running: REST http://%s  gRPC %s  Kafka (in-process) %s\n", i.http, i.grpc, strings.Join(i.brokers, ","))
	if i.demo {
		fmt.Fprintf(&b, `API key of the "demo" source: %[4]s

Publish an event over REST:

  curl -s -H 'X-Api-Key: %[4]s' http://%[1]s/v1/events -d '%[5]s'

Over gRPC (reflection is on; "json" carries the payload as JSON text, "binary" as protobuf):

  grpcurl -plaintext -H 'x-api-key: %[4]s' -d '{"events":[{"id":"log-2","type":"examples.logs.v1.LogLine","occurred_at":"'$(date -u +%%FT%%TZ)'","json":"{\"service\":\"checkout-api\",\"severity\":\"SEVERITY_WARN\",\"message\":\"slow\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"host\":\"127.0.0.1\"}"}]}' %[2]s sluice.ingest.v1.IngestService/Publish
`, i.http, i.grpc, "", DemoAPIKey, demoLogLine("log-1", "SEVERITY_INFO", "hello"))
	} else {
		var names []string
		for _, s := range i.sources {
			names = append(names, s.Name)
		}
		fmt.Fprintf(&b, "Sources of %s: %s\n", "the config", strings.Join(names, ", "))
	}
	fmt.Fprintf(&b, `
Events land in the SQLite sink %[1]s; the newest:  sluice sink recent --sqlite %[1]s
Where an event is (sink, DLQ, parked or pending):  curl -s http://%[2]s/v1/trace/demo/log-1
                                               or:  sluice trace --config %[3]s --source demo --id log-1

CloudEvents: POST http://%[4]s/v1/cloudevents with the API key (structured, batch or binary mode)

Metrics: http://%[2]s/metrics   Contracts: %[5]s
Admin token (POST /admin/... calls send it as Authorization: Bearer): %[6]s
This dev's config, for sluice dlq, trace and sink recent: %[3]s (also GET http://%[2]s/dev/config)
`, i.sinkDB, i.admin, i.config, i.http, i.contracts, i.adminToken)
	if i.webhooks {
		fmt.Fprintf(&b, `Webhooks: POST http://%[1]s/v1/webhooks/%[2]s (Stripe-Signature, secret %[3]s)
          POST http://%[1]s/v1/webhooks/%[4]s (Standard Webhooks, secret %[5]s)
`, i.http, DemoStripeSource, DemoStripeSecret, DemoStandardSource, DemoStandardSecret)
	}
	if i.refuse != "" && i.demo {
		dlqTopic := record.DLQTopic(record.EventTopic("examples.logs.v1.LogLine"))
		fmt.Fprintf(&b, `
The DLQ and replay: the dev sink refuses each event whose id begins with %[1]q (--refuse-ids)
unless a replay produced it, so it goes to its DLQ topic. Send one, list, show and replay it:

  curl -s -H 'X-Api-Key: %[2]s' http://%[3]s/v1/events -d '%[4]s'
  sluice dlq list --config %[5]s --topic %[6]s
  sluice dlq show --config %[5]s --topic %[6]s --partition P --offset O
  sluice dlq replay --config %[5]s --topic %[6]s --actor you
`, i.refuse, DemoAPIKey, i.http, demoLogLine(i.refuse+"1", "SEVERITY_ERROR", "refused"), i.config, dlqTopic)
	}
	fmt.Fprintf(&b, `
Reload the contracts now (GET http://%[1]s/admin/contracts lists them):

  curl -s -X POST -H "Authorization: Bearer $(cat %[2]s)" http://%[1]s/admin/contracts/reload
`, i.admin, i.adminToken)
	return b.String()
}
