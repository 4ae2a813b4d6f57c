package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the PostgreSQL variant
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicehq/sluice/internal/eventtest"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// trailStore is the sink database a consumer child writes to, as the
// crash test configures it and reads it back.
type trailStore struct {
	// sinkYAML is the config file's sink block.
	sinkYAML string
	// open reads the database; table is the events table, quoted.
	open  func(t *testing.T) *sql.DB
	table string
}

func sqliteTrailStore(dir string) trailStore {
	path := filepath.Join(dir, "events.db")
	return trailStore{
		sinkYAML: fmt.Sprintf("sink:\n  kind: sqlite\n  sqlite: {path: %s, synchronous: full}\n", path),
		table:    `"events"`,
		open: func(t *testing.T) *sql.DB {
			db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=query_only(1)")
			if err != nil {
				t.Fatal(err)
			}
			return db
		},
	}
}

func postgresTrailStore(t *testing.T, dsn string) trailStore {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	table := "crash_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sink.Migrate(ctx, dsn, table); err != nil {
		t.Fatal(err)
	}
	open := func(t *testing.T) *sql.DB {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	t.Cleanup(func() {
		db := open(t)
		defer db.Close()
		if _, err := db.Exec(fmt.Sprintf(`DROP TABLE IF EXISTS %[1]s, %[1]s_conflicts, %[1]s_audit`, table)); err != nil {
			t.Error(err)
		}
		if _, err := db.Exec(`DELETE FROM sluice_sink_migrations WHERE table_name = $1`, table); err != nil {
			t.Error(err)
		}
	})
	return trailStore{
		sinkYAML: fmt.Sprintf("sink:\n  kind: postgres\n  postgres: {dsn: %q, table: %s}\n", dsn, table),
		table:    `"` + table + `"`,
		open:     open,
	}
}

// TestConsumerCrashKeepsTrail kills `sluice consumer` with SIGKILL at
// random moments while it writes to SQLite, several rounds over one file
// with more events each round, then lets a last one finish. Every event
// row must have the written row of the record that stored it, every
// written row its event row, and every record consumed exactly one
// written row: none lost to a kill between the two, none added twice by
// the redelivery that follows one.
func TestConsumerCrashKeepsTrail(t *testing.T) {
	if testing.Short() {
		t.Skip("starts consumer processes")
	}
	runConsumerCrash(t, sqliteTrailStore(t.TempDir()))
}

// TestIntegrationPostgresConsumerCrashKeepsTrail is the crash test into
// the PostgreSQL named by SLUICE_POSTGRES_DSN.
func TestIntegrationPostgresConsumerCrashKeepsTrail(t *testing.T) {
	if testing.Short() {
		t.Skip("starts consumer processes")
	}
	dsn := os.Getenv("SLUICE_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("SLUICE_POSTGRES_DSN not set (scripts/postgres.sh up prints one)")
	}
	runConsumerCrash(t, postgresTrailStore(t, dsn))
}

// consumerChild is one run of `sluice consumer`.
type consumerChild struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

func startConsumerChild(t *testing.T, dir, cfg string, round int) *consumerChild {
	t.Helper()
	// A free port is free only when freePort looks: another test's
	// listener or an outgoing connection may take it before the child
	// binds it. A child that could not bind starts again on another.
	for attempt := 1; ; attempt++ {
		admin := freePort(t)
		c, log := startConsumerChildOn(t, dir, strings.Replace(cfg, adminAddrHole, admin, 1), admin, round)
		if c != nil {
			return c
		}
		if !bytes.Contains(log, []byte("address already in use")) || attempt == 3 {
			t.Fatalf("round %d: the consumer exited at start:\n%s", round, log)
		}
		t.Logf("round %d: the admin port was taken before the consumer bound it; starting it on another", round)
	}
}

// adminAddrHole stands for the admin address in the config that
// startConsumerChild is given: each start takes a free port of its own.
const adminAddrHole = "ADMIN_ADDR"

// startConsumerChildOn starts a consumer child with cfg and waits until
// its admin listener, on admin, answers /healthz; if it exits at start,
// it returns nil and the child's log.
func startConsumerChildOn(t *testing.T, dir, cfg, admin string, round int) (*consumerChild, []byte) {
	t.Helper()
	path := filepath.Join(dir, "consumer.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("consumer-%d.log", round)))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SLUICE_TEST_CHILD=consumer", "SLUICE_TEST_CONFIG="+path)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &consumerChild{cmd: cmd, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		logf.Close()
		close(c.exited)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-c.exited })
	healthy, gone := healthyOrExited(admin, c.exited)
	if gone {
		log, _ := os.ReadFile(logf.Name())
		return nil, append([]byte(fmt.Sprintf("(%v)\n", c.err)), log...)
	}
	if !healthy {
		log, _ := os.ReadFile(logf.Name())
		t.Fatalf("round %d: the consumer never became healthy:\n%s", round, log)
	}
	return c, nil
}

// expel makes the members of group leave it, as their session timeout
// would once they are dead, so that the next consumer gets their
// partitions at once rather than in 45 s.
func expel(t *testing.T, ctx context.Context, cl *kgo.Client, group string) {
	t.Helper()
	described, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = group
	for _, m := range described[group].Members {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = m.MemberID
		req.Members = append(req.Members, lm)
	}
	if len(req.Members) == 0 {
		return
	}
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("expel the members of %s: %v", group, err)
	}
}

