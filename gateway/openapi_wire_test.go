package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/eventtest"
	"github.com/sluicehq/sluice/internal/jsonschematest"
)

// The served description against the REST path: every event the gateway
// accepts is valid under the description, as a real JSON Schema
// validator (santhosh-tekuri/jsonschema, draft 2020-12) reads it.

// wireNow is the clock of wireGateway; events within its skew window.
var wireNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// wireGateway is the whole REST path in this process, with a Kafka that
// acknowledges everything and the example contracts, and the description
// it serves.
func wireGateway(tb testing.TB) (http.Handler, []byte) {
	tb.Helper()
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := NewDefaultConfig()
	cfg.GRPCAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Dedup.MaxEntries = dedupShards * 64
	cfg.Sources = []SourceConfig{{Name: "wire", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}}}
	svc, err := New(cfg, served(registry), acceptAll{}, WithClock(func() time.Time { return wireNow }))
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := NewServer(svc)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.grpcLis.Close(); srv.httpLis.Close() })
	handler := srv.http.Handler
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if rec.Code != http.StatusOK {
		tb.Fatalf("GET /openapi.json: %d", rec.Code)
	}
	return handler, rec.Body.Bytes()
}

// acceptedEvents sends body to handler and returns the events it
// accepted (ACCEPTED or DUPLICATE), each as the JSON text it was sent as.
func acceptedEvents(tb testing.TB, handler http.Handler, body []byte) [][]byte {
	tb.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/events", bytes.NewReader(body))
	req.Header.Set("X-Api-Key", "k")
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK && rec.Code != http.StatusMultiStatus {
		return nil
	}
	var answer struct {
		Results []struct {
			Index   int    `json:"index"`
			Outcome string `json:"outcome"`
		} `json:"results"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
		tb.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
	}
	var sent struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(body, &sent); err != nil {
		tb.Fatalf("the gateway answered %d to a body encoding/json does not read: %v", rec.Code, err)
	}
	var out [][]byte
	for _, r := range answer.Results {
		if r.Outcome == "ACCEPTED" || r.Outcome == "DUPLICATE" {
			out = append(out, sent.Events[r.Index])
		}
	}
	return out
}

// checkAdmitted sends body and fails unless each event the gateway
// accepts is valid under the description, as a request of its own. It
// returns how many were accepted.
func checkAdmitted(t *testing.T, handler http.Handler, validators []jsonschematest.Validator, body []byte) int {
	t.Helper()
	accepted := acceptedEvents(t, handler, body)
	for _, ev := range accepted {
		one := append(append([]byte(`{"events":[`), ev...), "]}"...)
		if err := jsonschematest.ValidateAll(validators, one); err != nil {
			t.Errorf("the description refuses %s, which the gateway accepts: %v", shorten(one), err)
		}
	}
	return len(accepted)
}

func shorten(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
}

// readmeFirstEvent is the README's first request, as its shell makes it
// at wireNow.
func readmeFirstEvent() []byte {
	now := wireNow.Format("2006-01-02T15:04:05Z")
	return []byte(`{"events":[{"id":"log-1","type":"examples.logs.v1.LogLine","occurred_at":"` + now + `","partition_key":"checkout-api",` +
		`"payload":{"service":"checkout-api","severity":"SEVERITY_INFO","message":"hello","timestamp":"` + now + `","host":"127.0.0.1"}}]}`)
}

// describedSeeds are requests the gateway accepts, or accepts in part: the
// README's, the examples, and protojson's other spellings of them.
func describedSeeds() [][]byte {
	at := wireNow.Add(-time.Minute).Format(time.RFC3339Nano)
	event := func(id, typ, payload, extra string) string {
		return `{"id":"` + id + `","type":"` + typ + `","occurred_at":"` + at + `","payload":` + payload + extra + `}`
	}
	log := func(fields string) string {
		return `{"service":"checkout-api","severity":"SEVERITY_INFO","message":"m","timestamp":"2026-11-29T11:59:00Z",` + fields + `}`
	}
	seeds := [][]byte{readmeFirstEvent()}
	for _, s := range []string{
		event("a-1", "examples.shop.v1.OrderPlaced", string(examples.OrderPlacedJSON), `,"partition_key":null,"attributes":null`),
		event("a-2", "examples.identity.v1.UserProfileUpdated", string(examples.UserProfileUpdatedJSON), `,"attributes":{"tenant":"t1"}`),
		event("a-3", "examples.logs.v1.LogLine", string(examples.LogLineJSON), `,"partition_key":"svc"`),
		event("a-4", "examples.logs.v1.LogLine", log(`"host":"fe80::1%eth0","labels":null,"traceId":"4bf92f3577b34da6a3ce929d0e0e4736"`), ""),
		event("a-5", "examples.logs.v1.LogLine",
			`{"service":"s","severity":5,"message":"m","timestamp":"2026-01-31T3:04:05,5+01:00","host":"EXAMPLE.com.","source":{"line":"7"}}`, ""),
		event("a-6", "examples.shop.v1.OrderPlaced", `{"orderId":"7C9E6679-7425-40DE-944B-E07FC1F90AE7","customer":{"customerId":"c","email":"Ada@Example.COM"},`+
			`"items":[{"sku":"BOOK-0451","quantity":"2","unitPriceCents":"1999"}],"currency":"EUR","totalCents":"5.248e3",`+
			`"shippingAddress":{"line1":"l","city":"c","postalCode":"12","countryCode":"PT"},"paymentMethod":1,"note":null}`, ""),
	} {
		seeds = append(seeds, []byte(`{"events":[`+s+`]}`))
	}
	// Occurred-at as Go's parser takes it.
	for _, occurred := range []string{"2026-11-29T11:59:00.1234567891Z", "2026-11-29T11:59:00,5Z", "2026-11-29T9:59:00-02:00", "2026-11-29T11:59:00+00:00"} {
		seeds = append(seeds, []byte(`{"events":[{"id":"t-1","type":"examples.logs.v1.LogLine","occurred_at":"`+occurred+`","payload":`+log(`"host":"h"`)+`}]}`))
	}
	return seeds
}

// TestOpenAPIAdmitsAccepted: the README's first event, the examples and
// the gateway's other spellings of them are accepted, and valid under the
// description the gateway serves.
func TestOpenAPIAdmitsAccepted(t *testing.T) {
	handler, spec := wireGateway(t)
	validators := jsonschematest.Compile(t, spec, "/components/schemas/PublishRequest")
	for i, body := range describedSeeds() {
		if n := checkAdmitted(t, handler, validators, body); n == 0 {
			t.Errorf("seed %d: the gateway accepts none of %s; the seed is wrong", i, shorten(body))
		}
	}
	for _, body := range eventtest.PublishBodies() {
		checkAdmitted(t, handler, validators, body)
	}
}

// FuzzOpenAPIAdmitsAccepted: every event the gateway accepts, from any
// request, is valid under the description it serves.
func FuzzOpenAPIAdmitsAccepted(f *testing.F) {
	for _, s := range append(describedSeeds(), eventtest.PublishBodies()...) {
		f.Add(s)
	}
	handler, spec := wireGateway(f)
	validators := jsonschematest.Compile(f, spec, "/components/schemas/PublishRequest")
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAdmitted(t, handler, validators, body)
	})
}
