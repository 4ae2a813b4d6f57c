package faultsuite

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// system is the sluice under test: one gateway process, consumer
// processes, the real broker and PostgreSQL server, and the scripts that
// stop and start those two.
type system struct {
	t       *testing.T
	root    string // the repository
	bin     string // the sluice binary
	dir     string
	brokers []string
	dsn     string
	run     string // prefix of this run's topics, table and group
	topic   string // where LogLine events go
	table   string

	gateway   *proc
	grpcAddr  string
	httpAddr  string
	spoolCap  int64 // the gateway's spool.max_bytes
	consumers []*proc
}

// proc is a sluice process the suite can kill and start again.
type proc struct {
	name string
	args []string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

func (s *system) newProc(name string, args ...string) *proc {
	return &proc{name: name, args: args, log: filepath.Join(s.dir, name+".log")}
}

func (s *system) start(p *proc) {
	s.t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	fmt.Fprintf(f, "---- start %s\n", time.Now().Format(time.RFC3339Nano))
	p.cmd = exec.Command(s.bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		f.Close()
		s.t.Fatalf("start %s: %v", p.name, err)
	}
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		_ = p.cmd.Wait()
		f.Close()
	}()
}

// kill SIGKILLs p and waits for it: a crash.
func (s *system) kill(p *proc) {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	p.cmd = nil
}

// stop asks p to shut down (SIGTERM) and waits, killing it after a minute.
func (s *system) stop(p *proc) {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		s.t.Errorf("%s did not stop within a minute of SIGTERM; killed", p.name)
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
	p.cmd = nil
}

// logTail is the end of a process's log, for failure messages.
func (p *proc) logTail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// freeAddr returns a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startGateway writes the gateway's config (spool cap and spool-first as
// given) and starts it, waiting until /readyz answers 200.
func (s *system) startGateway(spoolCap int64, spoolFirst bool) {
	s.t.Helper()
	s.spoolCap = spoolCap
	cfg := fmt.Sprintf(`gateway:
  grpc_addr: %[1]s
  http_addr: %[2]s
  publish_timeout: 5s
  unavailable_retry_after: 1s
  limits:
    max_events_per_request: 100
  topics:
    examples.logs.v1.LogLine: %[3]s
sources:
  - name: faults
    key_hashes: [%[4]q]
    event_types: ["*"]
contracts:
  descriptor_set: %[5]s
  types: [examples.logs.v1.LogLine]
kafka:
  brokers: [%[6]s]
  delivery_timeout: 5s
spool:
  dir: %[7]s
  segment_bytes: %[8]d
  max_bytes: %[9]d
  min_free_bytes: 1
admission:
  spool_first: %[10]v
  latency_threshold: 1s
  drain_timeout: 5s
  drain_backoff_max: 1s
log:
  level: info
`, s.grpcAddr, s.httpAddr, s.topic, hashKey(apiKey), filepath.Join(s.root, "examples", "contracts.binpb"),
		strings.Join(s.brokers, ", "), filepath.Join(s.dir, "spool"), min(spoolCap/4, 16<<20), spoolCap, spoolFirst)
	path := filepath.Join(s.dir, "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		s.t.Fatal(err)
	}
	if s.gateway == nil {
		s.gateway = s.newProc("gateway", "gateway", "--config", path)
	}
	s.start(s.gateway)
	s.waitReady()
}

func (s *system) waitReady() {
	s.t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-s.gateway.done:
			s.t.Fatalf("the gateway exited while starting:\n%s", s.gateway.logTail())
		default:
		}
		resp, err := client.Get("http://" + s.httpAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("the gateway was not ready within a minute:\n%s", s.gateway.logTail())
}

// consumerConfig writes the consumer tier's config once.
func (s *system) consumerConfig() string {
	path := filepath.Join(s.dir, "consumer.yaml")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	cfg := fmt.Sprintf(`consumer:
  group: %[1]s
  topics: [%[2]s]
  max_in_flight: 2048
  write_batch: 100
  sink_concurrency: 4
  write_timeout: 10s
  retry:
    max_attempts: 4
    initial_backoff: 100ms
    max_backoff: 1s
    max_elapsed: 5s
  breaker:
    window: 5s
    min_requests: 5
    failure_ratio: 0.5
    cooldown: 2s
  dlq:
    drain_rate: 500
    drain_interval: 5s
    max_retries: 5
    deadline: 1h
  commit_interval: 500ms
  revoke_timeout: 10s
  lag_interval: 1s
sink:
  kind: postgres
  postgres:
    dsn: %[3]q
    table: %[4]s
    max_conns: 4
    connect_timeout: 2s
    write_timeout: 10s
contracts:
  descriptor_set: %[5]s
  types: [examples.logs.v1.LogLine]
kafka:
  brokers: [%[6]s]
log:
  level: info
`, s.run+"-consumer", s.topic, s.dsn, s.table, filepath.Join(s.root, "examples", "contracts.binpb"), strings.Join(s.brokers, ", "))
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		s.t.Fatal(err)
	}
	return path
}

// addConsumer starts one more consumer process in the group.
func (s *system) addConsumer() *proc {
	s.t.Helper()
	p := s.newProc(fmt.Sprintf("consumer-%d", len(s.consumers)), "consumer", "--config", s.consumerConfig())
	s.consumers = append(s.consumers, p)
	s.start(p)
	return p
}

// script runs one of the repository's scripts (kafka.sh, postgres.sh).
func (s *system) script(name string, args ...string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(s.root, "scripts", name)}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		s.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
}

// createTopics makes the suite's topic and its DLQ and parked topics, four
// partitions each.
func (s *system) createTopics() {
	s.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.brokers...))
	if err != nil {
		s.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics := []string{s.topic, s.topic + ".dlq", s.topic + ".parked"}
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, 4, -1, nil, topics...)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			s.t.Fatalf("create topic %s: %v", r.Topic, r.Err)
		}
	}
}

// topicIDs reads a topic from the start to its current end and returns
// the event ids of its records, with how often each occurs.
func (s *system) topicIDs(topic string) map[string]int {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.brokers...))
	if err != nil {
		s.t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		s.t.Fatalf("end offsets of %s: %v", topic, err)
	}
	want := map[int32]int64{}
	offsets := map[string]map[int32]kgo.Offset{topic: {}}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			offsets[topic][o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	ids := map[string]int{}
	if len(want) == 0 {
		return ids
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(s.brokers...), kgo.ConsumePartitions(offsets))
	if err != nil {
		s.t.Fatal(err)
	}
	defer rd.Close()
	for len(want) > 0 {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			s.t.Fatalf("reading %s: %v (left: %v)", topic, ctx.Err(), want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == "sluice-event-id" {
					ids[string(h.Value)]++
				}
			}
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return ids
}
