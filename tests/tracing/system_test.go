package tracing_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/record"
)

const (
	apiKey    = "tracing-suite-key"
	source    = "tracing"
	eventType = "examples.logs.v1.LogLine"
)

// system is what the test runs: Jaeger, a gateway and a consumer, each a
// process of its own, against the broker and the PostgreSQL server it was
// given.
type system struct {
	t       *testing.T
	root    string // the repository
	bin     string // the sluice binary
	dir     string
	brokers []string
	dsn     string
	run     string // this run's prefix: topics, table, group
	topic   string
	table   string

	grpcAddr, httpAddr, adminAddr string // the gateway's
	otlpGRPC, otlpHTTP            string // Jaeger's receiver
	queryHTTP, queryGRPC, health  string // Jaeger's query API and health check
}

// proc is a process the test started; stopped at cleanup.
type proc struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

func (s *system) start(name, bin string, env []string, args ...string) *proc {
	s.t.Helper()
	p := &proc{name: name, log: filepath.Join(s.dir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		s.t.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		f.Close()
		s.t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		defer close(p.done)
		_ = p.cmd.Wait()
		f.Close()
	}()
	s.t.Cleanup(func() { s.stop(p) })
	return p
}

// stop asks p to shut down (SIGTERM: the sluice roles export what spans
// they hold) and waits, killing it after 30 s.
func (s *system) stop(p *proc) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		s.t.Errorf("%s did not stop within 30 s of SIGTERM; killed", p.name)
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
}

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

func hashKey(k string) string {
	sum := sha256.Sum256([]byte(k))
	return hex.EncodeToString(sum[:])
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func newSystem(t *testing.T, brokers []string, dsn string) *system {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	s := &system{
		t:       t,
		root:    filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..")),
		dir:     t.TempDir(),
		brokers: brokers,
		dsn:     dsn,
		run:     fmt.Sprintf("tracing-%d", time.Now().UnixNano()),
	}
	s.topic = s.run + ".logs"
	s.table = strings.ReplaceAll(s.run, "-", "_")
	for _, a := range []*string{&s.grpcAddr, &s.httpAddr, &s.adminAddr, &s.otlpGRPC, &s.otlpHTTP, &s.queryHTTP, &s.queryGRPC, &s.health} {
		*a = freeAddr(t)
	}
	s.bin = filepath.Join(s.dir, "sluice")
	build := exec.Command("go", "build", "-o", s.bin, "./cmd/sluice")
	build.Dir = s.root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return s
}

// startJaeger starts Jaeger on testdata/jaeger.yaml and waits until its
// health check says it serves.
func (s *system) startJaeger(bin string) {
	s.t.Helper()
	p := s.start("jaeger", bin, []string{
		"JAEGER_OTLP_GRPC=" + s.otlpGRPC, "JAEGER_OTLP_HTTP=" + s.otlpHTTP,
		"JAEGER_QUERY_HTTP=" + s.queryHTTP, "JAEGER_QUERY_GRPC=" + s.queryGRPC, "JAEGER_HEALTH_HTTP=" + s.health,
	}, "--config", filepath.Join(s.root, "tests", "tracing", "testdata", "jaeger.yaml"))
	s.waitHTTP(p, "http://"+s.health+"/status")
}

// waitHTTP waits, at most a minute, until url answers 200 while p runs.
func (s *system) waitHTTP(p *proc, url string) {
	s.t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			s.t.Fatalf("%s exited while starting:\n%s", p.name, p.logTail())
		default:
		}
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("%s did not answer %s within a minute:\n%s", p.name, url, p.logTail())
}

// tracingBlock is both roles' tracing block: OTLP/gRPC to Jaeger, and a
// ratio of 0, so that only a caller's sampled flag keeps a trace.
func (s *system) tracingBlock() string {
	return fmt.Sprintf(`tracing:
  enabled: true
  exporter:
    protocol: grpc
    endpoint: %s
    insecure: true
  sampler:
    ratio: 0
`, s.otlpGRPC)
}

func (s *system) contracts() string {
	return filepath.Join(s.root, "examples", "contracts.binpb")
}

func (s *system) writeFile(name, text string) string {
	s.t.Helper()
	path := filepath.Join(s.dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		s.t.Fatal(err)
	}
	return path
}

