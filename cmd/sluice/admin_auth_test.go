package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/record"
)

// adminDo sends method path to the admin listener at addr, with an
// Authorization header when authz is set: its status, headers and body.
func adminDo(t *testing.T, method, addr, path, authz string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

// TestAdminReloadNeedsACredential: POST /admin/contracts/reload on the
// gateway's and the consumer's admin listener is refused without a
// credential: 403 saying how to configure one while admin.auth sets none,
// 401 with WWW-Authenticate: Bearer without the token or with a wrong
// one; with the token it reloads. /healthz, /readyz, /metrics and GET
// /admin/contracts answer without anything all along.
func TestAdminReloadNeedsACredential(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, append(record.Cluster(record.TopicsOf(nil, examples.Types)),
		"t", record.DLQTopic("t"), record.ParkedTopic("t"), record.AuditTopic)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := strings.Join(cluster.ListenAddrs(), ",")
	contracts := filepath.Join(t.TempDir(), "contracts.binpb")
	if err := os.WriteFile(contracts, examples.Contracts, 0o600); err != nil {
		t.Fatal(err)
	}
	token := "an-admin-token-of-the-test-0123456789"
	tokenFile := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	configs := map[string]func(adminBlock string) string{
		"gateway": func(adminBlock string) string {
			return strings.Replace(gatewayConfig(t, brokers, freePort(t), adminBlock),
				"descriptor_set: "+mustAbs(t, "../../examples/contracts.binpb"), "descriptor_set: "+contracts, 1)
		},
		"consumer": func(adminBlock string) string {
			return fmt.Sprintf(`consumer: {group: g, topics: [t]}
sink: {kind: sqlite, sqlite: {path: %s}}
contracts: {descriptor_set: %s, types: [examples.logs.v1.LogLine]}
kafka: {brokers: [%s]}
log: {level: warn}
admin:
%s
`, filepath.Join(t.TempDir(), "events.db"), contracts, brokers, adminBlock)
		},
	}
	for _, role := range []string{"gateway", "consumer"} {
		t.Run(role, func(t *testing.T) {
			open := func(addr string) {
				t.Helper()
				for _, path := range []string{"/healthz", "/readyz", "/metrics", "/admin/contracts"} {
					if code, _, body := adminDo(t, http.MethodGet, addr, path, ""); code != http.StatusOK {
						t.Errorf("GET %s without a credential: %d %s", path, code, body)
					}
				}
			}
			ready := func(p *inProcess, addr string) {
				t.Helper()
				p.WaitUntil(t, 20*time.Second, role+"'s /readyz to answer 200", func() bool {
					code, _ := adminGet(t, addr, "/readyz")
					return code == http.StatusOK
				})
			}

			// No credential configured: the endpoint is closed, and says how
			// to open it.
			addr := freePort(t)
			p := startInProcess(t, role, "--config", writeConfig(t, configs[role]("  addr: "+addr)))
			ready(p, addr)
			code, _, body := adminDo(t, http.MethodPost, addr, "/admin/contracts/reload", "")
			var refusal struct {
				Error struct {
					Reason, Message string
				} `json:"error"`
			}
			if code != http.StatusForbidden || json.Unmarshal([]byte(body), &refusal) != nil || !strings.Contains(refusal.Error.Message, "admin.auth") {
				t.Fatalf("POST /admin/contracts/reload without a credential, none configured: %d %s, want 403 naming admin.auth", code, body)
			}
			open(addr)
			p.Stop(t)

			// A token file: 401 without it or with another, 200 with it.
			addr = freePort(t)
			p = startInProcess(t, role, "--config", writeConfig(t, configs[role](fmt.Sprintf("  addr: %s\n  auth: {token_file: %s}", addr, tokenFile))))
			ready(p, addr)
			for _, authz := range []string{"", "Bearer not-" + token, "Basic " + token, token} {
				code, h, body := adminDo(t, http.MethodPost, addr, "/admin/contracts/reload", authz)
				if code != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("POST with Authorization %q: %d %q %s, want 401 with WWW-Authenticate: Bearer", authz, code, h.Get("WWW-Authenticate"), body)
				}
				if strings.Contains(body, token) {
					t.Errorf("the answer holds the token: %s", body)
				}
			}
			code, _, body = adminDo(t, http.MethodPost, addr, "/admin/contracts/reload", "Bearer "+token)
			if code != http.StatusOK || !strings.Contains(body, `"result": "unchanged"`) {
				t.Errorf("POST with the token: %d %s, want 200 unchanged", code, body)
			}
			if code, _, _ := adminDo(t, http.MethodGet, addr, "/admin/contracts/reload", "Bearer "+token); code != http.StatusMethodNotAllowed {
				t.Errorf("GET /admin/contracts/reload with the token: %d, want 405", code)
			}
			open(addr)
		})
	}
}

func mustAbs(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDevAdminToken: `sluice dev` makes a random admin token in a file only
// its user reads, names the file in its banner, and its reload endpoint
// takes that token and no call without it; --admin-token-file gives one.
func TestDevAdminToken(t *testing.T) {
	_, _, _, admin, token, _ := devOnExamples(t)
	addr := strings.TrimPrefix(admin, "http://")
	if code, _, body := adminDo(t, http.MethodPost, addr, "/admin/contracts/reload", ""); code != http.StatusUnauthorized {
		t.Errorf("POST without the token: %d %s", code, body)
	}
	if code, _, body := adminDo(t, http.MethodPost, addr, "/admin/contracts/reload", "Bearer "+token); code != http.StatusOK {
		t.Errorf("POST with the token: %d %s", code, body)
	}

	given := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(given, []byte("a-token-the-developer-chose-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	contracts := filepath.Join(dir, "contracts.binpb")
	if err := os.WriteFile(contracts, examples.Contracts, 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ := devInTest(t, "-tail=false", "-demo-partner=false", "-contracts", contracts, "-admin-token-file", given)
	addr = waitFor(t, out, regexp.MustCompile(`Metrics: http://(\S+)/metrics`))[1]
	if named := waitFor(t, out, regexp.MustCompile(`Admin token \(.*\): (\S+)`))[1]; named != given {
		t.Errorf("the banner names %s, want %s", named, given)
	}
	if code, _, body := adminDo(t, http.MethodPost, addr, "/admin/contracts/reload", "Bearer a-token-the-developer-chose-0123456789"); code != http.StatusOK {
		t.Errorf("POST with the given token: %d %s", code, body)
	}
}
