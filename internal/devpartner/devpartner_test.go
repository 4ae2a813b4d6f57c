package devpartner

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/gatewaytest"
	"github.com/sluicehq/sluice/internal/pulltest"
	"github.com/sluicehq/sluice/internal/waitfor"
	"github.com/sluicehq/sluice/pull"
	"github.com/sluicehq/sluice/pull/ownership"
	"github.com/sluicehq/sluice/record"
)

const typeOrder = "examples.shop.v1.OrderPlaced"

// TestDemoPartner: the demo poller pulls the demo partner's backlog through
// a real gateway: the orders pass the OrderPlaced contract, the 429s are
// waited out, and every 40th order is rejected with a typed reason.
func TestDemoPartner(t *testing.T) {
	g := gatewaytest.Start(t, gatewaytest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, stopPartner, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stopPartner()
	cfg := Config(base)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	clk := pulltest.NewClock()
	clk.Park = cfg.Interval // caught up: parks
	store := &pulltest.Store[pull.CursorRecord]{}
	reg := prometheus.NewRegistry()
	m, err := pull.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pull.NewPoller(cfg, g.Service, store, pull.WithClock(clk), pull.WithLogger(quietLog()), pull.WithMetrics(m),
		pull.WithJitter(func(d time.Duration) time.Duration { return d }))
	if err != nil {
		t.Fatal(err)
	}
	stop := pulltest.Run(t, p)
	eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
	stop()
	accepted := metric(t, reg, "sluice_poller_items_total", "partner", demoPollerName, "outcome", "ACCEPTED", "reason", "")
	invalid := metric(t, reg, "sluice_poller_items_total", "partner", demoPollerName, "outcome", "REJECTED", "reason", "SCHEMA_VIOLATION")
	last := store.Saves()[len(store.Saves())-1]
	var n int
	fmt.Sscan(last.Cursor, &n)
	if n < demoBacklog || accepted+invalid != float64(n) || invalid != float64(n/demoInvalidN) {
		t.Errorf("cursor %d: accepted %v, invalid %v", n, accepted, invalid)
	}
	waited := metric(t, reg, "sluice_poller_wait_seconds_total", "partner", demoPollerName, "cause", "retry_after")
	if got := metric(t, reg, "sluice_poller_requests_total", "partner", demoPollerName, "status", "429"); got != 0 && waited != got {
		t.Errorf("%v 429s, waited %vs", got, waited)
	}
	if ids := g.EventIDs(t, record.EventTopic(typeOrder), int(accepted)); len(ids) != int(accepted) {
		t.Errorf("%d records in Kafka, want %v", len(ids), accepted)
	}
	stopPartner()
	if _, err := http.Get(base + "/orders"); err == nil {
		t.Error("demo partner still answers after stop")
	}
}

// TestDemoThroughRunner is `sluice dev`'s wiring: a Runner over the
// in-process Kafka runs the demo poller into a real gateway.
func TestDemoThroughRunner(t *testing.T) {
	g := gatewaytest.Start(t, gatewaytest.Options{})
	base, stopPartner, err := Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer stopPartner()
	oc := ownership.NewDefaultConfig()
	r, err := ownership.NewRunner(oc, []kgo.Opt{kgo.SeedBrokers(g.Brokers...)}, []pull.Config{Config(base)}, g.Service, ownership.WithLogger(quietLog()))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if ids := g.EventIDs(t, record.EventTopic(typeOrder), demoBacklog); len(ids) < demoBacklog {
		t.Fatalf("%d demo orders in Kafka, want at least %d", len(ids), demoBacklog)
	}
	st := r.Status()
	if len(st) != 1 || st[0].Partner != demoPollerName || st[0].SavedAt.IsZero() {
		t.Errorf("status %+v", st)
	}
}

// eventually checks cond until it holds, or fails the test at the deadline.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitfor.Condition(t, 20*time.Second, what, cond)
}

// metric is the value of the counter name{labels} gathered from reg; 0
// when it has none. labels are name, value pairs.
func metric(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
	metrics:
		for _, m := range fam.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }
