package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/examples"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/record"
)

// postRESTHeaders is postREST with more headers.
func (h *harness) postRESTHeaders(key string, body []byte, headers map[string]string) (*http.Response, []byte) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+h.srv.HTTPAddr()+"/v1/events", bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", key)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp, out
}

// TestRESTRequestContext: what a REST request's headers give its events
// besides the API key. A traceparent header reaches the record; an
// Authorization: Bearer key authenticates as X-Api-Key does; Grpc-Timeout
// is the request's deadline, so one already past when the request is
// read is refused UNAVAILABLE before its events are judged.
func TestRESTRequestContext(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	now := h.clock.Now()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traced := ev{ID: "rest-traced", Type: typeLog, At: now, JSON: examples.LogLineJSON}
	resp, body := h.postRESTHeaders(keyAll, restBody(traced), map[string]string{"Traceparent": tp, "Grpc-Timeout": "30S"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("traced: %d %s", resp.StatusCode, body)
	}
	wantAccepted(t, mustResults(t, body), traced.ID)
	recs := h.consumeIDs(h.topics[typeLog], []string{traced.ID})
	if len(recs) != 1 {
		t.Fatalf("%d records of %s", len(recs), traced.ID)
	}
	if hs, err := record.ParseEvent(recs[0]); err != nil || hs.Traceparent != tp {
		t.Fatalf("record headers %+v, %v: want traceparent %s", hs, err, tp)
	}

	bearer := ev{ID: "rest-bearer", Type: typeLog, At: now, JSON: examples.LogLineJSON}
	resp, body = h.postRESTHeaders("", restBody(bearer), map[string]string{"Authorization": "Bearer " + keyAll})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("bearer: %d %s", resp.StatusCode, body)
	}
	wantAccepted(t, mustResults(t, body), bearer.ID)

	late := ev{ID: "rest-late", Type: typeLog, At: now, JSON: examples.LogLineJSON}
	resp, body = h.postRESTHeaders(keyAll, restBody(late), map[string]string{"Grpc-Timeout": "1n"})
	if resp.StatusCode != http.StatusServiceUnavailable || !bytes.Contains(body, []byte(ingestv1.Reason_UNAVAILABLE.String())) {
		t.Fatalf("a request past its Grpc-Timeout: %d %s, want 503 UNAVAILABLE", resp.StatusCode, body)
	}
}
