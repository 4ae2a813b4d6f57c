package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/tools/loadgen"
)

// background runs a long-lived command until the test ends.
func background(t *testing.T, args ...string) *syncBuffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := newSyncBuffer()
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, out, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v", args[0], err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("%s did not stop", args[0])
		}
	})
	return out
}

// TestLoadgenAgainstBaseline runs `sluice loadgen` against `sluice loadgen
// serve-baseline --kind grpc` with a count bound: the JSON report and the
// ledger agree on every event.
func TestLoadgenAgainstBaseline(t *testing.T) {
	out := background(t, "loadgen", "serve-baseline", "--kind", "grpc", "--addr", "127.0.0.1:0")
	addr := waitFor(t, out, regexp.MustCompile(`listening on (\S+)`))[1]
	ledger := filepath.Join(t.TempDir(), "ledger")
	var stdout strings.Builder
	err := run(context.Background(), []string{"loadgen", "--addr", addr, "--requests", "12", "--events-per-request", "5",
		"--concurrency", "3", "--run-id", "t1", "--ledger", ledger, "--json"}, &stdout, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var rep loadgen.Report
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout.String())
	}
	if rep.Requests != 12 || rep.Accepted != 60 || rep.Timeouts != 0 {
		t.Fatalf("requests %d accepted %d timeouts %d; want 12, 60, 0", rep.Requests, rep.Accepted, rep.Timeouts)
	}
	b, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	if len(lines) != 60 || !strings.HasPrefix(lines[0], "t1-") {
		t.Fatalf("ledger has %d lines (first %q), want 60 ids t1-<n>", len(lines), lines[0])
	}
}

// TestLoadgenClientTarget: `sluice loadgen --target client --client-stream`
// publishes through the Go client over PublishStream, and its JSON report
// says what the client did.
func TestLoadgenClientTarget(t *testing.T) {
	out := background(t, "loadgen", "serve-baseline", "--kind", "grpc", "--addr", "127.0.0.1:0")
	addr := waitFor(t, out, regexp.MustCompile(`listening on (\S+)`))[1]
	var stdout strings.Builder
	err := run(context.Background(), []string{"loadgen", "--target", "client", "--client-stream", "--addr", addr,
		"--requests", "12", "--events-per-request", "5", "--concurrency", "3", "--connections", "2", "--json"}, &stdout, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var rep loadgen.Report
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout.String())
	}
	if rep.Target != "client" || rep.Requests != 12 || rep.Accepted != 60 || rep.Client == nil || !rep.Client.Stream || rep.Client.Requests < 12 {
		t.Fatalf("target %s requests %d accepted %d client %+v; want client, 12, 60, 12+ stream requests", rep.Target, rep.Requests, rep.Accepted, rep.Client)
	}
}

func TestLoadgenFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"loadgen", "--target", "udp"},
		{"loadgen", "--duration", "0s"},
		{"loadgen", "--target", "rest", "--encoding", "binary"},
		{"loadgen", "--client-stream"}, // on the default target, grpc
		{"loadgen", "serve-baseline", "--kind", "ftp"},
	} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		var ce *loadgen.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%v: want a loadgen.ConfigError, got %v", args, err)
		}
	}
}

// TestKfakeCommand: `sluice kfake` serves a Kafka with the example topics.
func TestKfakeCommand(t *testing.T) {
	out := background(t, "kfake", "--addr", "127.0.0.1:0", "--partitions", "2")
	addr := waitFor(t, out, regexp.MustCompile(`kfake listening on (\S+)`))[1]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := cl.ProduceSync(ctx, &kgo.Record{Topic: "ingest.examples.logs.v1.LogLine", Value: []byte("x")})
	if err := res.FirstErr(); err != nil {
		t.Fatal(err)
	}
	if p := res[0].Record.Partition; p < 0 || p > 1 {
		t.Fatalf("partition %d of a 2-partition topic", p)
	}
	if err := run(context.Background(), []string{"kfake", "--addr", "0.0.0.0:0"}, io.Discard, io.Discard); err == nil {
		t.Error("kfake on a non-loopback address should be refused")
	}
}
