package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/record"
)

// The crash tests run the gateway or the consumer as a child process:
// this test binary, re-executed with SLUICE_TEST_CHILD set to gateway or
// consumer, runs `sluice gateway` or `sluice consumer`.
func TestMain(m *testing.M) {
	if cmd := os.Getenv("SLUICE_TEST_CHILD"); cmd == "gateway" || cmd == "consumer" {
		ctx, stop := signalContext()
		err := run(ctx, []string{cmd, "--config", os.Getenv("SLUICE_TEST_CONFIG")}, os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// child is one run of the gateway process.
type child struct {
	cmd    *exec.Cmd
	http   string
	admin  string        // the admin listener: /healthz, /metrics
	exited chan struct{} // closed when the process has exited; err is set then
	err    error
}

// wait waits for the process to exit and returns how it ended.
func (c *child) wait() error {
	<-c.exited
	return c.err
}

func startChild(t *testing.T, dir, brokers string, spoolFirst bool, round int, admission ...string) *child {
	t.Helper()
	// A free port is free only when freePort looks: another test's
	// listener or an outgoing connection may take it before the child
	// binds it. A child that could not bind starts again on other ports.
	for attempt := 1; ; attempt++ {
		c, log := startChildOn(t, dir, brokers, spoolFirst, round, admission...)
		if c != nil {
			return c
		}
		if !bytes.Contains(log, []byte("address already in use")) || attempt == 3 {
			t.Fatalf("round %d: gateway exited at start:\n%s", round, log)
		}
		t.Logf("round %d: a port was taken before the gateway bound it; starting it on others", round)
	}
}

// startChildOn starts a gateway child on free ports and waits until it
// is healthy; if it exits at start, it returns nil and the child's log.
// admission holds lines of the admission block ("key: value") that add
// to or replace its defaults here.
func startChildOn(t *testing.T, dir, brokers string, spoolFirst bool, round int, admission ...string) (*child, []byte) {
	t.Helper()
	httpAddr, grpcAddr, adminAddr := freePort(t), freePort(t), freePort(t)
	contracts, err := filepath.Abs("../../examples/contracts.binpb")
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`gateway:
  grpc_addr: %s
  http_addr: %s
  publish_timeout: 5s
sources:
  - name: crash
    key_hashes: [%s]
    event_types: ["*"]
contracts:
  descriptor_set: %s
  types: [%s]
kafka:
  brokers: [%s]
  delivery_timeout: 3s
  linger: 0s
spool:
  dir: %s
  min_free_bytes: 1
  segment_bytes: 65536
admission:
  spool_first: %v
%s
log:
  level: warn
admin:
  addr: %s
`, grpcAddr, httpAddr, hashKey("crash-key"), contracts, strings.Join(examples.Types, ", "), brokers,
		filepath.Join(dir, "spool"), spoolFirst, admissionLines(admission), adminAddr)
	path := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("child-%d.log", round)))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SLUICE_TEST_CHILD=gateway", "SLUICE_TEST_CONFIG="+path)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, http: httpAddr, admin: adminAddr, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		logf.Close()
		close(c.exited)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = c.wait() })
	ready, gone := healthyOrExited(adminAddr, c.exited)
	if log, _ := os.ReadFile(logf.Name()); gone {
		return nil, append([]byte(fmt.Sprintf("(%v)\n", c.err)), log...)
	} else if !ready {
		t.Fatalf("round %d: gateway never became healthy:\n%s", round, log)
	}
	return c, nil
}

// admissionLines is the admission block's settings after spool_first:
// the crash tests' own, each replaced by a line of more with its key,
// then more's other lines.
func admissionLines(more []string) string {
	lines := []string{"latency_threshold: 300ms", "drain_timeout: 2s", "drain_backoff_max: 200ms"}
	for _, m := range more {
		key, _, _ := strings.Cut(m, ":")
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, key+":") })
		if i >= 0 {
			lines[i] = m
		} else {
			lines = append(lines, m)
		}
	}
	return "  " + strings.Join(lines, "\n  ")
}

// healthyOrExited waits until the child process whose exit closes exited
// answers /healthz on its admin listener at admin, or exits: an exit ends
// the wait at once, so a child that could not start (a listener it could
// not bind, say) is not waited for. It says which, if either.
func healthyOrExited(admin string, exited <-chan struct{}) (healthy, gone bool) {
	hasExited := func() bool {
		select {
		case <-exited:
			return true
		default:
			return false
		}
	}
	waitUntil(20*time.Second, func() bool {
		if hasExited() {
			return true
		}
		resp, err := http.Get("http://" + admin + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		healthy = resp.StatusCode == 200
		return healthy
	})
	return healthy, hasExited()
}

// waitUntil checks cond every few milliseconds until it holds or the time
// is up, and says which.
func waitUntil(limit time.Duration, cond func() bool) bool {
	deadline := time.After(limit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			return cond()
		}
	}
	return true
}

// ledger holds the ids a gateway answered ACCEPTED.
type ledger struct {
	mu  sync.Mutex
	ids map[string]string // id -> durability
	// at holds where an id answered KAFKA was said to be.
	at map[kafkaPosition]string
}

type kafkaPosition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset,string"`
}

