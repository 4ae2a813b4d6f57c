package faultsuite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc"

	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/client"
)

// processScenarios are the scenarios whose fault is one of sluice's own
// processes going away or coming back late, on one broker or a cluster:
//
//   - gateway-rolling-restart: two gateways behind the Go client, each in
//     turn taken out of the clients' reach and stopped with SIGTERM at
//     once (it drains its spool before it exits), then started again,
//     under load;
//   - zombie-consumer: three consumers, one SIGSTOPped past its session
//     timeout while the group gives its partitions to the others, then
//     resumed.
//
// Each leaves the suite's gateway as it found it, serving a spool of
// normalSpool; zombie-consumer leaves three consumers in the group.
func processScenarios(normalSpool int64) []scenario {
	return []scenario{rollingRestartScenario(normalSpool), zombieScenario()}
}

// ---- gateway-rolling-restart

// gatewayProc is one of gateway-rolling-restart's two gateways: its
// process, listeners, admin listener and spool, and the endpoint the
// clients reach it by.
type gatewayProc struct {
	name              string
	proc              *proc
	grpc, http, admin string
	spoolDir          string // "" is the suite's dir/spool
	ep                *endpoint
}

// as makes g the system's gateway (s.gateway, its listeners, admin
// listener and spool) while fn runs: startGateway, waitReady and the
// gateway's metrics then are g's.
func (s *system) as(g *gatewayProc, fn func()) {
	saved := gatewayProc{proc: s.gateway, grpc: s.grpcAddr, http: s.httpAddr, admin: s.adminAddr, spoolDir: s.spoolDir}
	s.gateway, s.grpcAddr, s.httpAddr, s.adminAddr, s.spoolDir = g.proc, g.grpc, g.http, g.admin, g.spoolDir
	defer func() {
		s.gateway, s.grpcAddr, s.httpAddr, s.adminAddr, s.spoolDir = saved.proc, saved.grpc, saved.http, saved.admin, saved.spoolDir
	}()
	fn()
}

// terminate sends p SIGTERM and waits for it to exit, a minute at most
// (then it is killed). It returns how long the exit took and whether the
// process exited with status 0.
func (s *system) terminate(p *proc) (took time.Duration, clean bool) {
	if p.cmd == nil {
		return 0, true
	}
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		s.t.Errorf("%s did not stop within a minute of SIGTERM; killed", p.name)
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
	took = time.Since(start)
	clean = p.cmd.ProcessState != nil && p.cmd.ProcessState.Success()
	p.cmd = nil
	return took, clean
}

// spoolLeft reads a stopped gateway's spool from its directory: the
// records after its cursor, which the next start would publish, and the
// damage found; -1 when it cannot be read.
func spoolLeft(dir string) (pending int64, damage int, err error) {
	r, err := buffer.Inspect(dir)
	if err != nil {
		return -1, 0, err
	}
	return r.PendingRecords, len(r.Corruption), nil
}

// endpoint is a TCP proxy in front of a gateway's gRPC listener, standing
// for the Kubernetes Service endpoint of one replica: closed, it drops
// the connections through it and closes each new one at once, as a
// client sees a replica taken out of the endpoints before its preStop.
type endpoint struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	open  bool
	conns map[net.Conn]bool
}

func newEndpoint(t *testing.T, target string) *endpoint {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &endpoint{ln: ln, target: target, open: true, conns: map[net.Conn]bool{}}
	go e.serve()
	t.Cleanup(e.close)
	return e
}

func (e *endpoint) addr() string { return e.ln.Addr().String() }

func (e *endpoint) serve() {
	for {
		c, err := e.ln.Accept()
		if err != nil {
			return
		}
		if !e.track(c) {
			c.Close()
			continue
		}
		go e.pipe(c)
	}
}

// track keeps c, to be dropped when the endpoint closes; false when it is
// closed.
func (e *endpoint) track(c net.Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.open {
		return false
	}
	e.conns[c] = true
	return true
}

func (e *endpoint) drop(c net.Conn) {
	c.Close()
	e.mu.Lock()
	delete(e.conns, c)
	e.mu.Unlock()
}

