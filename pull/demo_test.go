package pull

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

// TestDemoPartner: the demo poller pulls the demo partner's backlog through
// a real gateway: the orders pass the OrderPlaced contract, the 429s are
// waited out, and every 40th order is rejected with a typed reason.
func TestDemoPartner(t *testing.T) {
	g := newRealGateway(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, stopPartner, err := StartDemoPartner(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stopPartner()
	cfg := DemoConfig(base)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	clk.park = cfg.Interval // caught up: parks
	store := &memStore{}
	p, m := newTestPoller(t, cfg, g.svc, store, clk)
	stop := run(t, p)
	eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
	stop()
	accepted := counter(t, m, "items", demoPollerName, "ACCEPTED", "")
	invalid := counter(t, m, "items", demoPollerName, "REJECTED", "SCHEMA_VIOLATION")
	last := store.Saves()[len(store.Saves())-1]
	var n int
	fmt.Sscan(last.Cursor, &n)
	if n < demoBacklog || accepted+invalid != float64(n) || invalid != float64(n/demoInvalidN) {
		t.Errorf("cursor %d: accepted %v, invalid %v", n, accepted, invalid)
	}
	if got := counter(t, m, "requests", demoPollerName, "429"); got != 0 && counter(t, m, "waited", demoPollerName, waitRetryAfter) != got {
		t.Errorf("%v 429s, waited %vs", got, counter(t, m, "waited", demoPollerName, waitRetryAfter))
	}
	if ids := g.eventIDs(t, int(accepted)); len(ids) != int(accepted) {
		t.Errorf("%d records in Kafka, want %v", len(ids), accepted)
	}
	stopPartner()
	if _, err := http.Get(base + "/orders"); err == nil {
		t.Error("demo partner still answers after stop")
	}
}
