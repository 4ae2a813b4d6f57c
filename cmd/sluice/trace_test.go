package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/consumer/trace"
	"github.com/sluicehq/sluice/internal/eventtest"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// traceFixture is kfake holding, in the LogLine topic, events a, e1 and b
// with the group g committed past a, and in its DLQ a dead letter of
// event dl (not retryable); and a config file of the consumer tier on it
// with sinkBlock as its sink.
func traceFixture(t *testing.T, sinkBlock string) (cfgPath string, cluster *kfake.Cluster) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.SeedTopics(1, logTopic, record.DLQTopic(logTopic), record.ParkedTopic(logTopic), record.AuditTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	addrs := cluster.ListenAddrs()
	value := eventtest.LogLine(t)
	failed := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	dl := record.NewDeadLetter(record.DLQTopic(logTopic), eventtest.Record(t, logTopic, "dl", "dl", value), &record.Envelope{
		Class: "permanent", Error: "422 from the receiver", Sink: "http", Attempts: 1, FirstFailureAt: failed, LastFailureAt: failed,
		SourceTopic: logTopic, SourceOffset: 0, Group: "g"})
	eventtest.Produce(t, addrs, eventtest.Record(t, logTopic, "a", "a", value), eventtest.Record(t, logTopic, "e1", "e1", value),
		eventtest.Record(t, logTopic, "b", "b", value), dl)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: logTopic, Partition: 0, At: 1, LeaderEpoch: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if resp, err := kadm.NewClient(cl).CommitOffsets(ctx, "g", os); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	contracts, err := filepath.Abs("../../examples/contracts.binpb")
	if err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, fmt.Sprintf(`
consumer: {group: g, topics: [%s]}
sink: %s
contracts: {descriptor_set: %s, types: [examples.logs.v1.LogLine]}
kafka: {brokers: [%s]}
log: {level: warn}
`, logTopic, sinkBlock, contracts, strings.Join(addrs, ", "))), cluster
}

func runTrace(args ...string) (code int, stdout, stderr string) { return runCommand("trace", args...) }

// runCommand runs the sluice command cmd with args, within a minute, and
// returns its exit status and output.
func runCommand(cmd string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code = exitCode(run(ctx, append([]string{cmd}, args...), &out, &errOut), &errOut)
	return code, out.String(), errOut.String()
}

