package hostile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"go.yaml.in/yaml/v3"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/procfs"
)

// The environment that runs TestHostileLoad and shapes it.
const (
	// envRun must be "1" for the test to run.
	envRun = "SLUICE_HOSTILE"
	// envBinary names a sluice binary to run instead of building this
	// tree's: the same load against another build, for a comparison.
	envBinary = "SLUICE_HOSTILE_BINARY"
	// envLimits is a YAML flow mapping merged into gateway.limits, e.g.
	// "{stream_idle_timeout: 3s}". Unset, the config sets no limits, so a
	// binary of any version accepts it.
	envLimits = "SLUICE_HOSTILE_LIMITS"
	// envGateway is the same, merged into the gateway block itself, e.g.
	// "{publish_timeout: 2s}" (a stream_idle_timeout must exceed it).
	envGateway = "SLUICE_HOSTILE_GATEWAY"
)

// The bounds the gateway is held to, and how long the test waits for them.
const (
	// memoryLimit is the gateway's memory_limit (512 MiB): its peak RSS
	// (VmHWM) must stay within it.
	memoryLimit = 512 << 20
	// heapSlack is how much larger the live heap may be after the load
	// than before, both after a forced GC. A fixed slack rather than a
	// ratio: the heap before is small and mostly start-up structures
	// (contracts, metrics), so a ratio would say little, while 32 MiB is
	// four of the largest messages: less than any set of requests, their
	// decoded events or their answers left behind.
	heapSlack = 32 << 20
	// goroutineSlack is how many more goroutines than before may be left
	// once the load's connections are closed.
	goroutineSlack = 20
	// settleTimeout bounds the wait for the heap and goroutines to come
	// back after the load.
	settleTimeout = 30 * time.Second
	// loadBudget bounds the loads together; each also bounds itself by
	// count, per-call deadlines and holds, well within it.
	loadBudget = 90 * time.Second

	rssEvery    = 50 * time.Millisecond  // VmRSS samples
	heapEvery   = 250 * time.Millisecond // heap samples from /metrics
	heapWait    = 5 * time.Second        // bound on one heap sample
	settleEvery = 500 * time.Millisecond // forced GC and reading, after the load
	startupWait = time.Minute            // kfake's listener, the gateway's readiness
	buildWait   = 5 * time.Minute
)

// apiKey is the load's source key; the config holds its SHA-256.
const apiKey = "hostile-load-key"