func (e *endpoint) pipe(c net.Conn) {
	defer e.drop(c)
	up, err := net.DialTimeout("tcp", e.target, 2*time.Second)
	if err != nil {
		return
	}
	if !e.track(up) {
		up.Close()
		return
	}
	defer e.drop(up)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// setOpen opens or closes the endpoint; closing drops every connection
// through it.
func (e *endpoint) setOpen(open bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.open = open
	if !open {
		for c := range e.conns {
			c.Close()
		}
	}
}

func (e *endpoint) close() {
	e.ln.Close()
	e.setOpen(false)
}

// routeLog counts the clients' requests by the endpoint each went to (the
// connection's target), from an interceptor: when each answered one
// ended, and how many ended without an answer or with an error.
type routeLog struct {
	mu       sync.Mutex
	answered map[string][]time.Time
	failed   map[string]int
}

func (r *routeLog) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	target := strings.TrimPrefix(cc.Target(), "dns:///")
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.answered[target] = append(r.answered[target], time.Now())
	} else {
		r.failed[target]++
	}
	return err
}

// answeredBetween counts the requests through target answered within
// [from, to], and returns the end of the first.
func (r *routeLog) answeredBetween(target string, from, to time.Time) (n int, first time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, at := range r.answered[target] {
		if !at.Before(from) && !at.After(to) {
			if n == 0 {
				first = at
			}
			n++
		}
	}
	return n, first
}

func (r *routeLog) counts(target string) (answered, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.answered[target]), r.failed[target]
}

// restartRound is one gateway's restart in gateway-rolling-restart.
type restartRound struct {
	gateway string
	// spooled is what its spool held when it was sent SIGTERM.
	spooled float64
	// exitTook is SIGTERM to exit, clean an exit status of 0; left and
	// damage are what its spool held after the exit.
	exitTook      time.Duration
	clean         bool
	left          int64
	damage        int
	down          time.Duration // from its endpoint closing to its return, started again
	otherAnswered int           // requests the other gateway answered meanwhile
	backIn        time.Duration // from the return to the first request it answered; -1: none
}

func (r restartRound) String() string {
	back := "never back"
	if r.backIn >= 0 {
		back = fmt.Sprintf("back in %v", r.backIn.Round(10*time.Millisecond))
	}
	return fmt.Sprintf("gateway %s: spooled %v at SIGTERM, SIGTERM to exit %v (clean %v), left %d (damage %d), down %v with %d requests answered by the other, %s",
		r.gateway, r.spooled, r.exitTook.Round(10*time.Millisecond), r.clean, r.left, r.damage,
		r.down.Round(10*time.Millisecond), r.otherAnswered, back)
}

// rollingRestart is gateway-rolling-restart's state, shared by its steps.
type rollingRestart struct {
	began     time.Time // the scenario's before
	routes    *routeLog
	gws       [2]*gatewayProc
	dirs      [2]string
	rounds    []restartRound
	finalLeft [2]int64
	finalOK   [2]bool
}

// rollingRestartScenario: two gateways, the suite's (a) and a second (b)
// with its own listeners, admin listener and spool and the same config,
// both spool-first so that each always holds a spool to drain. The Go
// client is given both, through an endpoint each. Under load, each in
// turn is taken out of the endpoints and sent SIGTERM at once, as a
// StatefulSet's rollout does: it takes no more requests, drains its spool
// into Kafka (admission.shutdown_drain) and exits; its spool is read from
// disk (nothing may be left), and it is started again on that spool and
// put back; the next goes once the clients use it again. At the end both
// are stopped the same way, and the suite's gateway starts again alone.
func rollingRestartScenario(normalSpool int64) scenario {
	rr := &rollingRestart{routes: &routeLog{answered: map[string][]time.Time{}, failed: map[string]int{}}}
	return scenario{
		name: "gateway-rolling-restart",
		client: &clientLoad{
			duration: 45 * time.Second,
			opts:     []client.Opt{client.WithDialOptions(grpc.WithChainUnaryInterceptor(rr.routes.intercept))},
			addrs:    func(*system) []string { return []string{rr.gws[0].ep.addr(), rr.gws[1].ep.addr()} },
		},
		allInSink: true,
		before:    func(s *system) { rr.start(s, normalSpool) },
		fault:     func(s *system) { rr.roll(s, normalSpool) },
		after:     func(s *system, _ *ledger) { rr.finish(s, normalSpool) },
		check:     rr.check,
		line:      rr.line,
	}
}

