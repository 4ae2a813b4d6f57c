package gateway

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// TestSecondServiceOnOneRegistry: a second Service on a Registerer that
// holds the first one's metrics is refused with an error wrapping
// prometheus.AlreadyRegisteredError, without a panic, and the registry is
// left as it was: the first Service's metrics are still the ones there
// and still count. Services each under a label value of their own share
// one.
func TestSecondServiceOnOneRegistry(t *testing.T) {
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewDefaultConfig()
	cfg.Sources = []SourceConfig{{Name: "src", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}}}
	reg := prometheus.NewPedanticRegistry()
	first, err := New(cfg, served(registry), acceptAll{}, WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	families := func() int {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		return len(mfs)
	}
	before := families()

	second, err := New(cfg, served(registry), acceptAll{}, WithRegisterer(reg))
	var are prometheus.AlreadyRegisteredError
	if second != nil || !errors.As(err, &are) {
		t.Fatalf("second Service on one registry: %v, %v; want an AlreadyRegisteredError", second, err)
	}
	if got := families(); got != before {
		t.Fatalf("%d metric families after the refusal, %d before", got, before)
	}
	first.Ingest(context.Background(), "src", []*ingestv1.Event{{
		Id: "m-1", Type: "examples.logs.v1.LogLine", OccurredAt: timestamppb.Now(),
		Payload: &ingestv1.Event_Json{Json: string(examples.LogLineJSON)},
	}})
	if got := testutil.ToFloat64(first.metrics.events.WithLabelValues("src", "examples.logs.v1.LogLine", "ACCEPTED", "")); got != 1 {
		t.Fatalf("the first Service's sluice_events_total{outcome=\"ACCEPTED\"}: %v, want 1", got)
	}

	// Two Services, each under a label value of its own, share a registry.
	shared := prometheus.NewPedanticRegistry()
	for _, name := range []string{"a", "b"} {
		if _, err := New(cfg, served(registry), acceptAll{}, WithRegisterer(prometheus.WrapRegistererWith(prometheus.Labels{"gateway": name}, shared))); err != nil {
			t.Fatalf("Service %s under a label of its own: %v", name, err)
		}
	}
	if n, err := testutil.GatherAndCount(shared, "sluice_dedup_entries"); err != nil || n != 2 {
		t.Fatalf("sluice_dedup_entries: %d series, %v; want one per Service", n, err)
	}
}

// TestRequestEventsObserved: sluice_request_events has one observation,
// its event count, per request or stream batch that passed the
// whole-request limits; one refused whole and a poller's page (Ingest)
// are not requests it counts.
func TestRequestEventsObserved(t *testing.T) {
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewDefaultConfig()
	cfg.Limits.MaxEventsPerRequest = 4
	cfg.Limits.CheckingEvents = 4
	cfg.Sources = []SourceConfig{{Name: "src", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}}}
	reg := prometheus.NewPedanticRegistry()
	s, err := New(cfg, served(registry), acceptAll{}, WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	events := func(n int) []*ingestv1.Event {
		out := make([]*ingestv1.Event, n)
		for i := range out {
			next++
			out[i] = &ingestv1.Event{
				Id: fmt.Sprintf("re-%d", next), Type: "examples.logs.v1.LogLine", OccurredAt: timestamppb.Now(),
				Payload: &ingestv1.Event_Json{Json: string(examples.LogLineJSON)},
			}
		}
		return out
	}
	ctx := context.Background()
	src := &source{name: "src"}
	if _, f := s.publishBatch(ctx, "rest", src, &batch{events: events(3)}); f != nil {
		t.Fatal(f)
	}
	if _, f := s.publishBatch(ctx, "grpc", src, &batch{events: events(2)}); f != nil {
		t.Fatal(f)
	}
	s.judgeStreamBatch(ctx, src, &batch{events: events(1)})
	if _, f := s.publishBatch(ctx, "rest", src, &batch{events: events(5)}); f == nil || f.Reason != ingestv1.Reason_BATCH_TOO_LARGE {
		t.Fatalf("5 events over a limit of 4: %v", f)
	}
	s.judgeStreamBatch(ctx, src, &batch{events: events(5)})
	s.Ingest(ctx, "src", events(4))

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sluice_request_events" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != 3 || h.GetSampleSum() != 6 {
			t.Fatalf("sluice_request_events: %d observations of %v events in all, want 3 of 6", h.GetSampleCount(), h.GetSampleSum())
		}
		return
	}
	t.Fatal("sluice_request_events is not registered")
}

// TestSeriesFromStart: a gateway that has judged nothing exports, at zero,
// every transport's requests and latency, and for each configured source
// and loaded type the outcomes the SLOs count, so alerts on their rate()
// and the dashboard see them before the first event.
func TestSeriesFromStart(t *testing.T) {
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewDefaultConfig()
	cfg.Sources = []SourceConfig{
		{Name: "a", KeyHashes: []string{HashKey("ka")}, EventTypes: []string{"*"}},
		{Name: "b", KeyHashes: []string{HashKey("kb")}, EventTypes: []string{"*"}},
	}
	reg := prometheus.NewPedanticRegistry()
	if _, err := New(cfg, served(registry), acceptAll{}, WithRegisterer(reg)); err != nil {
		t.Fatal(err)
	}
	types := registry.Types()
	reasons := len(ingestv1.Reason_name) - 1 // every reason but REASON_UNSPECIFIED
	for name, want := range map[string]int{
		"sluice_events_total":             2 * len(types) * 5,
		"sluice_requests_total":           len(transports) * (1 + reasons),
		"sluice_request_duration_seconds": len(transports),
	} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != want {
			t.Errorf("%s: %d series before the first request (%v), want %d", name, n, err, want)
		}
	}
	for _, outcome := range [][2]string{{"ACCEPTED", ""}, {"DUPLICATE", ""}, {"REJECTED", "BUFFER_FULL"}, {"REJECTED", "UNAVAILABLE"}, {"REJECTED", "IDEMPOTENCY_CONFLICT"}} {
		want := fmt.Sprintf(`sluice_events_total{outcome=%q,reason=%q,source="b",type=%q} 0`, outcome[0], outcome[1], types[0])
		found := false
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "sluice_events_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				l := map[string]string{}
				for _, lp := range m.GetLabel() {
					l[lp.GetName()] = lp.GetValue()
				}
				found = found || l["source"] == "b" && l["type"] == types[0] && l["outcome"] == outcome[0] && l["reason"] == outcome[1]
			}
		}
		if !found {
			t.Errorf("no %s", want)
		}
	}
}
