package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/consumer/dlq"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/contracttest"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

const logTopic = "ingest.examples.logs.v1.LogLine"

// dlqFixture is kfake holding, in the LogLine DLQ, a dead letter whose
// envelope names sluice.audit as its source and a valid one, and a config
// file for it; contracts is the config's descriptor_set.
func dlqFixture(t *testing.T, contracts string) (cfgPath string, addrs []string) {
	t.Helper()
	cl, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.SeedTopics(1, logTopic, record.DLQTopic(logTopic), record.AuditTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	addrs = cl.ListenAddrs()
	reg, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := reg.Lookup("examples.logs.v1.LogLine")
	value, err := c.CheckJSON(examples.LogLineJSON)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	var recs []*kgo.Record
	for _, d := range []struct{ id, source string }{{"injected", record.AuditTopic}, {"fine", logTopic}} {
		r := record.NewEvent(&record.Event{Topic: record.DLQTopic(logTopic), Key: []byte(d.id), Value: value,
			ID: d.id, Type: c.Type(), Source: "test", OccurredAt: now, IngestedAt: now, Fingerprint: c.Fingerprint()})
		ts := []byte(now.Format(time.RFC3339Nano))
		for _, h := range [][2]string{
			{record.DLQHeaderErrorClass, "transient"}, {record.DLQHeaderError, "503"}, {record.DLQHeaderSink, "http"},
			{record.DLQHeaderAttempts, "3"}, {record.DLQHeaderDLQRetries, "0"}, {record.DLQHeaderRetryable, "true"},
			{record.DLQHeaderSourceTopic, d.source}, {record.DLQHeaderSourcePartition, "0"},
			{record.DLQHeaderSourceOffset, "1"}, {record.DLQHeaderGroup, "g"},
		} {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
		}
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: record.DLQHeaderFirstFailureAt, Value: ts},
			kgo.RecordHeader{Key: record.DLQHeaderLastFailureAt, Value: ts})
		recs = append(recs, r)
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cfgPath = filepath.Join(t.TempDir(), "sluice.yaml")
	raw := fmt.Sprintf("kafka: {brokers: [%s]}\ncontracts: {descriptor_set: %s, types: [examples.logs.v1.LogLine]}\n",
		strings.Join(addrs, ", "), contracts)
	if err := os.WriteFile(cfgPath, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath, addrs
}

// TestDLQReplayCommand: replay needs --config; with it, a record whose
// envelope names another topic is refused and reported, the rest replayed
// to the DLQ topic's own source.
func TestDLQReplayCommand(t *testing.T) {
	contracts, err := filepath.Abs("../../examples/contracts.binpb")
	if err != nil {
		t.Fatal(err)
	}
	cfg, addrs := dlqFixture(t, contracts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err = runDLQCmd(ctx, []string{"replay", "--brokers", strings.Join(addrs, ","), "--topic", record.DLQTopic(logTopic)}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--config is required") {
		t.Fatalf("replay without --config: %v", err)
	}
	err = runDLQCmd(ctx, []string{"replay", "--config", cfg, "--topic", record.DLQTopic(logTopic), "--actor", "ops"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "injected\trefused") || !strings.Contains(stderr.String(), "replayed 1, refused 1") ||
		!strings.Contains(stderr.String(), "source mismatch 1") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	var ids []string
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(logTopic, record.AuditTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	audit := 0
	for len(ids) < 1 || audit < 2 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("replayed %v, %d audit records", ids, audit)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Topic == record.AuditTopic {
				audit++
				return
			}
			h, _ := record.ParseEvent(r)
			ids = append(ids, h.ID)
		})
	}
	if len(ids) != 1 || ids[0] != "fine" {
		t.Fatalf("replayed %v", ids)
	}
}

// TestDLQShowSaysWhyBase64: show prints the value as base64 when the
// contracts do not load, and says why.
func TestDLQShowSaysWhyBase64(t *testing.T) {
	cfg, _ := dlqFixture(t, filepath.Join(t.TempDir(), "missing.binpb"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := runDLQCmd(ctx, []string{"show", "--config", cfg, "--topic", record.DLQTopic(logTopic), "--partition", "0", "--offset", "1"}, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "value      base64 ") || !strings.Contains(stderr.String(), "contracts not loaded") ||
		!strings.Contains(stderr.String(), "missing.binpb") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	err = runDLQCmd(ctx, []string{"replay", "--config", cfg, "--topic", record.DLQTopic(logTopic), "--actor", "ops"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "contracts") {
		t.Fatalf("replay without contracts: %v", err)
	}
}

// TestDLQShowReadsWithTheRecordsVersion: a dead letter published under a
// schema version the config's contracts do not hold is rendered only when
// the served version reads it whole; one setting a field the served
// version lacks is shown as base64, with why, not as JSON missing it.
func TestDLQShowReadsWithTheRecordsVersion(t *testing.T) {
	dir := t.TempDir()
	older := filepath.Join(dir, "older.binpb")
	if err := os.WriteFile(older, contracttest.Evolve(t, examples.Contracts,
		contracttest.RemoveField("examples.logs.v1.LogLine", "host", true)), 0o644); err != nil {
		t.Fatal(err)
	}
	show := func(contracts string) string {
		t.Helper()
		cfg, _ := dlqFixture(t, contracts)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var stdout, stderr bytes.Buffer
		err := runDLQCmd(ctx, []string{"show", "--config", cfg, "--topic", record.DLQTopic(logTopic), "--partition", "0", "--offset", "1"}, &stdout, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		return stdout.String()
	}
	same := filepath.Join(dir, "same.binpb")
	if err := os.WriteFile(same, examples.Contracts, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := show(same); !strings.Contains(out, "(served)") || !strings.Contains(out, `"host":`) {
		t.Fatalf("a record of the version served:\n%s", out)
	}
	out := show(older)
	if !strings.Contains(out, "value      base64 ") || !strings.Contains(out, "cannot read it") || !strings.Contains(out, "unknown field 7") {
		t.Fatalf("a record setting a field the served version lacks:\n%s", out)
	}
}

// TestDLQReplayRefusesWithoutContracts: replay checks every record against
// its contract, so contracts that do not load stop it, dry run included,
// with an error naming the file, before anything is produced: no audit
// record, no record in the source topic.
func TestDLQReplayRefusesWithoutContracts(t *testing.T) {
	cfg, addrs := dlqFixture(t, filepath.Join(t.TempDir(), "missing.binpb"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, extra := range [][]string{nil, {"--dry-run"}} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"replay", "--config", cfg, "--topic", record.DLQTopic(logTopic), "--actor", "ops"}, extra...)
		err := runDLQCmd(ctx, args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "contracts") || !strings.Contains(err.Error(), "missing.binpb") {
			t.Fatalf("%v: %v, want a refusal naming the contracts file", args, err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, logTopic, record.AuditTopic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != 0 {
			t.Errorf("%s/%d: end offset %d, %v; want nothing produced", o.Topic, o.Partition, o.Offset, o.Err)
		}
	})
}

// TestOneLineCutsOnARune: a long envelope error is cut to 120 bytes on a
// rune boundary, so a listing stays UTF-8.
func TestOneLineCutsOnARune(t *testing.T) {
	msg := strings.Repeat("a", 116) + strings.Repeat("é", 10)
	got := oneLine(msg, nil)
	if !utf8.ValidString(got) || len(got) > 120 || !strings.HasPrefix(got, strings.Repeat("a", 116)) {
		t.Fatalf("oneLine = %q (%d bytes)", got, len(got))
	}
}

// TestDLQReplayAuditsIntoTheSink: with an sqlite sink in the config,
// replay stamps its records with the replay's id and actor and records
// their replayed rows in the file's audit table, where the consumer's
// are; with the file not here, they go to sluice.audit and stderr says so.
func TestDLQReplayAuditsIntoTheSink(t *testing.T) {
	contracts, err := filepath.Abs("../../examples/contracts.binpb")
	if err != nil {
		t.Fatal(err)
	}
	for _, here := range []bool{true, false} {
		t.Run(fmt.Sprintf("file here %v", here), func(t *testing.T) {
			cfg, addrs := dlqFixture(t, contracts)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			db := filepath.Join(t.TempDir(), "events.db")
			if here {
				scfg := sink.NewDefaultConfig().SQLite
				scfg.Path = db
				s, err := sink.OpenSQLite(ctx, scfg)
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
			}
			raw, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cfg, append(raw, fmt.Sprintf("sink: {kind: sqlite, sqlite: {path: %s}}\n", db)...), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			if err := runDLQCmd(ctx, []string{"replay", "--config", cfg, "--topic", record.DLQTopic(logTopic), "--actor", "ops"}, &stdout, &stderr); err != nil {
				t.Fatalf("replay: %v\n%s", err, stderr.String())
			}
			if strings.Contains(stderr.String(), "is not here") == here {
				t.Fatalf("stderr:\n%s", stderr.String())
			}
			if _, err := os.Stat(db); (err == nil) != here {
				t.Fatalf("the sink's file: %v (here before the replay: %v)", err, here)
			}
			var replayID string
			for _, r := range readTopic(t, addrs, logTopic) {
				h, err := record.ParseEvent(r)
				if err != nil || h.ID != "fine" || h.ReplayActor != "ops" || h.ReplayID == "" {
					t.Fatalf("replayed record %+v, %v", h, err)
				}
				replayID = h.ReplayID
			}
			var decisions []record.Decision
			for _, r := range readTopic(t, addrs, record.AuditTopic) {
				if d, err := record.ParseDecision(r); err == nil {
					decisions = append(decisions, d)
				}
			}
			var rows []audit.Row
			if here {
				scfg := sink.NewDefaultConfig().SQLite
				scfg.Path = db
				s, err := sink.OpenSQLite(ctx, scfg)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if rows, err = s.AuditRows(ctx, "test", "fine"); err != nil {
					t.Fatal(err)
				}
			} else {
				for _, d := range decisions {
					rows = append(rows, audit.RowOf(&d))
				}
				decisions = nil
			}
			if len(decisions) != 0 || len(rows) != 1 || rows[0].Action != audit.Replayed || rows[0].ReplayID != replayID ||
				rows[0].Actor != "ops" || rows[0].Topic != record.DLQTopic(logTopic) || rows[0].EventID != "fine" {
				t.Fatalf("replayed rows %+v; decisions in %s %+v", rows, record.AuditTopic, decisions)
			}
		})
	}
}

// readTopic reads topic from its start to its end.
func readTopic(t *testing.T, addrs []string, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	err := dlq.List(ctx, []kgo.Opt{kgo.SeedBrokers(addrs...)}, topic, dlq.Selection{}, func(d dlq.DeadLetter) error {
		out = append(out, d.Record)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