func (rr *rollingRestart) start(s *system, normalSpool int64) {
	rr.began = time.Now()
	s.stop(s.gateway)
	a := &gatewayProc{name: "a", proc: s.gateway, grpc: s.grpcAddr, http: s.httpAddr, admin: s.adminAddr, spoolDir: s.spoolDir}
	b := &gatewayProc{name: "b", proc: s.newProc("gateway-b", "gateway", "--config", filepath.Join(s.dir, "gateway.yaml")),
		grpc: freeAddr(s.t), http: freeAddr(s.t), admin: freeAddr(s.t), spoolDir: filepath.Join(s.dir, "spool-b")}
	s.t.Cleanup(func() { s.kill(b.proc) })
	rr.gws = [2]*gatewayProc{a, b}
	for i, g := range rr.gws {
		s.as(g, func() {
			rr.dirs[i] = s.gatewaySpoolDir()
			s.startGateway(normalSpool, true)
		})
		g.ep = newEndpoint(s.t, g.grpc)
	}
}

// drainAndStop stops g with SIGTERM, without waiting for anything first,
// and reads its spool from disk once it has exited: the gateway itself
// must have drained it; s is as g.
func (rr *rollingRestart) drainAndStop(s *system, g *gatewayProc, dir string, r *restartRound) {
	r.spooled, _ = s.gatewayMetric("sluice_spool_records")
	r.exitTook, r.clean = s.terminate(g.proc)
	var err error
	if r.left, r.damage, err = spoolLeft(dir); err != nil {
		s.t.Errorf("gateway-rolling-restart: reading gateway %s's spool: %v", g.name, err)
	}
}

func (rr *rollingRestart) roll(s *system, normalSpool int64) {
	a, b := rr.gws[0], rr.gws[1]
	if !waitFor(30*time.Second, func() bool {
		na, _ := rr.routes.counts(a.ep.addr())
		nb, _ := rr.routes.counts(b.ep.addr())
		return na >= 20 && nb >= 20
	}) {
		s.t.Error("gateway-rolling-restart: the clients did not use both gateways within 30 s")
	}
	for i, g := range rr.gws {
		other := rr.gws[1-i]
		r := restartRound{gateway: g.name, backIn: -1}
		removed := time.Now()
		g.ep.setOpen(false)
		s.as(g, func() {
			rr.drainAndStop(s, g, rr.dirs[i], &r)
			s.startGateway(normalSpool, true)
		})
		back := time.Now()
		g.ep.setOpen(true)
		r.down = back.Sub(removed)
		r.otherAnswered, _ = rr.routes.answeredBetween(other.ep.addr(), removed, back)
		waitFor(30*time.Second, func() bool {
			n, first := rr.routes.answeredBetween(g.ep.addr(), back, time.Now())
			if n > 0 {
				r.backIn = first.Sub(back)
			}
			return n > 0
		})
		rr.rounds = append(rr.rounds, r)
		s.t.Logf("gateway-rolling-restart: %v", r)
	}
}

// finish drains and stops both gateways as a rollout's last step would,
// reads their spools from disk, and starts the suite's gateway again as
// it was.
func (rr *rollingRestart) finish(s *system, normalSpool int64) {
	for i, g := range rr.gws {
		g.ep.setOpen(false)
		var r restartRound
		s.as(g, func() { rr.drainAndStop(s, g, rr.dirs[i], &r) })
		rr.finalLeft[i], rr.finalOK[i] = r.left, r.clean && r.damage == 0
		g.ep.close()
	}
	s.startGateway(normalSpool, false)
}

