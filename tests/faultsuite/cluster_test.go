package faultsuite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
)

// EnvCluster turns the cluster scenarios on: SLUICE_KAFKA_BROKERS then
// names the three nodes of `scripts/kafka.sh cluster up`, which the suite
// stops, kills, pauses and starts by id.
const EnvCluster = "SLUICE_KAFKA_CLUSTER"

const (
	// brokerSession is the nodes' broker.session.timeout.ms (Kafka's
	// default, which kafka.sh keeps): a node that has not heartbeaten for
	// that long is fenced and its partitions get other leaders.
	brokerSession = 9 * time.Second
	// pauseFor is how long broker-pause holds a node stopped: past the
	// session timeout and past replica.lag.time.max.ms (10 s in kafka.sh's
	// cluster), so that it is fenced and drops out of the in-sync sets.
	pauseFor = brokerSession + 6*time.Second
	// restartAfter is how long a killed node stays down.
	restartAfter = 20 * time.Second
	// twoDownFor is how long two-brokers-down keeps two nodes stopped
	// once the second has stopped.
	twoDownFor = 20 * time.Second
	// insyncWait bounds `kafka.sh cluster insync` after a node is back.
	insyncWait = "120"
)

// TestIntegrationClusterFaults runs the cluster's scenarios (clusterScenarios),
// then those of sluice's own processes (processScenarios), against scripts/kafka.sh's three-node cluster, with the load, the
// ledger, the topic checker and the table of TestIntegrationFaults. Every
// topic the suite makes takes the cluster's defaults: replication factor
// 3, min.insync.replicas 2, unclean leader election off.
func TestIntegrationClusterFaults(t *testing.T) {
	if os.Getenv(EnvCluster) != "1" {
		t.Skip(EnvCluster + " is not 1: skipping the cluster fault suite (scripts/kafka.sh cluster up starts the cluster)")
	}
	brokers := kafkatest.Brokers(t)
	if len(brokers) != 3 {
		t.Fatalf("%s names %d brokers (%v), want the three of scripts/kafka.sh cluster up", kafkatest.EnvBrokers, len(brokers), brokers)
	}
	dsn := os.Getenv("SLUICE_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("SLUICE_POSTGRES_DSN is not set: skipping the cluster fault suite (scripts/postgres.sh up starts PostgreSQL)")
	}
	if os.Getenv("SLUICE_KAFKA_CLUSTER_PORT") == "" {
		// kafka.sh finds the nodes by their ports: node 1's is the lowest.
		ports := make([]int, 0, len(brokers))
		for _, b := range brokers {
			_, port, _ := strings.Cut(b, ":")
			p, _ := strconv.Atoi(port)
			ports = append(ports, p)
		}
		t.Setenv("SLUICE_KAFKA_CLUSTER_PORT", strconv.Itoa(slices.Min(ports)))
	}
	s := newSystem(t, brokers, dsn)
	s.findNodes(brokers)
	t.Cleanup(func() {
		if err := s.wholeCluster(); err != nil {
			t.Errorf("bringing the cluster back whole after the suite: %v", err)
		}
	})
	s.warmUp()

	const normalSpool = 256 << 20
	runScenarios(t, s, normalSpool, append(clusterScenarios(normalSpool), processScenarios(normalSpool)...))
}

