package faultsuite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/audit"
	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/tools/loadgen"
)

const (
	apiKey    = "faults-key"
	apiKeyB   = "faults-key-b"
	sourceA   = "faults"
	sourceB   = "faults-b"
	eventType = "examples.logs.v1.LogLine"
	// settle bounds the wait, after a scenario's load, for every
	// acknowledged event to reach the sink, the DLQ or the parked topic.
	settle = 3 * time.Minute
	// maxEventBytes is the gateway's limits.max_event_bytes; an oversized
	// poison event comes close to it.
	maxEventBytes = 32 << 10
	// dlqMaxMessageBytes is the DLQ topic's max.message.bytes (which Kafka
	// applies to the compressed batch): below an oversized poison event's
	// dead letter, above every other one.
	dlqMaxMessageBytes = 12 << 10
)

// identity is how the ledger and the checker name an event: its source
// and its id, as the dedup window and the sink do.
func identity(source, id string) string { return source + "/" + id }

func hashKey(k string) string {
	sum := sha256.Sum256([]byte(k))
	return hex.EncodeToString(sum[:])
}

// scenario is one bounded run of load with a fault beside it.
type scenario struct {
	name string
	load load
	// before and after change the system around the scenario (after may
	// send events of its own, recorded in the ledger); fault runs beside
	// the load and returns when the fault is over.
	before func(s *system)
	after  func(s *system, l *ledger)
	fault  func(s *system)
	// check adds the scenario's own expectations to the ledger's.
	check func(t *testing.T, l *ledger, r result)
	// allInSink: the scenario ends only when every acknowledged event is
	// in the sink (retryable dead letters drained back), not only when
	// none is lost.
	allInSink bool
	// client, when set, is the scenario's load instead of load: clients
	// of package client (client_test.go).
	client *clientLoad
	// line, when set, is the scenario's own line after the table (after
	// its name): what its fault did and what it saw.
	line func(s *system, l *ledger, r result) string
}