func (rr *rollingRestart) check(t *testing.T, l *ledger, r result) {
	if len(rr.rounds) != 2 {
		t.Errorf("gateway-rolling-restart: %d gateways restarted, want 2", len(rr.rounds))
	}
	for _, round := range rr.rounds {
		switch {
		case !round.clean:
			t.Errorf("gateway-rolling-restart: gateway %s did not exit cleanly on SIGTERM", round.gateway)
		case round.left != 0 || round.damage != 0:
			t.Errorf("gateway-rolling-restart: gateway %s left %d records (damage %d) in its spool at exit: a stopping gateway drains its spool first", round.gateway, round.left, round.damage)
		case round.otherAnswered == 0:
			t.Errorf("gateway-rolling-restart: while gateway %s was away the other answered no request: the clients did not fail over", round.gateway)
		case round.backIn < 0:
			t.Errorf("gateway-rolling-restart: gateway %s answered no request within 30 s of its return", round.gateway)
		}
	}
	if !slices.ContainsFunc(rr.rounds, func(r restartRound) bool { return r.spooled > 0 }) {
		t.Errorf("gateway-rolling-restart: every SIGTERM met an empty spool (%v): the drain at stop was not exercised", rr.rounds)
	}
	for i, g := range rr.gws {
		if rr.finalLeft[i] != 0 || !rr.finalOK[i] {
			t.Errorf("gateway-rolling-restart: gateway %s's spool at the end: %d records left (clean exit and no damage: %v)", g.name, rr.finalLeft[i], rr.finalOK[i])
		}
	}
	failed := 0
	for _, g := range rr.gws {
		_, f := rr.routes.counts(g.ep.addr())
		failed += f
	}
	if failed == 0 {
		t.Error("gateway-rolling-restart: no request met a gateway going away")
	}
	if l.unanswered != 0 {
		t.Errorf("gateway-rolling-restart: %d events unanswered", l.unanswered)
	}
	if t.Failed() {
		t.Logf("gateway b log:\n%s", rr.gws[1].proc.logTail())
	}
}

func (rr *rollingRestart) line(_ *system, _ *ledger, _ result) string {
	var parts []string
	for _, r := range rr.rounds {
		parts = append(parts, r.String())
	}
	var reqs []string
	for _, g := range rr.gws {
		ok, failed := rr.routes.counts(g.ep.addr())
		reqs = append(reqs, fmt.Sprintf("%s %d answered, %d not", g.name, ok, failed))
	}
	return fmt.Sprintf("%s; requests by gateway: %s; spools at the end: a %d, b %d records left; took %v",
		strings.Join(parts, "; "), strings.Join(reqs, ", "), rr.finalLeft[0], rr.finalLeft[1],
		time.Since(rr.began).Round(time.Second))
}

// ---- zombie-consumer

// zombieSession is the consumer's Kafka session timeout: the consumer
// sets none, so it is franz-go's default.
const zombieSession = 45 * time.Second

// zombie is zombie-consumer's state and findings.
type zombie struct {
	began      time.Time // the scenario's before
	name       string    // the consumer paused
	partitions []int32   // the suite topic's partitions it owned when paused
	paused     time.Duration
	movedIn    time.Duration // SIGSTOP to the group holding its partitions without it; -1: never
	lostIn     time.Duration // SIGCONT to its log saying its partitions were lost; -1: never
	lost       []int32       // the suite topic's partitions that line named
	rejoined   bool          // it logged partitions assigned after the loss
	// written counts the records it wrote from just before SIGSTOP to
	// the first look at its metrics after the loss; exact is false when
	// it had partitions assigned again by then.
	written float64
	exact   bool
	// commitsRefused counts its commits the group refused after it woke,
	// by error (code or message).
	commitsRefused int
	refusedBy      map[string]int
	// backwards counts the group's committed offsets seen going back on
	// the suite topic, sampled every 50 ms from before SIGCONT; samples
	// the samples taken.
	backwards, samples int
	firstBackward      string
	// rows are the sink rows of its partitions' events held when it
	// woke; replaced those whose row version or write time changed.
	rows, replaced int
	firstReplaced  string
}

// zombieScenario: three consumers in the group. Under load, the one that
// owns the most partitions of the suite's topic is SIGSTOPped; once its
// session timeout has passed and the group holds its partitions without
// it (the others write them meanwhile), it is resumed with SIGCONT. On
// waking it must find its partitions lost and commit no offset for them:
// the group's committed offsets, sampled, never go back. Whatever it
// writes after waking (the batches it held when paused) meets rows the
// new owners wrote: the sink keeps them (ON CONFLICT DO NOTHING), and no
// row of its partitions held when it woke is replaced.
func zombieScenario() scenario {
	z := &zombie{movedIn: -1, lostIn: -1, refusedBy: map[string]int{}}
	return scenario{
		name: "zombie-consumer",
		load: load{duration: 80 * time.Second},
		before: func(s *system) {
			z.began = time.Now()
			for len(s.consumers) < 3 {
				s.addConsumer()
			}
		},
		fault: func(s *system) { z.run(s) },
		check: z.check,
		line:  z.line,
	}
}