// clusterScenarios are the faults a replicated cluster has and one broker
// has not: a leader killed, a node paused past its session timeout, two
// nodes of three down (no quorum, no in-sync majority), every node
// restarted in turn, the active controller killed. Each fault returns the
// cluster whole, every node up and every partition in sync, even when it
// stops half-way; each check adds the fault's own evidence to the
// ledger's and the topic checker's verdicts, and unanswered must be 0.
func clusterScenarios(normalSpool int64) []scenario {
	sigkill := &faultNotes{name: "leader-sigkill"}
	pause := &faultNotes{name: "broker-pause"}
	twoDown := &faultNotes{name: "two-brokers-down"}
	rolling := &faultNotes{name: "rolling-restart-brokers"}
	controller := &faultNotes{name: "controller-loss"}
	return []scenario{
		{
			// The node leading the most of the load's records so far is
			// killed; its partitions must get other leaders from their
			// in-sync replicas (no acknowledged offset lost), and it comes
			// back 20 s later and catches up.
			name: "leader-sigkill", load: load{duration: 50 * time.Second},
			fault: func(s *system) {
				n := sigkill
				n.begin(s)
				defer s.keepWhole(n)
				s.waitAccepted(4000)
				if !s.pickBusiestLeader(n) {
					return
				}
				killed := time.Now()
				if !s.nodeStep(n, "kill", n.node) || !s.waitMoved(n, killed, time.Minute) {
					return
				}
				time.Sleep(time.Until(killed.Add(restartAfter)))
				if !s.nodeStep(n, "start", n.node) || !s.insyncStep(n) {
					return
				}
				n.done = true
			},
			after: sigkill.after(nil),
			check: sigkill.check(nil),
			line:  sigkill.line,
		},
		{
			// A zombie: the busiest leader stopped with SIGSTOP past its
			// session timeout, fenced while it cannot know, its partitions
			// led by others; then it wakes up and must rejoin as a
			// follower, taking nothing with it.
			name: "broker-pause", load: load{duration: 40 * time.Second},
			fault: func(s *system) {
				n := pause
				n.begin(s)
				defer s.keepWhole(n)
				s.waitAccepted(4000)
				if !s.pickBusiestLeader(n) {
					return
				}
				paused := time.Now()
				if !s.nodeStep(n, "pause", n.node) || !s.waitMoved(n, paused, 45*time.Second) {
					return
				}
				time.Sleep(time.Until(paused.Add(pauseFor)))
				n.step("paused for %s", since(paused))
				if !s.nodeStep(n, "resume", n.node) || !s.insyncStep(n) {
					return
				}
				n.done = true
			},
			after: pause.after(nil),
			check: pause.check(nil),
			line:  pause.line,
		},
		{
			// Nodes 3 and 2 stopped (SIGTERM), node 1 alone: no controller
			// quorum and no second in-sync replica, so no acks=all write
			// and no producer id. The gateway must spool and answer
			// LOCAL_DISK; once the nodes are back the spool drains, and
			// per-key order holds from the callers to the topic and the
			// sink (the topic checker's out-of-order 0, over pairs it
			// judged).
			name: "two-brokers-down", load: load{duration: 75 * time.Second},
			fault: func(s *system) {
				n := twoDown
				n.begin(s)
				defer s.keepWhole(n)
				s.waitAccepted(4000)
				n.logFrom = len(s.gateway.logText())
				n.drainedFrom, _ = s.gatewayMetric("sluice_spool_drained_records_total")
				for _, node := range []int{3, 2} {
					if !s.nodeStep(n, "stop", node) {
						return
					}
				}
				down := time.Now()
				if !s.waitMetric(time.Minute, "sluice_admission_mode", func(v float64) bool { return v == 1 }) {
					n.fail(s, "the gateway was not spooling a minute after two nodes stopped")
					return
				}
				n.spooled = true
				n.step("the gateway spooling %s after", since(down))
				time.Sleep(time.Until(down.Add(twoDownFor)))
				n.step("two nodes down for %s", since(down))
				for _, node := range []int{2, 3} {
					if !s.nodeStep(n, "start", node) {
						return
					}
				}
				if !s.insyncStep(n) {
					return
				}
				n.done = true
			},
			after: twoDown.after(func(s *system, _ *ledger) {
				n := twoDown
				start := time.Now()
				n.drainedAll = s.waitDrained(3 * time.Minute)
				drained, _ := s.gatewayMetric("sluice_spool_drained_records_total")
				n.drained = drained - n.drainedFrom
				n.step("spool empty %v, %.0f records drained, %s after the load", n.drainedAll, n.drained, since(start))
				// What the gateway was told while the nodes were away.
				text := s.gateway.logText()
				if n.logFrom <= len(text) {
					text = text[n.logFrom:]
				}
				n.step("gateway log: %d switches to spooling, %d failed drains, the first: %q",
					strings.Count(text, "admission: spooling"), strings.Count(text, "admission: drain failed"), firstLine(text, "admission: drain failed", 300))
			}),
			check: twoDown.check(func(t *testing.T, l *ledger, r result) {
				if !twoDown.spooled || l.localDisk == 0 || twoDown.drained <= 0 || !twoDown.drainedAll {
					t.Errorf("two-brokers-down: spooling seen %v, LOCAL_DISK acknowledgements %d, drained %.0f records, spool empty %v: the gateway must spool while the nodes are away and drain it all once they are back",
						twoDown.spooled, l.localDisk, twoDown.drained, twoDown.drainedAll)
				}
				if r.topic.pairs == 0 || r.topic.sinkPairs == 0 {
					t.Errorf("two-brokers-down: per-key order judged over %d pairs in the topic and %d in the sink: nothing was judged", r.topic.pairs, r.topic.sinkPairs)
				}
			}),
			line: twoDown.line,
		},
		{
			// An operator's upgrade: each node in turn stopped with SIGTERM
			// (a controlled shutdown moves its leaders first) and started
			// again, the next only once every partition is in sync, each
			// while the load still runs.
			name: "rolling-restart-brokers", load: load{duration: 100 * time.Second},
			fault: func(s *system) {
				n := rolling
				n.begin(s)
				defer s.keepWhole(n)
				for node := 1; node <= 3; node++ {
					s.waitAccepted(1000)
					if !s.nodeStep(n, "restart", node) || !s.insyncStep(n) {
						return
					}
					n.restarted++
				}
				n.done = true
			},
			after: rolling.after(nil),
			check: rolling.check(func(t *testing.T, l *ledger, r result) {
				if rolling.restarted != 3 {
					t.Errorf("rolling-restart-brokers: %d of 3 nodes restarted", rolling.restarted)
				}
			}),
			line: rolling.line,
		},
		{
			// The active controller (the quorum's leader) killed: the other
			// two elect one of them; the killed node comes back 20 s later
			// as a follower of the quorum.
			name: "controller-loss", load: load{duration: 45 * time.Second},
			fault: func(s *system) {
				n := controller
				n.begin(s)
				defer s.keepWhole(n)
				s.waitAccepted(4000)
				id, err := s.activeController()
				if err != nil {
					n.fail(s, "finding the active controller: %v", err)
					return
				}
				n.node = id
				n.step("node %d is the active controller", id)
				killed := time.Now()
				if !s.nodeStep(n, "kill", id) {
					return
				}
				if !waitFor(time.Minute, func() bool {
					next, err := s.activeController()
					n.next = next
					return err == nil && next != id
				}) {
					n.fail(s, "no other node became the active controller within a minute of the kill (last answer %d)", n.next)
					return
				}
				n.moved = time.Since(killed)
				// An upper bound: a kafka.sh controller call that began
				// before the election waits out its own 20 s bound.
				n.step("kafka.sh controller names node %d %s after", n.next, since(killed))
				time.Sleep(time.Until(killed.Add(restartAfter)))
				if !s.nodeStep(n, "start", id) || !s.insyncStep(n) {
					return
				}
				n.done = true
			},
			after: controller.after(nil),
			check: controller.check(func(t *testing.T, l *ledger, r result) {
				if controller.next == 0 || controller.next == controller.node {
					t.Errorf("controller-loss: node %d was the active controller, then node %d: no other node took over", controller.node, controller.next)
				}
			}),
			line: controller.line,
		},
	}
}

