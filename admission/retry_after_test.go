package admission

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
)

// TestFullRetryAfter: a full spool's retry-after is the refused bytes over
// the smoothed drain rate, in whole seconds between 1s and 60s; 5s while
// no rate was measured.
func TestFullRetryAfter(t *testing.T) {
	var a Admission
	if got := a.fullRetryAfter(1 << 20); got != 5*time.Second {
		t.Fatalf("no drain measured: %v, want 5s", got)
	}
	a.rate.observe(1000, time.Second) // 1000 bytes/s
	for _, tc := range []struct {
		need int
		want time.Duration
	}{
		{1, time.Second},
		{1000, time.Second},
		{1001, 2 * time.Second},
		{7000, 7 * time.Second},
		{60_000, 60 * time.Second},
		{10_000_000, 60 * time.Second},
	} {
		if got := a.fullRetryAfter(tc.need); got != tc.want {
			t.Errorf("%d bytes at 1000 bytes/s: %v, want %v", tc.need, got, tc.want)
		}
	}
	// The rate is smoothed: 0.8 of the old, 0.2 of the new measure.
	a.rate.observe(6000, time.Second)
	if got := a.rate.get(); got != 2000 {
		t.Fatalf("smoothed rate %v, want 2000", got)
	}
	if got := a.fullRetryAfter(7000); got != 4*time.Second {
		t.Errorf("7000 bytes at 2000 bytes/s: %v, want 4s", got)
	}
}

// TestBufferFullRetryAfterFromTheDrainRate: a spool filled during an
// outage refuses with a retry-after estimated from the rate the drainer
// measured while Kafka was up: the refused records' spooled bytes over
// that rate (the relationship, whatever the machine's speed), not the
// default for an unknown rate.
func TestBufferFullRetryAfterFromTheDrainRate(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	var o outage
	o.install(c)
	defer o.on.Store(false) // before the producer's cleanup flushes
	p := newTestProducer(t, c.ListenAddrs(), func(c *publish.Config) { c.DeliveryTimeout = time.Second })
	s := openSpool(t, t.TempDir(), func(c *buffer.Config) { c.MaxBytes = 64 << 10; c.SegmentBytes = 16 << 10 })
	defer s.Close()
	a := newTestAdmission(t, p, s, func(c *Config) { c.SpoolFirst = true }, nil)
	defer a.Close()
	withValues := func(recs []*kgo.Record) []*kgo.Record {
		for _, r := range recs {
			r.Value = append(r.Value, make([]byte, 2<<10)...)
		}
		return recs
	}

	// Kafka up: the drainer publishes what is spooled and measures.
	for batch := range 5 {
		for i, r := range a.Admit(context.Background(), withValues(keyed(topic, batch*10, 10, 4))) {
			if r.Err != nil {
				t.Fatalf("record %d: %+v", batch*10+i, r)
			}
		}
		waitFor(t, "the spool drained", s.Empty)
	}
	rate := a.rate.get()
	if rate <= 0 {
		t.Fatalf("drain rate %v after a drain", rate)
	}

	// Kafka gone: the drainer publishes nothing more, so the rate stays.
	o.on.Store(true)
	for batch := 5; ; batch++ {
		if batch == 200 {
			t.Fatal("the spool never filled")
		}
		recs := withValues(keyed(topic, batch*10, 10, 4))
		out := a.Admit(context.Background(), recs)
		if out[0].Err == nil {
			continue
		}
		need := 0
		for _, r := range recs {
			need += len(record.AppendSpooled(nil, r))
		}
		want := time.Duration(math.Max(1, math.Min(60, math.Ceil(float64(need)/rate)))) * time.Second
		t.Logf("refused %d spooled bytes at a drain rate of %.0f bytes/s: retry after %v", need, rate, want)
		for i, r := range out {
			if r.Refusal != RefusedFull || r.RetryAfter != want {
				t.Fatalf("record %d: %+v, want RefusedFull after %v (%d bytes at %.0f bytes/s)", i, r, want, need, rate)
			}
		}
		break
	}
	if got := a.rate.get(); got != rate {
		t.Fatalf("the drain rate moved during the outage: %v, then %v", rate, got)
	}
}
