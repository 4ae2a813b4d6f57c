package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/jsonschematest"
)

// TestSchemathesis runs schemathesis with every check against the
// description a running `sluice dev` serves at /openapi.json, bounded in
// examples and time. It is opt-in: SLUICE_SCHEMATHESIS names the `st`
// command (.ci/run installs it from PyPI into a virtualenv).
//
// What it holds the gateway to: no 5xx, every status documented, every
// body and header as described, whatever the request, the ones the
// description admits and the ones it refuses alike.
// testdata/schemathesis_hooks.py puts occurred_at inside the skew window
// the description states (x-sluice-event-time-window).
//
// Two checks' verdicts are left out, as the description's promise has no
// place for them. positive_data_acceptance: the description is complete,
// not sound (contract.Schema): every request the gateway accepts is valid
// under it, but where a rule has no exact JSON Schema form it says less,
// so a request it admits may be refused (422, per event), as may one
// whose ids repeat across requests. negative_data_rejection: a batch
// with some bad events is answered 207 with the good ones accepted
// (Nakadi's convention), a success status for a request the description
// refuses. The requests are still generated and sent, and held to every
// other check.
func TestSchemathesis(t *testing.T) {
	st := os.Getenv("SLUICE_SCHEMATHESIS")
	if st == "" {
		t.Skip("SLUICE_SCHEMATHESIS (the st command) not set")
	}
	addr, _ := startDev(t, "-tail=false", "-demo-partner=false")
	spec := getSpec(t, "http://"+addr+"/openapi.json")

	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Window *struct {
						MaxAge    int64 `json:"max_age_seconds"`
						MaxFuture int64 `json:"max_future_seconds"`
					} `json:"x-sluice-event-time-window"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(spec, &doc); err != nil {
		t.Fatal(err)
	}
	window := ""
	for name, s := range doc.Components.Schemas {
		if w := s.Properties["occurred_at"].Window; strings.HasPrefix(name, "Event.") && w != nil {
			window = fmt.Sprintf("%d,%d", w.MaxAge, w.MaxFuture)
		}
	}
	if window == "" {
		t.Fatal("the description states no occurred_at window")
	}

	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	examples := os.Getenv("SLUICE_SCHEMATHESIS_EXAMPLES")
	if examples == "" {
		examples = "300"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, st, "run", "http://"+addr+"/openapi.json", "--url", "http://"+addr,
		"--checks", "all", "--exclude-checks", "negative_data_rejection,positive_data_acceptance", "--max-examples", examples, "--generation-database", "none",
		"--request-timeout", "30", "--continue-on-failure", "--no-color",
		"-H", "X-Api-Key: "+DemoAPIKey)
	cmd.Dir = t.TempDir() // its report directory
	cmd.Env = append(os.Environ(), "SCHEMATHESIS_HOOKS=schemathesis_hooks", "PYTHONPATH="+testdata,
		"SLUICE_EVENT_TIME_WINDOW="+window)
	out, err := cmd.CombinedOutput()
	t.Logf("schemathesis:\n%s", out)
	if err != nil {
		t.Fatalf("schemathesis: %v", err)
	}
	// A run that generated nothing would pass too.
	m := regexp.MustCompile(`(\d+) generated`).FindSubmatch(out)
	if m == nil || string(m[1]) == "0" {
		t.Fatal("schemathesis generated no test cases")
	}
}

// startDev runs `sluice dev` in this process on free ports, with more
// flags, stopped at the end of the test; it returns its REST address and
// what it prints.
func startDev(t *testing.T, flags ...string) (string, *syncBuffer) {
	t.Helper()
	out, _ := devInTest(t, flags...)
	return waitFor(t, out, regexp.MustCompile(`REST http://(\S+)`))[1], out
}

// devInTest runs `sluice dev` on free loopback ports with flags until the
// test ends, then waits for it to stop. It returns its stdout and stderr.
func devInTest(t *testing.T, flags ...string) (out, logs *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, logs = newSyncBuffer(), newSyncBuffer()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"dev", "-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0", "-admin", "127.0.0.1:0"}, flags...), out, logs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("dev: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("dev did not stop")
		}
	})
	return out, logs
}

func getSpec(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("GET %s: Content-Type %q", url, ct)
	}
	return body
}

