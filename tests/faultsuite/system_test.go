package faultsuite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/record"
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
	adminAddr string // the gateway's admin listener: /metrics, /readyz
	spoolCap  int64  // the gateway's spool.max_bytes
	spoolDir  string // the gateway's spool.dir; empty: dir/spool
	segment   int64  // the gateway's spool.segment_bytes; 0: a quarter of the cap, at most 16 MiB
	tmpfs     bool   // spoolDir is a tmpfs of its own
	consumers []*proc
	// hookSecret is the webhook source's Standard Webhooks secret
	// (whsec_ and base64), in hookSecretFile for the gateway.
	hookSecret, hookSecretFile string
	// ledger is the running scenario's, for a fault that sends events of
	// its own.
	ledger *ledger
	// nodes are the cluster's nodes by id, each its client address, when
	// the brokers are scripts/kafka.sh's three-node cluster
	// (cluster_test.go); nil on one broker.
	nodes map[int]string
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

// logText is a process's whole log, over all its starts.
func (p *proc) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
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
// given) and starts it, waiting until /readyz answers 200. Besides the two
// API-key sources of the load it serves the client scenarios' two
// (clientSource, and limitedSource with a rate of limitedRate events a
// second and a bucket of limitedBurst) and hookSource, a Standard Webhooks
// source whose deliveries ({"type", "timestamp", "data"}, the spec's
// payload shape) carry a LogLine in data.
func (s *system) startGateway(spoolCap int64, spoolFirst bool) {
	s.t.Helper()
	s.spoolCap = spoolCap
	cfg := fmt.Sprintf(`topics:
  examples.logs.v1.LogLine: %[3]s
gateway:
  grpc_addr: %[1]s
  http_addr: %[2]s
  publish_timeout: 5s
  unavailable_retry_after: 1s
  limits:
    max_events_per_request: 100
    max_event_bytes: %[11]d
sources:
  - name: %[12]s
    key_hashes: [%[4]q]
    event_types: ["*"]
  - name: %[13]s
    key_hashes: [%[14]q]
    event_types: ["*"]
  - name: %[19]s
    key_hashes: [%[20]q]
    event_types: ["*"]
  - name: %[21]s
    key_hashes: [%[22]q]
    event_types: ["*"]
    rate: %[23]v
    burst: %[24]d
  - name: %[16]s
    event_types: [examples.logs.v1.LogLine]
    webhook:
      scheme: standard
      secret_files: [%[17]q]
      mapping:
        types: {%[18]s: examples.logs.v1.LogLine}
        occurred_at: /timestamp
        partition_key: /data/service
        payload: /data
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
admin:
  addr: %[15]s
`, s.grpcAddr, s.httpAddr, s.topic, hashKey(apiKey), filepath.Join(s.root, "examples", "contracts.binpb"),
		strings.Join(s.brokers, ", "), s.gatewaySpoolDir(), s.segmentBytes(spoolCap), spoolCap, spoolFirst,
		maxEventBytes, sourceA, sourceB, hashKey(apiKeyB), s.adminAddr, hookSource, s.hookSecretFile, hookType,
		clientSource, hashKey(clientKey), limitedSource, hashKey(limitedKey), limitedRate, limitedBurst)
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

func (s *system) segmentBytes(spoolCap int64) int64 {
	if s.segment != 0 {
		return s.segment
	}
	return min(spoolCap/4, 16<<20)
}

// gatewaySpoolDir is where the gateway spools: spoolDir when a scenario
// set one, dir/spool otherwise.
func (s *system) gatewaySpoolDir() string {
	if s.spoolDir != "" {
		return s.spoolDir
	}
	return filepath.Join(s.dir, "spool")
}

// gatewayMetric reads one sample of the gateway's /metrics: the first line
// that is name, or name with labels that include labels (`k="v"` pairs).
// ok is false when the gateway does not answer or has no such sample.
func (s *system) gatewayMetric(name string, labels ...string) (v float64, ok bool) {
	samples, ok := s.gatewaySamples(name, labels...)
	if !ok || len(samples) == 0 {
		return 0, false
	}
	return samples[0], true
}

// gatewayMetricSum is the sum of every sample of the gateway's metric name
// whose labels include labels; 0 when there is none.
func (s *system) gatewayMetricSum(name string, labels ...string) float64 {
	samples, _ := s.gatewaySamples(name, labels...)
	sum := 0.0
	for _, v := range samples {
		sum += v
	}
	return sum
}

// gatewaySamples scrapes the gateway's /metrics for the samples of name
// whose labels include labels, in the order it lists them. ok is false when
// the gateway does not answer.
func (s *system) gatewaySamples(name string, labels ...string) (samples []float64, ok bool) {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get("http://" + s.adminAddr + "/metrics")
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, false
	}
	for _, line := range strings.Split(string(body), "\n") {
		series, value, found := strings.Cut(line, " ")
		if !found || !(series == name || strings.HasPrefix(series, name+"{")) {
			continue
		}
		matches := true
		for _, l := range labels {
			matches = matches && strings.Contains(series, l)
		}
		if f, err := strconv.ParseFloat(value, 64); matches && err == nil {
			samples = append(samples, f)
		}
	}
	return samples, true
}

