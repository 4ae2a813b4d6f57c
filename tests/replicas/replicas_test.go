package replicas

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/kafkatest"
)

const (
	envKfake = "SLUICE_REPLICAS_KFAKE"

	// quota is source A's cluster-wide events/s; offered is what is sent.
	quota   = 600
	offered = 3 * quota
	// batch is the events of one request, and limits.max_events_per_request.
	batch = 20
	// tolerance is the issue's ±15%.
	tolerance = 0.15

	heartbeatInterval = 500 * time.Millisecond
	memberTTL         = 2 * time.Second
	// warmup lets the buckets' first bursts drain before a window.
	warmup = 2 * time.Second
	window = 5 * time.Second

	startupWait = time.Minute
	buildWait   = 5 * time.Minute
	callWait    = 5 * time.Second
	// sendersPerGateway share a gateway's part of the load.
	sendersPerGateway = 2
)

const apiKey = "replicas-key"
const logType = "examples.logs.v1.LogLine"

// TestIntegrationReplicas: see the package documentation.
func TestIntegrationReplicas(t *testing.T) {
	brokers := os.Getenv(kafkatest.EnvBrokers)
	if brokers == "" && os.Getenv(envKfake) != "1" {
		t.Skipf("%s is not set (nor %s=1): skipping the three-gateway test", kafkatest.EnvBrokers, envKfake)
	}
	root := moduleRoot(t)
	dir := t.TempDir()
	bin := sluiceBinary(t, root, dir)
	if brokers == "" {
		brokers = startKfake(t, bin, dir)
	}
	seeds := strings.Split(brokers, ",")
	topic := kafkatest.CreateTopic(t, seeds, 3, nil)
	heartbeats := fmt.Sprintf("sluice.gateways.test.%d", time.Now().UnixNano())
	t.Cleanup(func() { deleteTopic(t, seeds, heartbeats) })

	var gws []*gateway
	for i := range 3 {
		gws = append(gws, startGateway(t, bin, dir, root, fmt.Sprintf("gw%d", i), seeds, topic, heartbeats))
	}
	waitReplicas(t, gws, 3)

	load := newLoad(gws)
	ctx, cancel := context.WithCancel(t.Context())
	var senders sync.WaitGroup
	load.start(ctx, &senders)
	t.Cleanup(func() { cancel(); senders.Wait() })

	time.Sleep(warmup) // the load runs; the buckets' first bursts drain
	before := load.measure(window)
	t.Logf("three gateways, A offered %d events/s: accepted %.0f events/s in total (quota %d, %+.1f%%), per gateway %s",
		offered, before.total, quota, 100*(before.total/quota-1), before.per())

	// Kill one without a word; its share of the load goes to the others.
	killed := gws[2]
	if err := killed.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	load.drop(2)
	survivors := gws[:2]
	rebalanced := make(chan time.Duration, 1)
	go func() {
		deadline := time.Now().Add(startupWait)
		for time.Now().Before(deadline) {
			if countAll(survivors, 2) {
				rebalanced <- time.Since(killedAt)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		rebalanced <- -1
	}()
	documented := memberTTL + heartbeatInterval
	between := load.measure(documented)
	after := load.measure(window)
	took := <-rebalanced
	t.Logf("gateway gw2 killed: the survivors counted two after %v (documented bound member_ttl %v + heartbeat_interval %v = %v)",
		took.Round(time.Millisecond), memberTTL, heartbeatInterval, documented)
	t.Logf("until then: accepted %.0f events/s in total", between.total)
	t.Logf("two survivors, from %v after the kill: accepted %.0f events/s in total (quota %d, %+.1f%%), per gateway %s",
		documented, after.total, quota, 100*(after.total/quota-1), after.per())

	for _, c := range []struct {
		what string
		got  float64
	}{{"three gateways", before.total}, {"two survivors", after.total}} {
		if c.got < quota*(1-tolerance) || c.got > quota*(1+tolerance) {
			t.Errorf("%s: accepted %.0f events/s of A, want %d ± %.0f%%", c.what, c.got, quota, 100*tolerance)
		}
	}
	if took < 0 {
		t.Errorf("the survivors did not count two within %v", startupWait)
	}
	if n := load.unexpected.Load(); n > 0 {
		t.Errorf("%d answers were neither ACCEPTED nor RATE_LIMITED; last: %v", n, load.lastUnexpected.Load())
	}
}

// load sends A's events at offered events/s, split evenly over the
// gateways still in it, and counts what each accepts.
type load struct {
	gws            []*gateway
	live           []atomic.Bool
	accepted       []atomic.Int64
	unexpected     atomic.Int64
	lastUnexpected atomic.Value
	seq            atomic.Int64
	client         *http.Client
}

func newLoad(gws []*gateway) *load {
	l := &load{gws: gws, live: make([]atomic.Bool, len(gws)), accepted: make([]atomic.Int64, len(gws)),
		client: &http.Client{Timeout: callWait, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * sendersPerGateway}}}
	for i := range l.live {
		l.live[i].Store(true)
	}
	return l
}

// start runs sendersPerGateway senders per gateway until ctx ends. Each
// sends one request of batch events per tick; the ticks of the live
// gateways' senders add up to offered events/s.
func (l *load) start(ctx context.Context, wg *sync.WaitGroup) {
	for i := range l.gws {
		for range sendersPerGateway {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.send(ctx, i)
			}()
		}
	}
}

