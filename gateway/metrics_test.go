package gateway

import (
	"context"
	"errors"
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
	first, err := New(cfg, registry, acceptAll{}, WithRegisterer(reg))
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

	second, err := New(cfg, registry, acceptAll{}, WithRegisterer(reg))
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
	if n, err := testutil.GatherAndCount(reg, "sluice_events_total"); err != nil || n != 1 {
		t.Fatalf("the first Service's sluice_events_total: %d series, %v", n, err)
	}

	// Two Services, each under a label value of its own, share a registry.
	shared := prometheus.NewPedanticRegistry()
	for _, name := range []string{"a", "b"} {
		if _, err := New(cfg, registry, acceptAll{}, WithRegisterer(prometheus.WrapRegistererWith(prometheus.Labels{"gateway": name}, shared))); err != nil {
			t.Fatalf("Service %s under a label of its own: %v", name, err)
		}
	}
	if n, err := testutil.GatherAndCount(shared, "sluice_dedup_entries"); err != nil || n != 2 {
		t.Fatalf("sluice_dedup_entries: %d series, %v; want one per Service", n, err)
	}
}
