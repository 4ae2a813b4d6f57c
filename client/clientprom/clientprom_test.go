package clientprom_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/client/clientprom"
	"github.com/sluicehq/sluice/examples"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/gatewaytest"
)

// TestMetrics: what each call records, read back from a real registry.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := clientprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Final(ingestv1.Outcome_ACCEPTED, ingestv1.Reason_REASON_UNSPECIFIED, 1, time.Millisecond)
	m.Final(ingestv1.Outcome_ACCEPTED, ingestv1.Reason_REASON_UNSPECIFIED, 2, time.Millisecond)
	m.Final(ingestv1.Outcome_REJECTED, ingestv1.Reason_SCHEMA_VIOLATION, 1, time.Millisecond)
	m.Final(ingestv1.Outcome_OUTCOME_UNSPECIFIED, ingestv1.Reason_UNAVAILABLE, 10, time.Second)
	m.Retry(ingestv1.Reason_RATE_LIMITED, 7)
	m.Request(3, time.Millisecond, nil)
	m.Request(3, time.Millisecond, errors.New("down"))
	m.Buffered(4, 1024)
	want := `
# HELP sluice_client_events_total Events that got their final result, by outcome and reason.
# TYPE sluice_client_events_total counter
sluice_client_events_total{outcome="ACCEPTED",reason=""} 2
sluice_client_events_total{outcome="REJECTED",reason="SCHEMA_VIOLATION"} 1
sluice_client_events_total{outcome="UNDELIVERED",reason="UNAVAILABLE"} 1
# HELP sluice_client_retries_total Events to be sent again, by the reason of the answer that retries them.
# TYPE sluice_client_retries_total counter
sluice_client_retries_total{reason="RATE_LIMITED"} 7
# HELP sluice_client_buffered_events Events the client holds: buffered, in flight, or waiting to be retried.
# TYPE sluice_client_buffered_events gauge
sluice_client_buffered_events 4
# HELP sluice_client_buffered_bytes Encoded bytes of the events the client holds.
# TYPE sluice_client_buffered_bytes gauge
sluice_client_buffered_bytes 1024
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"sluice_client_events_total", "sluice_client_retries_total", "sluice_client_buffered_events", "sluice_client_buffered_bytes"); err != nil {
		t.Error(err)
	}
	for name, n := range map[string]int{"sluice_client_request_duration_seconds": 2, "sluice_client_event_duration_seconds": 3} {
		if got, err := testutil.GatherAndCount(reg, name); err != nil || got != n {
			t.Errorf("%s: %d series (%v), want %d", name, got, err, n)
		}
	}
	if _, err := clientprom.New(reg); err == nil {
		t.Error("a second registration on the same registerer was taken")
	}
}

// TestMetricsOfAClient: a client publishing to a real gateway, one event
// of three refused: the registry shows its final results and an empty
// buffer.
func TestMetricsOfAClient(t *testing.T) {
	g := gatewaytest.Start(t, gatewaytest.Options{Serve: true})
	reg := prometheus.NewPedanticRegistry()
	m, err := clientprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New([]string{g.Server.GRPCAddr()}, client.WithInsecure(), client.WithAPIKey(gatewaytest.Key), client.WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	ev := func(payload []byte) *ingestv1.Event {
		return &ingestv1.Event{Type: "examples.shop.v1.OrderPlaced", OccurredAt: timestamppb.Now(),
			Payload: &ingestv1.Event_Json{Json: string(payload)}}
	}
	bad := bytes.Replace(examples.OrderPlacedJSON, []byte("ada@example.com"), []byte("nobody"), 1)
	if _, err := c.Publish(t.Context(), ev(examples.OrderPlacedJSON), ev(bad), ev(examples.OrderPlacedJSON)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP sluice_client_events_total Events that got their final result, by outcome and reason.
# TYPE sluice_client_events_total counter
sluice_client_events_total{outcome="ACCEPTED",reason=""} 2
sluice_client_events_total{outcome="REJECTED",reason="SCHEMA_VIOLATION"} 1
# HELP sluice_client_buffered_events Events the client holds: buffered, in flight, or waiting to be retried.
# TYPE sluice_client_buffered_events gauge
sluice_client_buffered_events 0
# HELP sluice_client_buffered_bytes Encoded bytes of the events the client holds.
# TYPE sluice_client_buffered_bytes gauge
sluice_client_buffered_bytes 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"sluice_client_events_total", "sluice_client_buffered_events", "sluice_client_buffered_bytes"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "sluice_client_request_duration_seconds"); err != nil || n != 1 {
		t.Errorf("request series: %d (%v), want answered only", n, err)
	}
}