// TestIntegrationFaults runs every scenario against one system and prints
// a line of accounting for each. lost, duplicated-in-sink and
// audit-mismatch must be 0.
func TestIntegrationFaults(t *testing.T) {
	if os.Getenv(EnvCluster) == "1" {
		// Its faults stop and start the single broker of kafka.sh up.
		t.Skip(EnvCluster + " is 1: the single-broker suite does not run against the cluster (TestIntegrationClusterFaults does)")
	}
	brokers := kafkatest.Brokers(t)
	dsn := os.Getenv("SLUICE_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("SLUICE_POSTGRES_DSN is not set: skipping the fault suite (scripts/postgres.sh up starts PostgreSQL)")
	}
	s := newSystem(t, brokers, dsn)

	const normalSpool = 256 << 20
	scenarios := []scenario{
		{name: "steady", load: load{duration: 15 * time.Second, hooks: 1}},
		{name: "gateway-sigkill", load: load{duration: 60 * time.Second, hooks: 2}, fault: func(s *system) {
			// Kills while the gateway publishes directly, then while its
			// drainer empties the spool into Kafka after an outage.
			for range 2 {
				s.waitAccepted(4000)
				s.kill(s.gateway)
				s.startGateway(normalSpool, false)
			}
			for range 2 {
				s.killDuringDrain(normalSpool)
			}
		}, check: func(t *testing.T, l *ledger, r result) {
			// The webhook senders met the kills: attempts without an
			// answer, retried with the same id and body, signed again.
			if l.hooks.noAnswer == 0 || l.hooks.ackedOnRetry == 0 || l.hooks.resigned != l.hooks.retries {
				t.Errorf("webhook attempts without an answer %d, acknowledged on a retry %d, retries %d, re-signed %d: the deliveries must meet the kills and be retried, each signed again",
					l.hooks.noAnswer, l.hooks.ackedOnRetry, l.hooks.retries, l.hooks.resigned)
			}
		}},
		{name: "kafka-stopped-30s", load: load{duration: 45 * time.Second}, fault: func(s *system) {
			s.waitAccepted(4000)
			s.script("kafka.sh", "stop")
			time.Sleep(30 * time.Second) // the outage itself
			s.script("kafka.sh", "start")
		}},
		{name: "postgres-stopped-30s", load: load{duration: 45 * time.Second}, allInSink: true, fault: func(s *system) {
			s.waitAccepted(4000)
			s.script("postgres.sh", "stop")
			time.Sleep(30 * time.Second) // the outage itself
			s.script("postgres.sh", "start")
		}},
		{name: "consumer-sigkill-and-join", load: load{duration: 25 * time.Second}, fault: func(s *system) {
			s.waitAccepted(4000)
			s.kill(s.consumers[0])
			time.Sleep(2 * time.Second) // the consumer stays dead this long
			s.start(s.consumers[0])
			s.waitAccepted(4000)
			s.addConsumer()
		}},
		{name: "two-sources-shared-ids", load: load{duration: 15 * time.Second, sources: []string{sourceA, sourceB}},
			after: func(s *system, l *ledger) {
				// A restarted gateway has an empty dedup window: the same
				// source's ids again, with other payloads, reach the sink,
				// which keeps the first and counts the conflict.
				s.stop(s.gateway)
				s.startGateway(normalSpool, false)
				s.resendChanged(l, "two-sources-shared-ids", sourceA, 25)
			},
			check: func(t *testing.T, l *ledger, r result) {
				if l.shared == 0 || l.conflictsSent == 0 || r.conflicts != l.conflictsSent {
					t.Errorf("ids shared by two sources %d; conflicting copies acknowledged %d, conflicts recorded %d", l.shared, l.conflictsSent, r.conflicts)
				}
			}},
		{name: "changed-payload-resend", load: load{duration: 15 * time.Second},
			fault: func(s *system) {
				// Beside the load: ids the source was answered for seconds
				// ago, sent again with other payloads, and new ids sent
				// twice in one request with two payloads.
				s.waitAccepted(400)
				s.resendChangedWithinWindow("changed-payload-resend", 12*time.Second)
			},
			check: func(t *testing.T, l *ledger, r result) {
				// Each changed copy refused IDEMPOTENCY_CONFLICT with both
				// fingerprints; none published, so the sink's conflicts
				// table has nothing of the scenario and every first
				// payload is what the sink holds.
				if l.conflictsRefused == 0 || l.conflictsMisjudged != 0 || r.conflicts != 0 || r.secondPayloads != 0 {
					t.Errorf("changed payloads refused %d, answered otherwise %d (first: %s); sink conflicts %d, second payloads in the sink %d",
						l.conflictsRefused, l.conflictsMisjudged, l.firstMisjudged, r.conflicts, r.secondPayloads)
				}
			}},
		{name: "poison-1pct", load: load{duration: 15 * time.Second, poisonEvery: 100}, check: func(t *testing.T, l *ledger, r result) {
			// Every poison event in the DLQ, every other one in the sink.
			if len(l.poison) == 0 || r.inDLQ != len(l.poison) || r.inSink != r.acked-len(l.poison) {
				t.Errorf("poison acknowledged %d, in DLQ %d; others %d, in sink %d", len(l.poison), r.inDLQ, r.acked-len(l.poison), r.inSink)
			}
		}},
		{name: "oversized-poison", load: load{duration: 15 * time.Second, oversizedEvery: 150},
			check: func(t *testing.T, l *ledger, r result) {
				// Too large for the DLQ topic: parked, whole, with the
				// envelope and what refused it; everything else written.
				if len(l.poison) == 0 || r.parked != len(l.poison) || r.inSink != r.acked-len(l.poison) {
					t.Errorf("oversized poison acknowledged %d, parked %d; others %d, in sink %d", len(l.poison), r.parked, r.acked-len(l.poison), r.inSink)
				}
				if r.parkedWithEnvelope != r.parked {
					t.Errorf("%d of %d parked records carry their envelope and refusal", r.parkedWithEnvelope, r.parked)
				}
			}},
		{
			name:      "disk-full-kafka-stopped",
			load:      load{duration: 20 * time.Second, workers: 8, batch: 50, pace: time.Nanosecond},
			allInSink: true,
			before: func(s *system) {
				s.stop(s.gateway)
				// Small segments: acknowledging the first ones frees the
				// space the cursor is written in.
				s.spoolDir, s.segment = filepath.Join(s.dir, "tmpfs-spool"), 512<<10
				if ok, why := s.mountTmpfs(s.spoolDir, 6<<20); !ok {
					// Without tmpfs the spool's cap stands in for the disk.
					s.t.Logf("disk-full-kafka-stopped: no tmpfs (%s); the spool's 6 MiB cap fills instead", why)
					s.tmpfs = false
					s.startGateway(6<<20, false)
					return
				}
				s.tmpfs = true
				s.startGateway(normalSpool, false)
			},
			fault: func(s *system) {
				s.waitAccepted(1000)
				s.script("kafka.sh", "stop")
				if !s.waitMetric(40*time.Second, "sluice_admission_buffer_full_records_total", func(v float64) bool { return v > 0 }) {
					s.t.Error("disk-full-kafka-stopped: the spool never refused BUFFER_FULL")
				}
				// The drainer's first acknowledgements fail too, as on a
				// full or failing disk: its cursor file cannot be written.
				failedBefore, _ := s.gatewayMetric("sluice_spool_drain_errors_total")
				fix := s.breakCursor()
				s.script("kafka.sh", "start")
				// Kept broken until the drain, with Kafka back, has failed
				// to write its cursor (a minute at most: the drain first
				// waits out the records' delivery timeout).
				met := s.waitMetric(time.Minute, "sluice_spool_drain_errors_total", func(v float64) bool {
					return v > failedBefore && strings.Contains(s.gateway.logText(), "acknowledging the spool")
				})
				fix()
				if !met {
					failed, _ := s.gatewayMetric("sluice_spool_drain_errors_total")
					s.t.Errorf("disk-full-kafka-stopped: %d failed cursor writes logged, drain errors %v -> %v within a minute: the drain never met the failing cursor",
						strings.Count(s.gateway.logText(), "acknowledging the spool"), failedBefore, failed)
				}
			},
			after: func(s *system, _ *ledger) {
				if !s.waitDrained(2 * time.Minute) {
					s.t.Error("disk-full-kafka-stopped: the spool did not drain")
				}
				s.stop(s.gateway)
				s.spoolDir, s.segment = "", 0
				s.startGateway(normalSpool, false)
			},
			check: func(t *testing.T, l *ledger, r result) {
				if l.bufferFull == 0 || l.localDisk == 0 {
					t.Errorf("BUFFER_FULL answers %d, LOCAL_DISK acknowledgements %d: the scenario needs both", l.bufferFull, l.localDisk)
				}
				// On the tmpfs it is the disk that fills, not the cap:
				// the spool's free-space check (disk_floor) or the
				// filesystem itself (enospc).
				t.Logf("disk-full-kafka-stopped: BUFFER_FULL by reason %v", l.fullReasons)
				if s.tmpfs && l.fullReasons["disk_floor"]+l.fullReasons["enospc"] == 0 {
					t.Errorf("BUFFER_FULL by reason %v: the spool's disk never filled", l.fullReasons)
				}
			},
		},
		{
			name: "burst-over-spool-cap",
			load: load{duration: 20 * time.Second, workers: 16, batch: 100, pace: time.Nanosecond, hooks: 1},
			before: func(s *system) {
				s.stop(s.gateway)
				s.startGateway(1<<20, true)
			},
			fault: func(s *system) {
				// With the broker away the spool only fills: the burst
				// meets the cap for certain.
				s.waitAccepted(1000)
				s.script("kafka.sh", "stop")
				time.Sleep(10 * time.Second) // the outage itself
				s.script("kafka.sh", "start")
			},
			after: func(s *system, _ *ledger) {
				s.stop(s.gateway)
				s.startGateway(normalSpool, false)
			},
			check: func(t *testing.T, l *ledger, r result) {
				if l.bufferFull == 0 {
					t.Error("no caller saw BUFFER_FULL: the burst never reached the spool cap")
				}
				// The webhook sender too: 503 with Retry-After, retried
				// until the spool took the delivery.
				if l.hooks.byStatus[503] == 0 || l.hooks.ackedOnRetry == 0 {
					t.Errorf("webhook answers by status %v, acknowledged on a retry %d: the webhook sender must meet the full spool and retry past it",
						l.hooks.byStatus, l.hooks.ackedOnRetry)
				}
			},
		},
	}

	scenarios = append(scenarios, clientScenarios(normalSpool)...)
	scenarios = append(scenarios, noisyScenarios(normalSpool)...)

	runScenarios(t, s, normalSpool, scenarios)
}

func newSystem(t *testing.T, brokers []string, dsn string) *system {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	s := &system{
		t:         t,
		root:      root,
		dir:       t.TempDir(),
		brokers:   brokers,
		dsn:       dsn,
		run:       fmt.Sprintf("faults-%d", time.Now().UnixNano()),
		grpcAddr:  freeAddr(t),
		httpAddr:  freeAddr(t),
		adminAddr: freeAddr(t),
	}
	s.topic = s.run + ".logs"
	s.table = strings.ReplaceAll(s.run, "-", "_")
	s.bin = filepath.Join(s.dir, "sluice")
	build := exec.Command("go", "build", "-o", s.bin, "./cmd/sluice")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	s.createTopics()
	s.writeHookSecret()
	if dsn != "" {
		// The sink's table, made the way an operator makes it.
		migrate := exec.Command(s.bin, "sink", "migrate", "--config", s.consumerConfig())
		if out, err := migrate.CombinedOutput(); err != nil {
			t.Fatalf("sluice sink migrate: %v\n%s", err, out)
		}
	}
	t.Cleanup(func() {
		for _, c := range s.consumers {
			s.kill(c)
		}
		if s.gateway != nil {
			s.kill(s.gateway)
		}
	})
	return s
}

