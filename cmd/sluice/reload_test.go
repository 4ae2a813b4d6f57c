package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/contract/reload"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/contracttest"
	"github.com/sluicehq/sluice/internal/waitfor"
	"github.com/sluicehq/sluice/tools/loadgen"
)

const orderPlaced = "examples.shop.v1.OrderPlaced"

// TestReloadUnderLoad runs `sluice dev` on a contracts file and load
// through its gateway, in rounds, while the file is replaced: first with
// a compatible image (renamed into place, picked up by the watch), then
// with an incompatible one. No request fails; the incompatible image is
// refused and the compatible one keeps serving, as the reload metric and
// the admin endpoint say; the consumer writes every event to the sink,
// those judged before the swap under the old fingerprint and those after
// it under the new.
func TestReloadUnderLoad(t *testing.T) {
	v1 := examples.Contracts
	v2 := contracttest.Evolve(t, v1, contracttest.AddField(orderPlaced, "gift_wrap", 9, descriptorpb.FieldDescriptorProto_TYPE_BOOL))
	broken := contracttest.Evolve(t, v2, contracttest.RemoveField(orderPlaced, "note", false))
	path, db, grpcAddr, admin, token, logs := devOnExamples(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fp := func(image []byte) string {
		r, err := contract.Load(image, examples.Types)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := r.Lookup(orderPlaced)
		return c.Fingerprint()
	}
	fp1, fp2 := fp(v1), fp(v2)

	// The load: rounds of a bounded loadgen run until the steps are done,
	// then one more.
	stepsDone := make(chan struct{})
	type round struct {
		rep *loadgen.Report
		err error
	}
	rounds := make(chan round, 1)
	go func() {
		defer close(rounds)
		for i := 0; ; i++ {
			var stdout strings.Builder
			err := run(ctx, []string{"loadgen", "--target", "grpc", "--addr", grpcAddr, "--key", DemoAPIKey,
				"--type", loadgen.TypeOrderPlaced, "--requests", "100", "--events-per-request", "5", "--concurrency", "4",
				"--rate", "200", "--run-id", fmt.Sprintf("r%d", i), "--duration", "30s", "--json"}, &stdout, io.Discard)
			var rep loadgen.Report
			if err == nil {
				err = json.Unmarshal([]byte(stdout.String()), &rep)
			}
			rounds <- round{&rep, err}
			select {
			case <-stepsDone:
				return
			default:
			}
			if i == 200 || ctx.Err() != nil {
				return
			}
		}
	}()
	var accepted int64
	failed := make(chan string, 1)
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for r := range rounds {
			switch {
			case r.err != nil:
				failed <- r.err.Error()
				return
			case r.rep.Accepted != r.rep.Events || r.rep.Answered != r.rep.Requests:
				failed <- fmt.Sprintf("a round had requests that failed: %+v", r.rep)
				return
			}
			accepted += r.rep.Accepted
		}
	}()
	metric := func(re *regexp.Regexp) bool {
		resp, err := http.Get(admin + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return re.Match(b)
	}
	status := func() reload.Status {
		st, ok := contractsStatus(admin)
		if !ok {
			t.Fatal("GET /admin/contracts did not answer")
		}
		return st
	}
	began := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(began).Seconds(), what) }
	waitfor.Condition(t, 30*time.Second, "events in the sink before the swap", func() bool { return countRows(t, db, "") > 0 })

	// 1. A compatible image, renamed into place.
	step("events in the sink; replacing the file with v2")
	replaceFile(t, path, v2)
	waitfor.Condition(t, 30*time.Second, "the watch to reload v2", func() bool {
		return metric(regexp.MustCompile(`sluice_contract_reloads_total\{result="reloaded"\} 1\b`))
	})
	swap := status().Last
	if swap.Result != reload.ResultReloaded || swap.Trigger != reload.TriggerWatch || swap.Served[orderPlaced] != fp2 {
		t.Fatalf("after the rename: %+v", swap)
	}
	if !metric(regexp.MustCompile(`sluice_contract_info\{fingerprint="` + fp2 + `",type="` + orderPlaced + `"\} 1`)) {
		t.Fatal("sluice_contract_info does not name v2")
	}
	swapStart, swapEnd := swap.At, swap.At.Add(time.Duration(swap.Seconds*float64(time.Second))+time.Millisecond)
	waitfor.Condition(t, 30*time.Second, "events in the sink after the swap", func() bool { return countRows(t, db, fp2) > 0 })

	// 2. An incompatible one: refused, v2 keeps serving.
	step("v2 served and in the sink; replacing the file with an incompatible image")
	replaceFile(t, path, broken)
	waitfor.Condition(t, 30*time.Second, "the watch to refuse the incompatible image", func() bool {
		return metric(regexp.MustCompile(`sluice_contract_reloads_total\{result="incompatible"\} 1\b`))
	})
	st := status()
	if st.Served[orderPlaced] != fp2 || st.Last.Result != reload.ResultIncompatible || !hasFinding(st.Last.Findings, "note") {
		t.Fatalf("GET /admin/contracts after the incompatible image: %+v", st)
	}
	if !metric(regexp.MustCompile(`sluice_contract_reload_refused 1\b`)) {
		t.Fatal("sluice_contract_reload_refused is not 1")
	}
	resp, err := postReload(admin, token)
	if err != nil {
		t.Fatal(err)
	}
	var res reload.Result
	err = json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusConflict || res.Result != reload.ResultIncompatible || !hasFinding(res.Findings, "note") {
		t.Fatalf("POST /admin/contracts/reload: %d %v %+v", resp.StatusCode, err, res)
	}
	if !strings.Contains(logs.String(), "contracts reload refused") {
		t.Fatal("the refusal is not logged")
	}
	close(stepsDone)
	step("refused; waiting for the last round")
	select {
	case <-collected:
	case msg := <-failed:
		t.Fatal(msg)
	}
	select {
	case msg := <-failed:
		t.Fatal(msg)
	default:
	}

	// Every accepted event lands; each carries the version it was judged by.
	step("load done; waiting for the sink")
	waitfor.Condition(t, 60*time.Second, "every accepted event in the sink", func() bool { return countRows(t, db, "") == accepted })
	step("every event in the sink")
	before, after := 0, 0
	for _, r := range sinkRows(t, db) {
		switch {
		case r.fingerprint == fp1 && r.ingestedAt.After(swapEnd):
			t.Fatalf("%s ingested at %s, after the swap ended at %s, under v1", r.id, r.ingestedAt, swapEnd)
		case r.fingerprint == fp2 && r.ingestedAt.Before(swapStart):
			t.Fatalf("%s ingested at %s, before the swap began at %s, under v2", r.id, r.ingestedAt, swapStart)
		case r.fingerprint == fp1:
			before++
		case r.fingerprint == fp2:
			after++
		default:
			t.Fatalf("%s has fingerprint %s, neither v1's nor v2's", r.id, r.fingerprint)
		}
	}
	if before == 0 || after == 0 {
		t.Fatalf("%d events under v1, %d under v2: want both", before, after)
	}
	t.Logf("%d events accepted: %d under v1, %d under v2; reload took %.1f ms", accepted, before, after, swap.Seconds*1000)
}