func (l *load) send(ctx context.Context, i int) {
	next := time.Now()
	for ctx.Err() == nil && l.live[i].Load() {
		live := 0
		for j := range l.live {
			if l.live[j].Load() {
				live++
			}
		}
		// Requests per second of this sender: the offered load over the
		// live gateways' senders.
		perSender := float64(offered) / batch / float64(live*sendersPerGateway)
		next = next.Add(time.Duration(float64(time.Second) / perSender))
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		} else if d < -time.Second {
			next = time.Now() // fell behind: do not burst to catch up
		}
		n, err := l.post(ctx, l.gws[i])
		if err != nil {
			if ctx.Err() == nil && l.live[i].Load() {
				l.unexpected.Add(1)
				l.lastUnexpected.Store(err.Error())
			}
			continue
		}
		l.accepted[i].Add(int64(n))
	}
}

// post sends one batch of A's events and returns how many were accepted:
// all of them, or none with 429 RATE_LIMITED.
func (l *load) post(ctx context.Context, g *gateway) (int, error) {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	var body bytes.Buffer
	body.WriteString(`{"events":[`)
	for k := range batch {
		if k > 0 {
			body.WriteByte(',')
		}
		s := l.seq.Add(1)
		fmt.Fprintf(&body, `{"id":"a-%d","type":%q,"occurred_at":%q,"partition_key":"k%d","payload":%s}`,
			s, logType, now, s%16, bytes.TrimSpace(examples.LogLineJSON))
	}
	body.WriteString(`]}`)
	ctx, cancel := context.WithTimeout(ctx, callWait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+g.httpAddr+"/v1/events", &body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Api-Key", apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, err
	}
	switch {
	case resp.StatusCode == http.StatusOK && bytes.Count(answer, []byte(`"outcome":"ACCEPTED"`)) == batch:
		return batch, nil
	case resp.StatusCode == http.StatusTooManyRequests && bytes.Contains(answer, []byte("RATE_LIMITED")):
		return 0, nil
	}
	return 0, fmt.Errorf("%s: %d %.300s", g.name, resp.StatusCode, answer)
}

// drop takes gateway i out of the load; the others' senders take its part.
func (l *load) drop(i int) { l.live[i].Store(false) }

// rates are the events/s accepted over a window, per gateway and in total.
type rates struct {
	each  []float64
	total float64
}

func (r rates) per() string {
	var parts []string
	for i, v := range r.each {
		parts = append(parts, fmt.Sprintf("gw%d %.0f", i, v))
	}
	return strings.Join(parts, ", ")
}

// measure counts what is accepted over the next d.
func (l *load) measure(d time.Duration) rates {
	snap := func() []int64 {
		out := make([]int64, len(l.accepted))
		for i := range l.accepted {
			out[i] = l.accepted[i].Load()
		}
		return out
	}
	start, t0 := snap(), time.Now()
	time.Sleep(d)
	end, elapsed := snap(), time.Since(t0).Seconds()
	r := rates{each: make([]float64, len(start))}
	for i := range start {
		r.each[i] = float64(end[i]-start[i]) / elapsed
		r.total += r.each[i]
	}
	return r
}

// gateway is one `sluice gateway` process of the test's.
type gateway struct {
	name, httpAddr, adminAddr string
	cmd                       *exec.Cmd
	log                       string
	exited                    chan struct{}
}