// consumerAdmin is the admin listener of consumer p (consumerConfigOf
// wrote it last in its config).
func (s *system) consumerAdmin(p *proc) string {
	b, err := os.ReadFile(filepath.Join(s.dir, p.name+".yaml"))
	if err != nil {
		s.t.Errorf("%s's config: %v", p.name, err)
		return ""
	}
	addr := ""
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "addr: "); ok {
			addr = v
		}
	}
	return addr
}

// scrape reads the /metrics of the admin listener at addr: each sample,
// by its series (name and labels).
func scrape(addr string) (map[string]float64, bool) {
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(value, 64); err == nil {
			out[series] = f
		}
	}
	return out, sc.Err() == nil
}

// label is the value of label name in series, "" without one.
func label(series, name string) string {
	_, rest, ok := strings.Cut(series, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// ownedByLag is the partitions of topic whose lag consumer p measures:
// those assigned to it (a revoked or lost partition's series is
// removed).
func (s *system) ownedByLag(p *proc, topic string) ([]int32, bool) {
	m, ok := scrape(s.consumerAdmin(p))
	if !ok {
		return nil, false
	}
	var out []int32
	for series := range m {
		if strings.HasPrefix(series, "sluice_consumer_lag{") && label(series, "topic") == topic {
			n, err := strconv.Atoi(label(series, "partition"))
			if err == nil {
				out = append(out, int32(n))
			}
		}
	}
	slices.Sort(out)
	return out, true
}

// groupMembers describes the consumer group: each member's partitions of
// topic, and the group's state.
func groupMembers(adm *kadm.Client, group, topic string) (map[string][]int32, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	groups, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, "", err
	}
	g, ok := groups[group]
	if !ok {
		return nil, "", fmt.Errorf("group %s not described", group)
	}
	if g.Err != nil {
		return nil, "", g.Err
	}
	out := map[string][]int32{}
	for _, m := range g.Members {
		out[m.MemberID] = nil
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				if t.Topic == topic {
					out[m.MemberID] = append(out[m.MemberID], t.Partitions...)
				}
			}
		}
	}
	return out, g.State, nil
}

// watchCommits samples the group's committed offsets on topic every
// 50 ms until stop is called, which returns the samples taken and the
// times an offset was seen lower than the one before it.
func watchCommits(adm *kadm.Client, group, topic string) (stop func() (samples, backwards int, first string)) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var samples, backwards int
	var first string
	last := map[int32]int64{}
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			offs, err := adm.FetchOffsets(ctx, group)
			cancel()
			if err == nil {
				samples++
				offs.Each(func(o kadm.OffsetResponse) {
					if o.Topic != topic || o.Err != nil {
						return
					}
					if prev, ok := last[o.Partition]; ok && o.At < prev {
						backwards++
						if first == "" {
							first = fmt.Sprintf("partition %d committed at %d after %d", o.Partition, o.At, prev)
						}
					}
					last[o.Partition] = o.At
				})
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return func() (int, int, string) {
		close(done)
		wg.Wait()
		return samples, backwards, first
	}
}

// rowVersions reads the sink rows of the events whose ids start with
// prefix, in the given partitions of the suite's topic: identity -> the
// row's version (xmin) and write time.
func (s *system) rowVersions(prefix string, partitions []int32) map[string]string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		s.t.Errorf("zombie-consumer: sink rows: %v", err)
		return nil
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, fmt.Sprintf(`SELECT source, event_id, xmin::text, written_at FROM %s
WHERE event_id LIKE $1 AND topic = $2 AND kafka_partition = ANY($3)`, s.table), prefix+"%", s.topic, partitions)
	if err != nil {
		s.t.Errorf("zombie-consumer: sink rows: %v", err)
		return nil
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var source, id, xmin string
		var at time.Time
		if err := rows.Scan(&source, &id, &xmin, &at); err != nil {
			s.t.Errorf("zombie-consumer: sink rows: %v", err)
			return nil
		}
		out[identity(source, id)] = xmin + " " + at.UTC().Format(time.RFC3339Nano)
	}
	if err := rows.Err(); err != nil {
		s.t.Errorf("zombie-consumer: sink rows: %v", err)
		return nil
	}
	return out
}