func (s *system) startGateway() *proc {
	s.t.Helper()
	cfg := s.writeFile("gateway.yaml", fmt.Sprintf(`topics:
  %[1]s: %[2]s
gateway:
  grpc_addr: %[3]s
  http_addr: %[4]s
  publish_timeout: 5s
sources:
  - name: %[5]s
    key_hashes: [%[6]q]
    event_types: ["*"]
contracts:
  descriptor_set: %[7]s
  types: [%[1]s]
kafka:
  brokers: [%[8]s]
  delivery_timeout: 5s
spool:
  dir: %[9]s
log:
  level: info
admin:
  addr: %[10]s
`, eventType, s.topic, s.grpcAddr, s.httpAddr, source, hashKey(apiKey), s.contracts(),
		strings.Join(s.brokers, ", "), filepath.Join(s.dir, "spool"), s.adminAddr)+s.tracingBlock())
	p := s.start("gateway", s.bin, nil, "gateway", "--config", cfg)
	s.waitHTTP(p, "http://"+s.adminAddr+"/readyz")
	return p
}

// consumerConfig writes the consumer's config (a PostgreSQL sink): the
// consumer, `sluice sink migrate` and `sluice trace` read it.
func (s *system) consumerConfig() string {
	return s.writeFile("consumer.yaml", fmt.Sprintf(`consumer:
  group: %[1]s
  topics: [%[2]s]
  write_batch: 100
  write_timeout: 10s
  commit_interval: 500ms
sink:
  kind: postgres
  postgres:
    dsn: %[3]q
    table: %[4]s
    max_conns: 2
    connect_timeout: 2s
    write_timeout: 10s
contracts:
  descriptor_set: %[5]s
  types: [%[6]s]
kafka:
  brokers: [%[7]s]
log:
  level: info
admin:
  addr: %[8]s
`, s.run+"-consumer", s.topic, s.dsn, s.table, s.contracts(), eventType, strings.Join(s.brokers, ", "), freeAddr(s.t))+s.tracingBlock())
}

// createTopics makes the run's topic, its DLQ and parked topics, and
// sluice.audit unless it exists.
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
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, 2, -1, nil, s.topic, record.DLQTopic(s.topic), record.ParkedTopic(s.topic))
	if err != nil {
		s.t.Fatal(err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			s.t.Fatalf("create topic %s: %v", r.Topic, r.Err)
		}
	}
}