// TestDevServesOpenAPI: `sluice dev` serves the description and its page
// without a key, and the page names what the description describes.
func TestDevServesOpenAPI(t *testing.T) {
	addr, _ := startDev(t, "-tail=false", "-demo-partner=false")
	spec := getSpec(t, "http://"+addr+"/openapi.json")
	var doc struct {
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(spec, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("description: %v %q", err, doc.OpenAPI)
	}
	resp, err := http.Get("http://" + addr + "/docs")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("/docs: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{"POST /v1/events", "examples.shop.v1.OrderPlaced", "examples.logs.v1.LogLine", "/openapi.json", "207"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("/docs does not mention %q", want)
		}
	}
}

// readmeFirstRequest is the body of the README's first request, its
// first curl to /v1/events, as its shell makes it at now: the -d '...'
// argument with '$(date -u +%FT%TZ)' replaced by the time.
func readmeFirstRequest(t *testing.T, now time.Time) []byte {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^curl .*/v1/events -d '(\{"events":.*\})'$`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README has no curl request to /v1/events")
	}
	return []byte(strings.ReplaceAll(string(m[1]), `'$(date -u +%FT%TZ)'`, now.UTC().Format("2006-01-02T15:04:05Z")))
}

// TestREADMEFirstEventDescribed: the README's first event is accepted by
// `sluice dev` and valid under the description it serves, as a
// validating client generated from it (a real JSON Schema validator)
// reads it.
func TestREADMEFirstEventDescribed(t *testing.T) {
	addr, _ := startDev(t, "-tail=false", "-demo-partner=false")
	spec := getSpec(t, "http://"+addr+"/openapi.json")
	validators := jsonschematest.Compile(t, spec, "/components/schemas/PublishRequest")
	body := readmeFirstRequest(t, time.Now())
	if err := jsonschematest.ValidateAll(validators, body); err != nil {
		t.Errorf("the description refuses the README's first request %s: %v", body, err)
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/events", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", DemoAPIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(answer, []byte(`"outcome":"ACCEPTED"`)) {
		t.Errorf("the README's first request: %d %s", resp.StatusCode, answer)
	}
}

// TestGeneratedClientTakesREADMEEvents generates pydantic models from the
// description a running `sluice dev` serves, with datamodel-code-generator,
// and has them validate the README's first request and a request of each
// example event, as a Python client made from the description would
// before sending. It is opt-in: SLUICE_DATAMODEL_CODEGEN names the
// datamodel-codegen command, whose directory has the python it runs on.
func TestGeneratedClientTakesREADMEEvents(t *testing.T) {
	codegen := os.Getenv("SLUICE_DATAMODEL_CODEGEN")
	if codegen == "" {
		t.Skip("SLUICE_DATAMODEL_CODEGEN (the datamodel-codegen command) not set")
	}
	addr, _ := startDev(t, "-tail=false", "-demo-partner=false")
	dir := t.TempDir()
	spec := filepath.Join(dir, "openapi.json")
	if err := os.WriteFile(spec, getSpec(t, "http://"+addr+"/openapi.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	gen := exec.CommandContext(ctx, codegen, "--input", spec, "--input-file-type", "openapi", "--output", filepath.Join(dir, "sluice_models"),
		"--output-model-type", "pydantic_v2.BaseModel", "--field-constraints")
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("datamodel-codegen: %v\n%s", err, out)
	}
	now := time.Now().UTC().Format("2006-01-02T15:04:05Z")
	requests := []json.RawMessage{readmeFirstRequest(t, time.Now())}
	for i, payload := range [][]byte{examples.LogLineJSON, examples.OrderPlacedJSON, examples.UserProfileUpdatedJSON} {
		requests = append(requests, json.RawMessage(fmt.Sprintf(`{"events":[{"id":"e-%d","type":%q,"occurred_at":%q,"payload":%s}]}`,
			i, examples.Types[[]int{2, 0, 1}[i]], now, payload)))
	}
	bodies, err := json.Marshal(requests)
	if err != nil {
		t.Fatal(err)
	}
	check := exec.CommandContext(ctx, filepath.Join(filepath.Dir(codegen), "python"), "-c", `
import json, sys
from sluice_models import PublishRequest
failed = 0
for body in json.loads(sys.stdin.read()):
    try:
        PublishRequest.model_validate(body)
    except Exception as e:
        failed += 1
        print("refused", json.dumps(body)[:300], str(e)[:2000])
sys.exit(1 if failed else 0)
`)
	check.Dir = dir
	check.Stdin = bytes.NewReader(bodies)
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("the generated client refuses what the gateway accepts: %v\n%s", err, out)
	}
}