// faultNotes are what a cluster scenario's fault did and saw: for its
// check, and its line after the table. The fault writes them, its check
// reads them once the fault has returned.
type faultNotes struct {
	name string
	node int // the node the fault acted on
	// led are the suite topic's partitions node led, and moved how long
	// it took, after the fault, until each had another leader (0: never).
	led   []int32
	moved time.Duration
	next  int // controller-loss: the next active controller
	// two-brokers-down: the gateway's log length and drained records when
	// the fault began; whether it spooled, drained all, and how many
	// records its drainer published since.
	logFrom     int
	drainedFrom float64
	spooled     bool
	drainedAll  bool
	drained     float64
	restarted   int // rolling-restart-brokers: nodes restarted
	// retryable and permanent count the records the gateway's producer
	// failed, by publish.Retryable's class, from the fault's start to the
	// scenario's end: a permanent one is an event refused for good.
	retryable, permanent float64
	steps                []string // what was done and seen, in order
	done                 bool     // the fault ran to its end
}

func (n *faultNotes) step(format string, args ...any) {
	n.steps = append(n.steps, fmt.Sprintf(format, args...))
}

// fail records why the fault stops half-way, as a step and a test error.
func (n *faultNotes) fail(s *system, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	n.step("FAILED: %s", msg)
	s.t.Errorf("%s: %s", n.name, msg)
}

