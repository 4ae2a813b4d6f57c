package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/record"
)

// adminGet fetches path from addr: its status, or 0 when nothing answered.
func adminGet(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func writeConfig(t *testing.T, cfg string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func gatewayConfig(t *testing.T, brokers, httpAddr, admin string) string {
	t.Helper()
	contracts, err := filepath.Abs("../../examples/contracts.binpb")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`gateway:
  grpc_addr: %s
  http_addr: %s
sources:
  - name: admin
    key_hashes: [%s]
    event_types: ["*"]
contracts:
  descriptor_set: %s
  types: [%s]
kafka:
  brokers: [%s]
log:
  level: warn
admin:
%s
`, freePort(t), httpAddr, hashKey("admin-key"), contracts, strings.Join(examples.Types, ", "), brokers, admin)
}

// TestGatewayAdmin: `sluice gateway` serves /metrics, /healthz, /readyz
// and, with admin.pprof, the profiles on the admin address, and none of
// them on the API's; profiles on an address off loopback stop start-up.
func TestGatewayAdmin(t *testing.T) {
	var topics []string
	for _, typ := range examples.Types {
		topics = append(topics, record.EventTopic(typ))
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := strings.Join(cluster.ListenAddrs(), ",")

	err = run(context.Background(), []string{"gateway", "--config", writeConfig(t, gatewayConfig(t, brokers, freePort(t),
		"  addr: 0.0.0.0:0\n  pprof: true"))}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "admin: pprof") {
		t.Fatalf("profiles off loopback: %v, want refused naming admin.pprof", err)
	}

	var httpAddr, adminAddr string
	startListening(t, 20*time.Second, "the admin listener's /readyz to answer 200", func() ([]string, func() bool) {
		httpAddr, adminAddr = freePort(t), freePort(t)
		return []string{"gateway", "--config", writeConfig(t, gatewayConfig(t, brokers, httpAddr, "  addr: "+adminAddr+"\n  pprof: true"))},
			func() bool {
				code, _ := adminGet(t, adminAddr, "/readyz")
				return code == http.StatusOK
			}
	})
	for path, want := range map[string]string{
		"/healthz":                  "",
		"/metrics":                  "sluice_admission_mode 0",
		"/debug/pprof/heap?debug=1": "heap profile",
	} {
		if code, body := adminGet(t, adminAddr, path); code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("admin %s: %d, want 200 with %q", path, code, want)
		}
		if code, _ := adminGet(t, httpAddr, path); code == http.StatusOK || code == 0 {
			t.Errorf("the API listener answers %s with %d", path, code)
		}
	}
}

// TestConsumerAdmin: `sluice consumer` serves /metrics, /healthz and
// /readyz (ready while its Kafka answers), and no profiles by default.
func TestConsumerAdmin(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.SeedTopics(1, "t", record.DLQTopic("t"), record.ParkedTopic("t"), record.AuditTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	contracts, err := filepath.Abs("../../examples/contracts.binpb")
	if err != nil {
		t.Fatal(err)
	}
	sinkPath := filepath.Join(t.TempDir(), "events.db")
	var adminAddr string
	c := startListening(t, 20*time.Second, "the consumer's /readyz to answer 200", func() ([]string, func() bool) {
		adminAddr = freePort(t)
		return []string{"consumer", "--config", writeConfig(t, fmt.Sprintf(`
consumer: {group: g, topics: [t]}
sink: {kind: sqlite, sqlite: {path: %s}}
contracts: {descriptor_set: %s, types: [examples.logs.v1.LogLine]}
kafka: {brokers: [%s]}
log: {level: warn}
admin: {addr: %s}
`, sinkPath, contracts, cluster.ListenAddrs()[0], adminAddr))}, func() bool {
				code, _ := adminGet(t, adminAddr, "/readyz")
				return code == http.StatusOK
			}
	})
	if code, body := adminGet(t, adminAddr, "/metrics"); code != http.StatusOK || !strings.Contains(body, "sluice_consumer_in_flight") {
		t.Errorf("/metrics: %d", code)
	}
	if code, _ := adminGet(t, adminAddr, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	if code, _ := adminGet(t, adminAddr, "/debug/pprof/heap"); code != http.StatusNotFound {
		t.Errorf("profiles without admin.pprof: %d, want 404", code)
	}
	cluster.Close()
	c.WaitUntil(t, 20*time.Second, "/readyz to answer 503 with Kafka gone", func() bool {
		code, _ := adminGet(t, adminAddr, "/readyz")
		return code == http.StatusServiceUnavailable
	})
}
