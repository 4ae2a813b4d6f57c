package webhook_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gateway/webhook"
)

// Payloads the providers' signers sign in the opt-in tests: GitHub's
// documented example, an event as a provider sends one, and text beyond
// ASCII (the signers take text and sign its UTF-8).
var signerPayloads = []string{
	"Hello, World!",
	`{"action":"opened","number":1,"pull_request":{"id":1,"title":"Add sluice"},"repository":{"full_name":"sluicehq/sluice"}}`,
	`{"id":"evt_1","type":"customer.updated","data":{"object":{"name":"Zoë Ünal — 東京"}}}`,
}

// TestOctokitSigns: what npm's @octokit/webhooks-methods signs verifies,
// and with a byte changed or another secret does not. Opt in with
// SLUICE_OCTOKIT_NODE_MODULES, a node_modules directory that holds the
// package (npm install --prefix DIR @octokit/webhooks-methods), and node
// on the PATH.
func TestOctokitSigns(t *testing.T) {
	modules := os.Getenv("SLUICE_OCTOKIT_NODE_MODULES")
	if modules == "" {
		t.Skip("SLUICE_OCTOKIT_NODE_MODULES is not set")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("SLUICE_OCTOKIT_NODE_MODULES is set and node is not on the PATH")
	}
	// An ES module finds its packages in node_modules beside it, so the
	// script runs from a directory of its own that links them.
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", "octokit_sign.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "octokit_sign.mjs"), script, 0o600); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(modules)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	sign := func(secret, payload string) string {
		t.Helper()
		cmd := exec.Command(node, filepath.Join(dir, "octokit_sign.mjs"))
		cmd.Stdin = strings.NewReader(payload)
		cmd.Env = append(os.Environ(), "SLUICE_TEST_SECRET="+secret)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("octokit's sign: %v\n%s", err, stderr.String())
		}
		return string(out)
	}
	v := verifier(t, webhook.SchemeGitHub, githubSecret)
	other := verifier(t, webhook.SchemeGitHub, "another GitHub secret")
	for _, p := range signerPayloads {
		sig := sign(githubSecret, p)
		if p == "Hello, World!" && sig != "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17" {
			t.Fatalf("octokit signs GitHub's example as %q, not as GitHub's docs do", sig)
		}
		h := http.Header{}
		h.Set("X-Hub-Signature-256", sig)
		if _, err := v.Verify(webhook.Request{Header: h, Body: []byte(p)}); err != nil {
			t.Fatalf("%q signed by octokit: %v", p, err)
		}
		changed := []byte(p)
		changed[0] ^= 0x20
		if _, err := v.Verify(webhook.Request{Header: h, Body: changed}); refusalOf(t, err).Reason != webhook.ReasonBadSignature {
			t.Fatalf("a byte changed: %v", err)
		}
		if _, err := other.Verify(webhook.Request{Header: h, Body: []byte(p)}); refusalOf(t, err).Reason != webhook.ReasonBadSignature {
			t.Fatalf("another secret: %v", err)
		}
	}
}

// TestPythonSigners: what PyPI's standardwebhooks and stripe sign
// verifies, for each of two secrets (rotation), and not once the body or
// the time of signing changes. Opt in with SLUICE_WEBHOOK_PYTHON, a
// python with both installed (a venv's bin/python).
func TestPythonSigners(t *testing.T) {
	python := os.Getenv("SLUICE_WEBHOOK_PYTHON")
	if python == "" {
		t.Skip("SLUICE_WEBHOOK_PYTHON is not set")
	}
	type signed struct {
		Standard []string `json:"standard"`
		Stripe   []string `json:"stripe"`
	}
	standard := verifier(t, webhook.SchemeStandard, standardNext, standardSecret)
	stripe := verifier(t, webhook.SchemeStripe, stripeNext, stripeSecret)
	for _, p := range signerPayloads {
		req, err := json.Marshal(map[string]any{"payload": p, "id": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", "timestamp": testNow.Unix(),
			"standard_secrets": []string{standardSecret, standardNext}, "stripe_secrets": []string{stripeSecret, stripeNext}})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(python, filepath.Join("testdata", "webhook_sign.py"))
		cmd.Stdin = bytes.NewReader(req)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("webhook_sign.py: %v\n%s", err, stderr.String())
		}
		var s signed
		if err := json.Unmarshal(out, &s); err != nil || len(s.Standard) != 2 || len(s.Stripe) != 2 {
			t.Fatalf("webhook_sign.py printed %s: %v", out, err)
		}
		for i, want := range []string{"secret_files[1]", "secret_files[0]"} {
			h := http.Header{}
			h.Set("webhook-id", "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W")
			h.Set("webhook-timestamp", strconv.FormatInt(testNow.Unix(), 10))
			h.Set("webhook-signature", s.Standard[i])
			check(t, "standardwebhooks", standard, h, p, want)
			later := h.Clone()
			later.Set("webhook-timestamp", strconv.FormatInt(testNow.Add(time.Second).Unix(), 10))
			if _, err := standard.Verify(webhook.Request{Header: later, Body: []byte(p)}); refusalOf(t, err).Reason != webhook.ReasonBadSignature {
				t.Fatalf("standardwebhooks, another timestamp: %v", err)
			}

			h = http.Header{}
			h.Set("Stripe-Signature", s.Stripe[i])
			check(t, "stripe", stripe, h, p, want)
		}
	}
}

// check verifies a delivery a provider's library signed, by the secret
// want names, and refuses it with a byte of the body changed.
func check(t *testing.T, signer string, v *webhook.Verifier, h http.Header, body, want string) {
	t.Helper()
	d, err := v.Verify(webhook.Request{Header: h, Body: []byte(body)})
	if err != nil {
		t.Fatalf("%s signed %q: %v", signer, body, err)
	}
	if d.Secret != want || !d.Timestamp.Equal(testNow) {
		t.Fatalf("%s signed %q: %+v, want %s at %v", signer, body, d, want, testNow)
	}
	changed := []byte(body)
	changed[len(changed)-1] ^= 1
	if _, err := v.Verify(webhook.Request{Header: h, Body: changed}); refusalOf(t, err).Reason != webhook.ReasonBadSignature {
		t.Fatalf("%s, a byte changed: %v", signer, err)
	}
}