// load is a scenario's traffic: workers alternating gRPC and REST, each
// sending a batch every pace until duration. One event in invalidEvery
// breaks its contract, so that the gateway rejects some in every scenario.
type load struct {
	duration    time.Duration
	workers     int           // default 4
	batch       int           // events per request; default 20
	pace        time.Duration // pause between a worker's requests; default 80ms
	poisonEvery int           // about one event in poisonEvery fails in the sink; 0: none
	// oversizedEvery: about one event in oversizedEvery is poison near
	// maxEventBytes, too large for the DLQ topic; 0: none.
	oversizedEvery int
	// sources the workers send as, in turn; default sourceA. With more
	// than one, the workers of each source send the same ids.
	sources []string
	// hooks is the number of webhook senders beside the workers, each
	// delivering signed webhooks to hookSource one at a time; 0: none.
	hooks int
}

const invalidEvery = 50

// ledger is what the callers were told, by identity (source and id).
type ledger struct {
	mu                sync.Mutex
	sent              int
	acked             map[string]bool
	rejected          map[string]string // identity -> reason
	poison            map[string]bool   // acknowledged poison events
	unanswered        int               // given up on without an answer
	bufferFull        int               // BUFFER_FULL answers, counted per event
	localDisk         int               // acknowledgements with durability LOCAL_DISK
	fullReasons       map[string]int    // BUFFER_FULL answers by the spool's reason, where the answer says
	missingRetryAfter int
	unplaced          int // acknowledgements without the position their durability says
	shared            int // acknowledged events whose id another source also sent
	conflictsSent     int // acknowledged copies of an identity with another payload
	// conflictsRefused counts copies of an acknowledged identity with
	// another payload that the gateway refused IDEMPOTENCY_CONFLICT, with
	// both fingerprints: refusals, not identities (the identity is
	// acknowledged with its first payload). conflictsMisjudged counts
	// such copies answered anything else.
	conflictsRefused   int
	conflictsMisjudged int
	firstMisjudged     string
	// hooks is what the scenario's webhook senders saw; their deliveries'
	// answers are in acked and rejected under (hookSource, webhook-id).
	hooks hookTally
	// ids are a client scenario's event ids, every one a client gave an
	// event handed over (the checker selects them from the sink by it),
	// and client what its clients were told; nil otherwise.
	ids    map[string]bool
	client *clientTally
	// writes is what the callers saw of each identity, in order, for the
	// topic checker (topiccheck.go): the load's callers stamp their
	// sends, every acknowledgement is stamped with the position it names.
	// from are the suite topic's end offsets when the scenario began: its
	// records are after them.
	writes *writeLog
	from   map[int32]int64
}

// sending stamps events about to be sent as source in l.writes.
func (l *ledger) sending(source string, events []*ingestv1.Event) {
	ids, keys := make([]string, len(events)), make([]string, len(events))
	for i, ev := range events {
		ids[i], keys[i] = identity(source, ev.GetId()), ev.GetPartitionKey()
	}
	l.writes.sending(ids, keys)
}

// kafkaPositionOf is the position an answer named, and whether it named one.
func kafkaPositionOf(p *ingestv1.KafkaPosition) (kafkaPosition, bool) {
	return kafkaPosition{topic: p.GetTopic(), position: position{p.GetPartition(), p.GetOffset()}}, p.GetTopic() != ""
}

func (l *ledger) record(source string, ev *ingestv1.Event, poison bool, r loadgen.EventResult) (retry bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := identity(source, ev.GetId())
	switch {
	case r.Acknowledged():
		l.acked[key] = true
		at, placed := kafkaPositionOf(r.Kafka)
		l.writes.acknowledged(key, ev.GetPartitionKey(), at, placed)
		if poison {
			l.poison[key] = true
		}
		if r.Durability == ingestv1.Durability_LOCAL_DISK {
			l.localDisk++
		}
		// An acceptance says where, and a duplicate where its original is.
		switch {
		case r.Outcome == ingestv1.Outcome_DUPLICATE && (r.Kafka != nil) == (r.Spool != nil),
			r.Durability == ingestv1.Durability_KAFKA && (r.Kafka.GetTopic() == "" || r.Spool != nil),
			r.Durability == ingestv1.Durability_LOCAL_DISK && (r.Spool == nil || r.Kafka != nil):
			l.unplaced++
		}
	case r.Retryable:
		if r.Reason == ingestv1.Reason_BUFFER_FULL.String() {
			l.bufferFull++
			// "... spool full (disk_floor): ..." says which limit refused.
			if _, rest, ok := strings.Cut(r.Message, "spool full ("); ok {
				reason, _, _ := strings.Cut(rest, ")")
				l.fullReasons[reason]++
			}
		}
		if r.RetryAfter <= 0 {
			l.missingRetryAfter++
		}
		return true
	default:
		l.rejected[key] = r.Reason
	}
	return false
}

// runScenario runs the load and the fault side by side and returns the
// ledger once both are over.
func (s *system) runScenario(sc scenario) *ledger {
	s.t.Helper()
	ld := sc.load
	if ld.workers == 0 {
		ld.workers = 4
	}
	if ld.batch == 0 {
		ld.batch = 20
	}
	if ld.pace == 0 {
		ld.pace = 80 * time.Millisecond
	}
	l := &ledger{acked: map[string]bool{}, rejected: map[string]string{}, poison: map[string]bool{}, fullReasons: map[string]int{},
		hooks: hookTally{byStatus: map[int]int{}, forged: map[string]bool{}}, writes: newWriteLog(), from: s.endOffsets(s.topic)}
	s.ledger = l
	if sc.client != nil {
		l.ids, l.client = map[string]bool{}, newClientTally()
		var wg sync.WaitGroup
		if sc.fault != nil {
			wg.Go(func() { sc.fault(s) })
		}
		s.clientWork(*sc.client, time.Now().Add(sc.client.duration), l)
		wg.Wait()
		return l
	}
	if ld.hooks > 0 {
		l.hooks.from = l.from
	}
	var wg sync.WaitGroup
	if sc.fault != nil {
		wg.Go(func() { sc.fault(s) })
	}
	end := time.Now().Add(ld.duration)
	if len(ld.sources) == 0 {
		ld.sources = []string{sourceA}
	}
	for w := range ld.workers {
		wg.Go(func() { s.work(sc.name, w, ld, end, l) })
	}
	for w := range ld.hooks {
		wg.Go(func() { s.hookWork(sc.name, w, end, l) })
	}
	wg.Wait()
	if len(ld.sources) > 1 {
		for key := range l.acked {
			source, id, _ := strings.Cut(key, "/")
			for _, other := range ld.sources {
				if other != source && l.acked[identity(other, id)] {
					l.shared++
					break
				}
			}
		}
	}
	return l
}

