package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/devpartner"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/pull"
	"github.com/sluicehq/sluice/pull/ownership"
	"github.com/sluicehq/sluice/record"
)

// TestConfigRelativePathsResolveAgainstTheFile: every path the file sets
// (files, directories, lists of files) that is relative is taken from the
// file's directory, not the working directory; absolute paths and paths
// left at their defaults stay as they are.
func TestConfigRelativePathsResolveAgainstTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conf", "sluice.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	raw := `
contracts: {descriptor_set: contracts/set.binpb, types: [a.B]}
gateway:
  grpc_tls: {cert_file: tls/g.crt, key_file: tls/g.key, client_ca_file: tls/ca.crt}
  http_tls: {cert_file: /abs/h.crt, key_file: ../h.key, client_ca_file: ./hca.crt}
sources:
  - {name: s, event_types: ['*'], webhook: {scheme: stripe, secret_files: [whsec, /run/secrets/other]}}
kafka:
  brokers: [127.0.0.1:9092]
  tls: {ca_file: kafka/ca.crt, cert_file: kafka/c.crt, key_file: kafka/c.key}
  sasl: {password_file: kafka/password}
spool: {dir: spool}
sink: {sqlite: {path: db/events.db}}
admin:
  tls: {cert_file: admin/a.crt, key_file: admin/a.key, client_ca_file: admin/ca.crt}
  auth: {token_file: admin/token}
tracing:
  exporter: {tls: {ca_file: otel/ca.crt, cert_file: otel/c.crt, key_file: otel/c.key}}
`
	if err := os.WriteFile(path, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(path, nil, func(fileConfig) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	in := func(p string) string { return filepath.Join(dir, "conf", p) }
	for got, want := range map[*string]string{
		&cfg.Contracts.DescriptorSet:                   in("contracts/set.binpb"),
		&cfg.Gateway.GRPCTLS.CertFile:                  in("tls/g.crt"),
		&cfg.Gateway.GRPCTLS.KeyFile:                   in("tls/g.key"),
		&cfg.Gateway.GRPCTLS.ClientCAFile:              in("tls/ca.crt"),
		&cfg.Gateway.HTTPTLS.CertFile:                  "/abs/h.crt",
		&cfg.Gateway.HTTPTLS.KeyFile:                   filepath.Join(dir, "h.key"),
		&cfg.Gateway.HTTPTLS.ClientCAFile:              in("hca.crt"),
		&cfg.Gateway.Sources[0].Webhook.SecretFiles[0]: in("whsec"),
		&cfg.Gateway.Sources[0].Webhook.SecretFiles[1]: "/run/secrets/other",
		&cfg.Kafka.TLS.CAFile:                          in("kafka/ca.crt"),
		&cfg.Kafka.TLS.CertFile:                        in("kafka/c.crt"),
		&cfg.Kafka.TLS.KeyFile:                         in("kafka/c.key"),
		&cfg.Kafka.SASL.PasswordFile:                   in("kafka/password"),
		&cfg.Spool.Dir:                                 in("spool"),
		&cfg.Sink.SQLite.Path:                          in("db/events.db"),
		&cfg.Admin.TLS.CertFile:                        in("admin/a.crt"),
		&cfg.Admin.TLS.KeyFile:                         in("admin/a.key"),
		&cfg.Admin.TLS.ClientCAFile:                    in("admin/ca.crt"),
		&cfg.Admin.Auth.TokenFile:                      in("admin/token"),
		&cfg.Tracing.Exporter.TLS.CAFile:               in("otel/ca.crt"),
		&cfg.Tracing.Exporter.TLS.CertFile:             in("otel/c.crt"),
		&cfg.Tracing.Exporter.TLS.KeyFile:              in("otel/c.key"),
	} {
		if *got != want {
			t.Errorf("got %s, want %s", *got, want)
		}
	}

	// Every key that names a file or directory is above.
	covered := []string{"contracts.descriptor_set", "gateway.grpc_tls.cert_file", "gateway.grpc_tls.key_file", "gateway.grpc_tls.client_ca_file",
		"gateway.http_tls.cert_file", "gateway.http_tls.key_file", "gateway.http_tls.client_ca_file", "sources[].webhook.secret_files",
		"kafka.tls.ca_file", "kafka.tls.cert_file", "kafka.tls.key_file", "kafka.sasl.password_file", "spool.dir", "sink.sqlite.path",
		"admin.tls.cert_file", "admin.tls.key_file", "admin.tls.client_ca_file", "admin.auth.token_file",
		"tracing.exporter.tls.ca_file", "tracing.exporter.tls.cert_file", "tracing.exporter.tls.key_file"}
	for _, e := range configEntries() {
		if isPathKey(e.key) && !slices.Contains(covered, e.path) {
			t.Errorf("%s names a file: add it to this test", e.path)
		}
	}

	// A path the file leaves at its default is the default.
	if err := os.WriteFile(path, []byte("kafka: {brokers: [127.0.0.1:9092]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err = loadConfig(path, nil, func(fileConfig) error { return nil }); err != nil || cfg.Sink.SQLite.Path != "sluice-events.db" {
		t.Fatalf("default sqlite path %q, %v", cfg.Sink.SQLite.Path, err)
	}
}

// TestPollerOwnershipBlock: poller_ownership sets the pollers' group and
// cursor topic (and its timeouts), is validated naming its keys, and is
// what the gateway's pollers run with.
func TestPollerOwnershipBlock(t *testing.T) {
	base := bothRoles([]string{"    name: acme\n"}, "")
	cfg, err := parseConfig([]byte(base+"poller_ownership: {group: acme-pollers, topic: acme.cursors, replication_factor: 3, session_timeout: 20s, rebalance_timeout: 2m, io_timeout: 5s}\n"),
		nil, fileConfig.validate)
	if err != nil {
		t.Fatal(err)
	}
	want := ownership.Config{Group: "acme-pollers", Topic: "acme.cursors", ReplicationFactor: 3, SessionTimeout: 20 * time.Second,
		RebalanceTimeout: 2 * time.Minute, IOTimeout: 5 * time.Second}
	if cfg.PollerOwnership != want {
		t.Fatalf("got %+v, want %+v", cfg.PollerOwnership, want)
	}
	cfg, err = parseConfig([]byte(base), nil, fileConfig.validate)
	if err != nil || cfg.PollerOwnership != ownership.NewDefaultConfig() {
		t.Fatalf("without the block: %+v, %v; want the defaults", cfg.PollerOwnership, err)
	}
	for _, c := range []struct{ block, want string }{
		{"{group: ''}", "config: poller_ownership.group: must be set"},
		{"{topic: 'a b'}", "config: poller_ownership.topic:"},
		{"{replication_factor: 0}", "config: poller_ownership.replication_factor: must be -1"},
		{"{session_timeout: 30s, rebalance_timeout: 10s}", "config: poller_ownership.rebalance_timeout: must be >= session_timeout"},
		{"{io_timeout: 0s}", "config: poller_ownership.io_timeout: must be > 0"},
		{"{sesion_timeout: 1s}", "poller_ownership.sesion_timeout: unknown key (did you mean session_timeout?)"},
	} {
		_, err := parseConfig([]byte(base+"poller_ownership: "+c.block+"\n"), nil, fileConfig.validate)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %s", c.block, err, c.want)
		}
	}

	// The runner takes the block: its cursor topic is the one created.
	cluster := kafkatest.Fake(t, 1, nil)
	cfg = defaultFileConfig()
	cfg.Kafka.Brokers = cluster.ListenAddrs()
	cfg.PollerOwnership.Group, cfg.PollerOwnership.Topic = "acme-pollers", "acme.cursors"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	partner, stopPartner, err := devpartner.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stopPartner()
	cfg.Pollers = []pull.Config{devpartner.Config(partner)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	conn, err := cfg.Kafka.Options(log)
	if err != nil {
		t.Fatal(err)
	}
	stop, err := startPollers(ctx, cfg, conn, refuseAll{}, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cl, err := kgo.NewClient(conn...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !topics.Has("acme.cursors") || topics.Has(ownership.NewDefaultConfig().Topic) {
		t.Fatalf("topics %v: want the block's acme.cursors, not the default", topics.Names())
	}
}

// refuseAll is an Ingester that takes no event.
type refuseAll struct{}

func (refuseAll) Ingest(_ context.Context, _ string, events []*ingestv1.Event) []*ingestv1.EventResult {
	out := make([]*ingestv1.EventResult, len(events))
	for i := range out {
		out[i] = &ingestv1.EventResult{}
	}
	return out
}

// withSourceKeys is the config file at path with a gateway source whose
// key comes from an environment variable that is not set.
func withSourceKeys(t *testing.T, path string) {
	t.Helper()
	const env = "SLUICE_TEST_UNSET_SOURCE_KEY"
	t.Setenv(env, "")
	os.Unsetenv(env)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.WriteString(f, "\nsources: [{name: test, key_env: ["+env+"], event_types: [examples.logs.v1.LogLine]}]\n"); err != nil {
		t.Fatal(err)
	}
	// The gateway itself still needs the key.
	if _, err := loadConfig(path, osGetenv, fileConfig.validateConsumer); err == nil || !strings.Contains(err.Error(), env) {
		t.Fatalf("the gateway's load: %v, want the unset %s named", err, env)
	}
}

// TestTraceAndDLQNeedNoSourceKeys: sluice trace and sluice dlq read the
// file the gateway reads, and run where its sources' keys are not set.
func TestTraceAndDLQNeedNoSourceKeys(t *testing.T) {
	cfg, _ := traceFixture(t, "{kind: http, http: {url: 'http://127.0.0.1:1/events'}}")
	withSourceKeys(t, cfg)
	if code, out, errOut := runTrace("--config", cfg, "--source", "test", "--id", "dl"); code != 0 || !strings.HasPrefix(out, "IN_DLQ") {
		t.Fatalf("trace: exit %d\n%s%s", code, out, errOut)
	}

	contracts, err := filepath.Abs("../../examples/contracts.binpb")
	if err != nil {
		t.Fatal(err)
	}
	dcfg, _ := dlqFixture(t, contracts)
	withSourceKeys(t, dcfg)
	if code, out, errOut := runCommand("dlq", "list", "--config", dcfg, "--topic", record.DLQTopic(logTopic)); code != 0 || !strings.Contains(out, "fine") {
		t.Fatalf("dlq list: exit %d\n%s%s", code, out, errOut)
	}
}
