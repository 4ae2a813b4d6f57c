package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/internal/tlsfiles"
	"github.com/sluicehq/sluice/internal/tlsfiles/tlstest"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

var updateMetricsDoc = flag.Bool("update-metrics-doc", false, "write docs/metrics.md from the gateway's and the consumer's registries")

const metricsDocPath = "../../docs/metrics.md"

// describingRegistry is a registry that keeps every collector registered
// on it, so that each metric it exports can be described, a vector with
// no series yet among them.
// Collectors unregistered (a spool's, a producer's, at their close) stay
// described. families is a Gather taken while the process served.
type describingRegistry struct {
	*prometheus.Registry
	collectors []prometheus.Collector
	families   []*dto.MetricFamily
}

// snapshot keeps what r gathers, the types of the metrics with series,
// once every metric whose collector does not say its type (one of its own
// kind) has a series, or at a deadline.
func (r *describingRegistry) snapshot() error {
	var untyped []string
	for _, c := range r.collectors {
		if collectorType(c) == "" {
			for _, name := range descNames(c) {
				untyped = append(untyped, name)
			}
		}
	}
	var err error
	waitUntil(20*time.Second, func() bool {
		if r.families, err = r.Gather(); err != nil {
			return true
		}
		have := map[string]bool{}
		for _, f := range r.families {
			have[f.GetName()] = true
		}
		for _, name := range untyped {
			if !have[name] {
				return false
			}
		}
		return true
	})
	return err
}

// descNames are the names of the metrics c describes.
func descNames(c prometheus.Collector) []string {
	var names []string
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := descText.FindStringSubmatch(d.String()); m != nil {
			name, _ := strconv.Unquote(m[1])
			names = append(names, name)
		}
	}
	return names
}

func newDescribingRegistry() *describingRegistry {
	return &describingRegistry{Registry: prometheus.NewRegistry()}
}

func (r *describingRegistry) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *describingRegistry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// metricDoc is one metric of the page.
type metricDoc struct {
	name, typ, help string
	labels          []string
	// constLabels are the values each constant label takes.
	constLabels map[string][]string
	processes   []string
}

var descText = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), unit: "(?:[^"\\]|\\.)*", constLabels: \{(.*?)\}, variableLabels: \{(.*?)\}\}$`)

// describe adds the sluice_ metrics of r, exported by process, to docs.
func describe(t *testing.T, r *describingRegistry, process string, docs map[string]*metricDoc) {
	t.Helper()
	types := map[string]string{}
	for _, f := range r.families {
		types[f.GetName()] = strings.ToLower(f.GetType().String())
	}
	for _, c := range r.collectors {
		ch := make(chan *prometheus.Desc, 64)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := descText.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read %s", d)
			}
			name, _ := strconv.Unquote(m[1])
			help, _ := strconv.Unquote(m[2])
			if !strings.HasPrefix(name, "sluice_") {
				continue
			}
			var labels []string
			for _, l := range strings.Split(m[4], ",") {
				if l != "" {
					labels = append(labels, strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"))
				}
			}
			consts := map[string]string{}
			for _, l := range strings.Split(m[3], ",") {
				if k, v, ok := strings.Cut(l, "="); ok {
					consts[k], _ = strconv.Unquote(v)
				}
			}
			typ := types[name]
			if typ == "" {
				typ = collectorType(c)
			}
			if typ == "" {
				t.Fatalf("%s: no series yet and its collector (%T) does not say its type: give it a series before describing", name, c)
			}
			doc := docs[name]
			if doc == nil {
				doc = &metricDoc{name: name, typ: typ, help: help, labels: labels, constLabels: map[string][]string{}}
				docs[name] = doc
			}
			for k, v := range consts {
				if !slices.Contains(doc.constLabels[k], v) {
					doc.constLabels[k] = append(doc.constLabels[k], v)
					slices.Sort(doc.constLabels[k])
				}
			}
			if doc.typ != typ || doc.help != help || !slices.Equal(doc.labels, labels) {
				t.Errorf("%s: the %s describes it as %s %q %v, another process as %s %q %v", name, process, typ, help, labels, doc.typ, doc.help, doc.labels)
			}
			if !slices.Contains(doc.processes, process) {
				doc.processes = append(doc.processes, process)
			}
		}
	}
}

