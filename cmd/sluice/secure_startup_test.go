package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/tlsfiles/tlstest"
	"github.com/sluicehq/sluice/record"
)

// startBound bounds a command that must stop at start.
const startBound = 40 * time.Second

// gatewayYAML is a gateway config on free ports (its admin listener's too,
// also for a consumer run from the same file) with the given kafka block
// (its lines indented by two spaces) and extra top-level blocks.
func gatewayYAML(t *testing.T, kafka, extra string) (yaml, httpAddr string) {
	t.Helper()
	contracts, err := filepath.Abs("../../examples/contracts.binpb")
	if err != nil {
		t.Fatal(err)
	}
	httpAddr = freePort(t)
	yaml = fmt.Sprintf(`gateway:
  grpc_addr: %s
  http_addr: %s
  publish_timeout: 5s
sources:
  - name: secure
    key_hashes: [%s]
    event_types: ["*"]
contracts:
  descriptor_set: %s
  types: [%s]
kafka:
%s
log:
  level: warn
admin:
  addr: 127.0.0.1:0
%s`, freePort(t), httpAddr, hashKey("secure-key"), contracts, strings.Join(examples.Types, ", "), kafka, extra)
	return yaml, httpAddr
}

// runUntilStopped runs a command that must fail at start and returns its
// error, failing the test if it runs past startBound.
func runUntilStopped(t *testing.T, args ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startBound)
	defer cancel()
	done := make(chan error, 1)
	logs := newSyncBuffer()
	go func() { done <- run(ctx, args, io.Discard, logs) }()
	select {
	case err := <-done:
		if ctx.Err() != nil {
			t.Fatalf("%s ran until the test's deadline instead of stopping at start:\n%s", args[0], logs.String())
		}
		return err
	case <-time.After(startBound + 20*time.Second):
		t.Fatalf("%s did not stop", args[0])
		return nil
	}
}

// tlsCluster is kfake behind TLS with a certificate of ca.
func tlsCluster(t *testing.T, ca *tlstest.CA, topics ...string) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(ca.ServerTLS(t)), kfake.SeedTopics(1, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// TestGatewayStopsAtStartOnAnUnknownCA: the broker's certificate is not
// signed by the CA the kafka block trusts; the gateway says so and stops
// instead of serving with a client that can never connect.
func TestGatewayStopsAtStartOnAnUnknownCA(t *testing.T) {
	addrs := tlsCluster(t, tlstest.NewCA(t, "cluster"))
	stranger := tlstest.NewCA(t, "stranger")
	yaml, _ := gatewayYAML(t, fmt.Sprintf("  brokers: [%s]\n  tls: {ca_file: %s}", strings.Join(addrs, ","), stranger.File(t)),
		fmt.Sprintf("spool: {dir: %s, min_free_bytes: 1}\n", t.TempDir()))
	err := runUntilStopped(t, "gateway", "--config", writeConfig(t, yaml))
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("gateway: %v, want an error naming the certificate", err)
	}
}

// TestConsumerStopsAtStartOnAnUnknownCA: the same for the consumer tier.
func TestConsumerStopsAtStartOnAnUnknownCA(t *testing.T) {
	addrs := tlsCluster(t, tlstest.NewCA(t, "cluster"), logTopic)
	stranger := tlstest.NewCA(t, "stranger")
	yaml := fmt.Sprintf(`consumer: {group: g, topics: [%s]}
sink: {kind: sqlite, sqlite: {path: %s}}
contracts: {descriptor_set: %s, types: [examples.logs.v1.LogLine]}
kafka: {brokers: [%s], tls: {ca_file: %s}}
log: {level: warn}
admin: {addr: 127.0.0.1:0}
`, logTopic, filepath.Join(t.TempDir(), "events.db"), mustAbs(t, "../../examples/contracts.binpb"), strings.Join(addrs, ","), stranger.File(t))
	err := runUntilStopped(t, "consumer", "--config", writeConfig(t, yaml))
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("consumer: %v, want an error naming the certificate", err)
	}
}