func runConsumerCrash(t *testing.T, store trailStore) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, record.Cluster([]string{eventtest.Topic})...))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	addrs := cluster.ListenAddrs()
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	rng := mrand.New(mrand.NewPCG(seed, 2))
	t.Logf("seed %d", seed)
	contracts, err := filepath.Abs("../../examples/contracts.binpb")
	if err != nil {
		t.Fatal(err)
	}
	const group = "crash-audit"
	cfg := fmt.Sprintf(`kafka:
  brokers: [%s]
contracts:
  descriptor_set: %s
  types: [%s]
consumer:
  group: %s
  topics: [%s]
  write_batch: 25
  commit_interval: 50ms
  revoke_timeout: 1s
  lag_interval: 1s
log:
  level: warn
admin:
  addr: %s
%s`, strings.Join(addrs, ", "), contracts, eventtest.Type, group, eventtest.Topic, adminAddrHole, store.sinkYAML)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(eventtest.Topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	value := eventtest.LogLine(t)
	produced, ids := 0, map[string]bool{}
	// produce adds n events, one in ten of them a second record of an
	// event produced before: a duplicate, whose written row says so.
	produce := func(round, n int) {
		var recs []*kgo.Record
		for i := range n {
			id := fmt.Sprintf("r%d-%05d", round, i)
			if i%10 == 9 {
				id = fmt.Sprintf("r%d-%05d", round, i-5)
			}
			ids[id] = true
			recs = append(recs, eventtest.Record(t, eventtest.Topic, id, "k"+id, value))
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		produced += n
	}
	count := func(db *sql.DB, query string) int {
		t.Helper()
		var n int
		if err := db.QueryRowContext(ctx, query).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	}
	audit := strings.TrimSuffix(store.table, `"`) + `_audit"`
	rowsNow := func() int {
		db := store.open(t)
		defer db.Close()
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+audit).Scan(&n); err != nil {
			return 0 // not created yet
		}
		return n
	}

	const rounds = 6
	for round := range rounds {
		produce(round, 1500)
		before := rowsNow()
		c := startConsumerChild(t, dir, cfg, round)
		// Kill it once it is writing, at a random moment after.
		if !waitUntil(20*time.Second, func() bool { return rowsNow() > before }) {
			t.Fatalf("round %d: the consumer wrote nothing", round)
		}
		kill := time.Duration(rng.IntN(400)) * time.Millisecond
		<-time.After(kill)
		if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-c.exited
		expel(t, ctx, cl, group)
		t.Logf("round %d: killed %v into its writes, %d audit rows so far, %d records produced", round, kill, rowsNow(), produced)
	}

	// A last consumer finishes the job and stops gracefully.
	c := startConsumerChild(t, dir, cfg, rounds)
	adm := kadm.NewClient(cl)
	done := waitUntil(2*time.Minute, func() bool {
		lag, err := adm.Lag(ctx, group)
		if err != nil {
			return false
		}
		total := int64(0)
		ok := true
		lag.Each(func(l kadm.DescribedGroupLag) {
			for _, ps := range l.Lag {
				for _, p := range ps {
					if p.Err != nil {
						ok = false
					}
					total += p.Lag
				}
			}
		})
		return ok && total == 0 && rowsNow() >= produced
	})
	if !done {
		t.Fatalf("the last consumer did not finish: %d audit rows, %d records", rowsNow(), produced)
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-c.exited
	if c.err != nil {
		t.Fatalf("graceful stop: %v", c.err)
	}

	db := store.open(t)
	defer db.Close()
	events := store.table
	for _, check := range []struct {
		what  string
		query string
		want  int
	}{
		{"event rows", "SELECT count(*) FROM " + events, len(ids)},
		{"written rows", "SELECT count(*) FROM " + audit + " WHERE action = 'written'", produced},
		{"event rows without the written row that stored them", `SELECT count(*) FROM ` + events + ` e WHERE NOT EXISTS (
			SELECT 1 FROM ` + audit + ` a WHERE a.source = e.source AND a.event_id = e.event_id AND a.action = 'written'
			AND a.detail = '' AND a.topic = e.topic AND a.kafka_partition = e.kafka_partition AND a.kafka_offset = e.kafka_offset)`, 0},
		{"written rows without their event row", `SELECT count(*) FROM ` + audit + ` a WHERE a.action = 'written' AND NOT EXISTS (
			SELECT 1 FROM ` + events + ` e WHERE e.source = a.source AND e.event_id = a.event_id)`, 0},
		{"records with more than one written row", `SELECT count(*) FROM (SELECT topic, kafka_partition, kafka_offset FROM ` + audit + `
			WHERE action = 'written' GROUP BY topic, kafka_partition, kafka_offset HAVING count(*) > 1) d`, 0},
		{"events stored by other than one written row", `SELECT count(*) FROM (SELECT source, event_id FROM ` + audit + `
			WHERE action = 'written' GROUP BY source, event_id HAVING sum(CASE WHEN detail = '' THEN 1 ELSE 0 END) <> 1) d`, 0},
		{"written rows of duplicates", "SELECT count(*) FROM " + audit + " WHERE action = 'written' AND detail = 'duplicate'", produced - len(ids)},
		{"trails whose sequences are not 1 to n", `SELECT count(*) FROM (SELECT source, event_id FROM ` + audit + `
			GROUP BY source, event_id HAVING min(sequence) <> 1 OR max(sequence) <> count(*)) d`, 0},
		{"rows of other decisions", "SELECT count(*) FROM " + audit + " WHERE action <> 'written'", 0},
	} {
		if got := count(db, check.query); got != check.want {
			t.Errorf("%s: %d, want %d", check.what, got, check.want)
		}
	}
	t.Logf("%d rounds: %d records of %d events, each with its written row", rounds, produced, len(ids))
}
