package client_test

import (
	"context"
	"net"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/gatewaytest"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/tools/loadgen"
)

const logType = "examples.logs.v1.LogLine"

// logLine is the example LogLine in protobuf binary, about 300 bytes.
func logLine(b *testing.B) []byte {
	b.Helper()
	var m logsv1.LogLine
	if err := protojson.Unmarshal(examples.LogLineJSON, &m); err != nil {
		b.Fatal(err)
	}
	v, err := proto.Marshal(&m)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkClientCPU is the cost of one event (ns/op and allocs/op are per
// event), each sub-benchmark in the same run, all in this process:
//
//   - client/gateway: the client publishing to a real gateway (gatewaytest:
//     decode, validate, dedup, produce to kfake); the gateway's and kfake's
//     CPU are in the figure.
//   - client/stub and client-stream/stub: the client against loadgen's gRPC
//     baseline, which decodes each request and answers ACCEPTED without
//     other work: the client's own cost, plus gRPC on both ends.
//   - kgo/kfake: franz-go producing the records the gateway would make for
//     the same events (record.NewEvent) straight to kfake: the floor of
//     getting an event into Kafka with no gateway at all.
//
// The client fills each event's id (UUIDv7) and uses its defaults
// (batches of up to 500 events, 5ms linger, 4 requests in flight).
// ns/op is wall time; cpu-ns/event is the process's CPU time (user and
// system, every goroutine) per event, which on a machine with idle cores
// is the better measure of cost.
func BenchmarkClientCPU(b *testing.B) {
	payload := logLine(b)
	event := func() *ingestv1.Event {
		return &ingestv1.Event{Type: logType, OccurredAt: timestamppb.Now(), PartitionKey: "checkout-api",
			Payload: &ingestv1.Event_Binary{Binary: payload}}
	}
	publish := func(b *testing.B, addr string, opts ...client.Opt) {
		c, err := client.New([]string{addr}, append([]client.Opt{client.WithInsecure(), client.WithAPIKey(gatewaytest.Key)}, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		var mu sync.Mutex
		var failed error
		done := func(r client.Result) {
			if r.Err != nil {
				mu.Lock()
				failed = r.Err
				mu.Unlock()
			}
		}
		ev := event()
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cpuTime(b)
		for range b.N {
			// A copy without an id, as a source would hand it over.
			e := &ingestv1.Event{Type: ev.Type, OccurredAt: ev.OccurredAt, PartitionKey: ev.PartitionKey, Payload: ev.Payload}
			if err := c.Send(b.Context(), e, done); err != nil {
				b.Fatal(err)
			}
		}
		if err := c.Flush(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Close(ctx); err != nil {
			b.Fatal(err)
		}
		if failed != nil {
			b.Fatal(failed)
		}
	}

	b.Run("client/gateway", func(b *testing.B) {
		g := gatewaytest.Start(b, gatewaytest.Options{Serve: true, Configure: func(cfg *gateway.Config) {
			cfg.Dedup.MaxEntries = 100_000
		}})
		publish(b, g.Server.GRPCAddr())
	})
	b.Run("client/stub", func(b *testing.B) {
		publish(b, stubServer(b))
	})
	b.Run("client-stream/stub", func(b *testing.B) {
		publish(b, stubServer(b), client.UseStream())
	})
	b.Run("kgo/kfake", func(b *testing.B) {
		topic := record.EventTopic(logType)
		cluster := kafkatest.Fake(b, 1, []string{topic})
		cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		var mu sync.Mutex
		var failed error
		promise := func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
			}
		}
		ev := event()
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cpuTime(b)
		for i := range b.N {
			cl.Produce(b.Context(), record.NewEvent(&record.Event{
				Topic: topic, Key: []byte(ev.GetPartitionKey()), Value: payload,
				ID: "bench-" + strconv.Itoa(i), Type: logType, Source: gatewaytest.Source,
				OccurredAt: ev.GetOccurredAt().AsTime(), IngestedAt: time.Now(), Fingerprint: "sha256:bench",
			}), promise)
		}
		if err := cl.Flush(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu()
		if failed != nil {
			b.Fatal(failed)
		}
	})
}

// cpuTime starts measuring the process's CPU time; the function it
// returns reports it per op as cpu-ns/event.
func cpuTime(b *testing.B) func() {
	b.Helper()
	used := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := used()
	return func() { b.ReportMetric(float64(used()-start)/float64(b.N), "cpu-ns/event") }
}

// stubServer serves loadgen's gRPC baseline, the gateway's stand-in for
// BenchmarkClientCPU: it answers every event ACCEPTED and does nothing
// else. It stops when the benchmark ends.
func stubServer(b *testing.B) string {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- loadgen.ServeBaseline(ctx, loadgen.BaselineGRPC, "127.0.0.1:0", func(a net.Addr) { addr <- a.String() })
	}()
	b.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			b.Error(err)
		}
	})
	select {
	case a := <-addr:
		return a
	case err := <-served:
		b.Fatal(err)
		return ""
	}
}
