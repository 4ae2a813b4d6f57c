package admission

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/publish"
)

// TestFlushWaitsForTheDrain: records spooled during an outage are still
// spooled when it ends; Flush returns once the drainer has published
// every one of them, and they are in Kafka in key order. During the
// outage Flush gives up at its deadline and says how many it left.
func TestFlushWaitsForTheDrain(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	var o outage
	o.install(c)
	p := newTestProducer(t, c.ListenAddrs(), func(c *publish.Config) { c.DeliveryTimeout = time.Second })
	s := openSpool(t, t.TempDir(), nil)
	defer s.Close()
	a := newTestAdmission(t, p, s, func(c *Config) { c.SpoolFirst = true }, nil)
	defer a.Close()

	o.on.Store(true)
	recs := keyed(topic, 0, 200, 5)
	for i, r := range a.Admit(context.Background(), recs) {
		if r.Err != nil || r.Durability != DurabilityLocalDisk {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	left := a.Flush(ctx)
	cancel()
	if left != int64(len(recs)) {
		t.Fatalf("Flush during the outage left %d records, want all %d", left, len(recs))
	}

	o.on.Store(false)
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if left := a.Flush(ctx); left != 0 || !s.Empty() {
		t.Fatalf("Flush after the outage left %d records (spool empty %v)", left, s.Empty())
	}
	checkKeyOrder(t, consumeAll(t, c.ListenAddrs(), topic, len(recs)))
}

// TestFlushWithoutSpool: nothing to wait for.
func TestFlushWithoutSpool(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	p := newTestProducer(t, c.ListenAddrs(), nil)
	a := newTestAdmission(t, p, nil, nil, nil)
	defer a.Close()
	if left := a.Flush(context.Background()); left != 0 {
		t.Fatalf("Flush without a spool left %d", left)
	}
}
