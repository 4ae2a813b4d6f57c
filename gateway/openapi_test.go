package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

func get(t *testing.T, method, url string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// TestOpenAPIDescribesTheWire: the served description names what REST
// takes and answers, not what the protobuf messages would print.
func TestOpenAPIDescribesTheWire(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	resp, body := get(t, http.MethodGet, "http://"+h.srv.HTTPAddr()+"/openapi.json") // no key
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !resp.Uncompressed { // the client asked for gzip, as Go's does unasked
		t.Error("the description was not sent compressed to a client that accepts gzip")
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Headers map[string]any `json:"headers"`
			} `json:"responses"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
				Enum       []string                   `json:"enum"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc.Components.Schemas
	for _, typ := range []string{typeOrder, typeLog} {
		ev, ok := schemas["Event."+typ]
		if !ok {
			t.Fatalf("no event schema for %s", typ)
		}
		var names []string
		for name := range ev.Properties {
			names = append(names, name)
		}
		sort.Strings(names)
		if want := []string{"attributes", "id", "occurred_at", "partition_key", "payload", "type"}; !slices.Equal(names, want) {
			t.Errorf("%s event fields %v, want the wire's %v", typ, names, want)
		}
	}
	if p := schemas["ErrorBody"].Properties; p["retry_after"] == nil || p["retryAfter"] != nil {
		t.Errorf("ErrorBody says %v; the wire says retry_after", p)
	}
	var reasons []string
	for n, name := range ingestv1.Reason_name {
		if n != 0 {
			reasons = append(reasons, name)
		}
	}
	sort.Strings(reasons)
	if got := schemas["Reason"].Enum; !slices.Equal(got, reasons) {
		t.Errorf("Reason enum %v, want %v", got, reasons)
	}

	responses := doc.Paths["/v1/events"]["post"].Responses
	var codes []string
	for code := range responses {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	want := []string{"200", "207", "400", "401", "403", "409", "413", "422", "429", "503"}
	if !slices.Equal(codes, want) {
		t.Errorf("statuses %v, want %v", codes, want)
	}
	for _, code := range []string{"429", "503"} {
		if responses[code].Headers["Retry-After"] == nil {
			t.Errorf("%s has no Retry-After", code)
		}
	}
	// Every reason's status is documented: a new reason with a new status
	// must be described.
	for n := range ingestv1.Reason_name {
		code := gateway.ReasonHTTPStatus(ingestv1.Reason(n))
		if _, ok := responses[strconv.Itoa(code)]; !ok {
			t.Errorf("reason %s answers %d, which the description leaves out", ingestv1.Reason(n), code)
		}
	}
}

// TestOpenAPIRoutes: the two documents answer GET and HEAD without a key,
// other methods the typed 405, and nothing when turned off.
func TestOpenAPIRoutes(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	base := "http://" + h.srv.HTTPAddr()
	resp, page := get(t, http.MethodGet, base+"/docs")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(page), typeOrder) {
		t.Fatalf("GET /docs: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp, body := get(t, http.MethodHead, base+"/openapi.json"); resp.StatusCode != http.StatusOK || len(body) != 0 {
		t.Errorf("HEAD /openapi.json: %d with %d bytes", resp.StatusCode, len(body))
	}
	resp, body := get(t, http.MethodPost, base+"/openapi.json")
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" || !strings.Contains(string(body), `"reason":"MALFORMED"`) {
		t.Errorf("POST /openapi.json: %d Allow %q %s", resp.StatusCode, resp.Header.Get("Allow"), body)
	}

	off := newHarness(t, harnessOpts{config: func(c *gateway.Config) { c.HTTP.OpenAPI = false }})
	if resp, _ := get(t, http.MethodGet, "http://"+off.srv.HTTPAddr()+"/openapi.json"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /openapi.json with http.openapi off: %d, want 404", resp.StatusCode)
	}
}

// TestOpenAPIDescribesPositions: the positions real answers carry, over
// Kafka and the spool, are described with the wire's names, JSON types
// and required fields.
func TestOpenAPIDescribesPositions(t *testing.T) {
	type schema struct {
		Type       any                `json:"type"`
		Ref        string             `json:"$ref"`
		Required   []string           `json:"required"`
		Properties map[string]*schema `json:"properties"`
		Not        *schema            `json:"not"`
	}
	kafka := newHarness(t, harnessOpts{})
	_, body := get(t, http.MethodGet, "http://"+kafka.srv.HTTPAddr()+"/openapi.json")
	var doc struct {
		Components struct {
			Schemas map[string]*schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc.Components.Schemas
	result := schemas["EventResult"]
	if result.Not == nil || !slices.Equal(result.Not.Required, []string{"kafka", "spool"}) {
		t.Errorf("EventResult does not say that kafka and spool exclude each other: %+v", result.Not)
	}
	// holds checks a JSON object against the schema named: every field
	// described, of the described JSON type, and every required one there.
	var holds func(what string, v map[string]any, name string)
	holds = func(what string, v map[string]any, name string) {
		t.Helper()
		s := schemas[name]
		if s == nil {
			t.Fatalf("no schema %s", name)
		}
		for _, f := range s.Required {
			if _, ok := v[f]; !ok {
				t.Errorf("%s: required %s.%s missing in %v", what, name, f, v)
			}
		}
		for f, val := range v {
			p := s.Properties[f]
			if p == nil {
				t.Errorf("%s: %s.%s is on the wire but not described", what, name, f)
				continue
			}
			if ref, ok := strings.CutPrefix(p.Ref, "#/components/schemas/"); ok {
				if obj, ok := val.(map[string]any); ok {
					holds(what, obj, ref)
				} else if ref == "KafkaPosition" || ref == "SpoolPosition" {
					t.Errorf("%s: %s.%s is %T", what, name, f, val)
				}
				continue
			}
			var kind string
			switch val.(type) {
			case string:
				kind = "string"
			case float64:
				kind = "integer"
			case bool:
				kind = "boolean"
			case []any:
				kind = "array"
			case map[string]any:
				kind = "object"
			}
			if p.Type != kind {
				t.Errorf("%s: %s.%s is a JSON %s on the wire, described as %v", what, name, f, kind, p.Type)
			}
		}
	}
	answer := func(h *harness, id, want string) {
		t.Helper()
		resp, body := h.postREST(keyAll, restBody(ev{ID: id, Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}))
		var a struct {
			Results []map[string]any `json:"results"`
		}
		if err := json.Unmarshal(body, &a); err != nil || resp.StatusCode != http.StatusOK || len(a.Results) != 1 || a.Results[0][want] == nil {
			t.Fatalf("%d %s, want a result with %s", resp.StatusCode, body, want)
		}
		holds(string(body), a.Results[0], "EventResult")
	}
	answer(kafka, "described-1", "kafka")
	answer(kafka, "described-1", "kafka") // DUPLICATE
	spooled := newHarness(t, harnessOpts{
		spool:     spoolAt(t.TempDir(), 1<<20),
		admission: func(c *admission.Config) { c.SpoolFirst = true },
	})
	answer(spooled, "described-2", "spool")
}