// collectorType is the type of the metrics of a collector with no
// series, from its kind.
func collectorType(c prometheus.Collector) string {
	switch c.(type) {
	case *prometheus.CounterVec, prometheus.Counter, prometheus.CounterFunc:
		return strings.ToLower(dto.MetricType_COUNTER.String())
	case *prometheus.GaugeVec, prometheus.Gauge, prometheus.GaugeFunc:
		return strings.ToLower(dto.MetricType_GAUGE.String())
	case *prometheus.HistogramVec, prometheus.Histogram:
		return strings.ToLower(dto.MetricType_HISTOGRAM.String())
	case *prometheus.SummaryVec, prometheus.Summary:
		return strings.ToLower(dto.MetricType_SUMMARY.String())
	}
	return ""
}

// metricsDocConfig is the defaults with the example contracts of types,
// written to dir, and the brokers of an in-process Kafka that has their
// topics, stopped when the test ends.
func metricsDocConfig(t *testing.T, dir string, types []string) fileConfig {
	t.Helper()
	cfg := defaultFileConfig()
	cfg.Log = logConfig{Level: "error", Format: "text"}
	cfg.Contracts.DescriptorSet = filepath.Join(dir, "contracts.binpb")
	if err := os.WriteFile(cfg.Contracts.DescriptorSet, examples.Contracts, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Contracts.Types = types
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, record.Cluster(cfg.topics())...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	cfg.Kafka.Brokers = cluster.ListenAddrs()
	return cfg
}

// gatewayRegistry is the registry of a gateway started as `sluice dev`
// starts it, against an in-process Kafka, with every part that has
// metrics: a spool, the contract reloader, the demo sources, webhooks
// and a poller, and the admin listener. It is stopped once it served.
func gatewayRegistry(t *testing.T) *describingRegistry {
	t.Helper()
	dir := t.TempDir()
	cfg := metricsDocConfig(t, dir, append(slices.Clone(examples.Types), examples.StripeEventType))
	var err error
	cfg.Gateway.GRPCAddr, cfg.Gateway.HTTPAddr, cfg.Admin.Addr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	if cfg.Admin.Auth.TokenFile, err = writeDevAdminToken(dir); err != nil {
		t.Fatal(err)
	}
	webhooks, err := devWebhookSources(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Gateway.Sources = append([]gateway.SourceConfig{{Name: "demo", KeyHashes: []string{hashKey(DemoAPIKey)}, EventTypes: []string{"*"}}}, webhooks...)
	cfg.Spool.Dir, cfg.Spool.MinFreeBytes = t.TempDir(), 1
	// TLS on every listener: their certificates' metrics are registered
	// only then.
	certFile, keyFile := tlstest.NewCA(t, "metrics-doc").Server(t).Files(t)
	for _, l := range []*tlsfiles.ServerConfig{&cfg.Gateway.GRPCTLS.ServerConfig, &cfg.Gateway.HTTPTLS.ServerConfig, &cfg.Admin.TLS} {
		l.CertFile, l.KeyFile = certFile, keyFile
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopPartner, err := startDemoPartner(ctx, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer stopPartner()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	versions, err := loadContracts(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := newDescribingRegistry()
	p := newProcessOn(reg, cfg.Log.logger(os.Stderr))
	defer p.close()
	served := false
	var snapErr error
	started := func(*gateway.Server, string) {
		served, snapErr = true, reg.snapshot()
		cancel()
	}
	if err := p.serveGateway(ctx, cfg, versions, nil, started); err != nil || !served || snapErr != nil {
		t.Fatalf("gateway: served %v, %v %v", served, err, snapErr)
	}
	return reg
}

// consumerRegistry is the registry of a consumer built as `sluice
// consumer` builds it (the consumer, its tracer, the contract reloader
// and the admin listener), writing to an SQLite sink.
func consumerRegistry(t *testing.T) *describingRegistry {
	t.Helper()
	dir := t.TempDir()
	cfg := metricsDocConfig(t, dir, examples.Types)
	cfg.Consumer.Group = "metrics-doc"
	cfg.Admin.Addr = "127.0.0.1:0"
	cfg.Admin.TLS.CertFile, cfg.Admin.TLS.KeyFile = tlstest.NewCA(t, "metrics-doc").Server(t).Files(t)
	log := cfg.Log.logger(os.Stderr)
	versions, err := loadContracts(cfg)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := cfg.Kafka.Options(log)
	if err != nil {
		t.Fatal(err)
	}
	scfg := sink.NewDefaultConfig().SQLite
	scfg.Path = filepath.Join(dir, "events.db")
	s, err := sink.OpenSQLite(context.Background(), scfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := newDescribingRegistry()
	p := newProcessOn(reg, log)
	defer p.close()
	p.late.push(func() { s.Close() })
	c, adminOpts, err := p.startConsumer(consumerConfig(cfg), versions, s, conn)
	if err != nil {
		t.Fatal(err)
	}
	reloader, err := startContractReloader(cfg, versions, log, p.reg)
	if err != nil {
		t.Fatal(err)
	}
	p.late.push(reloader.close)
	stopAdmin, err := serveConsumerAdmin(cfg.Admin, p.reg, c, log, adminOpts...)
	if err != nil {
		t.Fatal(err)
	}
	p.late.push(stopAdmin)
	if err := reg.snapshot(); err != nil {
		t.Fatal(err)
	}
	return reg
}

// metricsDoc is docs/metrics.md.
func metricsDoc(docs map[string]*metricDoc) string {
	var b strings.Builder
	b.WriteString(`# Metrics

<!-- Generated by TestMetricsDoc from the registries the gateway and the consumer build; do not edit.
     Refresh: go generate ./cmd/sluice -->

Every metric ` + "`sluice gateway`" + ` and ` + "`sluice consumer`" + ` export on their admin
listener's ` + "`/metrics`" + ` (` + "`sluice dev`" + ` runs both and exports both sets on one
listener). Beside these, each process exports the Go runtime's ` + "`go_*`" + ` and
the process's ` + "`process_*`" + ` metrics. The alerts and dashboards built on them:
[alerts.md](alerts.md); how to run the processes: [operations.md](operations.md).

`)
	fmt.Fprintf(&b, "%d metrics.\n\n", len(docs))
	b.WriteString("| Metric | Type | Labels | Exported by | Help |\n|---|---|---|---|---|\n")
	names := make([]string, 0, len(docs))
	for n := range docs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		d := docs[n]
		var ls []string
		for _, l := range d.labels {
			ls = append(ls, "`"+l+"`")
		}
		// A constant label's values are the config's (a webhook
		// source's name): the page names the label only.
		for _, k := range slices.Sorted(maps.Keys(d.constLabels)) {
			ls = append(ls, "`"+k+"`")
		}
		labels := "-"
		if len(ls) > 0 {
			labels = strings.Join(ls, ", ")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", d.name, d.typ, labels, strings.Join(d.processes, ", "),
			strings.ReplaceAll(strings.ReplaceAll(d.help, "|", `\|`), "\n", " "))
	}
	return b.String()
}

// TestMetricsDoc holds docs/metrics.md to the metrics the gateway and the
// consumer register; with -update-metrics-doc (go generate ./cmd/sluice)
// it writes the page.
func TestMetricsDoc(t *testing.T) {
	docs := map[string]*metricDoc{}
	describe(t, gatewayRegistry(t), "gateway", docs)
	describe(t, consumerRegistry(t), "consumer", docs)
	want := metricsDoc(docs)
	if *updateMetricsDoc {
		if err := os.WriteFile(metricsDocPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(metricsDocPath)
	if err != nil || string(got) != want {
		t.Fatalf("docs/metrics.md is stale or missing (%v): run go generate ./cmd/sluice", err)
	}
}
