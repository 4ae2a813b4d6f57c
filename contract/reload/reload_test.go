package reload_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/contract/reload"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/contracttest"
)

const orderType = "examples.shop.v1.OrderPlaced"

var quiet = slog.New(slog.DiscardHandler)

// rig is a Reloader on a real file whose watch the test steps (Watch)
// and whose Run takes its signals: a send on signals returns once Run
// took it, so a send after it returns once the one before was handled.
type rig struct {
	t        *testing.T
	path     string
	versions *contract.Versions
	r        *reload.Reloader
	reg      *prometheus.Registry
	signals  chan os.Signal
}

func newRig(t *testing.T, image []byte, opts ...reload.Option) *rig {
	t.Helper()
	x := &rig{t: t, path: filepath.Join(t.TempDir(), "contracts.binpb"), reg: prometheus.NewRegistry(),
		signals: make(chan os.Signal)}
	if err := os.WriteFile(x.path, image, 0o644); err != nil {
		t.Fatal(err)
	}
	reg := load(t, image)
	var err error
	if x.versions, err = contract.NewVersions(reg, 3); err != nil {
		t.Fatal(err)
	}
	cfg := reload.Config{
		Path: x.path, WatchInterval: time.Hour,
		Load: func(b []byte) (*contract.Registry, error) { return contract.Load(b, examples.Types) },
	}
	opts = append([]reload.Option{reload.WithLogger(quiet), reload.WithRegisterer(x.reg),
		reload.WithSignals(x.signals)}, opts...)
	if x.r, err = reload.New(cfg, x.versions, opts...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { x.r.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return x
}

func load(t *testing.T, image []byte) *contract.Registry {
	t.Helper()
	r, err := contract.Load(image, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func fingerprint(t *testing.T, image []byte) string {
	c, _ := load(t, image).Lookup(orderType)
	return c.Fingerprint()
}

// tick steps the watch once.
func (x *rig) tick() { x.r.Watch() }

func (x *rig) served() string {
	c, _ := x.versions.Registry().Lookup(orderType)
	return c.Fingerprint()
}

func (x *rig) reloads(result string) float64 {
	c, err := x.reg.Gather()
	if err != nil {
		x.t.Fatal(err)
	}
	for _, mf := range c {
		if mf.GetName() != "sluice_contract_reloads_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	x.t.Fatalf("no sluice_contract_reloads_total{result=%q}", result)
	return 0
}

func (x *rig) refused() float64 {
	mfs, err := x.reg.Gather()
	if err != nil {
		x.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "sluice_contract_reload_refused" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	x.t.Fatal("no sluice_contract_reload_refused")
	return 0
}

// writeRename replaces the file as a deployment does: a new file renamed
// over it.
func (x *rig) writeRename(image []byte) {
	tmp := x.path + ".new"
	if err := os.WriteFile(tmp, image, 0o644); err != nil {
		x.t.Fatal(err)
	}
	if err := os.Rename(tmp, x.path); err != nil {
		x.t.Fatal(err)
	}
}

func (x *rig) writeInPlace(b []byte) {
	if err := os.WriteFile(x.path, b, 0o644); err != nil {
		x.t.Fatal(err)
	}
}

func evolve(t *testing.T, edits ...contracttest.Edit) []byte {
	return contracttest.Evolve(t, examples.Contracts, edits...)
}

func addField(name string, number int32) contracttest.Edit {
	return contracttest.AddField(orderType, name, number, descriptorpb.FieldDescriptorProto_TYPE_BOOL)
}

// TestReloadTriggers: a new file renamed into place and SIGHUP both
// reload; the watch loads a content only once it held still, so a file
// written in place in two steps is loaded whole; a file that stays
// truncated is refused and the running version keeps serving.
func TestReloadTriggers(t *testing.T) {
	v1 := examples.Contracts
	x := newRig(t, v1)
	if x.served() != fingerprint(t, v1) {
		t.Fatal("not serving the file's contracts at start")
	}

	v2 := evolve(t, addField("gift_wrap", 9))
	x.writeRename(v2)
	x.tick() // the content changed: read, not loaded yet
	if x.served() != fingerprint(t, v1) {
		t.Fatal("the watch loaded a content the first time it read it")
	}
	x.tick()
	if x.served() != fingerprint(t, v2) || x.r.Last().Trigger != reload.TriggerWatch {
		t.Fatalf("an atomic rename was not reloaded by the watch: last %+v", x.r.Last())
	}

	v3 := evolve(t, addField("gift_wrap", 9), addField("express", 10))
	x.writeInPlace(v3)
	x.signals <- syscall.SIGHUP
	x.signals <- syscall.SIGHUP // handled once the first is: the second finds it unchanged
	if x.served() != fingerprint(t, v3) {
		t.Fatal("SIGHUP did not reload")
	}
	if got := x.r.Last(); got.Trigger != reload.TriggerSignal || got.Result != reload.ResultUnchanged {
		t.Fatalf("the second SIGHUP: %+v, want unchanged", got)
	}

	// Written in place in two steps, the watch reading between them.
	v4 := evolve(t, addField("gift_wrap", 9), addField("express", 10), addField("gift_note", 11))
	x.writeInPlace(v4[:len(v4)/2])
	x.tick()
	x.writeInPlace(v4)
	x.tick()
	if x.served() != fingerprint(t, v3) {
		t.Fatal("the watch loaded a content that had not held still")
	}
	x.tick()
	if x.served() != fingerprint(t, v4) {
		t.Fatal("the finished file was not reloaded")
	}
	if n := x.reloads(reload.ResultFailed); n != 0 {
		t.Fatalf("a half-written file was loaded: %v failed reloads", n)
	}

	// A file that stays truncated is tried once, refused, and not again.
	v5 := evolve(t, addField("gift_wrap", 9), addField("express", 10), addField("gift_note", 11), addField("loyalty", 12))
	x.writeInPlace(v5[:len(v5)-7])
	x.tick()
	x.tick()
	if x.served() != fingerprint(t, v4) || x.reloads(reload.ResultFailed) != 1 || x.refused() != 1 {
		t.Fatalf("a truncated file: served %s, failed %v, refused %v", x.served(), x.reloads(reload.ResultFailed), x.refused())
	}
	x.tick()
	if n := x.reloads(reload.ResultFailed); n != 1 {
		t.Fatalf("the watch tried a refused content again: %v failed reloads", n)
	}
	x.writeInPlace(v5)
	x.tick()
	x.tick()
	if x.served() != fingerprint(t, v5) || x.refused() != 0 {
		t.Fatalf("the finished file: served %s, refused %v", x.served(), x.refused())
	}
	if n := x.reloads(reload.ResultReloaded); n != 4 {
		t.Fatalf("%v reloads, want 4 (rename, SIGHUP, in place, finished)", n)
	}
	// Versions kept: the newest three, for the consumer.
	if h := x.versions.History(orderType); len(h) != 3 || h[0].Fingerprint() != fingerprint(t, v5) {
		t.Fatalf("history: %d versions", len(h))
	}
}

// TestReloadRefusals: an incompatible image, one that does not load, and
// one a prepare step refuses all keep the running version, and the
// metrics, the result and the admin endpoint say why.
func TestReloadRefusals(t *testing.T) {
	prepareErr := errors.New("the service cannot serve it")
	var refuse bool
	var mu sync.Mutex
	x := newRig(t, examples.Contracts, reload.WithPrepare(func(*contract.Registry) error {
		mu.Lock()
		defer mu.Unlock()
		if refuse {
			return prepareErr
		}
		return nil
	}))
	v1 := fingerprint(t, examples.Contracts)
	mux := http.NewServeMux()
	x.r.Routes(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	post := func() (int, reload.Result) {
		t.Helper()
		resp, err := srv.Client().Post(srv.URL+"/admin/contracts/reload", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var res reload.Result
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, res
	}

	// Removed without reserving its number: breaks the backward default.
	x.writeRename(evolve(t, contracttest.RemoveField(orderType, "note", false)))
	code, res := post()
	if code != http.StatusConflict || res.Result != reload.ResultIncompatible || x.served() != v1 {
		t.Fatalf("incompatible: %d %+v, served %s", code, res, x.served())
	}
	var named bool
	for _, f := range res.Findings {
		named = named || (f.Breaking && f.Type == orderType && f.Path == "note" && f.Rule != "" && f.Reason != "")
	}
	if !named || res.Served[orderType] != v1 || !strings.Contains(res.Error, "note") {
		t.Fatalf("the refusal does not name the field: %+v", res)
	}
	if x.reloads(reload.ResultIncompatible) != 1 || x.refused() != 1 {
		t.Fatal("the incompatible reload is not in the metrics")
	}
	x.tick()
	x.tick()
	if x.reloads(reload.ResultIncompatible) != 1 {
		t.Fatal("the watch tried the refused content again")
	}
	resp, err := srv.Client().Get(srv.URL + "/admin/contracts")
	if err != nil {
		t.Fatal(err)
	}
	var st reload.Status
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || st.Served[orderType] != v1 || st.Last.Result != reload.ResultIncompatible || len(st.Kept[orderType]) != 1 {
		t.Fatalf("GET /admin/contracts: %v %+v", err, st)
	}

	x.writeRename([]byte("not a descriptor set"))
	if code, res := post(); code != http.StatusUnprocessableEntity || res.Result != reload.ResultFailed || x.served() != v1 {
		t.Fatalf("undecodable: %d %+v", code, res)
	}
	// A type missing is a load failure: the config names it.
	set := evolve(t, func(t testing.TB, set *descriptorpb.FileDescriptorSet) {
		for _, f := range set.GetFile() {
			if f.GetPackage() == "examples.logs.v1" {
				f.MessageType = nil
			}
		}
	})
	x.writeRename(set)
	if code, res := post(); code != http.StatusUnprocessableEntity || !strings.Contains(res.Error, "examples.logs.v1.LogLine") {
		t.Fatalf("a type missing: %d %+v", code, res)
	}

	mu.Lock()
	refuse = true
	mu.Unlock()
	x.writeRename(evolve(t, addField("gift_wrap", 9)))
	if code, res := post(); code != http.StatusUnprocessableEntity || !strings.Contains(res.Error, prepareErr.Error()) || x.served() != v1 {
		t.Fatalf("refused by a prepare step: %d %+v", code, res)
	}
	mu.Lock()
	refuse = false
	mu.Unlock()
	if code, res := post(); code != http.StatusOK || res.Result != reload.ResultReloaded || x.refused() != 0 {
		t.Fatalf("the same file, once the step takes it: %d %+v", code, res)
	}
	if code, res := post(); code != http.StatusOK || res.Result != reload.ResultUnchanged {
		t.Fatalf("again: %d %+v, want unchanged", code, res)
	}
	if n := x.reloads(reload.ResultFailed); n != 3 {
		t.Fatalf("%v failed reloads, want 3", n)
	}
	// The info metric names the version served, and only it.
	if n := testutil.CollectAndCount(x.reg, "sluice_contract_info"); n != len(examples.Types) {
		t.Fatalf("sluice_contract_info has %d series, want one per type", n)
	}
}
