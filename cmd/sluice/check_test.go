package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/tlsfiles/tlstest"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
)

// exampleConfig is deploy/sluice.example.yaml with its contracts path made
// absolute, so that the file can be checked from a temporary directory.
func exampleConfig(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/sluice.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("../../examples/contracts.binpb")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(string(raw), "descriptor_set: ../examples/contracts.binpb", "descriptor_set: "+abs, 1)
}

// runCheck writes cfg to a file and runs `sluice check --config FILE`.
func runCheck(t *testing.T, cfg string, extra ...string) (stdout string, code int, err error) {
	t.Helper()
	path := writeConfig(t, cfg)
	t.Setenv("SLUICE_LOGS_API_KEY", "logs-key")
	var out, errOut bytes.Buffer
	err = run(context.Background(), append([]string{"check", "--config", path}, extra...), &out, &errOut)
	return out.String(), exitCode(err, &errOut), err
}

func TestCheckAcceptsTheExampleForEachCommand(t *testing.T) {
	out, code, err := runCheck(t, exampleConfig(t))
	if code != 0 {
		t.Fatalf("exit %d: %v", code, err)
	}
	for _, want := range []string{"gateway: ok (2 sources, 1 pollers, 3 contract types)", "consumer: ok (3 contract types"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
	if out, _, _ := runCheck(t, exampleConfig(t), "--role", "consumer"); strings.Contains(out, "gateway") {
		t.Errorf("--role consumer checked the gateway too: %q", out)
	}
}

// A bad config exits non-zero naming the field path, for what Validate
// alone cannot see too: files that are not there, contracts that do not
// load, topics of types that are not loaded.
func TestCheckNamesTheField(t *testing.T) {
	base := exampleConfig(t)
	for _, c := range []struct{ from, to, want string }{
		{"descriptor_set: /", "descriptor_set: /nonexistent/", "contracts.descriptor_set"},
		{"    - examples.logs.v1.LogLine\n", "    - examples.logs.v1.NoSuchType\n", "sluice.yaml: contracts: contract: event type"},
		{"examples.shop.v1.OrderPlaced: orders.placed", "examples.shop.v1.Nope: orders.placed", "topics.examples.shop.v1.Nope: not one of contracts.types"},
		{"key_env: [SLUICE_LOGS_API_KEY]", "key_env: [SLUICE_CHECK_UNSET]", "sources[1].key_env"},
		{"max_event_bytes: 262144", "max_event_bytez: 1", "gateway.limits.max_event_bytez: unknown key (did you mean max_event_bytes?)"},
		{"tracing:                        # OpenTelemetry spans over OTLP, for every role; off by default\n  enabled: false",
			"tracing:\n  enabled: true", "tracing.exporter.endpoint: must be set when tracing is enabled"},
	} {
		t.Run(c.want, func(t *testing.T) {
			cfg := strings.Replace(base, c.from, c.to, 1)
			if cfg == base {
				t.Fatalf("%q not in the example config", c.from)
			}
			_, code, err := runCheck(t, cfg)
			if code == 0 || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("exit %d, err %v; want non-zero naming %s", code, err, c.want)
			}
		})
	}
}

// What start-up refuses for safety, check refuses too: a listener beyond
// loopback without TLS (unless insecure says so), a certificate that does
// not match its key, a Kafka password that is not there.
func TestCheckRefusesUnsafeConfigs(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "check-test-ca")
	cert, key, otherKey := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "other.key")
	ca.Server(t).Write(t, cert, key)
	ca.Server(t).Write(t, filepath.Join(dir, "other.crt"), otherKey)
	base := exampleConfig(t)
	// grpcOn puts the gRPC listener on addr with the given TLS block in
	// place of the example's.
	grpcOn := func(addr, block string) func(string) string {
		return func(cfg string) string {
			cfg = dropBlock(cfg, "  grpc_tls:")
			return strings.Replace(cfg, "grpc_addr: 127.0.0.1:9090", "grpc_addr: "+addr+"\n  grpc_tls: "+block, 1)
		}
	}
	replace := func(from, to string) func(string) string {
		return func(cfg string) string { return strings.Replace(cfg, from, to, 1) }
	}
	for _, c := range []struct {
		name string
		edit func(string) string
		want string // "" when the config passes
	}{
		{"grpc beyond loopback", grpcOn("0.0.0.0:9090", "{}"), "gateway.grpc_addr: 0.0.0.0:9090 leaves loopback without TLS"},
		{"http on every interface", replace("http_addr: 127.0.0.1:8080", "http_addr: :8080"), "gateway.http_addr: :8080 leaves loopback without TLS"},
		{"insecure says it is meant", grpcOn("0.0.0.0:9090", "{insecure: true}"), ""},
		{"TLS beyond loopback", grpcOn("0.0.0.0:9090", "{cert_file: "+cert+", key_file: "+key+"}"), ""},
		{"key of another certificate", grpcOn("0.0.0.0:9090", "{cert_file: "+cert+", key_file: "+otherKey+"}"), "gateway: grpc_tls.key_file"},
		{"admin beyond loopback", replace("  addr: \"\"  ", "  addr: 0.0.0.0:9100"), "admin: addr: 0.0.0.0:9100 leaves loopback without TLS"},
		{"kafka password unset", func(cfg string) string {
			cfg = dropBlock(cfg, "  sasl:")
			return strings.Replace(cfg, "  brokers: [127.0.0.1:19092]", "  brokers: [127.0.0.1:19092]\n  sasl: {mechanism: SCRAM-SHA-512, username: sluice, password_env: SLUICE_CHECK_UNSET_PASSWORD}\n", 1)
		}, "kafka.sasl.password_env"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.edit(base)
			if cfg == base {
				t.Fatal("the edit changed nothing in the example config")
			}
			out, code, err := runCheck(t, cfg, "--role", "gateway")
			switch {
			case c.want == "" && code != 0:
				t.Fatalf("exit %d: %v", code, err)
			case c.want != "" && (code == 0 || err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("exit %d, err %v, out %q; want non-zero naming %q", code, err, out, c.want)
			}
		})
	}
}

