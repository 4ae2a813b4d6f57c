package hostile

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/procfs"
	"github.com/sluicehq/sluice/record"
)

// The webhook flood's phases and what is read around them.
const (
	// aloneFor is how long the well-behaved traffic runs alone, for the
	// figures the flood's are read against.
	aloneFor = 15 * time.Second
	// floodFor bounds the flood (each sender is also bounded by its
	// rounds); the well-behaved traffic runs as long as it does.
	floodFor = 30 * time.Second
)

// The webhook sources of the flood's gateway. The secrets are the
// test's own, written to files the config names.
var (
	floodedSource = webhookSource{Name: "stripe", Secret: "whsec_hostile_7d3e4f605f1c2a9b"}
	besideSource  = webhookSource{Name: "shop", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
)

// webhookSources adds the flooded Stripe source and the Standard Webhooks
// source beside it to a gateway's config, with their secrets in files of
// dir, and the Stripe event contract to its types. Their webhook bounds
// are the defaults: max_body_bytes 1 MiB, read_timeout 10s,
// preauth_memory_bytes 8 MiB.
func webhookSources(t *testing.T, dir string) func(cfg map[string]any) {
	t.Helper()
	secretFile := func(s webhookSource) string {
		p := filepath.Join(dir, s.Name+".secret")
		if err := os.WriteFile(p, []byte(s.Secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stripe, shop := secretFile(floodedSource), secretFile(besideSource)
	return func(cfg map[string]any) {
		cfg["sources"] = append(cfg["sources"].([]any),
			map[string]any{
				"name":        floodedSource.Name,
				"event_types": []string{examples.StripeEventType},
				"webhook": map[string]any{
					"scheme":       "stripe",
					"secret_files": []string{stripe},
					"mapping":      map[string]any{"default_type": examples.StripeEventType},
				},
			},
			map[string]any{
				"name":        besideSource.Name,
				"event_types": []string{pushEventType},
				"webhook": map[string]any{
					"scheme":       "standard",
					"secret_files": []string{shop},
					"mapping":      map[string]any{"type": pushEventType},
				},
			})
		contracts := cfg["contracts"].(map[string]any)
		contracts["types"] = append(slices.Clone(examples.Types), examples.StripeEventType)
	}
}

// createTopics creates topics of 3 partitions on the broker at addr.
func createTopics(t *testing.T, addr string, topics ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), startupWait)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, 3, 1, nil, topics...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("creating %v: %v", topics, err)
	}
}

// phaseMemory is what the gateway's memory did during one phase.
type phaseMemory struct {
	// hwm is VmHWM at the phase's end; hwmReset says it was reset at the
	// phase's start (/proc/PID/clear_refs), so it is the phase's own
	// peak, not the process's.
	hwm      int64
	hwmReset bool
	rss      peak // VmRSS, sampled
	heap     peak // go_memstats_heap_alloc_bytes, sampled
	wall     time.Duration
	// gatewayCPU and testCPU are the CPU time the gateway and this test
	// process (every client of the phase) used during it.
	gatewayCPU, testCPU time.Duration
}

// watchPhase runs f while it samples the gateway's RSS and heap, and
// reads VmHWM after it, reset before it where the kernel allows.
func watchPhase(ctx context.Context, gw *gatewayProc, f func()) *phaseMemory {
	m := &phaseMemory{hwmReset: resetPeakRSS(gw.pid()) == nil}
	sampleCtx, stop := context.WithCancel(ctx)
	var samplers sync.WaitGroup
	samplers.Go(func() {
		sample(sampleCtx, rssEvery, &m.rss, func(context.Context) (int64, error) {
			mem, err := procfs.ReadMemory(gw.pid())
			return mem.RSS, err
		})
	})
	samplers.Go(func() {
		sample(sampleCtx, heapEvery, &m.heap, func(ctx context.Context) (int64, error) {
			ctx, cancel := context.WithTimeout(ctx, heapWait)
			defer cancel()
			r, err := gw.admin.runtime(ctx)
			return r.HeapAlloc, err
		})
	})
	gwCPU, _ := procfs.CPU(gw.pid())
	ownCPU, _ := procfs.CPU(os.Getpid())
	start := time.Now()
	f()
	m.wall = time.Since(start)
	if c, err := procfs.CPU(gw.pid()); err == nil {
		m.gatewayCPU = c - gwCPU
	}
	if c, err := procfs.CPU(os.Getpid()); err == nil {
		m.testCPU = c - ownCPU
	}
	stop()
	samplers.Wait()
	if mem, err := procfs.ReadMemory(gw.pid()); err == nil {
		m.hwm = mem.Peak
	}
	return m
}

// resetPeakRSS sets the process's VmHWM back to its VmRSS (Linux:
// "5" written to /proc/PID/clear_refs).
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// TestHostileLoadWebhookFlood runs the sluice gateway as a process of its
// own with a Stripe webhook source and a Standard Webhooks source, and
// measures well-behaved traffic (REST and gRPC with an API key, signed
// deliveries to the Standard Webhooks source) first alone, then under
// the webhook flood: floodSenders concurrent unsigned deliveries of 1 MiB
// to the Stripe source. It holds the gateway to the claim: the
// flood leaves the well-behaved traffic unaffected (every call answered
// ACCEPTED, as alone) and the gateway's RSS within memory_limit; every
// flood delivery is answered, typed, 401 (read, verified, refused) or 503
// with Retry-After (the source's pre-authentication pool full), by its
// deadline; and the heap and goroutines come back after it. The
// latencies, rates and memory of both phases are logged for the README,
// never asserted. See the package documentation.
func TestHostileLoadWebhookFlood(t *testing.T) {
	if os.Getenv(envRun) != "1" {
		t.Skip(envRun + "=1 runs the webhook flood against the sluice binary (about a minute)")
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
	// `sluice kfake` seeds the topics of examples.Types only.
	createTopics(t, brokers, record.EventTopic(examples.StripeEventType))
	gw := startGateway(t, bin, dir, root, brokers, limits, gatewayExtra, webhookSources(t, dir))
	tgt := target{GRPCAddr: gw.grpcAddr, HTTPAddr: gw.httpAddr, APIKey: apiKey, Flooded: floodedSource, Beside: besideSource}
	ctx := t.Context()

	before, err := gw.admin.settled(ctx)
	if err != nil {
		t.Fatalf("heap and goroutines before the load: %v", err)
	}
	counted := []string{"sluice_webhook_refused_total", "sluice_webhook_preauth_refused_total", "sluice_request_memory_refusals_total"}
	seriesBefore, err := gw.admin.series(ctx, counted...)
	if err != nil {
		t.Fatalf("/metrics before the load: %v", err)
	}
	startup, _ := procfs.ReadMemory(gw.pid())

	var alone, flooded []*pushStats
	aloneMem := watchPhase(ctx, gw, func() { alone = push(ctx, tgt, "alone", aloneFor, nil) })
	var flood *tally
	floodMem := watchPhase(ctx, gw, func() {
		stopPush := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { flooded = push(ctx, tgt, "flood", floodFor+callTimeout, stopPush) })
		floodCtx, cancel := context.WithTimeout(ctx, floodFor)
		flood = webhookFloodLoad().Run(floodCtx, tgt)
		cancel()
		close(stopPush)
		wg.Wait()
	})

	heapBound := before.HeapAlloc + heapSlack
	goroutineBound := before.Goroutines + goroutineSlack
	after, settledIn, settleErr := gw.admin.settle(ctx, func(r runtimeFigures) bool {
		return r.HeapAlloc <= heapBound && r.Goroutines <= goroutineBound
	})
	seriesAfter, seriesErr := gw.admin.series(ctx, counted...)
	running := gw.running()

	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	binary := "built from this tree"
	if p := os.Getenv(envBinary); p != "" {
		binary = p
	}
	fmt.Fprintf(w, "binary\t%s\n", binary)
	fmt.Fprintf(w, "extra gateway.limits\t%s\n", os.Getenv(envLimits))
	fmt.Fprintf(w, "extra gateway\t%s\n", os.Getenv(envGateway))
	fmt.Fprintf(w, "flood\t%d concurrent unsigned deliveries of %s to /v1/webhooks/%s (%d whole, %d slow: %d KiB every %s)\n",
		floodSenders, mib(WebhookBodyBytes), floodedSource.Name, wholeSenders, slowSenders, slowChunk>>10, slowEvery)
	fmt.Fprintf(w, "peak RSS (VmHWM) at start-up\t%s\t(memory_limit %s)\n", mib(startup.Peak), mib(memoryLimit))
	for _, p := range []struct {
		name string
		m    *phaseMemory
	}{{"alone", aloneMem}, {"under the flood", floodMem}} {
		hwm := "since start-up: /proc/PID/clear_refs not writable"
		if p.m.hwmReset {
			hwm = "the phase's own"
		}
		rssPeak, rssN, _ := p.m.rss.value()
		heapPeak, heapN, _ := p.m.heap.value()
		fmt.Fprintf(w, "%s: wall time\t%s\n", p.name, p.m.wall.Round(100*time.Millisecond))
		fmt.Fprintf(w, "%s: CPU time, gateway / test's clients\t%s / %s\n", p.name,
			p.m.gatewayCPU.Round(10*time.Millisecond), p.m.testCPU.Round(10*time.Millisecond))
		fmt.Fprintf(w, "%s: peak RSS (VmHWM)\t%s\t(%s)\n", p.name, mib(p.m.hwm), hwm)
		fmt.Fprintf(w, "%s: peak sampled VmRSS\t%s\t(%d samples)\n", p.name, mib(rssPeak), rssN)
		fmt.Fprintf(w, "%s: peak sampled heap\t%s\t(%d samples)\n", p.name, mib(heapPeak), heapN)
	}
	afterHeap, afterGoroutines := "no reading", "no reading"
	if after != nil {
		afterHeap, afterGoroutines = mib(after.HeapAlloc), fmt.Sprint(after.Goroutines)
	}
	fmt.Fprintf(w, "live heap before / after\t%s / %s\t(bound %s)\n", mib(before.HeapAlloc), afterHeap, mib(heapBound))
	fmt.Fprintf(w, "goroutines before / after\t%d / %s\t(bound %d)\n", before.Goroutines, afterGoroutines, goroutineBound)
	if settleErr == nil {
		fmt.Fprintf(w, "came back within bounds\tafter %s\n", settledIn.Round(100*time.Millisecond))
	} else {
		fmt.Fprintf(w, "came back within bounds\tno, within %s: %v\n", settleTimeout, settleErr)
	}
	fmt.Fprintf(w, "gateway running at the end\t%v\n", running)
	w.Flush()
	writePush(&b, alone, flooded)
	writeTally(&b, flood)
	if seriesErr == nil {
		b.WriteString("\nthe gateway's counts over both phases:\n")
		for _, s := range slices.Sorted(maps.Keys(seriesAfter)) {
			if d := seriesAfter[s] - seriesBefore[s]; d != 0 {
				fmt.Fprintf(&b, "  %s  %.0f\n", s, d)
			}
		}
	}
	t.Log("webhook flood:\n" + b.String())

	for _, p := range []*phaseMemory{{hwm: startup.Peak}, aloneMem, floodMem} {
		if p.hwm > memoryLimit {
			t.Errorf("peak RSS %s is over memory_limit %s", mib(p.hwm), mib(memoryLimit))
		}
	}
	if floodMem.hwm == 0 {
		t.Errorf("no reading of the gateway's peak RSS after the flood")
	}
	switch {
	case after == nil:
		t.Errorf("no reading of the live heap and goroutines within %s of the flood's end: %v", settleTimeout, settleErr)
	case after.HeapAlloc > heapBound:
		t.Errorf("live heap %s after the flood is over %s", mib(after.HeapAlloc), mib(heapBound))
	case after.Goroutines > goroutineBound:
		t.Errorf("%d goroutines after the flood, over %d", after.Goroutines, goroutineBound)
	}
	for phase, stats := range map[string][]*pushStats{"alone": alone, "under the flood": flooded} {
		for _, s := range stats {
			if !s.MustAccept {
				continue
			}
			if s.calls() == 0 {
				t.Errorf("%s, %s: no calls made", s.Name, phase)
			}
			if n := s.calls() - s.acceptedCalls(); n > 0 {
				t.Errorf("%s, %s: %d of %d calls not answered ACCEPTED: %v", s.Name, phase, n, s.calls(), s.otherLines())
			}
		}
	}
	if n := flood.count(kindUntyped); n > 0 {
		t.Errorf("webhook flood: %d untyped answers (a transport error, a 5xx but 503, no answer by the deadline)", n)
	}
	if n := flood.sum(FigureWrong); n > 0 {
		t.Errorf("webhook flood: %d %s", n, FigureWrong)
	}
	// The flood did what it says: bodies were read whole and verified,
	// slow ones held the pool, and the pool refused the rest.
	for _, f := range []string{FigureWhole401, FigureSlow401, FigureRefused503} {
		if flood.sum(f) == 0 {
			t.Errorf("webhook flood: no %s", f)
		}
	}
	if !running {
		t.Errorf("the gateway is not running at the end")
	}
	if t.Failed() {
		t.Logf("end of the gateway's log:\n%s", gw.logTail())
	}
}

// writePush renders the well-behaved traffic of both phases side by side.
func writePush(b *strings.Builder, alone, flooded []*pushStats) {
	b.WriteString("\nwell-behaved traffic, alone and under the flood:\n")
	w := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "  \tphase\tcalls\tACCEPTED\tcalls/s\tp50\tp90\tp99\tmax\t\n")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }
	for i := range alone {
		for _, p := range []struct {
			name string
			s    *pushStats
		}{{"alone", alone[i]}, {"flood", flooded[i]}} {
			s := p.s
			fmt.Fprintf(w, "  %s\t%s\t%d\t%d\t%.1f\t%s\t%s\t%s\t%s\t\n", s.Name, p.name, s.calls(), s.acceptedCalls(), s.rate(),
				ms(s.latency(0.5)), ms(s.latency(0.9)), ms(s.latency(0.99)), ms(s.latency(1)))
		}
	}
	w.Flush()
	for i := range alone {
		for _, p := range []struct {
			name string
			s    *pushStats
		}{{"alone", alone[i]}, {"flood", flooded[i]}} {
			for _, l := range p.s.otherLines() {
				fmt.Fprintf(b, "  %s, %s: %d %s %s\n", p.s.Name, p.name, l.Count, l.Kind, l.What)
			}
		}
	}
}

