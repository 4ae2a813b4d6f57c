package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/waitfor"
	"github.com/sluicehq/sluice/record"
)

// consumerSubscribes replaces the consumer block's subscription (its
// event_types or topics line, if any) with line.
func consumerSubscribes(t *testing.T, cfg, line string) string {
	t.Helper()
	const group = "consumer:\n  group: sluice-consumer\n"
	head, block, ok := strings.Cut(cfg, group)
	if !ok {
		t.Fatalf("no %q in the example config", group)
	}
	end := regexp.MustCompile(`(?m)^\S`).FindStringIndex(block)
	if end == nil {
		end = []int{len(block)}
	}
	block, tail := block[:end[0]], block[end[0]:]
	block = regexp.MustCompile(`(?m)^  (event_types|topics): .*\n`).ReplaceAllString(block, "")
	return head + group + line + "\n" + block + tail
}

// TestCheckRefusesATypeNoConsumerReads: on a file with a gateway and a
// consumer, sluice check refuses every type a source or poller may
// publish whose topic the consumer does not read, naming the type and the
// topic, and a raw consumer topic that no type of the map goes to.
func TestCheckRefusesATypeNoConsumerReads(t *testing.T) {
	base := exampleConfig(t)
	for _, c := range []struct {
		name, subscribe string
		want            []string // "" when the file passes
	}{
		{"the example as shipped", "", nil},
		{"event types resolve through the topic map", "  event_types: [examples.shop.v1.OrderPlaced, examples.identity.v1.UserProfileUpdated, examples.logs.v1.LogLine]", nil},
		{"raw topics of the map", "  topics: [orders.placed, ingest.examples.identity.v1.UserProfileUpdated, ingest.examples.logs.v1.LogLine]", nil},
		// platform-logs may publish every type ("*").
		{"one type of three", "  event_types: [examples.shop.v1.OrderPlaced]",
			[]string{"examples.logs.v1.LogLine", "ingest.examples.logs.v1.LogLine", "no consumer"}},
		// The orders go to orders.placed, not to their default topic.
		{"default topics past the map", "  topics: [ingest.examples.shop.v1.OrderPlaced, ingest.examples.identity.v1.UserProfileUpdated, ingest.examples.logs.v1.LogLine]",
			[]string{"consumer.topics", "ingest.examples.shop.v1.OrderPlaced"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			if c.subscribe != "" {
				cfg = consumerSubscribes(t, cfg, c.subscribe)
			}
			out, code, err := runCheck(t, cfg)
			if c.want == nil {
				if code != 0 {
					t.Fatalf("exit %d: %v", code, err)
				}
				return
			}
			if code == 0 || err == nil {
				t.Fatalf("exit 0, out %q; want the file refused naming %v", out, c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// TestExampleConfigDeliversEveryAcceptedType runs sluice gateway and
// sluice consumer from deploy/sluice.example.yaml (its ports, brokers,
// spool and sink changed, no poller) and publishes an order and a log
// line: each is accepted into the topic its answer names and lands in the
// sink from there.
func TestExampleConfigDeliversEveryAcceptedType(t *testing.T) {
	var topics []string
	for _, typ := range examples.Types {
		topics = append(topics, record.EventTopic(typ))
	}
	topics = append(topics, "orders.placed")
	cluster := kafkatest.Fake(t, 1, record.Cluster(topics))
	dir := t.TempDir()
	db := filepath.Join(dir, "events.db")
	httpAddr := freePort(t)
	cfg := dropBlock(exampleConfig(t), "pollers:")
	for from, to := range map[string]string{
		"grpc_addr: 127.0.0.1:9090":  "grpc_addr: " + freePort(t),
		"http_addr: 127.0.0.1:8080":  "http_addr: " + httpAddr,
		"brokers: [127.0.0.1:19092]": "brokers: [" + strings.Join(cluster.ListenAddrs(), ",") + "]",
		"dir: /var/lib/sluice/spool": "dir: " + filepath.Join(dir, "spool"),
		"min_free_bytes: 268435456":  "min_free_bytes: 1",
		"kind: postgres ":            "kind: sqlite ",
		"path: sluice-events.db":     "path: " + db,
	} {
		if !strings.Contains(cfg, from) {
			t.Fatalf("%q not in the example config", from)
		}
		cfg = strings.Replace(cfg, from, to, 1)
	}
	withAdmin := func(addr string) string {
		return writeConfig(t, strings.Replace(cfg, "  addr: \"\"  ", "  addr: "+addr, 1))
	}
	t.Setenv("SLUICE_LOGS_API_KEY", "logs-key")
	gatewayAdmin, consumerAdmin := freePort(t), freePort(t)
	startStoppable(t, "gateway", "--config", withAdmin(gatewayAdmin))
	startStoppable(t, "consumer", "--config", withAdmin(consumerAdmin))
	for _, addr := range []string{gatewayAdmin, consumerAdmin} {
		waitfor.Condition(t, 30*time.Second, "/readyz at "+addr, func() bool {
			code, _ := adminGet(t, addr, "/readyz")
			return code == http.StatusOK
		})
	}

	now := time.Now().UTC().Format(time.RFC3339)
	landed := map[string]string{} // event id -> the topic its answer named
	for _, e := range []struct{ key, id, typ, payload string }{
		{"checkout-example-key", "order-1", "examples.shop.v1.OrderPlaced", string(examples.OrderPlacedJSON)},
		{"logs-key", "log-1", "examples.logs.v1.LogLine", string(examples.LogLineJSON)},
	} {
		body := fmt.Sprintf(`{"events":[{"id":%q,"type":%q,"occurred_at":%q,"payload":%s}]}`, e.id, e.typ, now, e.payload)
		req, err := http.NewRequest(http.MethodPost, "http://"+httpAddr+"/v1/events", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Api-Key", e.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var answer struct {
			Results []struct {
				Outcome string
				Kafka   struct{ Topic string }
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if err != nil || len(answer.Results) != 1 || answer.Results[0].Outcome != "ACCEPTED" {
			t.Fatalf("%s: %d %+v %v, want ACCEPTED", e.id, resp.StatusCode, answer, err)
		}
		landed[e.id] = answer.Results[0].Kafka.Topic
	}
	if landed["order-1"] != "orders.placed" {
		t.Errorf("the order went to %q, want the example's orders.placed", landed["order-1"])
	}

	sink, err := sql.Open("sqlite", db+"?_pragma=busy_timeout(5000)&_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	rows := func() map[string]string {
		out := map[string]string{}
		rs, err := sink.Query(`SELECT event_id, topic FROM events`)
		if err != nil {
			return out
		}
		defer rs.Close()
		for rs.Next() {
			var id, topic string
			if rs.Scan(&id, &topic) == nil {
				out[id] = topic
			}
		}
		return out
	}
	waitfor.Condition(t, 30*time.Second, fmt.Sprintf("the sink to hold %v", landed), func() bool {
		got := rows()
		for id, topic := range landed {
			if got[id] != topic {
				return false
			}
		}
		return true
	})
	if got := rows(); len(got) != len(landed) {
		t.Errorf("sink rows %v, want only %v", got, slices.Sorted(maps.Keys(landed)))
	}
}
