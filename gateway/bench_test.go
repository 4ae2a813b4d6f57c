package gateway_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// BenchmarkPublishGRPC is the gateway end to end over loopback gRPC into
// the in-process Kafka: 32 concurrent callers, 100 log lines (~300 bytes
// of protobuf each) per Publish, with the spool off (DIRECT) and forced on
// (every event fsync'd in the spool, then drained). Each iteration is one
// round: a slice of requests against each mode in turn, the spool's slice
// ending only when its drainer has published everything to Kafka. The
// machine's noise hits both modes alike, so the ratio of the two medians
// (spool/direct) is what to read; the target is at least 0.8.
func BenchmarkPublishGRPC(b *testing.B) {
	var line logsv1.LogLine
	if err := protojson.Unmarshal(examples.LogLineJSON, &line); err != nil {
		b.Fatal(err)
	}
	payload, err := proto.Marshal(&line)
	if err != nil {
		b.Fatal(err)
	}
	const (
		callers = 32
		perMode = 1000 // requests per mode per round: 100,000 events
	)
	type mode struct {
		name  string
		h     *harness
		spool *buffer.Spool
		rates []float64
	}
	newMode := func(spoolFirst bool) *mode {
		m := &mode{name: "direct"}
		o := harnessOpts{config: func(c *gateway.Config) {
			c.Limits.MaxEventsPerRequest = 100
			c.Sources[2].Burst = 100 // the slow source; unused here
		}}
		if spoolFirst {
			m.name = "spool_first"
			open := spoolAt(b.TempDir(), 1<<30)
			o.spool = func(t testing.TB) *buffer.Spool {
				m.spool = open(t)
				return m.spool
			}
			o.admission = func(c *admission.Config) { c.SpoolFirst = true }
		}
		m.h = newHarness(b, o)
		return m
	}
	modes := []*mode{newMode(false), newMode(true)}
	var next atomic.Int64
	slice := func(m *mode) {
		ctx := withKey(context.Background(), keyAll)
		at := m.h.clock.Now()
		var todo atomic.Int64
		todo.Store(perMode)
		var wg sync.WaitGroup
		start := time.Now()
		for range callers {
			wg.Go(func() {
				for todo.Add(-1) >= 0 {
					i := next.Add(1)
					req := &ingestv1.PublishRequest{Events: make([]*ingestv1.Event, 100)}
					for j := range req.Events {
						req.Events[j] = ev{ID: fmt.Sprintf("b-%d-%d", i, j), Type: typeLog, Key: fmt.Sprintf("svc-%d", j%16), At: at, Binary: payload}.proto()
					}
					cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					out, err := m.h.client.Publish(cctx, req)
					cancel()
					if err != nil {
						b.Error(err)
						return
					}
					for _, r := range out.GetResults() {
						if r.GetOutcome() != ingestv1.Outcome_ACCEPTED {
							b.Errorf("result %v", r)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		if m.spool != nil {
			// Every spooled record published to Kafka (the cursor is
			// written later, coalesced). Bounded: a stuck drainer fails the
			// benchmark instead of hanging it.
			deadline := time.After(time.Minute)
			tick := time.NewTicker(time.Millisecond)
			for counter(b, m.h.reg, "sluice_spool_drained_records_total") < counter(b, m.h.reg, "sluice_admission_spooled_records_total") {
				select {
				case <-tick.C:
				case <-deadline:
					b.Fatalf("spool not drained after a minute: %+v", m.spool.Stats())
				}
			}
			tick.Stop()
		}
		m.rates = append(m.rates, perMode*100/time.Since(start).Seconds())
	}
	b.ResetTimer()
	for i := range b.N {
		// Alternate which mode goes first, so neither always runs on the
		// heels of the other's garbage.
		for j := range modes {
			slice(modes[(i+j)%len(modes)])
		}
	}
	b.StopTimer()
	direct, spooled := median(modes[0].rates), median(modes[1].rates)
	b.ReportMetric(direct, "direct-events/s")
	b.ReportMetric(spooled, "spool-events/s")
	b.ReportMetric(spooled/direct, "spool/direct")
	b.ReportMetric(0, "ns/op")
}

// counter reads a counter's value from the harness's registry.
func counter(b *testing.B, g prometheus.Gatherer, name string) float64 {
	mfs, err := g.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			sum := 0.0
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	b.Fatalf("no metric %s", name)
	return 0
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