// waitMetric waits, at most d, until the gateway's metric satisfies cond.
func (s *system) waitMetric(d time.Duration, name string, cond func(float64) bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if v, ok := s.gatewayMetric(name); ok && cond(v) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// waitAccepted waits until the running gateway has accepted n more events
// than when it was called: the load reaches it and Kafka or the spool
// takes it. A scenario's fault starts then, not after a fixed time.
func (s *system) waitAccepted(n float64) {
	s.t.Helper()
	const series = `outcome="ACCEPTED"`
	from := s.gatewayMetricSum("sluice_events_total", series)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if s.gatewayMetricSum("sluice_events_total", series)-from >= n {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Errorf("the gateway did not accept %v events within a minute", n)
}

// waitDrained waits, at most d, until the gateway's spool is empty and
// admission is DIRECT.
func (s *system) waitDrained(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		records, ok1 := s.gatewayMetric("sluice_spool_records")
		mode, ok2 := s.gatewayMetric("sluice_admission_mode")
		if ok1 && ok2 && records == 0 && mode == 0 {
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

// mountTmpfs mounts a tmpfs of size bytes at dir, for a spool whose disk
// fills; it reports false, with why, where mounting is not allowed.
func (s *system) mountTmpfs(dir string, size int64) (bool, string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		return false, strings.TrimSpace(string(out)) + ": " + err.Error()
	}
	s.t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return true, ""
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
		resp, err := client.Get("http://" + s.adminAddr + "/readyz")
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

// consumerConfigOf writes consumer n's config: the shared one with an admin
// listener of its own, so that consumers on one host do not collide.
func (s *system) consumerConfigOf(n int) string {
	base, err := os.ReadFile(s.consumerConfig())
	if err != nil {
		s.t.Fatal(err)
	}
	path := filepath.Join(s.dir, fmt.Sprintf("consumer-%d.yaml", n))
	cfg := string(base) + fmt.Sprintf("admin:\n  addr: %s\n", freeAddr(s.t))
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		s.t.Fatal(err)
	}
	return path
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
	p := s.newProc(fmt.Sprintf("consumer-%d", len(s.consumers)), "consumer", "--config", s.consumerConfigOf(len(s.consumers)))
	s.consumers = append(s.consumers, p)
	s.start(p)
	return p
}

// script runs one of the repository's scripts (kafka.sh, postgres.sh) and
// stops the test when it fails.
func (s *system) script(name string, args ...string) {
	s.t.Helper()
	if _, err := s.scriptOut(name, args...); err != nil {
		s.t.Fatal(err)
	}
}

// scriptOut runs one of the repository's scripts, at most three minutes,
// and returns its stdout; an error carries what it printed. The script
// gets the test's environment: kafka.sh's cluster commands find the
// cluster by SLUICE_KAFKA_CLUSTER_PORT and SLUICE_RUN, as cluster up did.
func (s *system) scriptOut(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(s.root, "scripts", name)}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// createTopics makes the suite's topic and its DLQ and parked topics, four
// partitions each, and sluice.audit unless it exists: the consumer records
// there the decisions the sink's audit table does not take (PostgreSQL
// stopped), and does not create it.
func (s *system) createTopics() {
	s.t.Helper()
	kafkatest.EnsureTopicOn(s.t, []kgo.Opt{kgo.SeedBrokers(s.brokers...)}, record.AuditTopic)
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.brokers...))
	if err != nil {
		s.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The DLQ topic takes records of at most dlqMaxMessageBytes: an
	// oversized poison event's dead letter is refused there and parked.
	dlqLimit := strconv.Itoa(dlqMaxMessageBytes)
	for topics, configs := range map[string]map[string]*string{
		s.topic + "," + s.topic + ".parked": nil,
		s.topic + ".dlq":                    {"max.message.bytes": &dlqLimit},
	} {
		resp, err := kadm.NewClient(cl).CreateTopics(ctx, 4, -1, configs, strings.Split(topics, ",")...)
		if err != nil {
			s.t.Fatal(err)
		}
		for _, r := range resp.Sorted() {
			if r.Err != nil {
				s.t.Fatalf("create topic %s: %v", r.Topic, r.Err)
			}
		}
	}
}

// topicIDs reads a topic from the start to its current end and returns
// the identities (source and event id) of its records, with how often each
// occurs; visit, when not nil, sees every record.
func (s *system) topicIDs(topic string, visit func(*kgo.Record)) map[string]int {
	return s.topicIDsFrom(topic, nil, visit)
}

// endOffsets are a topic's end offsets now, by partition.
func (s *system) endOffsets(topic string) map[int32]int64 {
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
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// topicIDsFrom is topicIDs from the offsets from (endOffsets' earlier
// answer) instead of the start; a partition from lacks is read from its
// start.
func (s *system) topicIDsFrom(topic string, from map[int32]int64, visit func(*kgo.Record)) map[string]int {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want := map[int32]int64{}
	offsets := map[string]map[int32]kgo.Offset{topic: {}}
	for p, end := range s.endOffsets(topic) {
		start, ok := from[p]
		if end > start {
			want[p] = end
			offsets[topic][p] = kgo.NewOffset().AtStart()
			if ok {
				offsets[topic][p] = kgo.NewOffset().At(start)
			}
		}
	}
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
			var source, id string
			for _, h := range r.Headers {
				switch h.Key {
				case "sluice-event-id":
					id = string(h.Value)
				case "sluice-source":
					source = string(h.Value)
				}
			}
			if id != "" {
				ids[identity(source, id)]++
			}
			if visit != nil {
				visit(r)
			}
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return ids
}

// breakCursor makes the gateway's spool cursor writes fail, as a full or
// failing disk would: a directory takes the name of the temp file the
// cursor is written through (the spool removes strays only when it opens).
// fix removes it.
func (s *system) breakCursor() (fix func()) {
	s.t.Helper()
	tmp := filepath.Join(s.gatewaySpoolDir(), "cursor.tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		s.t.Errorf("breaking the spool's cursor: %v", err)
		return func() {}
	}
	return func() {
		if err := os.Remove(tmp); err != nil {
			s.t.Errorf("restoring the spool's cursor: %v", err)
		}
	}
}

// killDuringDrain stops Kafka until the gateway has spooled a backlog,
// starts it again, SIGKILLs the gateway while its drainer is publishing
// the spool, and starts it again on the same spool. A round whose drain is
// over before the kill is tried again, up to three times. It reports how
// many records were still spooled at the last look before the kill.
func (s *system) killDuringDrain(spoolCap int64) float64 {
	s.t.Helper()
	for range 3 {
		s.script("kafka.sh", "stop")
		if !s.waitMetric(time.Minute, "sluice_spool_records", func(v float64) bool { return v >= 8000 }) {
			s.t.Error("the gateway did not spool a backlog while Kafka was stopped")
		}
		drained, _ := s.gatewayMetric("sluice_spool_drained_records_total")
		// The broker serves the gateway before kafka.sh start returns:
		// watch the drain while it starts.
		started := make(chan struct{})
		go func() {
			defer close(started)
			s.script("kafka.sh", "start")
		}()
		left := -1.0
		deadline := time.Now().Add(2 * time.Minute)
		for left < 0 && time.Now().Before(deadline) {
			now, ok1 := s.gatewayMetric("sluice_spool_drained_records_total")
			records, ok2 := s.gatewayMetric("sluice_spool_records")
			if ok1 && ok2 && now > drained {
				left = records
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		s.kill(s.gateway)
		<-started
		s.startGateway(spoolCap, false)
		s.t.Logf("gateway SIGKILLed during a drain, %v records still spooled", left)
		if left > 0 {
			return left
		}
	}
	s.t.Error("the drain was over before every kill: no round killed the gateway during a drain")
	return 0
}