// TestGatewayStartsAndSpoolsWithKafkaDown: a broker that is merely down at
// start is no reason to stop: with a spool the gateway serves and answers
// LOCAL_DISK. The default ports are held meanwhile, as a `sluice dev`
// beside the tests holds them: every listener takes a free port.
func TestGatewayStartsAndSpoolsWithKafkaDown(t *testing.T) {
	holdDefaultPorts(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String()
	l.Close()
	yaml, httpAddr := gatewayYAML(t, fmt.Sprintf("  brokers: [%s]\n  delivery_timeout: 1s\n  dial_timeout: 500ms", down),
		fmt.Sprintf("spool: {dir: %s, min_free_bytes: 1}\nadmission: {latency_threshold: 300ms}\n", t.TempDir()))
	gw := startInProcess(t, "gateway", "--config", writeConfig(t, yaml))
	var answer string
	gw.WaitUntil(t, 40*time.Second, "an event ACCEPTED with Kafka down", func() bool {
		answer = postLogLines(httpAddr, "secure-key", "down", 1)
		return strings.Contains(answer, `"outcome":"ACCEPTED"`)
	})
	if !strings.Contains(answer, `"durability":"LOCAL_DISK","spool":{"segment":"`) {
		t.Fatalf("with Kafka down: %s, want ACCEPTED to the spool, with its position there", answer)
	}
}

// TestDLQCommandConnectsWithTheConfig: dlq list takes the file's kafka
// block, TLS included, and --brokers replaces only its brokers.
func TestDLQCommandConnectsWithTheConfig(t *testing.T) {
	ca := tlstest.NewCA(t, "cluster")
	addrs := tlsCluster(t, ca, record.DLQTopic(logTopic))
	cfg := writeConfig(t, fmt.Sprintf("kafka: {brokers: [127.0.0.1:1], tls: {ca_file: %s}}\ncontracts: {descriptor_set: %s, types: [examples.logs.v1.LogLine]}\n", ca.File(t), mustAbs(t, "../../examples/contracts.binpb")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	args := []string{"list", "--config", cfg, "--brokers", strings.Join(addrs, ","), "--topic", record.DLQTopic(logTopic)}
	if err := runDLQCmd(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("dlq list over TLS: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "0 dead letters selected") {
		t.Fatalf("stderr: %s", stderr.String())
	}
	// Without the file, --brokers is plaintext: the TLS listener does not
	// answer it.
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	defer cancelShort()
	if err := runDLQCmd(short, []string{"list", "--brokers", strings.Join(addrs, ","), "--topic", record.DLQTopic(logTopic)}, &stdout, &stderr); err == nil {
		t.Fatal("a plaintext dlq list read a TLS cluster")
	}
}

// postLogLines posts n log lines with ids prefix-<i> and returns the
// answer's body ("" when the gateway does not answer).
func postLogLines(httpAddr, key, prefix string, n int) string {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	var events []string
	for i := range n {
		events = append(events, fmt.Sprintf(`{"id":"%s-%d","type":"examples.logs.v1.LogLine","occurred_at":%q,"partition_key":"k%d","payload":%s}`,
			prefix, i, now, i%4, bytes.TrimSpace(examples.LogLineJSON)))
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+httpAddr+"/v1/events", strings.NewReader(`{"events":[`+strings.Join(events, ",")+`]}`))
	req.Header.Set("X-Api-Key", key)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// TestLoadgenDirectWithKafkaConfig: loadgen's direct mode connects with a
// config's kafka block, SASL included.
func TestLoadgenDirectWithKafkaConfig(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, logTopic),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "load", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Setenv("SLUICE_TEST_LOADGEN_PASSWORD", "pw")
	cfg := writeConfig(t, fmt.Sprintf("kafka: {brokers: [%s], sasl: {mechanism: SCRAM-SHA-512, username: load, password_env: SLUICE_TEST_LOADGEN_PASSWORD}}\n",
		strings.Join(c.ListenAddrs(), ",")))
	args := []string{"loadgen", "--target", "direct", "--kafka-config", cfg, "--events", "20", "--events-per-request", "5",
		"--concurrency", "1", "--duration", "1m", "--json"}
	var out strings.Builder
	if err := run(context.Background(), args, &out, io.Discard); err != nil {
		t.Fatalf("loadgen: %v", err)
	}
	if !strings.Contains(out.String(), `"accepted": 20`) && !strings.Contains(out.String(), `"accepted":20`) {
		t.Fatalf("report: %s", out.String())
	}
	t.Setenv("SLUICE_TEST_LOADGEN_PASSWORD", "")
	if err := run(context.Background(), args, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "kafka.sasl.password_env") {
		t.Fatalf("loadgen without the password: %v", err)
	}
}