// send publishes one LogLine over REST with the given traceparent and
// checks that the gateway accepted it.
func (s *system) send(id, traceparent string) {
	s.t.Helper()
	now := time.Now().UTC().Format(time.RFC3339Nano)
	body := fmt.Sprintf(`{"events":[{"id":%q,"type":%q,"occurred_at":%q,"partition_key":"checkout-api","payload":{"service":"checkout-api","severity":"SEVERITY_INFO","message":"traced","timestamp":%q,"host":"127.0.0.1"}}]}`,
		id, eventType, now, now)
	req, err := http.NewRequest(http.MethodPost, "http://"+s.httpAddr+"/v1/events", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", apiKey)
	req.Header.Set("traceparent", traceparent)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(answer, []byte(`"outcome":"ACCEPTED"`)) {
		s.t.Fatalf("POST /v1/events (%s): %s %s", id, resp.Status, answer)
	}
}

// auditTraceID waits, at most a minute, for the event's written row in the
// sink's audit table, then returns its trace_id; a failure to read the
// column fails the test but not at once, so that the spans are still
// checked.
func (s *system) auditTraceID(id string) string {
	s.t.Helper()
	deadline := time.Now().Add(time.Minute)
	var last error
	for {
		var n int
		last = s.queryAudit(id, "count(*)", &n)
		if last == nil && n > 0 {
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no written audit row for %s/%s within a minute (%v)", source, id, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var traceID string
	if err := s.queryAudit(id, "trace_id", &traceID); err != nil {
		s.t.Errorf("the trace_id of %s/%s's written audit row: %v", source, id, err)
	}
	return traceID
}

// queryAudit reads expr of the event's written audit row into dst.
func (s *system) queryAudit(id, expr string, dst any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(ctx, fmt.Sprintf(`SELECT %s FROM %s WHERE source = $1 AND event_id = $2 AND action = 'written'`,
		expr, pgx.Identifier{s.table + "_audit"}.Sanitize()), source, id).Scan(dst)
}

// sluiceTrace runs `sluice trace` for the event, with args, and returns
// what it printed.
func (s *system) sluiceTrace(cfg, id string, args ...string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, append([]string{"trace", "--config", cfg, "--source", source, "--id", id}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		s.t.Fatalf("sluice trace %s %v: %v\n%s%s", id, args, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestIntegrationTracing sends an event with a sampled traceparent through
// a gateway and a consumer into PostgreSQL, fetches its trace from Jaeger
// and checks its spans' names, parents and times; then an event with a
// malformed traceparent, which must start a trace of its own.
func TestIntegrationTracing(t *testing.T) {
	jaegerBin := os.Getenv("SLUICE_JAEGER_BIN")
	if jaegerBin == "" {
		t.Skip("SLUICE_JAEGER_BIN is not set: skipping the tracing test (.ci/steps/jaeger.sh builds Jaeger and prints its path)")
	}
	brokers := kafkatest.Brokers(t)
	dsn := os.Getenv("SLUICE_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("SLUICE_POSTGRES_DSN is not set: skipping the tracing test (scripts/postgres.sh up starts PostgreSQL)")
	}
	s := newSystem(t, brokers, dsn)
	s.createTopics()
	s.startJaeger(jaegerBin)
	consumerCfg := s.consumerConfig()
	if out, err := exec.Command(s.bin, "sink", "migrate", "--config", consumerCfg).CombinedOutput(); err != nil {
		t.Fatalf("sluice sink migrate: %v\n%s", err, out)
	}
	gateway := s.startGateway()
	consumer := s.start("consumer", s.bin, nil, "consumer", "--config", consumerCfg)
	dump := func() {
		if t.Failed() {
			t.Logf("gateway log:\n%s\nconsumer log:\n%s", gateway.logTail(), consumer.logTail())
		}
	}
	defer dump()

	// The caller's span: a trace id and span id of its own, sampled.
	traceID, callerSpan := randomHex(t, 16), randomHex(t, 8)
	const id = "traced-1"
	s.send(id, "00-"+traceID+"-"+callerSpan+"-01")
	if got := s.auditTraceID(id); got != traceID {
		t.Errorf("the audit row of %s has trace_id %q, want the caller's %s", id, got, traceID)
	}

	tr := s.fetchTrace(traceID, []string{"POST /v1/events", "send " + s.topic, "process " + s.topic, "sink write "})
	t.Logf("the trace from Jaeger:\n%s", tr.text(s.run))
	checkTrace(t, tr, s.topic, callerSpan)

	// sluice trace shows the trace id, in text and in JSON.
	if out := s.sluiceTrace(consumerCfg, id); !strings.Contains(out, "trace "+traceID) {
		t.Errorf("sluice trace does not print %q:\n%s", "trace "+traceID, out)
	}
	if out := s.sluiceTrace(consumerCfg, id, "--json"); !strings.Contains(out, `"trace_id": "`+traceID+`"`) &&
		!strings.Contains(out, `"trace_id":"`+traceID+`"`) {
		t.Errorf("sluice trace --json has no trace_id %s:\n%s", traceID, out)
	}

	// A malformed traceparent (upper-case hex) is dropped: the gateway's
	// span is a new root, whose trace id the record and its audit row
	// carry.
	badTrace := "ABCDEF" + strings.ToUpper(randomHex(t, 13)) // never valid: upper-case letters
	const badID = "malformed-1"
	s.send(badID, "00-"+badTrace+"-"+strings.ToUpper(randomHex(t, 8))+"-01")
	got := s.auditTraceID(badID)
	switch {
	case strings.EqualFold(got, badTrace):
		t.Errorf("the audit row of %s carries the malformed traceparent's trace id %s", badID, got)
	case len(got) != 32 || strings.Trim(got, "0") == "" || strings.ToLower(got) != got:
		t.Errorf("the audit row of %s has trace_id %q, want a fresh trace id (32 lower-case hex digits)", badID, got)
	case got == traceID:
		t.Errorf("the audit row of %s has the first event's trace id", badID)
	}

	if *writeTraceDoc && !t.Failed() {
		writeDoc(t, filepath.Join(s.root, "docs", "tracing.md"), tr.text(s.run))
	}
}
