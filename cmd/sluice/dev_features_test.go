package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/examples"
)

// devConfig fetches the config a running dev serves at GET /dev/config
// and writes it to a file, as docs/dev.md does with curl.
func devConfig(t *testing.T, adminAddr string) string {
	t.Helper()
	code, text := adminGet(t, adminAddr, "/dev/config")
	if code != http.StatusOK {
		t.Fatalf("GET /dev/config: %d %s", code, text)
	}
	return writeConfig(t, text)
}

// sluiceOut runs a sluice command in this process and returns its
// stdout, stderr and exit status.
func sluiceOut(args ...string) (string, string, int) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, &stdout, &stderr)
	return stdout.String(), stderr.String(), exitCode(err, &stderr)
}

// The dev sink refuses an event whose id has the --refuse-ids prefix, so
// it lands in its DLQ topic, where `sluice dlq list` and `show` find it
// through the config dev serves; `sluice dlq replay` produces it again
// and this time the sink takes it, as the banner's commands say.
func TestDevDLQAndReplay(t *testing.T) {
	addr, out := startDev(t, "-tail=true", "-demo-partner=false")
	adminAddr := waitFor(t, out, regexp.MustCompile(`Metrics: http://(\S+)/metrics`))[1]
	cfg := devConfig(t, adminAddr)
	dlqTopic := "ingest.examples.logs.v1.LogLine.dlq"
	waitFor(t, out, regexp.MustCompile(`sluice dlq replay --config \S+ --topic `+regexp.QuoteMeta(dlqTopic)+` --actor you\n`))

	if got := postLogLine(t, addr, "reject-1"); !strings.Contains(string(got), `"outcome":"ACCEPTED"`) {
		t.Fatalf("answer %s: want reject-1 ACCEPTED", got)
	}
	var list, errs string
	listed := func() bool {
		list, errs, _ = sluiceOut("dlq", "list", "--config", cfg, "--topic", dlqTopic)
		return strings.Contains(list, "reject-1")
	}
	if !waitUntil(20*time.Second, listed) {
		t.Fatalf("sluice dlq list never showed reject-1:\n%s%s", list, errs)
	}
	m := regexp.MustCompile(`(?m)^(\d+)\s+(\d+)\s+reject-1\s+examples\.logs\.v1\.LogLine\s+demo\s+permanent\s+false\s.*dev sink: refuses ids`).FindStringSubmatch(list)
	if m == nil {
		t.Fatalf("sluice dlq list: want reject-1 dead-lettered as permanent by the dev sink:\n%s", list)
	}
	if strings.Contains(out.String(), "id=reject-1 type=") {
		t.Fatalf("the sink wrote reject-1, which it must refuse:\n%s", out.String())
	}
	show, errs, code := sluiceOut("dlq", "show", "--config", cfg, "--topic", dlqTopic, "--partition", m[1], "--offset", m[2])
	if code != 0 || !strings.Contains(show, `"message":"hello"`) || !strings.Contains(show, "class      permanent") {
		t.Fatalf("sluice dlq show: exit %d\n%s%s", code, show, errs)
	}
	_, errs, code = sluiceOut("dlq", "replay", "--config", cfg, "--topic", dlqTopic, "--actor", "you")
	if code != 0 || !strings.Contains(errs, "replayed 1, refused 0") {
		t.Fatalf("sluice dlq replay: exit %d\n%s", code, errs)
	}
	waitFor(t, out, regexp.MustCompile(`sink: sqlite \S+ id=reject-1 type=examples\.logs\.v1\.LogLine source=demo`))
	trace, errs, code := sluiceOut("trace", "--config", cfg, "--source", "demo", "--id", "reject-1")
	if code != 0 || !strings.HasPrefix(trace, "IN_SINK  demo/reject-1") || !strings.Contains(trace, "by you") {
		t.Errorf("sluice trace after the replay: exit %d\n%s%s", code, trace, errs)
	}
}

// With default flags dev serves the example contracts from a file, so
// the admin contracts endpoints are there: GET lists them, POST reload
// takes the token of the file dev's config names, and refuses a call
// without it.
func TestDevReloadsContracts(t *testing.T) {
	_, out := startDev(t, "-tail=false", "-demo-partner=false")
	adminAddr := waitFor(t, out, regexp.MustCompile(`Metrics: http://(\S+)/metrics`))[1]
	waitFor(t, out, regexp.MustCompile(`Authorization: Bearer \$\(cat \S+\)" http://`+regexp.QuoteMeta(adminAddr)+`/admin/contracts/reload\n`))
	text, err := os.ReadFile(devConfig(t, adminAddr))
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := regexp.MustCompile(`(?m)^    token_file: (\S+)$`).FindSubmatch(text)
	if tokenFile == nil {
		t.Fatalf("dev's config names no admin token file:\n%s", text)
	}
	token, err := os.ReadFile(string(tokenFile[1]))
	if err != nil {
		t.Fatal(err)
	}
	if code, body := adminGet(t, adminAddr, "/admin/contracts"); code != http.StatusOK || !strings.Contains(body, "examples.logs.v1.LogLine") {
		t.Errorf("GET /admin/contracts: %d %s", code, body)
	}
	reload := func(bearer string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+adminAddr+"/admin/contracts/reload", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := reload(strings.TrimSpace(string(token))); code != http.StatusOK || !strings.Contains(body, `"result": "unchanged"`) {
		t.Errorf("POST /admin/contracts/reload with the token: %d %s", code, body)
	}
	if code, body := reload(""); code != http.StatusUnauthorized {
		t.Errorf("POST /admin/contracts/reload without a token: %d %s", code, body)
	}
}

// `sluice dev --config FILE` serves the file's sources, contracts and
// topics: its source's key publishes to its topic, and the demo key is
// not a source any more.
func TestDevServesAConfigFilesSources(t *testing.T) {
	dir := t.TempDir()
	contracts := filepath.Join(dir, "contracts.binpb")
	if err := os.WriteFile(contracts, examples.Contracts, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, `
contracts:
  descriptor_set: `+contracts+`
  types: [examples.logs.v1.LogLine]
topics:
  examples.logs.v1.LogLine: app.logs
sources:
  - name: checkout
    key_hashes: [`+hashKey("checkout-key")+`]
    event_types: ["*"]
`)
	addr, out := startDev(t, "-tail=true", "-config", cfg)
	waitFor(t, out, regexp.MustCompile(`Sources of the config: checkout\n`))
	if strings.Contains(out.String(), DemoAPIKey) {
		t.Errorf("the banner offers the demo key, which --config replaces:\n%s", out.String())
	}
	if got := string(postLogLineAs(t, addr, "checkout-key", "c-1")); !strings.Contains(got, `"outcome":"ACCEPTED"`) || !strings.Contains(got, `"topic":"app.logs"`) {
		t.Errorf("the config's source: %s, want ACCEPTED to app.logs", got)
	}
	if got := string(postLogLine(t, addr, "c-2")); strings.Contains(got, "ACCEPTED") {
		t.Errorf("the demo key: %s, want it refused", got)
	}
	waitFor(t, out, regexp.MustCompile(`sink: sqlite \S+ id=c-1 type=examples\.logs\.v1\.LogLine source=checkout`))
}