// devOnExamples runs `sluice dev` serving a contracts file, which holds
// the example image at first, into an SQLite sink, until the test ends.
// It returns the file, the sink, the gRPC address, the admin listener's
// URL, its token and the logs.
func devOnExamples(t *testing.T) (path, db, grpcAddr, admin, token string, logs *syncBuffer) {
	t.Helper()
	dir := t.TempDir()
	path, db = filepath.Join(dir, "contracts.binpb"), filepath.Join(dir, "sink.db")
	if err := os.WriteFile(path, examples.Contracts, 0o644); err != nil {
		t.Fatal(err)
	}
	out, logs := devInTest(t, "-tail=false", "-demo-partner=false", "-contracts", path, "-sink-db", db)
	grpcAddr = waitFor(t, out, regexp.MustCompile(`gRPC (\S+)`))[1]
	admin = waitFor(t, out, regexp.MustCompile(`Metrics: (http://\S+)/metrics`))[1]
	tokenFile := waitFor(t, out, regexp.MustCompile(`Admin token \(.*\): (\S+)`))[1]
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	return path, db, grpcAddr, admin, strings.TrimSpace(string(b)), logs
}

// postReload is POST /admin/contracts/reload with the admin token.
func postReload(admin, token string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, admin+"/admin/contracts/reload", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return http.DefaultClient.Do(req)
}

// contractsStatus is GET /admin/contracts, or false when it does not answer.
func contractsStatus(admin string) (st reload.Status, ok bool) {
	resp, err := http.Get(admin + "/admin/contracts")
	if err != nil {
		return st, false
	}
	defer resp.Body.Close()
	return st, resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&st) == nil
}

func hasFinding(fs []reload.Finding, path string) bool {
	for _, f := range fs {
		if f.Breaking && f.Type == orderPlaced && f.Path == path {
			return true
		}
	}
	return false
}

// replaceFile puts b at path as a deployment does: written beside it,
// then renamed over it.
func replaceFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

type sinkRow struct {
	id, fingerprint string
	ingestedAt      time.Time
}