// line is the scenario's line after the table.
func (n *faultNotes) line(*system, *ledger, result) string { return "fault: " + n.String() }

func (n *faultNotes) String() string {
	if len(n.steps) == 0 {
		return "nothing done"
	}
	return strings.Join(n.steps, "; ")
}

// begin notes the gateway's produce errors when the fault starts.
func (n *faultNotes) begin(s *system) {
	n.retryable = -s.gatewayMetricSum("sluice_produce_errors_total", `class="retryable"`)
	n.permanent = -s.gatewayMetricSum("sluice_produce_errors_total", `class="permanent"`)
}

// after is the after every cluster scenario has (the produce errors since
// the fault began), then extra.
func (n *faultNotes) after(extra func(s *system, l *ledger)) func(s *system, l *ledger) {
	return func(s *system, l *ledger) {
		if extra != nil {
			extra(s, l)
		}
		n.retryable += s.gatewayMetricSum("sluice_produce_errors_total", `class="retryable"`)
		n.permanent += s.gatewayMetricSum("sluice_produce_errors_total", `class="permanent"`)
	}
}

// check is the check every cluster scenario has (the fault ran to its end;
// every event answered; no produce error judged permanent), then extra.
func (n *faultNotes) check(extra func(t *testing.T, l *ledger, r result)) func(t *testing.T, l *ledger, r result) {
	return func(t *testing.T, l *ledger, r result) {
		n.step("LOCAL_DISK acknowledgements %d; records the producer failed: retryable %.0f, permanent %.0f", l.localDisk, n.retryable, n.permanent)
		if n.permanent != 0 {
			t.Errorf("%s: the gateway's producer judged %.0f failed records permanent: a broker fault is never the record's", n.name, n.permanent)
		}
		if !n.done {
			t.Errorf("%s: the fault did not run to its end: %s", n.name, n)
		}
		if len(n.led) > 0 && n.moved == 0 {
			t.Errorf("%s: partitions %v of node %d never got another leader", n.name, n.led, n.node)
		}
		if r.unanswered != 0 {
			t.Errorf("%s: %d events without an answer", n.name, r.unanswered)
		}
		if extra != nil {
			extra(t, l, r)
		}
	}
}

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }

// firstLine is the first line of text that holds sub, at most limit bytes
// of it; "" when none does.
func firstLine(text, sub string, limit int) string {
	i := strings.Index(text, sub)
	if i < 0 {
		return ""
	}
	start := strings.LastIndexByte(text[:i], '\n') + 1
	line, _, _ := strings.Cut(text[start:], "\n")
	if len(line) > limit {
		line = line[:limit]
	}
	return line
}

// kafka runs scripts/kafka.sh with args and returns its stdout, trimmed.
func (s *system) kafka(args ...string) (string, error) {
	out, err := s.scriptOut("kafka.sh", args...)
	return strings.TrimSpace(out), err
}

// nodeStep runs `kafka.sh node what node` and notes it with the time it
// began (UTC, to find it in the nodes' server.log) and how long it took;
// false, noted and a test error, when it fails.
func (s *system) nodeStep(n *faultNotes, what string, node int) bool {
	start := time.Now()
	if _, err := s.kafka("node", what, strconv.Itoa(node)); err != nil {
		n.fail(s, "%v", err)
		return false
	}
	n.step("node %s %d at %s (%s)", what, node, start.UTC().Format("15:04:05.000"), since(start))
	return true
}

// insyncStep waits until every partition of the cluster has a leader and
// all its replicas in sync, and notes how long that took.
func (s *system) insyncStep(n *faultNotes) bool {
	start := time.Now()
	if _, err := s.kafka("cluster", "insync", insyncWait); err != nil {
		n.fail(s, "%v", err)
		return false
	}
	n.step("in sync (%s)", since(start))
	return true
}