// The checks below are quick and always run.

func TestUnsignedDelivery(t *testing.T) {
	for _, n := range []int{256, 64 << 10, WebhookBodyBytes} {
		if got := len(unsignedDelivery(n)); got != n {
			t.Errorf("UnsignedDelivery(%d): %d bytes", n, got)
		}
	}
}

// TestPacedBody: a paced body gives out all of its bytes, a chunk at a
// time, and stops when its request is over.
func TestPacedBody(t *testing.T) {
	body := unsignedDelivery(1000)
	p := &pacedBody{rest: body, chunk: 300, every: time.Millisecond, done: make(chan struct{})}
	got, err := io.ReadAll(p)
	if err != nil || string(got) != string(body) {
		t.Fatalf("paced body: %d bytes, %v", len(got), err)
	}
	done := make(chan struct{})
	close(done)
	p = &pacedBody{rest: body, chunk: 300, every: time.Hour, done: done}
	buf := make([]byte, 1000)
	if n, err := p.Read(buf); n != 300 || err != nil {
		t.Fatalf("first chunk: %d, %v", n, err)
	}
	if n, err := p.Read(buf); n != 0 || err != errLetGo {
		t.Fatalf("after the request is over: %d, %v, want errLetGo", n, err)
	}
}

// TestFloodAnswers: the flood's answers are judged as its test says:
// 401 UNAUTHENTICATED and 503 with Retry-After are what an unsigned
// delivery may get; any other status, a 503 without Retry-After and an
// untyped answer are not. A server that answers 503 without reading the
// body and closes the connection, as the gateway does when the source's
// pool is full, is heard.
func TestFloodAnswers(t *testing.T) {
	for _, c := range []struct {
		name       string
		code       int
		retryAfter string
		body       string
		kind       kind
		figure     string
	}{
		{"verified and refused", 401, "", `{"reason":"UNAUTHENTICATED"}`, kindTyped, FigureWhole401},
		{"pool full", 503, "1", `{"reason":"UNAVAILABLE"}`, kindTyped, FigureRefused503},
		{"503 without Retry-After", 503, "", `{"reason":"UNAVAILABLE"}`, kindTyped, FigureWrong},
		{"accepted", 200, "", `{"results":[{"outcome":"ACCEPTED"}]}`, kindTyped, FigureWrong},
		{"too large", 413, "", `{"reason":"BATCH_TOO_LARGE"}`, kindTyped, FigureWrong},
		{"500", 500, "", `{"reason":"UNAVAILABLE"}`, kindUntyped, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if c.code == http.StatusServiceUnavailable {
					w.Header().Set("Connection", "close") // the body unread
				} else {
					_, _ = io.Copy(io.Discard, r.Body)
				}
				if c.retryAfter != "" {
					w.Header().Set("Retry-After", c.retryAfter)
				}
				w.WriteHeader(c.code)
				_, _ = io.WriteString(w, c.body)
			}))
			defer srv.Close()
			tgt := target{HTTPAddr: strings.TrimPrefix(srv.URL, "http://"), Flooded: floodedSource}
			tl := newTally("answers")
			k, what := tgt.floodDelivery(t.Context(), unsignedDelivery(WebhookBodyBytes), false, true, tl)
			if k != c.kind {
				t.Errorf("%s (%s), want %s", k, what, c.kind)
			}
			if c.figure != "" && tl.sum(c.figure) != 1 {
				t.Errorf("%s: %v, want 1 of %q", what, tl.figures(), c.figure)
			}
		})
	}
}

