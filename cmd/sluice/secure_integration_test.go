package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/internal/devpartner"
	"github.com/sluicehq/sluice/internal/kafkaconn"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/tlsfiles/tlstest"
	"github.com/sluicehq/sluice/pull"
	"github.com/sluicehq/sluice/pull/ownership"
	"github.com/sluicehq/sluice/record"
)

// The tests below run against the SASL_SSL cluster of
// `SLUICE_KAFKA_SECURE=1 scripts/kafka.sh up` (SCRAM-SHA-512 over TLS with
// its throwaway CA), and skip without it.

// secureKafka is the secure cluster's block, its options, and the block
// as the config file gives it (indented under kafka:).
func secureKafka(t *testing.T) (kafkaconn.Config, []kgo.Opt, string) {
	t.Helper()
	c := kafkatest.Secure(t)
	conn, err := c.Options(nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, conn, kafkaBlock(c, c.SASL.PasswordEnv, c.TLS.CAFile)
}

func kafkaBlock(c kafkaconn.Config, passwordEnv, caFile string) string {
	return fmt.Sprintf("  brokers: [%s]\n  tls: {ca_file: %s}\n  sasl: {mechanism: %s, username: %s, password_env: %s}",
		strings.Join(c.Brokers, ","), caFile, c.SASL.Mechanism, c.SASL.Username, passwordEnv)
}

// uniqueName is a name of this test run, usable as a topic and a table.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
}

// readIDs reads the event ids of the records in topic over conn until
// want have been seen or the deadline passes.
func readIDs(t *testing.T, conn []kgo.Opt, topic string, want int) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(append(conn, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ids := map[string]int{}
	for len(ids) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if h, err := record.ParseEvent(r); err == nil {
				ids[h.ID]++
			}
		})
	}
	return ids
}