// dropBlock removes the YAML block that starts with the line head: that
// line and the more indented lines after it.
func dropBlock(cfg, head string) string {
	lines := strings.Split(cfg, "\n")
	indent := len(head) - len(strings.TrimLeft(head, " "))
	var out []string
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], head) {
			for i+1 < len(lines) && len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) > indent {
				i++
			}
			continue
		}
		out = append(out, lines[i])
	}
	return strings.Join(out, "\n")
}

func TestWarnInsecure(t *testing.T) {
	cfg := defaultFileConfig()
	cfg.Gateway.GRPCAddr, cfg.Gateway.GRPCTLS.Insecure = "0.0.0.0:9090", true
	cfg.Gateway.HTTPAddr, cfg.Gateway.HTTPTLS.Insecure = "127.0.0.1:8080", true // loopback: nothing to warn of
	var logs bytes.Buffer
	cfg.warnInsecure(slog.New(slog.NewTextHandler(&logs, nil)), true)
	if got := strings.Count(logs.String(), "serves plaintext beyond loopback"); got != 1 || !strings.Contains(logs.String(), "gateway.grpc_tls") {
		t.Errorf("want one warning, for gateway.grpc_tls: %q", logs.String())
	}
}

// sluice check --kafka asks the cluster of kafka.brokers about every topic
// the file uses (each event type's, with its DLQ and parked topics, and
// sluice.audit) and warns of each that cannot keep an acknowledged event
// through a broker's loss; warnings leave the exit status 0. A cluster
// that does not answer is an error.
func TestCheckKafkaWarnsOfWeakTopics(t *testing.T) {
	sources := []string{"orders.placed", record.EventTopic("examples.identity.v1.UserProfileUpdated"), record.EventTopic("examples.logs.v1.LogLine")}
	all := record.Cluster(sources)
	var seeded []string
	for _, topic := range all {
		if topic != "orders.placed" && topic != "orders.placed.parked" {
			seeded = append(seeded, topic)
		}
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, seeded...),
		kfake.BrokerConfigs(map[string]string{publish.SettingMinInsyncReplicas: "2"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	one := "1"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 3, map[string]*string{publish.SettingMinInsyncReplicas: &one}, "orders.placed"); err != nil || resp.Err != nil {
		t.Fatalf("create orders.placed: %v %v", err, resp.Err)
	}

	on := func(brokers string) string {
		from := "brokers: [127.0.0.1:19092]"
		cfg := exampleConfig(t)
		if !strings.Contains(cfg, from) {
			t.Fatalf("%q not in the example config", from)
		}
		return strings.Replace(cfg, from, "brokers: ["+brokers+"]", 1)
	}
	out, code, err := runCheck(t, on(strings.Join(cluster.ListenAddrs(), ",")), "--kafka")
	if code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	var warnings []string
	for _, line := range strings.Split(out, "\n") {
		if _, w, ok := strings.Cut(line, ": kafka: warning: "); ok {
			warnings = append(warnings, w)
		}
	}
	if len(warnings) != 2 || !strings.HasPrefix(warnings[0], "topic orders.placed: min.insync.replicas=1: ") ||
		!strings.HasPrefix(warnings[1], "topic orders.placed.parked: the cluster has no such topic") {
		t.Errorf("warnings %q, want orders.placed's min.insync.replicas and the missing orders.placed.parked", warnings)
	}
	if want := fmt.Sprintf(": kafka: %d topics, 2 warnings\n", len(all)); !strings.Contains(out, want) {
		t.Errorf("output %q lacks %q", out, want)
	}

	_, code, err = runCheck(t, on(freePort(t)), "--kafka", "--kafka-timeout", "1s")
	if code == 0 || err == nil || !strings.Contains(err.Error(), "check: kafka at ") {
		t.Errorf("no broker: exit %d, err %v; want non-zero naming the brokers", code, err)
	}
}