func startGateway(t *testing.T, bin, dir, root, name string, brokers []string, topic, heartbeats string) *gateway {
	t.Helper()
	g := &gateway{name: name, httpAddr: freeAddr(t), adminAddr: freeAddr(t), exited: make(chan struct{})}
	sum := sha256.Sum256([]byte(apiKey))
	cfg := map[string]any{
		"gateway": map[string]any{
			"grpc_addr": freeAddr(t),
			"http_addr": g.httpAddr,
			"limits":    map[string]any{"max_events_per_request": batch},
		},
		"sources": []any{map[string]any{
			"name":        "a",
			"key_hashes":  []string{hex.EncodeToString(sum[:])},
			"event_types": []string{"*"},
			"rate":        quota,
			"burst":       quota,
		}},
		"topics": map[string]string{logType: topic},
		"contracts": map[string]any{
			"descriptor_set": filepath.Join(root, "examples", "contracts.binpb"),
			"types":          []string{logType},
		},
		"kafka": map[string]any{"brokers": brokers},
		"cluster": map[string]any{
			"heartbeat_topic":    heartbeats,
			"heartbeat_interval": heartbeatInterval.String(),
			"member_ttl":         memberTTL.String(),
		},
		"admin": map[string]any{"addr": g.adminAddr},
		"log":   map[string]any{"level": "info", "format": "text"},
	}
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	g.log = filepath.Join(dir, name+".log")
	f, err := os.Create(g.log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.cmd = exec.CommandContext(ctx, bin, "gateway", "--config", path) // cancel kills it
	g.cmd.Stdout, g.cmd.Stderr = f, f
	if err := g.cmd.Start(); err != nil {
		cancel()
		f.Close()
		t.Fatal(err)
	}
	go func() {
		defer close(g.exited)
		_ = g.cmd.Wait()
		f.Close()
	}()
	t.Cleanup(func() {
		cancel()
		<-g.exited
		if t.Failed() {
			t.Logf("%s log:\n%s", name, g.logTail())
		}
	})
	deadline := time.Now().Add(startupWait)
	for {
		if code, _ := g.get("/readyz"); code == http.StatusOK {
			return g
		}
		select {
		case <-g.exited:
			t.Fatalf("%s exited before it was ready:\n%s", name, g.logTail())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not ready within %v:\n%s", name, startupWait, g.logTail())
		}
	}
}

func (g *gateway) get(path string) (int, string) {
	c := &http.Client{Timeout: callWait}
	resp, err := c.Get("http://" + g.adminAddr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, string(b)
}

// replicas is the gateway's sluice_gateway_replicas, as /metrics says it.
func (g *gateway) replicas() string {
	_, metrics := g.get("/metrics")
	for _, line := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(line, "sluice_gateway_replicas "); ok {
			return v
		}
	}
	return ""
}

func (g *gateway) logTail() string {
	b, _ := os.ReadFile(g.log)
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return string(b)
}

func countAll(gws []*gateway, n int) bool {
	for _, g := range gws {
		if g.replicas() != fmt.Sprint(n) {
			return false
		}
	}
	return true
}

func waitReplicas(t *testing.T, gws []*gateway, n int) {
	t.Helper()
	deadline := time.Now().Add(startupWait)
	for !countAll(gws, n) {
		if time.Now().After(deadline) {
			var got []string
			for _, g := range gws {
				got = append(got, g.name+" "+g.replicas())
			}
			t.Fatalf("the gateways did not all count %d within %v: %s", n, startupWait, strings.Join(got, ", "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// moduleRoot is the directory of the go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// sluiceBinary builds this tree's sluice into dir.
func sluiceBinary(t *testing.T, root, dir string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), buildWait)
	defer cancel()
	bin := filepath.Join(dir, "sluice")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/sluicehq/sluice/cmd/sluice")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startKfake starts `sluice kfake` and returns the address it listens on.
func startKfake(t *testing.T, bin, dir string) string {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "kfake", "--addr", addr)
	logPath := filepath.Join(dir, "kfake.log")
	f, err := os.Create(logPath)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { defer close(exited); _ = cmd.Wait(); f.Close() }()
	t.Cleanup(func() { cancel(); <-exited })
	deadline := time.Now().Add(startupWait)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return addr
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("kfake exited:\n%s", b)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("kfake did not listen on %s within %v", addr, startupWait)
		}
	}
}

func deleteTopic(t *testing.T, brokers []string, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), callWait)
	defer cancel()
	if _, err := kadm.NewClient(cl).DeleteTopics(ctx, topic); err != nil {
		t.Logf("heartbeat topic %s not deleted: %v", topic, err)
	}
}

// freeAddr is a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