func openSink(t *testing.T, db string) *sql.DB {
	t.Helper()
	d, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// countRows counts the sink's events of the order type, of one schema
// fingerprint or ("") of any.
func countRows(t *testing.T, db, fingerprint string) int64 {
	t.Helper()
	if _, err := os.Stat(db); err != nil {
		return 0
	}
	d := openSink(t, db)
	defer d.Close()
	var n int64
	err := d.QueryRow(`SELECT count(*) FROM events WHERE event_type = ? AND (? = '' OR schema_fingerprint = ?)`,
		orderPlaced, fingerprint, fingerprint).Scan(&n)
	if err != nil {
		return 0 // the table is not there yet
	}
	return n
}

func sinkRows(t *testing.T, db string) []sinkRow {
	t.Helper()
	d := openSink(t, db)
	defer d.Close()
	rows, err := d.Query(`SELECT event_id, schema_fingerprint, ingested_at FROM events WHERE event_type = ?`, orderPlaced)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []sinkRow
	for rows.Next() {
		var r sinkRow
		var at string
		if err := rows.Scan(&r.id, &r.fingerprint, &at); err != nil {
			t.Fatal(err)
		}
		if r.ingestedAt, err = time.Parse(time.RFC3339Nano, at); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReloadLatency measures, when SLUICE_RELOAD_LATENCY is set, the
// gateway's latency under a fixed request rate with and without reloads
// in the same process, and how long each reload of the example image
// takes. It asserts no duration: it reports them (go test -v).
func TestReloadLatency(t *testing.T) {
	if os.Getenv("SLUICE_RELOAD_LATENCY") == "" {
		t.Skip("set SLUICE_RELOAD_LATENCY=1 to measure")
	}
	path, _, grpcAddr, admin, token, _ := devOnExamples(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	load := func(id string) *loadgen.Report {
		var stdout strings.Builder
		err := run(ctx, []string{"loadgen", "--target", "grpc", "--addr", grpcAddr, "--key", DemoAPIKey,
			"--type", loadgen.TypeOrderPlaced, "--requests", "2000", "--events-per-request", "5", "--concurrency", "16",
			"--rate", "200", "--run-id", id, "--duration", "60s", "--json"}, &stdout, io.Discard)
		var rep loadgen.Report
		if err == nil {
			err = json.Unmarshal([]byte(stdout.String()), &rep)
		}
		if err != nil {
			t.Fatal(err)
		}
		if rep.Accepted != rep.Events {
			t.Fatalf("%s: %d of %d events accepted", id, rep.Accepted, rep.Events)
		}
		return &rep
	}
	// Each reload adds a field: every image is compatible with the last.
	next := 9
	edits := []contracttest.Edit{}
	var reloads []float64
	reloading := func(every time.Duration, stop <-chan struct{}) {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			edits = append(edits, contracttest.AddField(orderPlaced, fmt.Sprintf("extra_%d", next), int32(next), descriptorpb.FieldDescriptorProto_TYPE_BOOL))
			next++
			replaceFile(t, path, contracttest.Evolve(t, examples.Contracts, edits...))
			resp, err := postReload(admin, token)
			if err != nil {
				t.Error(err)
				return
			}
			var res reload.Result
			err = json.NewDecoder(resp.Body).Decode(&res)
			resp.Body.Close()
			if err != nil || res.Result != reload.ResultReloaded {
				t.Errorf("reload: %v %+v", err, res)
				return
			}
			reloads = append(reloads, res.Seconds)
		}
	}
	// A run is 10 s; one reload lands in its middle, a storm every 250 ms.
	during := func(id string, every time.Duration) (*loadgen.Report, int) {
		stop, stopped := make(chan struct{}), make(chan struct{})
		before := len(reloads)
		go func() { defer close(stopped); reloading(every, stop) }()
		rep := load(id)
		close(stop)
		<-stopped
		return rep, len(reloads) - before
	}
	load("warm-up")
	for i := range 3 {
		quiet := load(fmt.Sprintf("quiet-%d", i))
		one, n1 := during(fmt.Sprintf("one-%d", i), 5*time.Second)
		storm, n2 := during(fmt.Sprintf("storm-%d", i), 250*time.Millisecond)
		t.Logf("round %d: p50/p99 %v/%v without reloads; %v/%v with %d reloads; %v/%v with %d reloads", i,
			quiet.Latency.P50, quiet.Latency.P99, one.Latency.P50, one.Latency.P99, n1, storm.Latency.P50, storm.Latency.P99, n2)
	}
	var sum, most float64
	for _, s := range reloads {
		sum += s
		most = max(most, s)
	}
	t.Logf("%d reloads of the example image: mean %.1f ms, max %.1f ms", len(reloads), 1000*sum/float64(len(reloads)), 1000*most)
}

// TestReloadOnSIGHUP: SIGHUP to the process reloads the contracts file
// `sluice dev` serves, written in place, and the version before is kept.
func TestReloadOnSIGHUP(t *testing.T) {
	path, _, _, admin, _, _ := devOnExamples(t)
	v2 := contracttest.Evolve(t, examples.Contracts, contracttest.AddField(orderPlaced, "gift_wrap", 9, descriptorpb.FieldDescriptorProto_TYPE_BOOL))
	r, err := contract.Load(v2, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := r.Lookup(orderPlaced)
	if err := os.WriteFile(path, v2, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var st reload.Status
	waitfor.Condition(t, 20*time.Second, "SIGHUP to reload", func() bool {
		var ok bool
		st, ok = contractsStatus(admin)
		return ok && st.Served[orderPlaced] == c.Fingerprint()
	})
	if st.Last.Trigger != reload.TriggerSignal || st.Last.Result != reload.ResultReloaded {
		t.Fatalf("reloaded by %+v, want SIGHUP", st.Last)
	}
	if len(st.Kept[orderPlaced]) != 2 {
		t.Fatalf("kept %v, want the new version and the one before", st.Kept[orderPlaced])
	}
}
