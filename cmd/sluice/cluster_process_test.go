package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/record"
)

// TestClusterDividesRates: two gateways on one Kafka with a cluster block
// count each other, and each enforces half of the source's rate: with a
// burst of four requests' events and next to no refill, each accepts two
// requests and refuses the third RATE_LIMITED. When one stops, the other
// counts itself alone.
func TestClusterDividesRates(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, record.TopicsOf(nil, examples.Types)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	contracts, err := filepath.Abs("../../examples/contracts.binpb")
	if err != nil {
		t.Fatal(err)
	}
	type gw struct {
		*inProcess
		http, admin string
	}
	start := func(name string) gw {
		var g gw
		g.inProcess = startListening(t, 30*time.Second, name+" ready", func() ([]string, func() bool) {
			g.http, g.admin = freePort(t), freePort(t)
			path := writeConfig(t, fmt.Sprintf(`gateway:
  grpc_addr: %s
  http_addr: %s
  limits: {max_events_per_request: 10}
sources:
  - name: metered
    key_hashes: [%s]
    event_types: ["*"]
    rate: 0.001
    burst: 40
contracts:
  descriptor_set: %s
  types: [%s]
kafka:
  brokers: [%s]
cluster: {heartbeat_topic: sluice.gateways, heartbeat_interval: 100ms, member_ttl: 1s}
log: {level: info, format: text}
admin: {addr: %s}
`, freePort(t), g.http, hashKey("metered-key"), contracts, strings.Join(examples.Types, ", "),
				strings.Join(cluster.ListenAddrs(), ","), g.admin))
			return []string{"gateway", "--config", path}, func() bool {
				code, _ := adminGet(t, g.admin, "/readyz")
				return code == http.StatusOK
			}
		})
		return g
	}
	replicas := func(g gw) string {
		_, metrics := adminGet(t, g.admin, "/metrics")
		for _, line := range strings.Split(metrics, "\n") {
			if v, ok := strings.CutPrefix(line, "sluice_gateway_replicas "); ok {
				return v
			}
		}
		return ""
	}
	a, b := start("gateway a"), start("gateway b")
	for _, g := range []gw{a, b} {
		g.WaitUntil(t, 20*time.Second, "two replicas counted", func() bool { return replicas(g) == "2" })
	}
	for _, g := range []gw{a, b} {
		var answers []string
		accepted := 0
		for i := range 3 {
			answer := postLogLines(g.http, "metered-key", fmt.Sprintf("%s-%d", g.admin, i), 10)
			answers = append(answers, answer)
			if strings.Count(answer, `"outcome":"ACCEPTED"`) == 10 {
				accepted++
			}
		}
		if accepted != 2 || !strings.Contains(answers[2], "RATE_LIMITED") {
			t.Fatalf("%s accepted %d requests of 10 events, want 2 of a burst of 40 divided by 2 replicas, then RATE_LIMITED:\n%s",
				g.name, accepted, strings.Join(answers, "\n"))
		}
	}
	b.Stop(t)
	a.WaitUntil(t, 20*time.Second, "one replica counted once b stopped", func() bool { return replicas(a) == "1" })
}