// load sends batches of log lines until stop is closed or the gateway
// goes away, and writes every accepted id to the ledger.
func load(addr string, worker, round int, l *ledger, stop <-chan struct{}) {
	client := &http.Client{Timeout: 5 * time.Second}
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		now := time.Now().UTC().Format(time.RFC3339Nano)
		var events []string
		for i := range 10 {
			id := fmt.Sprintf("r%d-w%d-%d-%d", round, worker, n, i)
			events = append(events, fmt.Sprintf(`{"id":%q,"type":"examples.logs.v1.LogLine","occurred_at":%q,"partition_key":"k%d","payload":%s}`,
				id, now, i%4, bytes.TrimSpace(examples.LogLineJSON)))
		}
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/events", strings.NewReader(`{"events":[`+strings.Join(events, ",")+`]}`))
		req.Header.Set("X-Api-Key", "crash-key")
		resp, err := client.Do(req)
		if err != nil {
			return // the gateway was killed
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return
		}
		var out struct {
			Results []struct {
				ID         string         `json:"id"`
				Outcome    string         `json:"outcome"`
				Durability string         `json:"durability"`
				Kafka      *kafkaPosition `json:"kafka"`
			} `json:"results"`
		}
		if json.Unmarshal(body, &out) != nil {
			continue // a whole-request refusal: nothing acknowledged
		}
		l.mu.Lock()
		for _, r := range out.Results {
			if r.Outcome == "ACCEPTED" {
				l.ids[r.ID] = r.Durability
				if r.Kafka != nil {
					l.at[*r.Kafka] = r.ID
				}
			}
		}
		l.mu.Unlock()
	}
}

// TestCrashLosesNothingAcknowledged kills the gateway with SIGKILL at
// random moments under load, several rounds over one spool directory,
// with Kafka failing part of the time; then lets a last gateway drain the
// spool and reconciles the ledger of acknowledged ids against Kafka.
func TestCrashLosesNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("starts gateway processes")
	}
	var topics []string
	for _, typ := range examples.Types {
		topics = append(topics, record.EventTopic(typ))
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topics...))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	var outage atomic.Bool
	cluster.ControlKey(kmsg.Produce.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		if outage.Load() {
			return nil, errors.New("injected outage"), true
		}
		return nil, nil, false
	})
	brokers := strings.Join(cluster.ListenAddrs(), ",")
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)

	l := &ledger{ids: map[string]string{}, at: map[kafkaPosition]string{}}
	const rounds = 6
	for round := range rounds {
		// Rounds alternate: spool-first; direct with Kafka failing for a
		// while (events fall back to the spool); direct and healthy.
		spoolFirst := round%3 == 0
		c := startChild(t, dir, brokers, spoolFirst, round)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() { defer wg.Done(); load(c.http, w, round, l, stop) }()
		}
		if round%3 == 1 {
			outage.Store(true)
		}
		kill := time.Duration(200+rng.IntN(800)) * time.Millisecond
		<-time.After(kill)
		if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = c.wait()
		close(stop)
		wg.Wait()
		outage.Store(false)
		l.mu.Lock()
		t.Logf("round %d (spool_first=%v, outage=%v): killed after %v, %d acknowledged so far", round, spoolFirst, round%3 == 1, kill, len(l.ids))
		l.mu.Unlock()
	}

	// A last gateway drains what the killed ones spooled.
	c := startChild(t, dir, brokers, false, rounds)
	drained := waitUntil(60*time.Second, func() bool {
		resp, err := http.Get("http://" + c.admin + "/metrics")
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return regexp.MustCompile(`(?m)^sluice_spool_records 0$`).Match(body) &&
			regexp.MustCompile(`(?m)^sluice_admission_mode 0$`).Match(body)
	})
	if !drained {
		t.Fatal("the spool never drained")
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := c.wait(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}

	inKafka := map[string]int{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	missing := func() int {
		n := 0
		for id := range l.ids {
			if inKafka[id] == 0 {
				n++
			}
		}
		return n
	}
	// Every position answered KAFKA is read, and must hold the id answered.
	unread := maps.Clone(l.at)
	for (missing() > 0 || len(unread) > 0) && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key != record.HeaderEventID {
					continue
				}
				inKafka[string(h.Value)]++
				p := kafkaPosition{r.Topic, r.Partition, r.Offset}
				if want, ok := unread[p]; ok {
					if want != string(h.Value) {
						t.Errorf("%s was answered at %s[%d]@%d, where Kafka has %s", want, p.Topic, p.Partition, p.Offset, h.Value)
					}
					delete(unread, p)
				}
			}
		})
	}
	if len(unread) > 0 {
		t.Errorf("%d positions answered KAFKA were never read", len(unread))
	}
	dups, local := 0, 0
	for id, n := range inKafka {
		if n > 1 && l.ids[id] != "" {
			dups++
		}
	}
	for _, d := range l.ids {
		if d == "LOCAL_DISK" {
			local++
		}
	}
	t.Logf("%d rounds: %d acknowledged (%d LOCAL_DISK, %d at a Kafka position read back), %d lost, %d with a duplicate record in Kafka",
		rounds, len(l.ids), local, len(l.at), missing(), dups)
	if len(l.ids) == 0 || local == 0 {
		t.Fatalf("the test acknowledged %d events, %d spooled: it did not exercise the spool", len(l.ids), local)
	}
	if m := missing(); m > 0 {
		t.Fatalf("%d acknowledged events are not in Kafka", m)
	}
}
