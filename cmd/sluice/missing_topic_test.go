package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/record"
)

// TestGatewayMissingTopic: the gateway runs against a cluster where the
// topic of one of its types does not exist (and is not created on
// demand). That is a configuration error and must be loud: /readyz fails
// naming UNKNOWN_TOPIC_OR_PARTITION and the topic, sluice_kafka_topic_missing
// says so, and the first log line about it is an error naming both, before
// any line about spooling. An event of that type is still accepted to the
// spool, and once an operator creates the topic, readiness recovers and
// the event reaches it.
func TestGatewayMissingTopic(t *testing.T) {
	var present []string
	for _, typ := range examples.Types {
		if topic := record.EventTopic(typ); topic != logTopic {
			present = append(present, topic)
		}
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, present...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	contracts, err := filepath.Abs("../../examples/contracts.binpb")
	if err != nil {
		t.Fatal(err)
	}
	httpAddr, adminAddr := freePort(t), freePort(t)
	path := writeConfig(t, fmt.Sprintf(`gateway:
  grpc_addr: %s
  http_addr: %s
  publish_timeout: 5s
sources:
  - name: topics
    key_hashes: [%s]
    event_types: ["*"]
contracts:
  descriptor_set: %s
  types: [%s]
kafka:
  brokers: [%s]
  delivery_timeout: 2s
spool: {dir: %s, min_free_bytes: 1}
admission: {latency_threshold: 300ms, drain_backoff_max: 200ms}
log: {level: info, format: text}
admin: {addr: %s}
`, freePort(t), httpAddr, hashKey("topics-key"), contracts, strings.Join(examples.Types, ", "),
		strings.Join(cluster.ListenAddrs(), ","), t.TempDir(), adminAddr))

	logs := newSyncBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"gateway", "--config", path}, io.Discard, logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("gateway: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("gateway did not stop")
		}
	})

	var code int
	var body string
	if !waitUntil(20*time.Second, func() bool {
		code, body = adminGet(t, adminAddr, "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "UNKNOWN_TOPIC_OR_PARTITION") && strings.Contains(body, logTopic)
	}) {
		t.Fatalf("/readyz %d %q with %s missing, want 503 naming UNKNOWN_TOPIC_OR_PARTITION and the topic\nlog:\n%s", code, body, logTopic, logs.String())
	}
	missing := fmt.Sprintf("sluice_kafka_topic_missing{topic=%q} 1", logTopic)
	if _, metrics := adminGet(t, adminAddr, "/metrics"); !strings.Contains(metrics, missing) {
		t.Errorf("/metrics has no %s", missing)
	}

	// Accepted all the same, to the spool, where it waits for the topic.
	var answer string
	if !waitUntil(20*time.Second, func() bool {
		answer = postLogLines(httpAddr, "topics-key", "missing", 1)
		return strings.Contains(answer, `"outcome":"ACCEPTED"`)
	}) || !strings.Contains(answer, `"durability":"LOCAL_DISK"`) {
		t.Fatalf("with %s missing: %s, want ACCEPTED to the spool", logTopic, answer)
	}

	// The first line about the topic or about spooling is the error that
	// names the topic and why.
	lines := strings.Split(logs.String(), "\n")
	first := slices.IndexFunc(lines, func(l string) bool {
		return strings.Contains(l, logTopic) || strings.Contains(l, "spooling")
	})
	if first < 0 || !strings.Contains(lines[first], "level=ERROR") || !strings.Contains(lines[first], "UNKNOWN_TOPIC_OR_PARTITION") ||
		!strings.Contains(lines[first], logTopic) {
		t.Fatalf("the first log line about the topic is not an error naming UNKNOWN_TOPIC_OR_PARTITION and %s:\n%s", logTopic, logs.String())
	}

	// The operator creates the topic: readiness recovers and the spooled
	// event gets there.
	createTopics(t, cluster.ListenAddrs(), logTopic)
	if !waitUntil(20*time.Second, func() bool {
		code, body = adminGet(t, adminAddr, "/readyz")
		return code == http.StatusOK
	}) {
		t.Fatalf("/readyz %d %q after the topic was created, want 200", code, body)
	}
	if id := firstEventID(t, cluster.ListenAddrs(), logTopic); id != "missing-0" {
		t.Fatalf("%s holds event %q, want missing-0", logTopic, id)
	}
	if _, metrics := adminGet(t, adminAddr, "/metrics"); !strings.Contains(metrics, strings.TrimSuffix(missing, "1")+"0") {
		t.Errorf("/metrics: sluice_kafka_topic_missing of %s is not back to 0", logTopic)
	}
}

func createTopics(t *testing.T, brokers []string, topics ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, 1, 1, nil, topics...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("create %v: %v", topics, err)
	}
}

// firstEventID reads topic from its start until a record arrives and
// returns its event id header.
func firstEventID(t *testing.T, brokers []string, topic string) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var id string
	for id == "" {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no record arrived in %s", topic)
		}
		fs.EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == record.HeaderEventID && id == "" {
					id = string(h.Value)
				}
			}
		})
	}
	return id
}
