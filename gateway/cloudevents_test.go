package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	ce "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/record"
)

// logCloudEvent is a CloudEvent of the example log line: CloudEvents type
// com.example.log, which the source's table maps to examples.logs.v1.LogLine.
func logCloudEvent(t *testing.T, id string) event.Event {
	t.Helper()
	e := ce.NewEvent()
	e.SetID(id)
	e.SetSource("//checkout.example/api")
	e.SetType("com.example.log")
	e.SetSubject("checkout-api")
	e.SetExtension("region", "eu-west-1")
	if err := e.SetData(ce.ApplicationJSON, json.RawMessage(examples.LogLineJSON)); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestCloudEventsEndpoint: the CloudEvents Go SDK's HTTP client sends to
// POST /v1/cloudevents, with the source's API key, in structured and
// binary mode and as a batch; each event is accepted once (sent again,
// DUPLICATE), typed through the source's table, keyed by its subject, its
// extensions attributes, its CloudEvents source beside the authenticated
// one, and with kafka_headers the Kafka binding's ce_* headers.
func TestCloudEventsEndpoint(t *testing.T) {
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) {
		for i := range c.Sources {
			if c.Sources[i].Name == "all" {
				c.Sources[i].CloudEvents = gateway.CloudEventsConfig{Types: map[string]string{"com.example.log": typeLog}, KafkaHeaders: true}
			}
		}
	}})
	p, err := cehttp.New(cehttp.WithTarget("http://"+h.srv.HTTPAddr()+"/v1/cloudevents"), cehttp.WithHeader("X-Api-Key", keyAll))
	if err != nil {
		t.Fatal(err)
	}
	client, err := ce.NewClient(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		id   string
		mode func(context.Context) context.Context
	}{{"ce-structured", ce.WithEncodingStructured}, {"ce-binary", ce.WithEncodingBinary}} {
		e := logCloudEvent(t, m.id)
		e.SetTime(h.clock.Now())
		for range 2 {
			if res := client.Send(m.mode(context.Background()), e); !ce.IsACK(res) {
				t.Fatalf("%s: not accepted: %v", m.id, res)
			}
		}
	}
	var batch []event.Event
	for _, id := range []string{"ce-batch-1", "ce-batch-2"} {
		e := logCloudEvent(t, id)
		e.SetTime(h.clock.Now())
		batch = append(batch, e)
	}
	req, err := cehttp.NewHTTPRequestFromEvents(context.Background(), "http://"+h.srv.HTTPAddr()+"/v1/cloudevents", batch)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", keyAll)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("batch: %d %s", resp.StatusCode, body)
	}
	wantOutcomes(t, mustResults(t, body), ingestv1.Outcome_ACCEPTED, ingestv1.Outcome_ACCEPTED)

	recs := h.consume(h.topics[typeLog], 4)
	seen := map[string]int{}
	for _, r := range recs {
		id, _ := headerOf(r, record.HeaderEventID)
		seen[id]++
		for key, want := range map[string]string{
			record.HeaderSource:                     "all",
			record.HeaderCloudEventsSource:          "//checkout.example/api",
			record.AttributeHeaderPrefix + "region": "eu-west-1",
			"ce_type":                               "com.example.log",
			"ce_id":                                 id,
			"ce_source":                             "//checkout.example/api",
			"content-type":                          "application/protobuf",
		} {
			if got, _ := headerOf(r, key); got != want {
				t.Errorf("%s: header %s = %q, want %q", id, key, got, want)
			}
		}
		if string(r.Key) != "checkout-api" {
			t.Errorf("%s: key %q, want the subject", id, r.Key)
		}
	}
	for _, id := range []string{"ce-structured", "ce-binary", "ce-batch-1", "ce-batch-2"} {
		if seen[id] != 1 {
			t.Errorf("records of %s: %d, want 1 (all %v)", id, seen[id], seen)
		}
	}

	// Without a key: 401, as for /v1/events.
	anon, err := http.Post("http://"+h.srv.HTTPAddr()+"/v1/cloudevents", "application/cloudevents+json", nil)
	if err != nil {
		t.Fatal(err)
	}
	anon.Body.Close()
	if anon.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a key: %d, want 401", anon.StatusCode)
	}
}
