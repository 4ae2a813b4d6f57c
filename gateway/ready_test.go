package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/record"
)

// TestReadinessFollowsKafka: without a spool the gateway is ready only
// while Kafka answers. With the in-process Kafka gone, the admin
// listener's /readyz answers 503 with the reason and gRPC health says
// NOT_SERVING, for "" and for the IngestService; with a Kafka back on the
// same port, both recover, without anyone asking in between.
func TestReadinessFollowsKafka(t *testing.T) {
	h := newHarness(t, harnessOpts{readiness: true})
	health := healthpb.NewHealthClient(h.conn)
	status := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatalf("health %q: %v", service, err)
		}
		return r.GetStatus()
	}
	readyz := func() (int, string) {
		resp, err := http.Get("http://" + h.admin.Addr() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	all := func(want healthpb.HealthCheckResponse_ServingStatus, code int) func() bool {
		return func() bool {
			got, _ := readyz()
			return got == code && status("") == want && status("sluice.ingest.v1.IngestService") == want
		}
	}
	eventually(t, "ready with Kafka up", all(healthpb.HealthCheckResponse_SERVING, http.StatusOK))

	_, portText, err := net.SplitHostPort(h.brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	h.cluster.Close()
	eventually(t, "not ready with Kafka gone", all(healthpb.HealthCheckResponse_NOT_SERVING, http.StatusServiceUnavailable))
	if code, body := readyz(); code != http.StatusServiceUnavailable || !strings.Contains(body, "no spool") {
		t.Fatalf("/readyz %d %q, want 503 naming the reason", code, body)
	}
	// /healthz says the process is alive all along.
	if resp, err := http.Get("http://" + h.admin.Addr() + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	var topics []string
	for _, typ := range examples.Types {
		topics = append(topics, record.EventTopic(typ))
	}
	back, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.SeedTopics(3, topics...))
	if err != nil {
		t.Fatalf("kfake on port %d again: %v", port, err)
	}
	t.Cleanup(back.Close)
	eventually(t, "ready with Kafka back", all(healthpb.HealthCheckResponse_SERVING, http.StatusOK))
}