// keepWhole brings the cluster back whole when a fault returns, whether
// it ran to its end or stopped half-way: a fault defers it.
func (s *system) keepWhole(n *faultNotes) {
	start := time.Now()
	if err := s.wholeCluster(); err != nil {
		n.fail(s, "the cluster is not whole after the fault: %v", err)
		return
	}
	n.step("whole (%s)", since(start))
}

// nodeStatus is a line of `kafka.sh cluster status`: node 1: running (pid
// 123) on 127.0.0.1:29401, ...; node 2: not running (127.0.0.1:29402).
var nodeStatus = regexp.MustCompile(`(?m)^node ([0-9]+): (running|paused|not running)\b.*?(127\.0\.0\.1:[0-9]+)`)

// clusterStatus is each node's state (running, paused, not running) and
// client address, as kafka.sh cluster status says.
func (s *system) clusterStatus() (states, addrs map[int]string, err error) {
	// It exits 1 when a node is not running; its lines say which.
	out, err := s.scriptOut("kafka.sh", "cluster", "status")
	states, addrs = map[int]string{}, map[int]string{}
	for _, m := range nodeStatus.FindAllStringSubmatch(out, -1) {
		id, _ := strconv.Atoi(m[1])
		states[id], addrs[id] = m[2], m[3]
	}
	if len(states) != 3 {
		return nil, nil, fmt.Errorf("kafka.sh cluster status: %d nodes in %q (%v)", len(states), out, err)
	}
	return states, addrs, nil
}

// findNodes checks that the cluster kafka.sh manages is the one brokers
// names, all three nodes running, and keeps their addresses by id.
func (s *system) findNodes(brokers []string) {
	s.t.Helper()
	states, addrs, err := s.clusterStatus()
	if err != nil {
		s.t.Fatal(err)
	}
	for id, state := range states {
		if !slices.Contains(brokers, addrs[id]) {
			s.t.Fatalf("kafka.sh's node %d is %s, which %s (%v) does not name: run the suite with the SLUICE_KAFKA_CLUSTER_PORT and SLUICE_RUN that cluster up had",
				id, addrs[id], kafkatest.EnvBrokers, brokers)
		}
		if state != "running" {
			s.t.Fatalf("kafka.sh's node %d is %s: the suite starts on a whole cluster", id, state)
		}
	}
	s.nodes = addrs
}

// wholeCluster resumes a paused node, starts one that is down (cluster
// up) and waits until every partition is in sync.
func (s *system) wholeCluster() error {
	states, _, err := s.clusterStatus()
	if err != nil {
		return err
	}
	for id, state := range states {
		if state == "paused" {
			if _, err := s.kafka("node", "resume", strconv.Itoa(id)); err != nil {
				return err
			}
		}
	}
	if _, err := s.kafka("cluster", "up"); err != nil {
		return err
	}
	_, err = s.kafka("cluster", "insync", insyncWait)
	return err
}

// warmUp checks that the suite's topics keep the promise on the cluster
// (what sluice check --kafka checks: three replicas, min.insync.replicas
// 2, unclean leader election off), then produces one record with an
// idempotent producer (acks=all) to a topic of its own and waits for its
// acknowledgement: the first producer id a fresh cluster hands out takes
// seconds, which the first scenario's ledger must not meet.
func (s *system) warmUp() {
	s.t.Helper()
	start := time.Now()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.brokers...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		s.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(cl)
	topics := []string{s.topic, record.DLQTopic(s.topic), record.ParkedTopic(s.topic), record.AuditTopic}
	// Topics just created reach every broker's metadata a moment later.
	var weak []publish.Weakness
	waitFor(15*time.Second, func() bool {
		weak, err = publish.CheckDurability(ctx, adm, topics)
		return err == nil && len(weak) == 0
	})
	if err != nil {
		s.t.Fatalf("checking the suite's topics: %v", err)
	}
	for _, w := range weak {
		s.t.Errorf("the suite's topics on the cluster: %v", w)
	}
	if len(weak) > 0 {
		s.t.FailNow()
	}
	topic := s.run + ".warm-up"
	resp, err := adm.CreateTopics(ctx, 1, -1, nil, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		s.t.Fatalf("create topic %s: %v", topic, err)
	}
	// A topic just created may not be in every broker's metadata yet:
	// the producer gives up on it after a few tries, and is asked again.
	for {
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("warm-up")}).FirstErr()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			s.t.Fatalf("warming up an idempotent producer: %v", err)
		}
		time.Sleep(time.Second)
	}
	s.t.Logf("topics %v replicated as the promise needs; an idempotent producer's first record acknowledged %s after", topics, since(start))
}

