package loadgen_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/internal/gatewaytest"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/tools/loadgen"
)

const testKey = "loadgen-test-key"

// gatewayUnderTest is a gateway on loopback ports publishing to an
// in-process Kafka, built the way `sluice dev` builds one.
type gatewayUnderTest struct {
	srv     *gateway.Server
	brokers []string
}

func startGateway(t *testing.T, configure ...func(*gateway.Config)) *gatewayUnderTest {
	t.Helper()
	g := gatewaytest.Start(t, gatewaytest.Options{Partitions: 3, Serve: true, Configure: func(cfg *gateway.Config) {
		cfg.Dedup.MaxEntries = 10_000
		cfg.Sources = []gateway.SourceConfig{{Name: "bench", KeyHashes: []string{gateway.HashKey(testKey)}, EventTypes: []string{"*"}}}
		for _, f := range configure {
			f(cfg)
		}
	}})
	return &gatewayUnderTest{srv: g.Server, brokers: g.Brokers}
}

func ledgerLines(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	slices.Sort(out)
	return out
}

// TestLedgerHasExactlyTheAcknowledged runs against a real gateway over
// every transport, and through the Go client over both of its, with every
// 4th event breaking its contract: the ledger lists exactly the accepted
// events, and the counts add up.
func TestLedgerHasExactlyTheAcknowledged(t *testing.T) {
	g := startGateway(t)
	for _, tc := range []struct {
		name, target, encoding, typ string
		clientStream                bool
	}{
		{"grpc", loadgen.TargetGRPC, loadgen.EncodingBinary, loadgen.TypeLogLine, false},
		{"stream", loadgen.TargetStream, loadgen.EncodingJSON, loadgen.TypeLogLine, false},
		{"rest", loadgen.TargetREST, loadgen.EncodingJSON, loadgen.TypeOrderPlaced, false},
		{"client", loadgen.TargetClient, loadgen.EncodingBinary, loadgen.TypeLogLine, false},
		{"client-stream", loadgen.TargetClient, loadgen.EncodingJSON, loadgen.TypeOrderPlaced, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := loadgen.NewDefaultConfig()
			cfg.Target, cfg.Encoding, cfg.EventType, cfg.ClientStream = tc.target, tc.encoding, tc.typ, tc.clientStream
			cfg.Addr = g.srv.GRPCAddr()
			if tc.target == loadgen.TargetREST {
				cfg.Addr = g.srv.HTTPAddr()
			}
			cfg.APIKey = testKey
			cfg.EventsPerRequest, cfg.Events, cfg.InvalidEvery, cfg.Concurrency = 10, 205, 4, 4
			cfg.Duration = time.Minute
			gen, rep, led := runLedgered(t, cfg)
			var want []string
			for n := range uint64(205) {
				if !gen.IsInvalid(n) {
					want = append(want, gen.EventID(n))
				}
			}
			slices.Sort(want)
			if got := ledgerLines(t, led); !slices.Equal(got, want) {
				t.Fatalf("ledger has %d ids, want the %d accepted ones\nreport: %+v", len(got), len(want), rep)
			}
			if rep.Accepted != int64(len(want)) || rep.Rejected["SCHEMA_VIOLATION"] != 205-int64(len(want)) || rep.Requests != 21 {
				t.Fatalf("accepted %d rejected %v requests %d", rep.Accepted, rep.Rejected, rep.Requests)
			}
			if tc.target != loadgen.TargetClient {
				if rep.Client != nil {
					t.Fatalf("client stats on target %s: %+v", tc.target, rep.Client)
				}
				return
			}
			// Rejections are permanent: nothing retried, nothing given up.
			if c := rep.Client; c == nil || c.Stream != tc.clientStream || c.Requests < 21 || c.RetriedEvents() != 0 || len(c.Undelivered) != 0 {
				t.Fatalf("client stats %+v; want %d+ requests, stream %v, nothing retried or undelivered", rep.Client, 21, tc.clientStream)
			}
		})
	}
}

// TestDirectProducesGatewayRecords: direct puts records with the
// gateway's headers into Kafka and acknowledges each once it is there.
func TestDirectProducesGatewayRecords(t *testing.T) {
	g := startGateway(t)
	cfg := loadgen.NewDefaultConfig()
	cfg.Target, cfg.Addr = loadgen.TargetDirect, strings.Join(g.brokers, ",")
	cfg.EventsPerRequest, cfg.Events, cfg.Concurrency, cfg.Duration = 10, 50, 2, time.Minute
	gen, rep, led := runLedgered(t, cfg)
	if rep.Accepted != 50 || len(ledgerLines(t, led)) != 50 {
		t.Fatalf("accepted %d, ledger %d lines; want 50: %+v", rep.Accepted, len(ledgerLines(t, led)), rep)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.brokers...), kgo.ConsumeTopics(record.EventTopic(cfg.EventType)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seen := map[string]bool{}
	for len(seen) < 50 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			h, err := record.ParseEvent(r)
			if err != nil {
				t.Errorf("record headers: %v", err)
				return
			}
			if h.Type != cfg.EventType || !strings.HasPrefix(h.ID, gen.RunID()+"-") {
				t.Errorf("record %s of type %s", h.ID, h.Type)
			}
			seen[h.ID] = true
		})
	}
	if len(seen) != 50 {
		t.Fatalf("%d distinct records in Kafka, want 50", len(seen))
	}
}

// TestBaselines: each baseline answers every event of every request.
func TestBaselines(t *testing.T) {
	for _, kind := range []string{loadgen.BaselineHTTP, loadgen.BaselineGRPC} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			addrc := make(chan net.Addr, 1)
			done := make(chan error, 1)
			go func() { done <- loadgen.ServeBaseline(ctx, kind, "127.0.0.1:0", func(a net.Addr) { addrc <- a }) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()
			addr := (<-addrc).String()
			cfg := loadgen.NewDefaultConfig()
			cfg.Addr, cfg.Requests, cfg.Concurrency = addr, 20, 4
			if kind == loadgen.BaselineHTTP {
				cfg.Target, cfg.Encoding = loadgen.TargetREST, loadgen.EncodingJSON
			}
			rep := runLoad(t, cfg)
			if rep.Accepted != 20*int64(cfg.EventsPerRequest) || rep.Answered != 20 {
				t.Fatal(fmt.Sprintf("accepted %d answered %d", rep.Accepted, rep.Answered))
			}
		})
	}
}