// logEntry is a line of a sluice process's JSON log, with the fields the
// scenario reads.
type logEntry struct {
	Time       time.Time          `json:"time"`
	Msg        string             `json:"msg"`
	Err        string             `json:"err"`
	Code       *int               `json:"code"`
	Partitions map[string][]int32 `json:"partitions"`
}

// logFrom is p's log from byte offset on, line by line (lines that are
// not JSON, such as the suite's start markers, left out).
func logFrom(p *proc, offset int64) []logEntry {
	b, _ := os.ReadFile(p.log)
	if offset > int64(len(b)) {
		return nil
	}
	var out []logEntry
	for _, line := range strings.Split(string(b[offset:]), "\n") {
		var e logEntry
		if json.Unmarshal([]byte(line), &e) == nil && e.Msg != "" {
			out = append(out, e)
		}
	}
	return out
}

func logSize(p *proc) int64 {
	fi, err := os.Stat(p.log)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func (z *zombie) run(s *system) {
	s.waitAccepted(2000)
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.brokers...))
	if err != nil {
		s.t.Errorf("zombie-consumer: %v", err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	group := s.run + "-consumer"
	partitions := len(s.endOffsets(s.topic))
	live := 0
	for _, c := range s.consumers {
		if c.cmd != nil {
			live++
		}
	}

	// The group settled: every live consumer a member, every partition
	// of the topic assigned. The zombie is the consumer that measures the
	// lag of the most of them (its own: a partition's series goes with
	// it).
	var victim *proc
	var before map[string][]int32
	settled := waitFor(time.Minute, func() bool {
		members, state, err := groupMembers(adm, group, s.topic)
		if err != nil || state != "Stable" || len(members) != live {
			return false
		}
		n := 0
		for _, ps := range members {
			n += len(ps)
		}
		if n != partitions {
			return false
		}
		victim, before = nil, members
		most := 0
		for _, c := range s.consumers {
			if c.cmd == nil {
				continue
			}
			if owned, ok := s.ownedByLag(c, s.topic); ok && len(owned) > most {
				victim, most = c, len(owned)
			}
		}
		return victim != nil
	})
	if !settled || victim == nil {
		s.t.Errorf("zombie-consumer: the group of %d consumers did not settle within a minute with the %d partitions assigned", live, partitions)
		return
	}
	z.name = victim.name
	admin := s.consumerAdmin(victim)
	m0, _ := scrape(admin)
	written0 := m0[`sluice_consumer_events_total{outcome="written"}`]
	offset := logSize(victim)

	stopped := time.Now()
	if err := victim.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Errorf("zombie-consumer: SIGSTOP: %v", err)
		return
	}
	var resumeOnce sync.Once
	resume := func() { resumeOnce.Do(func() { _ = victim.cmd.Process.Signal(syscall.SIGCONT) }) }
	defer resume()

	// Its session times out; the others rejoin and take its partitions.
	var after map[string][]int32
	moved := waitFor(zombieSession+45*time.Second, func() bool {
		members, state, err := groupMembers(adm, group, s.topic)
		if err != nil || state != "Stable" || len(members) != live-1 {
			return false
		}
		n := 0
		for _, ps := range members {
			n += len(ps)
		}
		after = members
		return n == partitions
	})
	if moved {
		z.movedIn = time.Since(stopped)
		// Its partitions, as the group had them: those of the member
		// that left.
		for id, ps := range before {
			if _, ok := after[id]; !ok {
				z.partitions = append(z.partitions, ps...)
			}
		}
		slices.Sort(z.partitions)
	} else {
		s.t.Errorf("zombie-consumer: the group did not give %s's partitions to the others within %v of SIGSTOP", z.name, zombieSession+45*time.Second)
	}
	// The new owners write its partitions' records for a while.
	time.Sleep(3 * time.Second)

	prefix := fmt.Sprintf("%s-%s-", s.run, "zombie-consumer")
	rowsBefore := s.rowVersions(prefix, z.partitions)
	z.rows = len(rowsBefore)
	stopWatch := watchCommits(adm, group, s.topic)
	time.Sleep(500 * time.Millisecond)
	woke := time.Now()
	z.paused = woke.Sub(stopped)
	resume()

	// On waking: its heartbeat is refused, its partitions are lost.
	waitFor(30*time.Second, func() bool {
		for _, e := range logFrom(victim, offset) {
			if e.Msg == "partitions lost" {
				z.lostIn = time.Since(woke)
				z.lost = e.Partitions[s.topic]
				return true
			}
		}
		return false
	})
	if z.lostIn >= 0 {
		m1, ok := scrape(admin)
		z.written = m1[`sluice_consumer_events_total{outcome="written"}`] - written0
		z.exact = ok
	}
	// Its commits, refused or not, come within a commit interval or two;
	// it rejoins meanwhile.
	time.Sleep(8 * time.Second)
	z.samples, z.backwards, z.firstBackward = stopWatch()

	afterLost := false
	for _, e := range logFrom(victim, offset) {
		switch {
		case e.Msg == "partitions lost":
			afterLost = true
		case e.Msg == "partitions assigned" && afterLost:
			z.rejoined = true
			if z.lostIn >= 0 && e.Time.Before(woke.Add(z.lostIn)) {
				z.exact = false
			}
		case e.Msg == "commit" && !e.Time.Before(woke.Add(-time.Second)):
			z.commitsRefused++
			why := e.Err
			if e.Code != nil {
				why = "code " + strconv.Itoa(*e.Code)
			}
			z.refusedBy[why]++
		}
	}

	rowsAfter := s.rowVersions(prefix, z.partitions)
	var ids []string
	for id := range rowsBefore {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if rowsAfter[id] != rowsBefore[id] {
			z.replaced++
			if z.firstReplaced == "" {
				z.firstReplaced = fmt.Sprintf("%s: %s, then %q", id, rowsBefore[id], rowsAfter[id])
			}
		}
	}
}

