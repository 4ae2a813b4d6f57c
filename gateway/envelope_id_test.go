package gateway_test

import (
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/examples"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/record"
)

// TestProviderDeliveryIDs: the delivery ids webhook providers send are
// event ids as they are, over REST and gRPC, and reach Kafka unchanged;
// Stripe's and Standard Webhooks' carry '_' after a letter, which the id
// pattern admits (not first: no provider starts an id with it).
func TestProviderDeliveryIDs(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	now := h.clock.Now()
	ids := map[string]string{ // provider -> a delivery id from its documentation
		"stripe":            "evt_1NG8Du2eZvKYlo2CUI79vXWy",
		"standard webhooks": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
		"github":            "72d3162e-cc78-11e3-81ab-4c9367dc0958",
		"shopify":           "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
	}
	var want []string
	for provider, id := range ids {
		rest := ev{ID: id, Type: typeLog, At: now, JSON: examples.LogLineJSON}
		resp, body := h.postREST(keyAll, restBody(rest))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s over REST: %d %s", provider, resp.StatusCode, body)
		}
		wantAccepted(t, mustResults(t, body), id)
		grpc := ev{ID: "grpc." + id, Type: typeLog, At: now, JSON: examples.LogLineJSON}
		out, err := h.publishGRPC(keyAll, grpc)
		if err != nil {
			t.Fatalf("%s over gRPC: %v", provider, err)
		}
		wantAccepted(t, out.GetResults(), grpc.ID)
		want = append(want, id, grpc.ID)
	}
	got := map[string]bool{}
	for _, r := range h.consumeIDs(h.topics[typeLog], want) {
		got[header(r, record.HeaderEventID)] = true
	}
	for _, id := range want {
		if !got[id] {
			t.Errorf("%s is not in Kafka under its own id", id)
		}
	}

	// '_' first is refused alike on both transports, naming the field.
	bad := ev{ID: "_evt_1", Type: typeLog, At: now, JSON: examples.LogLineJSON}
	resp, body := h.postREST(keyAll, restBody(bad))
	res := mustResults(t, body)
	out, err := h.publishGRPC(keyAll, bad)
	if err != nil {
		t.Fatal(err)
	}
	for transport, r := range map[string][]*ingestv1.EventResult{"REST " + resp.Status: res, "gRPC": out.GetResults()} {
		if len(r) != 1 || r[0].GetRejection().GetReason() != ingestv1.Reason_SCHEMA_VIOLATION ||
			len(r[0].GetRejection().GetViolations()) == 0 || r[0].GetRejection().GetViolations()[0].GetField() != "id" {
			t.Errorf("%s: %v", transport, r)
		}
	}
}