// sender is one caller of the gateway, as one source over gRPC or REST.
func (s *system) sender(source string, rest bool) (loadgen.Target, loadgen.Sender) {
	cfg := loadgen.NewDefaultConfig()
	cfg.APIKey = apiKey
	if source == sourceB {
		cfg.APIKey = apiKeyB
	}
	cfg.Target, cfg.Addr = loadgen.TargetGRPC, s.grpcAddr
	if rest {
		cfg.Target, cfg.Addr = loadgen.TargetREST, "http://"+s.httpAddr
	}
	target, err := loadgen.NewTarget(cfg, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	sender, err := target.NewSender()
	if err != nil {
		target.Close()
		s.t.Fatal(err)
	}
	return target, sender
}

// resendChanged sends n of the scenario's acknowledged ids of source
// again, each with another payload, and counts the copies acknowledged.
func (s *system) resendChanged(l *ledger, scenario, source string, n int) {
	s.t.Helper()
	prefix := identity(source, fmt.Sprintf("%s-%s-", s.run, scenario))
	var events []*ingestv1.Event
	l.mu.Lock()
	for key := range l.acked {
		if len(events) == n {
			break
		}
		if id, ok := strings.CutPrefix(key, source+"/"); ok && strings.HasPrefix(key, prefix) && !l.poison[key] {
			ev := logEvent(id, len(events), false, false)
			setPayload(ev, protoFromJSON(s.t, `{"service":"svc-conflict","severity":"SEVERITY_WARN","message":"a second payload","timestamp":"`+
				time.Now().UTC().Format(time.RFC3339Nano)+`","host":"127.0.0.1"}`), false)
			events = append(events, ev)
		}
	}
	l.mu.Unlock()
	target, sender := s.sender(source, false)
	defer target.Close()
	defer sender.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ans, err := sender.Send(ctx, events)
	if err != nil || ans.Failure != nil {
		s.t.Fatalf("resending changed payloads: %v %+v", err, ans.Failure)
	}
	for _, r := range ans.Results {
		if r.Outcome == ingestv1.Outcome_ACCEPTED {
			l.mu.Lock()
			l.conflictsSent++
			l.mu.Unlock()
		}
	}
}

// changedMessage marks the payload of a changed copy: the sink must never
// hold it for an identity acknowledged first with another payload.
const changedMessage = "a changed copy under an accepted id"

// resendChangedWithinWindow runs for d beside the load. Every 500 ms it
// sends up to 10 of the scenario's ids that sourceA was answered for and
// not yet sent changed, again with another payload, alternately over
// gRPC (binary) and REST (JSON); and one request with a new id twice,
// the second copy changed. Each changed copy must be refused
// IDEMPOTENCY_CONFLICT with both fingerprints; the ledger counts the
// refusals and anything else.
func (s *system) resendChangedWithinWindow(scenario string, d time.Duration) {
	prefix := identity(sourceA, fmt.Sprintf("%s-%s-", s.run, scenario))
	sent := map[string]bool{}
	end := time.Now().Add(d)
	for round := 0; time.Now().Before(end); round++ {
		rest := round%2 == 1
		target, sender := s.sender(sourceA, rest)
		var events []*ingestv1.Event
		var changed []bool
		s.ledger.mu.Lock()
		for key := range s.ledger.acked {
			if len(events) == 10 {
				break
			}
			if id, ok := strings.CutPrefix(key, sourceA+"/"); ok && strings.HasPrefix(key, prefix) && !sent[key] && !s.ledger.poison[key] {
				sent[key] = true
				events = append(events, changedEvent(id, rest))
				changed = append(changed, true)
			}
		}
		s.ledger.sent += len(events) + 2
		s.ledger.mu.Unlock()
		// A new id twice in one request: the first copy is published, the
		// second, changed, refused.
		id := fmt.Sprintf("%s-%s-twice-%d", s.run, scenario, round)
		events = append(events, logEvent(id, round, false, rest), changedEvent(id, rest))
		changed = append(changed, false, true)
		s.sendChanged(sender, events, changed)
		sender.Close()
		target.Close()
		time.Sleep(500 * time.Millisecond)
	}
}

// changedEvent is a valid LogLine under id whose payload no load event
// has.
func changedEvent(id string, asJSON bool) *ingestv1.Event {
	ev := logEvent(id, 0, false, asJSON)
	setPayload(ev, &logsv1.LogLine{
		Service:   ev.GetPartitionKey(),
		Severity:  logsv1.Severity_SEVERITY_WARN,
		Message:   changedMessage + " " + id,
		Timestamp: ev.GetOccurredAt(),
		Host:      "127.0.0.1",
	}, asJSON)
	return ev
}

// sendChanged sends events once more until none is to be retried, and
// records each: an unchanged one as the load's are, a changed one as a
// refused conflict when it is one.
func (s *system) sendChanged(sender loadgen.Sender, events []*ingestv1.Event, changed []bool) {
	l := s.ledger
	for attempt := 0; len(events) > 0 && attempt < 20; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		l.sending(sourceA, events)
		ans, err := sender.Send(ctx, events)
		cancel()
		if err != nil || ans.Failure != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		var again []*ingestv1.Event
		var againChanged []bool
		for i, r := range ans.Results {
			if !changed[i] {
				if l.record(sourceA, events[i], false, r) {
					again, againChanged = append(again, events[i]), append(againChanged, false)
				}
				continue
			}
			c := r.Conflict
			l.mu.Lock()
			switch {
			case r.Retryable:
				again, againChanged = append(again, events[i]), append(againChanged, true)
			case r.Outcome == ingestv1.Outcome_REJECTED && r.Reason == ingestv1.Reason_IDEMPOTENCY_CONFLICT.String() &&
				strings.HasPrefix(c.GetFingerprint(), "sha256:") && strings.HasPrefix(c.GetAcceptedFingerprint(), "sha256:") &&
				c.GetFingerprint() != c.GetAcceptedFingerprint():
				l.conflictsRefused++
			default:
				l.conflictsMisjudged++
				if l.firstMisjudged == "" {
					l.firstMisjudged = fmt.Sprintf("%s: %+v", events[i].GetId(), r)
				}
			}
			l.mu.Unlock()
		}
		events, changed = again, againChanged
		if len(events) > 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	l.mu.Lock()
	l.unanswered += len(events)
	l.mu.Unlock()
}

// work is one caller: build a batch, send it, retry what the gateway asks
// to be retried (with the same ids), record the rest.
//
// With several sources, worker w sends as sources[w%len] the ids of id
// group w/len: each id is sent by every source, with a payload of its own.
func (s *system) work(name string, w int, ld load, end time.Time, l *ledger) {
	source, group := ld.sources[w%len(ld.sources)], w/len(ld.sources)
	rest := (w+group)%2 == 1
	target, sender := s.sender(source, rest)
	defer target.Close()
	defer sender.Close()
	rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
	n := 0
	for time.Now().Before(end) {
		events := make([]*ingestv1.Event, ld.batch)
		poison := map[string]bool{}
		for i := range events {
			id := fmt.Sprintf("%s-%s-w%d-%d", s.run, name, group, n)
			bad := ld.poisonEvery > 0 && rng.IntN(ld.poisonEvery) == 0
			events[i] = logEvent(id, n, bad, rest)
			switch {
			case n%invalidEvery == invalidEvery-1:
				events[i], bad = invalidEvent(id, n, rest), false
			case ld.oversizedEvery > 0 && rng.IntN(ld.oversizedEvery) == 0:
				events[i], bad = oversizedPoison(id, n, rest), true
			}
			if source != sourceA {
				line := protoFromPayload(s.t, events[i])
				line.Message += " from " + source
				setPayload(events[i], line, rest)
			}
			poison[id] = bad
			n++
		}
		l.mu.Lock()
		l.sent += len(events)
		l.mu.Unlock()
		s.send(source, sender, events, poison, l)
		time.Sleep(ld.pace)
	}
}

// send sends events until each has an answer that is not "retry", or the
// retries run out (two minutes: longer than any fault lasts).
func (s *system) send(source string, sender loadgen.Sender, events []*ingestv1.Event, poison map[string]bool, l *ledger) {
	giveUp := time.Now().Add(2 * time.Minute)
	pending := events
	for len(pending) > 0 && time.Now().Before(giveUp) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		l.sending(source, pending)
		ans, err := sender.Send(ctx, pending)
		cancel()
		if err != nil {
			// No answer (the gateway is down or restarting): the events
			// may or may not be in; sending them again is safe.
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if f := ans.Failure; f != nil {
			if !f.Retryable {
				for _, ev := range pending {
					l.record(source, ev, false, loadgen.EventResult{ID: ev.GetId(), Outcome: ingestv1.Outcome_REJECTED, Reason: f.Reason})
				}
				return
			}
			for _, ev := range pending {
				l.record(source, ev, false, loadgen.EventResult{ID: ev.GetId(), Outcome: ingestv1.Outcome_REJECTED, Reason: f.Reason, Retryable: true, RetryAfter: f.RetryAfter})
			}
			time.Sleep(min(max(f.RetryAfter, 100*time.Millisecond), 5*time.Second))
			continue
		}
		var again []*ingestv1.Event
		var wait time.Duration
		for i, r := range ans.Results {
			if l.record(source, pending[i], poison[pending[i].GetId()], r) {
				again = append(again, pending[i])
				wait = max(wait, r.RetryAfter)
			}
		}
		pending = again
		if len(pending) > 0 {
			time.Sleep(min(max(wait, 100*time.Millisecond), 5*time.Second))
		}
	}
	l.mu.Lock()
	l.unanswered += len(pending)
	l.mu.Unlock()
}

// logEvent is a valid LogLine; a poison one has a NUL in its message, which
// the contract allows and PostgreSQL's jsonb refuses.
func logEvent(id string, n int, poison, asJSON bool) *ingestv1.Event {
	now := time.Now()
	line := &logsv1.LogLine{
		Service:   fmt.Sprintf("svc-%d", n%16),
		Severity:  logsv1.Severity_SEVERITY_INFO,
		Message:   "fault suite event " + id,
		Timestamp: timestamppb.New(now),
		Host:      "127.0.0.1",
	}
	if poison {
		line.Message = "poison \x00 " + id
	}
	ev := &ingestv1.Event{Id: id, Type: eventType, OccurredAt: timestamppb.New(now), PartitionKey: line.Service}
	setPayload(ev, line, asJSON)
	return ev
}

// oversizedPoison is poison (a NUL, which PostgreSQL's jsonb refuses) close
// to maxEventBytes: a message at the contract's 8 KiB and 32 labels of 512
// bytes. Its dead letter is over the DLQ topic's max.message.bytes.
func oversizedPoison(id string, n int, asJSON bool) *ingestv1.Event {
	ev := logEvent(id, n, true, asJSON)
	line := &logsv1.LogLine{
		Service:   fmt.Sprintf("svc-%d", n%16),
		Severity:  logsv1.Severity_SEVERITY_ERROR,
		Timestamp: ev.GetOccurredAt(),
		Host:      "127.0.0.1",
		Labels:    map[string]string{},
	}
	// Letters and digits at random: the dead letter must stay too large
	// for the DLQ topic after the producer compresses it.
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	random := func(k int) string {
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
		b := make([]byte, k)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	line.Message = "oversized poison \x00 " + id + " " + random(8000)
	for i := range 32 {
		line.Labels[fmt.Sprintf("label_%02d", i)] = random(500)
	}
	setPayload(ev, line, asJSON)
	return ev
}

// protoFromPayload decodes ev's payload, JSON or binary.
func protoFromPayload(t *testing.T, ev *ingestv1.Event) *logsv1.LogLine {
	t.Helper()
	if js := ev.GetJson(); js != "" {
		return protoFromJSON(t, js)
	}
	var m logsv1.LogLine
	if err := proto.Unmarshal(ev.GetBinary(), &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

// invalidEvent breaks the contract (severity UNSPECIFIED is not_in the
// allowed values): the gateway answers SCHEMA_VIOLATION.
func invalidEvent(id string, n int, asJSON bool) *ingestv1.Event {
	ev := logEvent(id, n, false, asJSON)
	setPayload(ev, &logsv1.LogLine{Service: ev.GetPartitionKey(), Message: "invalid " + id, Timestamp: ev.GetOccurredAt(), Host: "127.0.0.1"}, asJSON)
	return ev
}

// setPayload puts line in ev as JSON text (REST callers) or binary.
func setPayload(ev *ingestv1.Event, line *logsv1.LogLine, asJSON bool) {
	if asJSON {
		b, _ := protojson.Marshal(line)
		ev.Payload = &ingestv1.Event_Json{Json: string(b)}
		return
	}
	b, _ := proto.Marshal(line)
	ev.Payload = &ingestv1.Event_Binary{Binary: b}
}

func protoFromJSON(t *testing.T, s string) *logsv1.LogLine {
	t.Helper()
	var m logsv1.LogLine
	if err := protojson.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

// result is one scenario's accounting.
type result struct {
	name                              string
	sent, acked, rejected, unanswered int
	inSink, inDLQ, parked, lost       int
	dupInSink, rejectedFound          int
	poisonAcked, bufferFull           int
	conflicts                         int            // rows of the sink's conflicts table for the scenario
	conflictsRefused                  int            // copies with another payload the gateway refused
	secondPayloads                    int            // sink rows of the scenario holding a changed copy's payload
	sinkRows                          map[string]int // the sink's rows per identity of the scenario, at the last look
	parkedWithEnvelope                int            // parked records that carry the envelope and what refused them
	// auditMismatch counts the decisions the audit table does not hold as
	// the records say: a DLQ or parked record of an id counted in-dlq or
	// parked without its row, an id in the sink without the one written
	// row of the write that stored it.
	auditMismatch      int
	firstLost          []string
	firstAuditMismatch []string
	settledIn          time.Duration
	// topic is the topic checker's verdict (topiccheck.go).
	topic topicReport
}

const header = "scenario                   sent  acked  rejected  unanswered  in-sink  in-dlq  parked  lost  dup-in-sink  poison  buffer-full  conflicts  conflicts-refused  audit-mismatch  lost-offset  dup-in-topic  out-of-order  settled"

func (r result) String() string {
	return fmt.Sprintf("%-25s %6d %6d %9d %11d %8d %7d %7d %5d %12d %7d %12d %10d %18d %15d %12d %13d %13d  %s",
		r.name, r.sent, r.acked, r.rejected, r.unanswered, r.inSink, r.inDLQ, r.parked, r.lost, r.dupInSink, r.poisonAcked, r.bufferFull,
		r.conflicts, r.conflictsRefused, r.auditMismatch, r.topic.lostOffsets+r.topic.elsewhere, r.topic.copies,
		r.topic.outOfOrder+r.topic.sinkOutOfOrder, r.settledIn.Round(time.Second))
}

// reconcile waits until every acknowledged id of the scenario is in the
// sink, the DLQ or the parked topic (with allInSink, in the sink) and the
// audit table holds the decisions that put it there, or settle passes,
// then counts.
func (s *system) reconcile(name string, l *ledger, allInSink bool) result {
	s.t.Helper()
	scope := eventScope{prefix: fmt.Sprintf("%s-%s-", s.run, name)}
	if l.ids != nil {
		scope = eventScope{ids: l.ids}
	}
	// A refused conflict is a refusal of a copy, not of an identity: it
	// counts as rejected, and its identity stays acknowledged.
	r := result{name: name, sent: l.sent, acked: len(l.acked), rejected: len(l.rejected) + l.conflictsRefused, unanswered: l.unanswered,
		poisonAcked: len(l.poison), bufferFull: l.bufferFull, conflictsRefused: l.conflictsRefused}
	start := time.Now()
	var inSink, inDLQ, parked map[string]int
	var enveloped map[string]bool
	for {
		// The sink before the audit table: a written row commits with its
		// event's row. The DLQ and parked topics before it too: their
		// records are durable before the consumer records the decision.
		inSink = s.sinkIDs(scope)
		dlqRecs, parkedRecs := map[string][]deadLetter{}, map[string][]deadLetter{}
		inDLQ = s.topicIDs(s.topic+".dlq", func(rec *kgo.Record) {
			key, dl := deadLetterOf(rec)
			dlqRecs[key] = append(dlqRecs[key], dl)
		})
		enveloped = map[string]bool{}
		parked = s.topicIDs(s.topic+".parked", func(rec *kgo.Record) {
			key, dl := deadLetterOf(rec)
			parkedRecs[key] = append(parkedRecs[key], dl)
			envelope := map[string]bool{}
			for _, h := range rec.Headers {
				switch h.Key {
				case "sluice-dlq-error-class", "sluice-dlq-source-topic", "sluice-dlq-source-offset", "sluice-dlq-refusal":
					envelope[h.Key] = len(h.Value) > 0
				}
			}
			if len(envelope) == 4 {
				enveloped[key] = true
			}
		})
		trails := s.auditTrails(scope)
		r.lost, r.firstLost = 0, nil
		r.auditMismatch, r.firstAuditMismatch = 0, nil
		notInSink := 0
		for id := range l.acked {
			if inSink[id] == 0 {
				notInSink++
			}
			if inSink[id] == 0 && inDLQ[id] == 0 && parked[id] == 0 {
				r.lost++
				if len(r.firstLost) < 5 {
					r.firstLost = append(r.firstLost, id)
				}
			}
			var mismatches []string
			switch {
			case inSink[id] > 0:
				// Its dead letters too: drained since, they still had their
				// rows recorded, in the table or, while it was away, in
				// sluice.audit.
				mismatches = append(checkWritten(trails[id]), checkDeadLettered(s.topic, dlqRecs[id], parkedRecs[id], trails[id])...)
			case parked[id] > 0 || inDLQ[id] > 0:
				mismatches = checkDeadLettered(s.topic, dlqRecs[id], parkedRecs[id], trails[id])
			}
			r.auditMismatch += len(mismatches)
			for _, m := range mismatches {
				if len(r.firstAuditMismatch) < 5 {
					r.firstAuditMismatch = append(r.firstAuditMismatch, id+": "+m)
				}
			}
		}
		if r.lost == 0 && r.auditMismatch == 0 && (!allInSink || notInSink == 0) || time.Since(start) > settle {
			break
		}
		time.Sleep(2 * time.Second)
	}
	r.settledIn = time.Since(start)
	for id := range l.acked {
		switch {
		case inSink[id] > 0:
			r.inSink++
		case parked[id] > 0:
			r.parked++
			if enveloped[id] {
				r.parkedWithEnvelope++
			}
		case inDLQ[id] > 0:
			r.inDLQ++
		}
	}
	for _, n := range inSink {
		if n > 1 {
			r.dupInSink++
		}
	}
	for id := range l.rejected {
		if inSink[id] > 0 || inDLQ[id] > 0 || parked[id] > 0 {
			r.rejectedFound++
		}
	}
	r.conflicts = s.sinkConflicts(scope)
	r.secondPayloads = s.sinkSecondPayloads(scope)
	r.sinkRows = inSink
	r.topic = s.topicVerdict(l, scope, inDLQ, parked)
	return r
}

// deadLetter is a record of a DLQ or parked topic: where it is, the
// identity and type its headers name, and its envelope (err when it has
// none that parses).
type deadLetter struct {
	partition            int32
	offset               int64
	source, eventID, typ string
	env                  record.Envelope
	err                  error
}

// deadLetterOf reads rec, a record of a DLQ or parked topic, and returns
// it with the identity it is counted under.
func deadLetterOf(rec *kgo.Record) (key string, dl deadLetter) {
	dl = deadLetter{partition: rec.Partition, offset: rec.Offset}
	for _, h := range rec.Headers {
		switch h.Key {
		case record.HeaderSource:
			dl.source = string(h.Value)
		case record.HeaderEventID:
			dl.eventID = string(h.Value)
		case record.HeaderEventType:
			dl.typ = string(h.Value)
		}
	}
	dl.env, dl.err = record.ParseEnvelope(rec)
	return identity(dl.source, dl.eventID), dl
}

// decision is the audit row the consumer records once dl is durable
// (consumer/audit.go, auditDeadLetter), with the columns auditTrails
// reads: dead_lettered in a DLQ topic, parked in a parked topic, with the
// envelope's class, attempts, DLQ retries, retryable and parked reason,
// the group and sink that decided. It is located at the record decided
// on: the envelope's source record, for a dead letter and for a record
// parked straight from its source topic (a dead letter Kafka refused). A
// record a drain parked is located at the DLQ record drained, which its
// envelope does not name: the caller puts it there (drainedFrom).
func (dl deadLetter) decision(action audit.Action) audit.Row {
	return audit.Row{
		Source: dl.source, EventID: dl.eventID, Action: action,
		Topic: dl.env.SourceTopic, Partition: dl.env.SourcePartition, Offset: dl.env.SourceOffset, EventType: dl.typ,
		Group: dl.env.Group, Sink: dl.env.Sink,
		Class: dl.env.Class, Attempt: dl.env.Attempts, Retryable: dl.env.Retryable, DLQRetries: dl.env.DLQRetries,
		Detail: dl.env.ParkedReason,
	}
}

// drainedFrom reports whether dl, a parked record, was parked by a drain,
// and the DLQ records of its event it may have been drained from: one
// without an envelope for a record parked unreadable_envelope (its
// envelope is new), else one a drain younger (DLQ retries one less). A
// record parked straight from its source topic has DLQ retries 0.
func (dl deadLetter) drainedFrom(dlqRecs []deadLetter) ([]deadLetter, bool) {
	unreadable := dl.env.ParkedReason == record.ParkedUnreadable
	if !unreadable && dl.env.DLQRetries == 0 {
		return nil, false
	}
	var out []deadLetter
	for _, d := range dlqRecs {
		if unreadable && d.err != nil || !unreadable && d.err == nil && d.env.DLQRetries == dl.env.DLQRetries-1 {
			out = append(out, d)
		}
	}
	return out, true
}

// checkDeadLettered checks the audit trail of an event counted in the DLQ
// or parked against its records there: each DLQ record must have its
// dead_lettered row and each parked record its parked row (decision),
// located, for one a drain parked, at any DLQ record it may have been
// drained from. It returns what is missing.
func checkDeadLettered(topic string, dlqRecs, parkedRecs []deadLetter, trail []audit.Row) []string {
	var out []string
	for _, side := range []struct {
		topic  string
		action audit.Action
		recs   []deadLetter
	}{
		{record.DLQTopic(topic), audit.DeadLettered, dlqRecs},
		{record.ParkedTopic(topic), audit.Parked, parkedRecs},
	} {
		for _, dl := range side.recs {
			at := fmt.Sprintf("%s/%d@%d", side.topic, dl.partition, dl.offset)
			if dl.err != nil {
				out = append(out, fmt.Sprintf("%s: %v", at, dl.err))
				continue
			}
			want := []audit.Row{dl.decision(side.action)}
			if side.action == audit.Parked {
				if from, ok := dl.drainedFrom(dlqRecs); ok {
					want = want[:0]
					for _, drained := range from {
						w := dl.decision(side.action)
						w.Topic, w.Partition, w.Offset = record.DLQTopic(topic), drained.partition, drained.offset
						want = append(want, w)
					}
				}
			}
			if !slices.ContainsFunc(trail, func(row audit.Row) bool { return slices.Contains(want, row) }) {
				out = append(out, fmt.Sprintf("%s (class %s, attempts %d, dlq retries %d, parked reason %q) has no %s row located at %s; rows: %s",
					at, dl.env.Class, dl.env.Attempts, dl.env.DLQRetries, dl.env.ParkedReason, side.action, locations(want), trailString(trail)))
			}
		}
	}
	return out
}

// checkWritten checks the audit trail of an event in the sink: exactly one
// written row without detail, the write that stored it.
func checkWritten(trail []audit.Row) []string {
	stored := 0
	for _, row := range trail {
		if row.Action == audit.Written && row.Detail == "" {
			stored++
		}
	}
	if stored == 1 {
		return nil
	}
	return []string{fmt.Sprintf("in the sink with %d written rows that stored it, want 1; rows: %s", stored, trailString(trail))}
}

func locations(rows []audit.Row) string {
	if len(rows) == 0 {
		return "none (no DLQ record it may have been drained from)"
	}
	var b strings.Builder
	for i, row := range rows {
		if i > 0 {
			b.WriteString(" or ")
		}
		fmt.Fprintf(&b, "%s/%d@%d", row.Topic, row.Partition, row.Offset)
	}
	return b.String()
}

func trailString(trail []audit.Row) string {
	if len(trail) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, row := range trail {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s/%d@%d class %q attempt %d dlq_retries %d detail %q",
			row.Action, row.Topic, row.Partition, row.Offset, row.Class, row.Attempt, row.DLQRetries, row.Detail)
	}
	return b.String()
}

// auditTrails reads the sink's audit table for the event ids of the
// scenario (one query) and returns each identity's rows in sequence
// order, then those the consumer recorded in sluice.audit while the
// table did not take them, with the columns a decision names (all but
// sequence, decided_at, error, replay_id and replay_actor; trace_id
// included, so that the two trails must agree on it).
func (s *system) auditTrails(scope eventScope) map[string][]audit.Row {
	s.t.Helper()
	out := s.auditTable(scope)
	s.topicIDs(record.AuditTopic, func(rec *kgo.Record) {
		d, err := record.ParseDecision(rec)
		if err != nil || !scope.has(d.EventID) {
			return
		}
		row := audit.RowOf(&d)
		row.At, row.Error, row.ReplayID, row.Actor = time.Time{}, "", "", ""
		key := identity(row.Source, row.EventID)
		out[key] = append(out[key], row)
	})
	return out
}

// auditTable is auditTrails' read of the sink's audit table.
func (s *system) auditTable(scope eventScope) map[string][]audit.Row {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		s.t.Logf("audit: %v (retrying)", err)
		return map[string][]audit.Row{}
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, fmt.Sprintf(`SELECT source, event_id, action, topic, kafka_partition, kafka_offset, event_type,
	consumer_group, sink, error_class, attempt, dlq_retries, retryable, detail, trace_id
FROM %s_audit WHERE %s ORDER BY source, event_id, sequence`, s.table, scope.where()), scope.arg())
	if err != nil {
		s.t.Logf("audit: %v (retrying)", err)
		return map[string][]audit.Row{}
	}
	defer rows.Close()
	out := map[string][]audit.Row{}
	for rows.Next() {
		var row audit.Row
		var action string
		if err := rows.Scan(&row.Source, &row.EventID, &action, &row.Topic, &row.Partition, &row.Offset, &row.EventType,
			&row.Group, &row.Sink, &row.Class, &row.Attempt, &row.DLQRetries, &row.Retryable, &row.Detail, &row.TraceID); err != nil {
			s.t.Fatal(err)
		}
		row.Action = audit.Action(action)
		key := identity(row.Source, row.EventID)
		out[key] = append(out[key], row)
	}
	if err := rows.Err(); err != nil {
		s.t.Logf("audit: %v (retrying)", err)
		return map[string][]audit.Row{}
	}
	return out
}

// sinkConflicts counts the rows of the sink's conflicts table for event
// ids of the scenario: identities that arrived again with another payload.
func (s *system) sinkConflicts(scope eventScope) int {
	return s.sinkCount("sink conflicts", fmt.Sprintf("SELECT count(*) FROM %s_conflicts WHERE %s", s.table, scope.where()), scope.arg())
}

// sinkSecondPayloads counts the sink table's rows for event ids of the
// scenario that hold a changed copy's payload (changedMessage).
func (s *system) sinkSecondPayloads(scope eventScope) int {
	return s.sinkCount("sink payloads", fmt.Sprintf("SELECT count(*) FROM %s WHERE %s AND payload->>'message' LIKE $2", s.table, scope.where()),
		scope.arg(), changedMessage+"%")
}

// sinkCount runs a count query on the sink's database; what names it in
// an error, and an error counts -1.
func (s *system) sinkCount(what, query string, args ...any) int {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		s.t.Errorf("%s: %v", what, err)
		return -1
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(ctx, query, args...).Scan(&n); err != nil {
		s.t.Errorf("%s: %v", what, err)
		return -1
	}
	return n
}

// eventScope picks a scenario's events out of the sink's tables and
// sluice.audit by event id: the ids that start with prefix (the load's,
// <run>-<scenario>-...), or, when ids is set, exactly those (ids the
// client made, UUIDv7s without a prefix).
type eventScope struct {
	prefix string
	ids    map[string]bool
}

// where is the SQL condition on event_id, with arg as $1.
func (e eventScope) where() string {
	if e.ids != nil {
		return "event_id = ANY($1)"
	}
	return "event_id LIKE $1"
}

func (e eventScope) arg() any {
	if e.ids != nil {
		return slices.Collect(maps.Keys(e.ids))
	}
	return e.prefix + "%"
}

func (e eventScope) has(id string) bool {
	if e.ids != nil {
		return e.ids[id]
	}
	return strings.HasPrefix(id, e.prefix)
}

// sinkIDs counts the sink table's rows per identity (source and event id)
// of the scenario.
func (s *system) sinkIDs(scope eventScope) map[string]int {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		s.t.Logf("sink: %v (retrying)", err)
		return map[string]int{}
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, fmt.Sprintf("SELECT source, event_id, count(*) FROM %s WHERE %s GROUP BY source, event_id", s.table, scope.where()), scope.arg())
	if err != nil {
		s.t.Logf("sink: %v (retrying)", err)
		return map[string]int{}
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var source, id string
		var n int
		if err := rows.Scan(&source, &id, &n); err != nil {
			s.t.Fatal(err)
		}
		out[identity(source, id)] = n
	}
	if err := rows.Err(); err != nil {
		s.t.Logf("sink: %v (retrying)", err)
	}
	return out
}

// runScenarios runs scenarios one after another on s (a gateway with a
// spool of normalSpool bytes and one consumer, started here), each under
// its load, reconciles each with its ledger, stops at the first that
// fails, and prints the table, each scenario's own lines and how long each
// took. SLUICE_FAULTS_ONLY=name,name keeps only those scenarios;
// SLUICE_FAULTS_SKIP=name,name leaves those out.
func runScenarios(t *testing.T, s *system, normalSpool int64, scenarios []scenario) {
	if only := scenarioNames("SLUICE_FAULTS_ONLY"); only != nil {
		// For working on some scenarios.
		scenarios = slices.DeleteFunc(scenarios, func(sc scenario) bool { return !only[sc.name] })
	}
	if skip := scenarioNames("SLUICE_FAULTS_SKIP"); skip != nil {
		// A scenario turned off, by name; CI runs them all.
		var skipped []string
		scenarios = slices.DeleteFunc(scenarios, func(sc scenario) bool {
			if skip[sc.name] {
				skipped = append(skipped, sc.name)
			}
			return skip[sc.name]
		})
		t.Logf("SLUICE_FAULTS_SKIP: not running %v", skipped)
	}
	began := time.Now()
	s.startGateway(normalSpool, false)
	s.addConsumer()
	var table, topicLines, hookLines, clientLines, ownLines, durations []string
	for _, sc := range scenarios {
		scenarioBegan := time.Now()
		if sc.before != nil {
			sc.before(s)
		}
		l := s.runScenario(sc)
		if sc.after != nil {
			sc.after(s, l)
		}
		r := s.reconcile(sc.name, l, sc.allInSink)
		table = append(table, r.String())
		t.Log(r.String())
		topicLine := fmt.Sprintf("%-25s topic: %v", sc.name, r.topic)
		topicLines = append(topicLines, topicLine)
		t.Log(topicLine)
		if r.topic.failures() != 0 {
			t.Errorf("%s: lost offsets %d, acknowledged in another topic %d, not in the topic %d, out of order in the topic %d and in the sink %d; the first:\n\t%s",
				sc.name, r.topic.lostOffsets, r.topic.elsewhere, r.topic.notInTopic, r.topic.outOfOrder, r.topic.sinkOutOfOrder, strings.Join(r.topic.first, "\n\t"))
		}
		if sc.load.hooks > 0 {
			line := s.checkHooks(t, sc.name, l)
			hookLines = append(hookLines, line)
			t.Log(line)
		}
		if sc.client != nil {
			line := s.checkClient(t, sc.name, *sc.client, l, r)
			clientLines = append(clientLines, line)
			t.Log(line)
		}
		if r.lost != 0 || r.dupInSink != 0 || r.rejectedFound != 0 {
			t.Errorf("%s: lost %d, duplicated in sink %d, rejected ids found %d (first lost: %v)", sc.name, r.lost, r.dupInSink, r.rejectedFound, r.firstLost)
		}
		if r.auditMismatch != 0 {
			t.Errorf("%s: %d audit mismatches; the first:\n\t%s", sc.name, r.auditMismatch, strings.Join(r.firstAuditMismatch, "\n\t"))
		}
		if l.unplaced > 0 {
			t.Errorf("%s: %d acknowledgements without the position their durability says", sc.name, l.unplaced)
		}
		if l.missingRetryAfter > 0 {
			t.Errorf("%s: %d retryable answers without a Retry-After", sc.name, l.missingRetryAfter)
		}
		if r.acked == 0 || r.rejected == 0 {
			t.Errorf("%s: acknowledged %d, rejected %d: both kinds are needed for the accounting to mean anything", sc.name, r.acked, r.rejected)
		}
		if sc.allInSink && r.inSink != r.acked {
			t.Errorf("%s: %d of %d acknowledged events in the sink after the outage (in DLQ %d, parked %d)", sc.name, r.inSink, r.acked, r.inDLQ, r.parked)
		}
		if sc.check != nil {
			sc.check(t, l, r)
		}
		if sc.line != nil {
			line := fmt.Sprintf("%-25s %s", sc.name, sc.line(s, l, r))
			ownLines = append(ownLines, line)
			t.Log(line)
		}
		took := fmt.Sprintf("%-25s took %s", sc.name, time.Since(scenarioBegan).Round(time.Second))
		durations = append(durations, took)
		t.Log(took)
		if t.Failed() {
			t.Logf("gateway log:\n%s", s.gateway.logTail())
			for _, c := range s.consumers {
				t.Logf("%s log:\n%s", c.name, c.logTail())
			}
			break
		}
	}
	for _, c := range s.consumers {
		s.stop(c)
	}
	s.stop(s.gateway)
	fmt.Printf("\nfault suite (%s, %s)\n%s\n", s.run, time.Now().UTC().Format(time.RFC3339), header)
	for _, line := range table {
		fmt.Println(line)
	}
	for _, line := range topicLines {
		fmt.Println(line)
	}
	for _, line := range hookLines {
		fmt.Println(line)
	}
	for _, line := range clientLines {
		fmt.Println(line)
	}
	for _, line := range ownLines {
		fmt.Println(line)
	}
	for _, line := range durations {
		fmt.Println(line)
	}
	fmt.Printf("%d scenarios took %s\n", len(durations), time.Since(began).Round(time.Second))
}

// scenarioNames is the set of names in the comma-separated list of the
// environment variable env; nil when it is empty.
func scenarioNames(env string) map[string]bool {
	var names map[string]bool
	for _, name := range strings.Split(os.Getenv(env), ",") {
		if name = strings.TrimSpace(name); name != "" {
			if names == nil {
				names = map[string]bool{}
			}
			names[name] = true
		}
	}
	return names
}