// TestPushAccepted: well-behaved calls count as unaffected only when
// every result is ACCEPTED.
func TestPushAccepted(t *testing.T) {
	for _, c := range []struct {
		code int
		body string
		want bool
	}{
		{200, `{"results":[{"outcome":"ACCEPTED"}]}`, true},
		{200, `{"results":[{"outcome":"DUPLICATE"}]}`, false},
		{200, `{"results":[]}`, false},
		{503, `{"reason":"UNAVAILABLE"}`, false},
		{207, `{"results":[{"outcome":"ACCEPTED"},{"outcome":"REJECTED","rejection":{"reason":"SCHEMA_VIOLATION"}}]}`, false},
	} {
		if ok, _, what := restAccepted(&http.Response{StatusCode: c.code}, []byte(c.body), nil); ok != c.want {
			t.Errorf("%d %s: accepted %v (%s), want %v", c.code, c.body, ok, what, c.want)
		}
	}
}

func TestParseSeries(t *testing.T) {
	body := []byte("# HELP x y\n# TYPE sluice_webhook_refused_total counter\n" +
		"sluice_webhook_refused_total{reason=\"bad_signature\",source=\"stripe\"} 12\n" +
		"sluice_webhook_refused_total{reason=\"missing_header\",source=\"stripe\"} 3\n" +
		"sluice_webhook_preauth_refused_total{source=\"stripe\"} 4.5e+03\nsluice_other 1\n")
	got, err := parseSeries(body, []string{"sluice_webhook_refused_total", "sluice_webhook_preauth_refused_total"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		`sluice_webhook_refused_total{reason="bad_signature",source="stripe"}`:  12,
		`sluice_webhook_refused_total{reason="missing_header",source="stripe"}`: 3,
		`sluice_webhook_preauth_refused_total{source="stripe"}`:                 4500,
	}
	if !maps.Equal(got, want) {
		t.Errorf("parseSeries: %v, want %v", got, want)
	}
}