// TestHostileLoad runs the sluice gateway as a process of its own, under
// every hostile load of loads at once, and holds it to its memory bound,
// to its heap and goroutines coming back, and to a typed answer for every
// request. See the package documentation.
func TestHostileLoad(t *testing.T) {
	if os.Getenv(envRun) != "1" {
		t.Skip(envRun + "=1 runs the hostile load against the sluice binary (about two minutes)")
	}
	limits, err := parseMapping(envLimits)
	if err != nil {
		t.Fatal(err)
	}
	gatewayExtra, err := parseMapping(envGateway)
	if err != nil {
		t.Fatal(err)
	}
	root := moduleRoot(t)
	dir := t.TempDir()
	bin := sluiceBinary(t, root, dir)
	brokers := startKfake(t, bin, dir)
	gw := startGateway(t, bin, dir, root, brokers, limits, gatewayExtra, nil)
	ctx := t.Context()

	before, err := gw.admin.settled(ctx)
	if err != nil {
		t.Fatalf("heap and goroutines before the load: %v", err)
	}

	// The samplers run from before the load until it is over.
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var rss, heap peak
	var samplers sync.WaitGroup
	samplers.Go(func() {
		sample(sampleCtx, rssEvery, &rss, func(context.Context) (int64, error) {
			m, err := procfs.ReadMemory(gw.pid())
			return m.RSS, err
		})
	})
	samplers.Go(func() {
		sample(sampleCtx, heapEvery, &heap, func(ctx context.Context) (int64, error) {
			ctx, cancel := context.WithTimeout(ctx, heapWait)
			defer cancel()
			r, err := gw.admin.runtime(ctx)
			return r.HeapAlloc, err
		})
	})

	start := time.Now()
	loads := loads()
	tallies := make([]*tally, len(loads))
	loadCtx, cancel := context.WithTimeout(ctx, loadBudget)
	var loadsDone sync.WaitGroup
	for i, l := range loads {
		loadsDone.Go(func() {
			tallies[i] = l.Run(loadCtx, target{GRPCAddr: gw.grpcAddr, HTTPAddr: gw.httpAddr, APIKey: apiKey})
		})
	}
	loadsDone.Wait()
	cancel()
	wall := time.Since(start)
	stopSampling()
	samplers.Wait()

	heapBound := before.HeapAlloc + heapSlack
	goroutineBound := before.Goroutines + goroutineSlack
	after, settledIn, settleErr := gw.admin.settle(ctx, func(r runtimeFigures) bool {
		return r.HeapAlloc <= heapBound && r.Goroutines <= goroutineBound
	})
	afterHeap, afterGoroutines := "no reading", "no reading"
	if after != nil {
		afterHeap, afterGoroutines = mib(after.HeapAlloc), fmt.Sprint(after.Goroutines)
	}
	mem, memErr := procfs.ReadMemory(gw.pid())
	running := gw.running()

	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	binary := "built from this tree"
	if p := os.Getenv(envBinary); p != "" {
		binary = p
	}
	extra := os.Getenv(envLimits)
	if extra == "" {
		extra = "none"
	}
	rssPeak, rssSamples, rssFailed := rss.value()
	heapPeak, heapSamples, heapFailed := heap.value()
	fmt.Fprintf(w, "binary\t%s\n", binary)
	fmt.Fprintf(w, "extra gateway.limits\t%s\n", extra)
	fmt.Fprintf(w, "extra gateway\t%s\n", os.Getenv(envGateway))
	fmt.Fprintf(w, "wall time of the loads\t%s\n", wall.Round(100*time.Millisecond))
	fmt.Fprintf(w, "peak RSS (VmHWM)\t%s\t(memory_limit %s)\n", mib(mem.Peak), mib(memoryLimit))
	fmt.Fprintf(w, "peak sampled VmRSS\t%s\t(%d samples every %s, %d failed)\n", mib(rssPeak), rssSamples, rssEvery, rssFailed)
	fmt.Fprintf(w, "peak sampled heap\t%s\t(%d samples every %s, %d failed)\n", mib(heapPeak), heapSamples, heapEvery, heapFailed)
	fmt.Fprintf(w, "live heap before / after\t%s / %s\t(bound %s)\n", mib(before.HeapAlloc), afterHeap, mib(heapBound))
	fmt.Fprintf(w, "goroutines before / after\t%d / %s\t(bound %d)\n", before.Goroutines, afterGoroutines, goroutineBound)
	if settleErr == nil {
		fmt.Fprintf(w, "came back within bounds\tafter %s\n", settledIn.Round(100*time.Millisecond))
	} else {
		fmt.Fprintf(w, "came back within bounds\tno, within %s: %v\n", settleTimeout, settleErr)
	}
	fmt.Fprintf(w, "gateway running at the end\t%v\n", running)
	w.Flush()
	for _, tl := range tallies {
		writeTally(&b, tl)
	}
	t.Log("hostile load:\n" + b.String())

	if memErr != nil {
		t.Errorf("reading the gateway's peak RSS: %v", memErr)
	} else if mem.Peak > memoryLimit {
		t.Errorf("peak RSS %s is over memory_limit %s", mib(mem.Peak), mib(memoryLimit))
	}
	switch {
	case after == nil:
		t.Errorf("no reading of the live heap and goroutines within %s of the load's end: %v", settleTimeout, settleErr)
	default:
		if after.HeapAlloc > heapBound {
			t.Errorf("live heap %s after the load (forced GC, waited up to %s) is over %s: %s before + %s",
				mib(after.HeapAlloc), settleTimeout, mib(heapBound), mib(before.HeapAlloc), mib(heapSlack))
		}
		if after.Goroutines > goroutineBound {
			t.Errorf("%d goroutines after the load (waited up to %s), over %d before + %d",
				after.Goroutines, settleTimeout, before.Goroutines, goroutineSlack)
		}
	}
	_, streamTimeout := limits["stream_idle_timeout"]
	streams := 0
	for i, tl := range tallies {
		if n := tl.count(kindUntyped); n > 0 {
			t.Errorf("%s: %d untyped answers", tl.Name, n)
		}
		if !loads[i].Streams {
			continue
		}
		if !streamTimeout {
			t.Logf("%s: %s sets no stream_idle_timeout, so streams the server left open are not held against it", tl.Name, envLimits)
			continue
		}
		// A stream whose client reads nothing has answers queued in front
		// of its final status, and HTTP/2 flow control keeps them all
		// there: the server ends it, but the client never hears. Those
		// are counted by the server (below); every other stream must
		// have heard its end, typed.
		if n := tl.count(kindOpen); n > 0 && !loads[i].Unread {
			t.Errorf("%s: %d streams still open when the client let go: with stream_idle_timeout set the server must end them, typed", tl.Name, n)
		}
		streams += tl.total()
	}
	if streamTimeout {
		switch {
		case after == nil || before.IdleStreamsClosed < 0:
			t.Errorf("no reading of sluice_streams_idle_closed_total")
		case after.IdleStreamsClosed-before.IdleStreamsClosed < int64(streams):
			t.Errorf("the gateway ended %d streams as idle, want all %d of the stream loads", after.IdleStreamsClosed-before.IdleStreamsClosed, streams)
		default:
			t.Logf("the gateway ended %d streams as idle (sluice_streams_idle_closed_total)", after.IdleStreamsClosed-before.IdleStreamsClosed)
		}
	}
	if !running {
		t.Errorf("the gateway is not running at the end")
	}
	if t.Failed() {
		t.Logf("end of the gateway's log:\n%s", gw.logTail())
	}
}