// sluice trace prints the status line, the path, the audit rows and what
// it searched; --json the Answer. Exit 0 when found, 1 for UNKNOWN, 2
// for an error.
func TestTraceCommand(t *testing.T) {
	cfg, _ := traceFixture(t, "{kind: http, http: {url: 'http://127.0.0.1:1/events'}}")

	code, out, errOut := runTrace("--config", cfg, "--source", "test", "--id", "dl")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if want := "IN_DLQ  test/dl: dead-lettered to " + logTopic + ".dlq at 2026-11-29T09:00:00Z: permanent (not retryable), 1 attempts, 0 failed drains; next: drains skip it"; !strings.HasPrefix(out, want) {
		t.Errorf("status line of\n%s\nwant %q", out, want)
	}
	for _, want := range []string{"\npath\n", "\naudit rows (0)\n", "\nsearched\n", "\nread 3 records (max_records 100000, timeout 30s): no bound hit\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	for _, fields := range [][]string{
		{"2026-11-29T08:00:00Z", "accepted", logTopic + "/0@0", "scan"},
		{"2026-11-29T09:00:00Z", "dead_lettered", logTopic + ".dlq/0@0", "scan", "permanent:", "422"},
		{"audit_topic", "sluice.audit", "0", "0", "0"},
		{"dlq", logTopic + ".dlq", "1", "1", "1", "0:[0,1)", "of", "[0,1)"},
		{"source", logTopic, "2", "2", "0", "0:[1,3)", "of", "[1,3)"},
	} {
		if !hasLine(out, fields...) {
			t.Errorf("no line of %q in\n%s", fields, out)
		}
	}
	t.Logf("sluice trace --config F --source test --id dl\n%s", out)

	// PENDING, found by the scan from the committed offset or at the hint.
	for _, hint := range [][]string{nil, {"--topic", logTopic, "--partition", "0", "--offset", "1"}} {
		code, out, errOut = runTrace(append([]string{"--config", cfg, "--source", "test", "--id", "e1", "--json"}, hint...)...)
		var a trace.Answer
		if err := json.Unmarshal([]byte(out), &a); code != 0 || err != nil {
			t.Fatalf("exit %d, %v\n%s%s", code, err, out, errOut)
		}
		if a.Status != trace.Pending || a.Pending.Committed != 1 || a.Pending.Lag != 2 || a.Pending.Ahead != 0 || a.Pending.Record.Offset != 1 {
			t.Errorf("hint %v: %+v", hint, a.Pending)
		}
	}
	code, out, _ = runTrace("--config", cfg, "--source", "test", "--id", "e1")
	if code != 0 || !strings.HasPrefix(out, "PENDING  test/e1: in "+logTopic+"/0@1, not yet consumed: 0 records ahead of it past group g's committed offset 1 (partition lag 2)") {
		t.Errorf("exit %d\n%s", code, out)
	}
	t.Logf("sluice trace --config F --source test --id e1\n%s", out)

	// "a" was consumed, and nothing says where it went.
	code, out, _ = runTrace("--config", cfg, "--source", "test", "--id", "a", "--max-records", "2")
	if code != 1 || !strings.HasPrefix(out, "UNKNOWN  test/a: not found in sluice.audit (0 records), "+logTopic+".dlq (1 records)") {
		t.Errorf("exit %d\n%s", code, out)
	}
	t.Logf("sluice trace --config F --source test --id a --max-records 2\n%s", out)

	for _, args := range [][]string{
		{"--source", "test", "--id", "x"},
		{"--config", cfg, "--id", "x"},
		{"--config", cfg, "--source", "test", "--id", "x", "--topic", logTopic},
		{"--config", cfg, "--source", "test", "--id", "x", "--topic", "other", "--partition", "0", "--offset", "1"},
		{"--config", cfg, "--source", "test", "--id", "x", "--max-records", "0"},
		{"--config", cfg, "--source", "test", "--id", "x", "--topic", logTopic, "--partition", "4294967296", "--offset", "1"},
		{"--config", cfg, "--source", "test", "--id", "x\x01"},
		{"--config", cfg, "--source", "test", "--id", "x", "extra"},
		{"--config", filepath.Join(t.TempDir(), "missing.yaml"), "--source", "test", "--id", "x"},
	} {
		if code, out, errOut := runTrace(args...); code != 2 || !strings.Contains(errOut, "sluice: ") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	if code, out, errOut := runTrace("-h"); code != 0 || !strings.Contains(out, "usage:") || errOut != "" {
		t.Errorf("-h: exit %d\n%s%s", code, out, errOut)
	}
}

// A table sink's file must be there: sluice trace does not create an
// empty database where it looks for the audit table.
func TestTraceCommandSQLite(t *testing.T) {
	db := filepath.Join(t.TempDir(), "events.db")
	cfg, _ := traceFixture(t, fmt.Sprintf("{kind: sqlite, sqlite: {path: %s}}", db))
	if code, _, errOut := runTrace("--config", cfg, "--source", "test", "--id", "dl"); code != 2 || !strings.Contains(errOut, "the sqlite sink") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	scfg := sink.NewDefaultConfig().SQLite
	scfg.Path = db
	s, err := sink.OpenSQLite(context.Background(), scfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if code, out, errOut := runTrace("--config", cfg, "--source", "test", "--id", "dl"); code != 0 || !strings.HasPrefix(out, "IN_DLQ  test/dl") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
}

// sluice consumer serves GET /v1/trace/{source}/{id} on its admin
// listener: the Answer, 404 for UNKNOWN, 400 for a bad id.
func TestConsumerServesTrace(t *testing.T) {
	sinkPath := filepath.Join(t.TempDir(), "events.db")
	var adminAddr string
	startListening(t, 20*time.Second, "the consumer's /readyz to answer 200", func() ([]string, func() bool) {
		adminAddr = freePort(t)
		cfg, _ := traceFixture(t, fmt.Sprintf("{kind: sqlite, sqlite: {path: %s}}\nadmin: {addr: %s}", sinkPath, adminAddr))
		return []string{"consumer", "--config", cfg}, func() bool {
			code, _ := adminGet(t, adminAddr, "/readyz")
			return code == http.StatusOK
		}
	})
	var a trace.Answer
	code, body := adminGet(t, adminAddr, "/v1/trace/test/dl")
	if err := json.Unmarshal([]byte(body), &a); code != http.StatusOK || err != nil || a.Status != trace.InDLQ {
		t.Errorf("dl: %d %v\n%s", code, err, body)
	}
	code, body = adminGet(t, adminAddr, "/v1/trace/test/nobody")
	if err := json.Unmarshal([]byte(body), &a); code != http.StatusNotFound || err != nil || a.Status != trace.Unknown {
		t.Errorf("nobody: %d %v\n%s", code, err, body)
	}
	var e trace.ErrorBody
	code, body = adminGet(t, adminAddr, "/v1/trace/test/%FF")
	if err := json.Unmarshal([]byte(body), &e); code != http.StatusBadRequest || err != nil || e.Error.Field != "id" {
		t.Errorf("bad id: %d %v\n%s", code, err, body)
	}
}

// hasLine reports whether a line of out starts with fields, separated by
// any blanks.
func hasLine(out string, fields ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(fields) && slices.Equal(f[:len(fields)], fields) {
			return true
		}
	}
	return false
}
