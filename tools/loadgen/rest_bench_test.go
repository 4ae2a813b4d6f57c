//go:build unix

package loadgen_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/tools/loadgen"
)

// gatewayAnswer is the gateway's answer to one accepted event, as it
// writes it (protojson with proto names and default values, compacted),
// with the event's id where the id goes.
func gatewayAnswer(id []byte) []byte {
	b := append([]byte(`{"results":[{"index":0,"id":"`), id...)
	return append(b, `","outcome":"ACCEPTED","durability":"KAFKA","kafka":{"topic":"ingest.examples.shop.v1.OrderPlaced","partition":2,"offset":"1234567"}}]}`...)
}

// answeringServer answers every POST /v1/events as the gateway answers a
// one-event request it accepted, echoing the request's first event id.
func answeringServer(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id := []byte("x")
		if i := bytes.Index(body, []byte(`"id":"`)); i >= 0 {
			rest := body[i+6:]
			if j := bytes.IndexByte(rest, '"'); j >= 0 {
				id = rest[:j]
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(gatewayAnswer(id))
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkRESTRoundTrip is one REST request of one ~700-byte OrderPlaced
// event, as scripts/bench.sh's REST workload sends it, to a server that
// answers as the gateway does: the load generator's CPU per request (the
// server's own share included, the same for every version).
func BenchmarkRESTRoundTrip(b *testing.B) {
	srv := answeringServer(b)
	cfg := loadgen.NewDefaultConfig()
	cfg.Target, cfg.Addr, cfg.Encoding = loadgen.TargetREST, srv.URL, "json"
	cfg.EventType, cfg.EventsPerRequest, cfg.EventBytes, cfg.Concurrency = loadgen.TypeOrderPlaced, 1, 700, 1
	gen, err := loadgen.NewGenerator(cfg, time.Now)
	if err != nil {
		b.Fatal(err)
	}
	target, err := loadgen.NewTarget(cfg, gen)
	if err != nil {
		b.Fatal(err)
	}
	defer target.Close()
	sender, err := target.NewSender()
	if err != nil {
		b.Fatal(err)
	}
	defer sender.Close()
	ctx := context.Background()
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		events := gen.Batch(1)
		ans, err := sender.Send(ctx, events)
		if err != nil || len(ans.Results) != 1 || !ans.Results[0].Acknowledged() || ans.Results[0].ID != events[0].GetId() {
			b.Fatalf("%+v, %v", ans, err)
		}
	}
	// CPU time is what bench.sh's load generator spends; on a shared
	// machine it varies less than the wall time.
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkParseRESTAnswer is the answer to a one-event request, read
// alone.
func BenchmarkParseRESTAnswer(b *testing.B) {
	body := gatewayAnswer([]byte("lg0123456789ab-42"))
	b.ReportAllocs()
	for b.Loop() {
		ans, err := loadgen.ParseRESTAnswer(200, "", body, 1)
		if err != nil || len(ans.Results) != 1 {
			b.Fatal(ans, err)
		}
	}
}

// TestRESTSenderReusesItsConnection: a sender's requests, one after
// another, go over one connection (the answer is read to its end, so the
// transport keeps it), and the answers are read right.
func TestRESTSenderReusesItsConnection(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		i := bytes.Index(body, []byte(`"id":"`))
		j := bytes.IndexByte(body[i+6:], '"')
		_, _ = w.Write(gatewayAnswer(body[i+6 : i+6+j]))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	cfg := loadgen.NewDefaultConfig()
	cfg.Target, cfg.Addr, cfg.Encoding = loadgen.TargetREST, srv.URL, "json"
	cfg.EventType, cfg.EventsPerRequest, cfg.EventBytes, cfg.Concurrency = loadgen.TypeOrderPlaced, 1, 700, 1
	gen, err := loadgen.NewGenerator(cfg, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	target, err := loadgen.NewTarget(cfg, gen)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	sender, err := target.NewSender()
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		events := gen.Batch(1)
		ans, err := sender.Send(context.Background(), events)
		if err != nil || len(ans.Results) != 1 || ans.Results[0].ID != events[0].GetId() || ans.Results[0].Kafka.GetOffset() != 1234567 {
			t.Fatalf("%+v, %v", ans, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("20 requests over %d connections, want 1", n)
	}
}