// writeTally renders one load's answers: the counts by kind, then a line
// per answer, then the load's figures.
func writeTally(b *strings.Builder, tl *tally) {
	fmt.Fprintf(b, "\n%s: %d typed, %d untyped, %d open\n", tl.Name, tl.count(kindTyped), tl.count(kindUntyped), tl.count(kindOpen))
	w := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, l := range tl.lines() {
		fmt.Fprintf(w, "  %d\t  %s\t %s\n", l.Count, l.Kind, l.What)
	}
	w.Flush()
	for _, f := range tl.figures() {
		fmt.Fprintf(b, "  %s\n", f)
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// parseMapping reads the YAML flow mapping in the environment variable
// env; unset or empty is none.
func parseMapping(env string) (map[string]any, error) {
	m := map[string]any{}
	s := os.Getenv(env)
	if strings.TrimSpace(s) == "" {
		return m, nil
	}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("%s: not a YAML mapping: %w", env, err)
	}
	return m, nil
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

// sluiceBinary is envBinary, or this tree's sluice built into dir.
func sluiceBinary(t *testing.T, root, dir string) string {
	t.Helper()
	if p := os.Getenv(envBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s: %v", envBinary, err)
		}
		return p
	}
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

// child is a sluice process of the test's, killed and waited for when
// the test ends.
type child struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

// startChild starts bin with args, its output in dir/name.log and, when
// set, also through announce.
func startChild(t *testing.T, bin, dir, name string, announce io.Writer, args ...string) *child {
	t.Helper()
	c := &child{log: filepath.Join(dir, name+".log"), exited: make(chan struct{})}
	f, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cmd = exec.CommandContext(ctx, bin, args...) // cancel kills it
	c.cmd.Stderr = f
	c.cmd.Stdout = f
	if announce != nil {
		c.cmd.Stdout = io.MultiWriter(f, announce)
	}
	if err := c.cmd.Start(); err != nil {
		cancel()
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		defer close(c.exited)
		_ = c.cmd.Wait()
		f.Close()
	}()
	t.Cleanup(func() {
		cancel()
		<-c.exited
	})
	return c
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

func (c *child) logTail() string {
	b, _ := os.ReadFile(c.log)
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return string(b)
}

// announcement catches the first line of a child's output that starts
// with prefix and sends the rest of it on line. exec writes to it from
// one goroutine.
type announcement struct {
	prefix string
	line   chan string
	buf    []byte
	done   bool
}

func newAnnouncement(prefix string) *announcement {
	return &announcement{prefix: prefix, line: make(chan string, 1)}
}

func (a *announcement) Write(p []byte) (int, error) {
	if a.done {
		return len(p), nil
	}
	a.buf = append(a.buf, p...)
	for {
		i := bytes.IndexByte(a.buf, '\n')
		if i < 0 {
			break
		}
		line := string(a.buf[:i])
		a.buf = a.buf[i+1:]
		if rest, ok := strings.CutPrefix(line, a.prefix); ok {
			a.line <- strings.TrimSpace(rest)
			a.done, a.buf = true, nil
			break
		}
	}
	if len(a.buf) > 64<<10 { // no line that long is the announcement
		a.buf = nil
	}
	return len(p), nil
}

// startKfake starts `sluice kfake` on a port of its choosing and returns
// the address it says it listens on.
func startKfake(t *testing.T, bin, dir string) string {
	t.Helper()
	ann := newAnnouncement("kfake listening on ")
	c := startChild(t, bin, dir, "kfake", ann, "kfake", "--addr", "127.0.0.1:0")
	select {
	case addr := <-ann.line:
		return addr
	case <-c.exited:
		t.Fatalf("kfake exited before listening:\n%s", c.logTail())
	case <-time.After(startupWait):
		t.Fatalf("kfake did not say it listens within %s:\n%s", startupWait, c.logTail())
	}
	return ""
}

// gatewayProc is the running gateway and its addresses.
type gatewayProc struct {
	*child
	grpcAddr, httpAddr string
	admin              admin
}

// startGateway writes the gateway's config, edited by edit when it is
// set, starts it and waits for its /readyz.
func startGateway(t *testing.T, bin, dir, root, brokers string, limits, extra map[string]any, edit func(cfg map[string]any)) *gatewayProc {
	t.Helper()
	grpcAddr, httpAddr, adminAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	sum := sha256.Sum256([]byte(apiKey))
	gw := map[string]any{
		"grpc_addr":    grpcAddr,
		"http_addr":    httpAddr,
		"memory_limit": memoryLimit,
	}
	for k, v := range extra {
		gw[k] = v
	}
	if len(limits) > 0 {
		gw["limits"] = limits
	}
	cfg := map[string]any{
		"gateway": gw,
		"sources": []any{map[string]any{
			"name":        "hostile",
			"key_hashes":  []string{hex.EncodeToString(sum[:])},
			"event_types": []string{"*"},
			"rate":        0,
		}},
		"contracts": map[string]any{
			"descriptor_set": filepath.Join(root, "examples", "contracts.binpb"),
			"types":          examples.Types,
		},
		"kafka": map[string]any{"brokers": []string{brokers}},
		"spool": map[string]any{"dir": filepath.Join(dir, "spool")},
		"admin": map[string]any{"addr": adminAddr, "pprof": true},
		"log":   map[string]any{"level": "info"},
	}
	if edit != nil {
		edit(cfg)
	}
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, bin, dir, "gateway", nil, "gateway", "--config", path)
	g := &gatewayProc{child: c, grpcAddr: grpcAddr, httpAddr: httpAddr,
		admin: admin{adminProbe{Addr: adminAddr, Client: &http.Client{}}}} // every call bounds itself

	ctx, cancel := context.WithTimeout(t.Context(), startupWait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		tryCtx, cancelTry := context.WithTimeout(ctx, 2*time.Second)
		err := g.admin.ready(tryCtx)
		cancelTry()
		if err == nil {
			return g
		}
		select {
		case <-c.exited:
			t.Fatalf("the gateway exited before it was ready:\n%s", c.logTail())
		case <-ctx.Done():
			t.Fatalf("the gateway was not ready within %s (%v):\n%s", startupWait, err, c.logTail())
		case <-tick.C:
		}
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

// admin adds the test's waits to Admin.
type admin struct{ adminProbe }

// settled forces two garbage collections, the second of which also
// empties what sync.Pools kept through the first, and reads the runtime's
// gauges.
func (a admin) settled(ctx context.Context) (runtimeFigures, error) {
	for range 2 {
		if err := a.forceGC(ctx); err != nil {
			return runtimeFigures{}, err
		}
	}
	return a.runtime(ctx)
}

// settle reads settled gauges every settleEvery until ok says they are
// within bounds or settleTimeout passes. It returns the last reading (nil
// when none came in time) and how long it took; the error says why the
// gauges never got within bounds.
func (a admin) settle(ctx context.Context, ok func(runtimeFigures) bool) (*runtimeFigures, time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	tick := time.NewTicker(settleEvery)
	defer tick.Stop()
	var last *runtimeFigures
	var lastErr error
	for {
		r, err := a.settled(ctx)
		if err == nil {
			last, lastErr = &r, nil
			if ok(r) {
				return last, time.Since(start), nil
			}
		} else if last == nil || ctx.Err() == nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return last, 0, lastErr
			}
			return last, 0, errors.New("the last reading is over the bounds")
		case <-tick.C:
		}
	}
}

// The checks below are quick and always run: the messages are what the
// loads say they are, and answers are judged as the package says.

func TestMessageSizes(t *testing.T) {
	const maxRequestBytes = 4 << 20 // the gateway's default max_request_bytes
	at := time.Now()
	for _, tc := range []struct {
		name     string
		msg      []byte
		min, max int
	}{
		{"8 MB giant count", giantCountBatch(giantEvents), 8_000_000, 8_000_000},
		{"4 MB giant count", giantCountBatch(giantEvents / 2), 4_000_000, 4_000_000},
		{"REST giant count", giantCountREST(restBodyBytes), restBodyBytes - 3, restBodyBytes},
		{"REST violation bomb", violationREST(bombKeys, at), 3_700_000, maxRequestBytes},
		{"gRPC violation bomb", violationGRPC(bombKeys, at), 3_500_000, maxRequestBytes},
		{"stream batch", streamBatch(streamBatchEvents, streamMessageBytes, at), 3_500_000, 3_700_000},
	} {
		if n := len(tc.msg); n < tc.min || n > tc.max {
			t.Errorf("%s: %d bytes, want [%d, %d]", tc.name, n, tc.min, tc.max)
		}
	}
}

func TestMessagesDecode(t *testing.T) {
	at := time.Now()
	var giant ingestv1.PublishRequest
	if err := proto.Unmarshal(giantCountBatch(3), &giant); err != nil || len(giant.GetEvents()) != 3 {
		t.Errorf("giant count batch of 3: %d events, %v", len(giant.GetEvents()), err)
	}
	// 12 bytes of envelope and 3 a further event: 17 fit in 64 bytes.
	body := giantCountREST(64)
	if want := `{"events":[` + strings.Repeat(`{},`, 16) + `{}]}`; string(body) != want {
		t.Errorf("REST giant count of 64 bytes: %s, want %s", body, want)
	}

	reg, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	line, ok := reg.Lookup(logLineType)
	if !ok {
		t.Fatal("no LogLine contract")
	}
	if _, err := line.CheckJSON(logLineJSON(streamMessageBytes, at)); err != nil {
		t.Errorf("the stream batches' LogLine is not valid: %v", err)
	}
	if _, err := line.CheckJSON(logLineJSON(1, at)); err != nil {
		t.Errorf("the violation bombs' LogLine is not valid: %v", err)
	}

	var batch ingestv1.PublishStreamRequest
	if err := proto.Unmarshal(streamBatch(3, 10, at), &batch); err != nil {
		t.Fatal(err)
	}
	for i, ev := range batch.GetEvents() {
		if err := reg.Validate(ev); err != nil {
			t.Errorf("stream batch event %d: envelope: %v", i, err)
		}
	}

	var bomb ingestv1.PublishRequest
	if err := proto.Unmarshal(violationGRPC(20, at), &bomb); err != nil || len(bomb.GetEvents()) != 1 {
		t.Fatalf("gRPC violation bomb: %d events, %v", len(bomb.GetEvents()), err)
	}
	var ve *contract.ViolationError
	if err := reg.Validate(bomb.GetEvents()[0]); !errors.As(err, &ve) || len(ve.Violations) < 20 {
		t.Errorf("gRPC violation bomb of 20 keys: %v, want a violation a key", err)
	}
}

func TestErrorDomainIsTheGateways(t *testing.T) {
	if errorDomain != gateway.ErrorDomain {
		t.Errorf("ErrorDomain %q, the gateway's is %q", errorDomain, gateway.ErrorDomain)
	}
}

func TestAnswers(t *testing.T) {
	typed, err := status.New(codes.InvalidArgument, "too many").WithDetails(
		&errdetails.ErrorInfo{Reason: "BATCH_TOO_LARGE", Domain: errorDomain})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := status.New(codes.InvalidArgument, "x").WithDetails(&errdetails.ErrorInfo{Reason: "R", Domain: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	rest := func(code int) *http.Response { return &http.Response{StatusCode: code} }
	for _, tc := range []struct {
		name string
		kind kind
		got  func() (kind, string)
	}{
		{"gRPC response", kindTyped, func() (kind, string) { return grpcAnswer(&ingestv1.PublishResponse{}, nil) }},
		{"gRPC ErrorInfo of the domain", kindTyped, func() (kind, string) { return grpcAnswer(nil, typed.Err()) }},
		{"gRPC ErrorInfo of another domain", kindUntyped, func() (kind, string) { return grpcAnswer(nil, foreign.Err()) }},
		{"gRPC bare status", kindUntyped, func() (kind, string) {
			return grpcAnswer(nil, status.Error(codes.ResourceExhausted, "grpc: received message larger than max"))
		}},
		{"gRPC not a status", kindUntyped, func() (kind, string) { return grpcAnswer(nil, io.ErrUnexpectedEOF) }},
		{"stream ended OK", kindUntyped, func() (kind, string) { return streamEnd(io.EOF) }},
		{"stream ended typed", kindTyped, func() (kind, string) { return streamEnd(typed.Err()) }},
		{"REST refusal", kindTyped, func() (kind, string) { return restAnswer(rest(413), []byte(`{"reason":"BATCH_TOO_LARGE"}`), nil) }},
		{"REST 503 refusal", kindTyped, func() (kind, string) { return restAnswer(rest(503), []byte(`{"reason":"UNAVAILABLE"}`), nil) }},
		{"REST results", kindTyped, func() (kind, string) {
			return restAnswer(rest(422), []byte(`{"results":[{"outcome":"REJECTED","rejection":{"reason":"SCHEMA_VIOLATION"}}]}`), nil)
		}},
		{"REST 500", kindUntyped, func() (kind, string) { return restAnswer(rest(500), []byte(`{"reason":"UNAVAILABLE"}`), nil) }},
		{"REST without a reason", kindUntyped, func() (kind, string) { return restAnswer(rest(400), []byte(`{}`), nil) }},
		{"REST not JSON", kindUntyped, func() (kind, string) { return restAnswer(rest(400), []byte(`oops`), nil) }},
		{"REST transport error", kindUntyped, func() (kind, string) { return restAnswer(nil, nil, io.ErrUnexpectedEOF) }},
	} {
		if k, what := tc.got(); k != tc.kind {
			t.Errorf("%s: %s (%s), want %s", tc.name, k, what, tc.kind)
		}
	}
}

func TestParseRuntime(t *testing.T) {
	body := []byte("# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines 42\n" +
		"go_memstats_heap_alloc_bytes 1.2345678e+07\ngo_memstats_heap_alloc_bytes_total 9\n")
	r, err := parseRuntime(body)
	if err != nil || r.Goroutines != 42 || r.HeapAlloc != 12345678 {
		t.Errorf("parseRuntime: %+v, %v", r, err)
	}
	if _, err := parseRuntime([]byte("go_goroutines 1\n")); err == nil {
		t.Error("parseRuntime without the heap gauge: no error")
	}
}