func (z *zombie) check(t *testing.T, l *ledger, r result) {
	switch {
	case len(z.partitions) == 0:
		t.Error("zombie-consumer: the paused consumer owned no partition of the topic")
	case z.movedIn < 0:
		t.Error("zombie-consumer: the group never gave the paused consumer's partitions to the others")
	case z.lostIn < 0:
		t.Errorf("zombie-consumer: %s did not log its partitions lost after SIGCONT", z.name)
	}
	if z.samples == 0 || z.backwards != 0 {
		t.Errorf("zombie-consumer: the group's committed offsets went back %d times in %d samples (the first: %s): a commit for a partition the zombie had lost",
			z.backwards, z.samples, z.firstBackward)
	}
	if z.rows == 0 || z.replaced != 0 {
		t.Errorf("zombie-consumer: %d of %d rows of the zombie's partitions replaced after it woke (the first: %s)", z.replaced, z.rows, z.firstReplaced)
	}
	if l.unanswered != 0 {
		t.Errorf("zombie-consumer: %d events unanswered", l.unanswered)
	}
}

func (z *zombie) line(s *system, _ *ledger, _ result) string {
	prefix := fmt.Sprintf("%s-%s-", s.run, "zombie-consumer")
	dup := s.sinkCount("audit duplicates", fmt.Sprintf("SELECT count(*) FROM %s_audit WHERE event_id LIKE $1 AND action = 'written' AND detail = 'duplicate'", s.table), prefix+"%")
	var refused []string
	for why, n := range z.refusedBy {
		refused = append(refused, fmt.Sprintf("%s: %d", why, n))
	}
	sort.Strings(refused)
	approx := ""
	if !z.exact {
		approx = " (at most: it had partitions again by the look)"
	}
	return fmt.Sprintf("%s (partitions %v) SIGSTOPped %v (session timeout %v); the group held them without it %v in; on SIGCONT it logged %v lost in %v, rejoined %v; "+
		"commits refused after waking %d {%s}; committed offsets gone back %d in %d samples; records it wrote from the pause to the loss %v%s; "+
		"rows of its partitions held when it woke %d, replaced %d; written rows audited duplicate %d; took %v",
		z.name, z.partitions, z.paused.Round(100*time.Millisecond), zombieSession, z.movedIn.Round(100*time.Millisecond),
		z.lost, z.lostIn.Round(time.Millisecond), z.rejoined, z.commitsRefused, strings.Join(refused, ", "), z.backwards, z.samples,
		z.written, approx, z.rows, z.replaced, dup, time.Since(z.began).Round(time.Second))
}