// TestSecureIntegrationGatewayToPostgres: events published over the
// gateway travel through Kafka over SASL_SSL (SCRAM-SHA-512) to the
// consumer and land in PostgreSQL once each, also when the client sends
// them twice.
func TestSecureIntegrationGatewayToPostgres(t *testing.T) {
	_, conn, kafka := secureKafka(t)
	dsn := os.Getenv("SLUICE_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("SLUICE_POSTGRES_DSN is not set (scripts/postgres.sh up prints one)")
	}
	topic := kafkatest.CreateTopicOn(t, conn, 3, nil)
	kafkatest.CreateTopicsOn(t, conn, 3, nil, record.DLQTopic(topic), record.ParkedTopic(topic))
	table := uniqueName("secure_e2e")
	// The answers must name their Kafka positions: on a busy machine the
	// first produce over SASL_SSL (connection, handshake, producer id) can
	// take longer than the default 2s latency threshold, which would spool
	// the batch, correctly but not what this test is about.
	extra := fmt.Sprintf(`spool:
  dir: %s
  min_free_bytes: 1
admission: {latency_threshold: 30s}
consumer:
  group: %s
  topics: [%s]
  write_batch: 20
sink:
  kind: postgres
  postgres: {dsn: %q, table: %s}
`, t.TempDir(), uniqueName("secure-e2e"), topic, dsn, table)
	yaml, httpAddr := gatewayYAML(t, kafka, extra)
	// One type, to the test's topic: the consumer reads every topic the
	// gateway publishes to.
	yaml = strings.Replace(yaml, "  types: ["+strings.Join(examples.Types, ", ")+"]\n", "  types: [examples.logs.v1.LogLine]\n", 1)
	yaml += "topics: {examples.logs.v1.LogLine: " + topic + "}\n"
	cfg := writeConfig(t, yaml)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, []string{"sink", "migrate", "--config", cfg}, io.Discard, io.Discard); err != nil {
		t.Fatalf("sink migrate: %v", err)
	}
	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	t.Cleanup(func() {
		_, _ = db.Exec(context.Background(), fmt.Sprintf(`DROP TABLE IF EXISTS %s, %s_conflicts`, table, table))
	})

	gw := startInProcess(t, "gateway", "--config", cfg)
	startInProcess(t, "consumer", "--config", cfg)
	const n = 40
	prefix := uniqueName("e2e")
	var first string
	gw.WaitUntil(t, 60*time.Second, "the gateway to answer", func() bool {
		first = postLogLines(httpAddr, "secure-key", prefix, n)
		return first != ""
	})
	if got := strings.Count(first, `"outcome":"ACCEPTED","durability":"KAFKA","kafka":{"topic":"`+topic+`",`); got != n {
		t.Fatalf("%d of %d answered ACCEPTED in Kafka, with their position in %s: %s", got, n, topic, first)
	}
	// The client retries the whole batch: the dedup window answers it,
	// with the originals' positions.
	if again := postLogLines(httpAddr, "secure-key", prefix, n); strings.Count(again, `"outcome":"DUPLICATE","kafka":{"topic":"`+topic+`",`) != n {
		t.Fatalf("the batch sent again: %s", again)
	}

	var rows, distinct, conflicts int
	landed := waitUntil(90*time.Second, func() bool {
		err := db.QueryRow(ctx, fmt.Sprintf(`SELECT count(*), count(DISTINCT event_id) FROM %s WHERE event_id LIKE $1 AND topic = $2`, table),
			prefix+"-%", topic).Scan(&rows, &distinct)
		return err == nil && rows >= n
	})
	if !landed {
		t.Fatalf("%d of %d events in the sink", rows, n)
	}
	if err := db.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s_conflicts`, table)).Scan(&conflicts); err != nil {
		t.Fatal(err)
	}
	if rows != n || distinct != n || conflicts != 0 {
		t.Fatalf("sink holds %d rows, %d distinct ids, %d conflicts; want %d, %d, 0", rows, distinct, conflicts, n, n)
	}
	if ids := readIDs(t, conn, topic, n); len(ids) != n {
		t.Fatalf("%d distinct events in %s, want %d", len(ids), topic, n)
	}
}

// TestSecureIntegrationDLQReplay: dlq list and replay read the DLQ topic,
// write the audit records and produce the replayed record over SASL_SSL
// with the config's kafka block.
func TestSecureIntegrationDLQReplay(t *testing.T) {
	_, conn, kafka := secureKafka(t)
	topic := kafkatest.CreateTopicOn(t, conn, 1, nil)
	dlq := record.DLQTopic(topic)
	kafkatest.CreateTopicsOn(t, conn, 1, nil, dlq)
	kafkatest.EnsureTopicOn(t, conn, record.AuditTopic)

	reg, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := reg.Lookup("examples.logs.v1.LogLine")
	value, err := c.CheckJSON(examples.LogLineJSON)
	if err != nil {
		t.Fatal(err)
	}
	id := uniqueName("dead")
	now := time.Now().UTC()
	r := record.NewEvent(&record.Event{Topic: dlq, Key: []byte(id), Value: value,
		ID: id, Type: c.Type(), Source: "test", OccurredAt: now, IngestedAt: now, Fingerprint: c.Fingerprint()})
	ts := []byte(now.Format(time.RFC3339Nano))
	for _, h := range [][2]string{
		{record.DLQHeaderErrorClass, "transient"}, {record.DLQHeaderError, "503"}, {record.DLQHeaderSink, "http"},
		{record.DLQHeaderAttempts, "3"}, {record.DLQHeaderDLQRetries, "0"}, {record.DLQHeaderRetryable, "true"},
		{record.DLQHeaderSourceTopic, topic}, {record.DLQHeaderSourcePartition, "0"},
		{record.DLQHeaderSourceOffset, "1"}, {record.DLQHeaderGroup, "g"},
	} {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
	}
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: record.DLQHeaderFirstFailureAt, Value: ts},
		kgo.RecordHeader{Key: record.DLQHeaderLastFailureAt, Value: ts})
	pcl, err := kgo.NewClient(conn...)
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pcl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatal(err)
	}
	contracts, err := filepath.Abs("../../examples/contracts.binpb")
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, fmt.Sprintf("kafka:\n%s\ncontracts: {descriptor_set: %s, types: [examples.logs.v1.LogLine]}\nconsumer: {group: g, topics: [%s]}\n",
		kafka, contracts, topic))

	var stdout, stderr bytes.Buffer
	if err := runDLQCmd(ctx, []string{"list", "--config", cfg, "--topic", dlq}, &stdout, &stderr); err != nil {
		t.Fatalf("dlq list: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), id) || !strings.Contains(stderr.String(), "1 dead letters selected") {
		t.Fatalf("dlq list:\n%s\n%s", stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if err := runDLQCmd(ctx, []string{"replay", "--config", cfg, "--topic", dlq, "--actor", "ops"}, &stdout, &stderr); err != nil {
		t.Fatalf("dlq replay: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "replayed 1, refused 0") {
		t.Fatalf("dlq replay:\n%s", stderr.String())
	}
	if ids := readIDs(t, conn, topic, 1); ids[id] != 1 || len(ids) != 1 {
		t.Fatalf("records in %s after the replay: %v, want %s once", topic, ids, id)
	}
}

// TestSecureIntegrationPoller: the demo poller runs in the gateway with the
// secure cluster: the pollers' group, the cursor topic's creation and the
// cursor store all go over SASL_SSL, and the pulled orders land in Kafka.
func TestSecureIntegrationPoller(t *testing.T) {
	block, conn, _ := secureKafka(t)
	topic := kafkatest.CreateTopicOn(t, conn, 1, nil)
	// The cursor topic is the runner's fixed one: start it afresh, so that
	// no cursor of an earlier run is read, and remove it afterwards.
	oc := ownership.NewDefaultConfig()
	deleteTopic := func() {
		cl, err := kgo.NewClient(conn...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = kadm.NewClient(cl).DeleteTopics(ctx, oc.Topic)
	}
	deleteTopic()
	t.Cleanup(deleteTopic)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	partner, stopPartner, err := devpartner.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stopPartner()
	cfg := defaultFileConfig()
	cfg.Log = logConfig{Level: "warn", Format: "text"}
	cfg.Gateway.GRPCAddr, cfg.Gateway.HTTPAddr = freePort(t), freePort(t)
	cfg.Admin.Addr = "127.0.0.1:0"
	cfg.Gateway.Sources = []gateway.SourceConfig{{Name: "secure", KeyHashes: []string{hashKey("secure-key")}, EventTypes: []string{"*"}}}
	cfg.Topics = map[string]string{"examples.shop.v1.OrderPlaced": topic}
	cfg.Gateway.Topics = cfg.Topics // as parseConfig hands the file's topics block to the gateway
	cfg.Kafka.Config = block
	cfg.Contracts.DescriptorSet, cfg.Contracts.Types = embeddedContracts, examples.Types
	cfg.Pollers = []pull.Config{devpartner.Config(partner)}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	versions, err := loadContracts(cfg)
	if err != nil {
		t.Fatal(err)
	}
	logs := newSyncBuffer()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, versions, slog.New(slog.NewTextHandler(logs, nil)), nil) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("gateway: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("gateway did not stop")
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	}()

	if ids := readIDs(t, conn, topic, 5); len(ids) < 5 {
		t.Fatalf("%d pulled orders in %s, want 5 or more", len(ids), topic)
	}
	cl, err := kgo.NewClient(conn...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var saved int64
	cursor := waitUntil(60*time.Second, func() bool {
		actx, acancel := context.WithTimeout(ctx, 10*time.Second)
		defer acancel()
		ends, err := adm.ListEndOffsets(actx, oc.Topic)
		if err != nil || ends.Error() != nil {
			return false
		}
		end, ok := ends.Lookup(oc.Topic, 0)
		saved = end.Offset
		return ok && end.Offset > 0
	})
	if !cursor {
		t.Fatalf("no cursor saved in %s (end offset %d)", oc.Topic, saved)
	}
	resp, err := http.Get("http://" + cfg.Gateway.HTTPAddr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// TestSecureIntegrationRefusedAtStart: a wrong password and an unknown CA
// stop the gateway and the consumer at start, with an error that names
// authentication or the certificate.
func TestSecureIntegrationRefusedAtStart(t *testing.T) {
	block, _, _ := secureKafka(t)
	t.Setenv("SLUICE_TEST_WRONG_PASSWORD", "not-"+os.Getenv(block.SASL.PasswordEnv))
	stranger := tlstest.NewCA(t, "stranger")
	consumerYAML := func(kafka string) string {
		return fmt.Sprintf("consumer: {group: g, topics: [%s]}\nsink: {kind: sqlite, sqlite: {path: %s}}\n"+
			"contracts: {descriptor_set: %s, types: [examples.logs.v1.LogLine]}\nkafka:\n%s\nlog: {level: warn}\nadmin: {addr: 127.0.0.1:0}\n",
			logTopic, filepath.Join(t.TempDir(), "events.db"), mustAbs(t, "../../examples/contracts.binpb"), kafka)
	}
	for _, tc := range []struct {
		name, kafka, says string
	}{
		{"wrong password", kafkaBlock(block, "SLUICE_TEST_WRONG_PASSWORD", block.TLS.CAFile), "authentication"},
		{"unknown CA", kafkaBlock(block, block.SASL.PasswordEnv, stranger.File(t)), "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml, _ := gatewayYAML(t, tc.kafka, fmt.Sprintf("spool: {dir: %s, min_free_bytes: 1}\n", t.TempDir()))
			err := runUntilStopped(t, "gateway", "--config", writeConfig(t, yaml))
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("gateway: %v, want an error naming %s", err, tc.says)
			}
			t.Logf("gateway: %v", err)
			err = runUntilStopped(t, "consumer", "--config", writeConfig(t, consumerYAML(tc.kafka)))
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("consumer: %v, want an error naming %s", err, tc.says)
			}
			t.Logf("consumer: %v", err)
		})
	}
}