// activeController is the node id of the quorum's leader (kafka.sh
// controller, at most 20 s).
func (s *system) activeController() (int, error) {
	out, err := s.kafka("controller")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out)
}

// pickBusiestLeader notes as n.node the node that leads the most of the
// suite topic's records since the scenario began (kafka.sh leader, partition
// by partition), and as n.led the partitions it leads.
func (s *system) pickBusiestLeader(n *faultNotes) bool {
	ends := s.endOffsets(s.topic)
	records, total := map[int]int64{}, int64(0)
	leaders := map[int32]int{}
	for p, end := range ends {
		out, err := s.kafka("leader", s.topic, strconv.Itoa(int(p)))
		if err == nil {
			leaders[p], err = strconv.Atoi(out)
		}
		if err != nil {
			n.fail(s, "the leader of %s/%d: %v", s.topic, p, err)
			return false
		}
		records[leaders[p]] += end - s.ledger.from[p]
		total += end - s.ledger.from[p]
	}
	for id, r := range records {
		if n.node == 0 || r > records[n.node] || r == records[n.node] && id < n.node {
			n.node = id
		}
	}
	for p, id := range leaders {
		if id == n.node {
			n.led = append(n.led, p)
		}
	}
	slices.Sort(n.led)
	n.step("node %d leads partitions %v, %d of the scenario's %d records so far", n.node, n.led, records[n.node], total)
	return true
}

// kcatPartition is a partition's line of kcat -L: partition 0, leader 1,
// replicas: 1,2,3, isrs: 1,2,3.
var kcatPartition = regexp.MustCompile(`partition ([0-9]+), leader (-?[0-9]+),`)

// leadersVia is who leads each partition of the suite's topic, as the node
// at addr alone says (kcat -L, at most 5 s): a node that is up, while
// another is away or paused and would hold a metadata request up.
func (s *system) leadersVia(addr string) (map[int32]int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "kcat", "-L", "-b", addr, "-t", s.topic, "-m", "5").Output()
	if err != nil {
		return nil, fmt.Errorf("kcat -L -b %s: %w", addr, err)
	}
	leaders := map[int32]int{}
	for _, m := range kcatPartition.FindAllStringSubmatch(string(out), -1) {
		p, _ := strconv.Atoi(m[1])
		leaders[int32(p)], _ = strconv.Atoi(m[2])
	}
	if len(leaders) == 0 {
		return nil, fmt.Errorf("kcat -L -b %s: no partition of %s in %q", addr, s.topic, out)
	}
	return leaders, nil
}

// waitMoved waits, at most d, until another node's metadata names a leader
// other than n.node for each of n.led, and notes how long that took since
// the fault began at from: the controller fenced the node and elected
// leaders from the in-sync replicas.
func (s *system) waitMoved(n *faultNotes, from time.Time, d time.Duration) bool {
	var via string
	for id := 1; id <= 3; id++ {
		if id != n.node {
			via = s.nodes[id]
			break
		}
	}
	var leaders map[int32]int
	var lastErr error
	moved := waitFor(d, func() bool {
		now, err := s.leadersVia(via)
		if err != nil {
			lastErr = err
			return false
		}
		leaders = now
		for _, p := range n.led {
			if l := now[p]; l == n.node || l < 0 {
				return false
			}
		}
		return true
	})
	if !moved {
		n.fail(s, "partitions %v still led by node %d, or by none, %s after (leaders %v, last error %v)", n.led, n.node, since(from), leaders, lastErr)
		return false
	}
	n.moved = time.Since(from)
	n.step("other leaders %s after: %v", since(from), leaders)
	return true
}
