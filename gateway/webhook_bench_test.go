package gateway

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	stripewebhook "github.com/stripe/stripe-go/v82/webhook"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway/webhook"
	"github.com/sluicehq/sluice/internal/eventmap"
)

// BenchmarkWebhookCost prices one event that arrives as a signed webhook
// or a CloudEvent against the same event pushed in sluice's envelope:
// each case is one HTTP request through the gateway's whole REST handler
// (NewServer's: routing, authentication or verification, the body read
// under its bounds, decoding or mapping, the envelope and the contract,
// the records with their headers, and the answer written), in process,
// with Kafka stood in for at the edge as BenchmarkIngest does. The event
// is the example Stripe event (examples.stripe.v1.Event) in every case:
//   - push: POST /v1/events, one event in the envelope, with an API key;
//   - webhook_stripe: POST /v1/webhooks/stripe, the event as Stripe posts
//     it, signed by stripe-go;
//   - webhook_standard: the same body signed by the Standard Webhooks
//     library, the contract type fixed by the source;
//   - webhook_github: the same body with X-Hub-Signature-256 as GitHub
//     documents it (HMAC-SHA256 of the body, hex), the type from
//     X-GitHub-Event through the source's table;
//   - cloudevents_structured and cloudevents_binary: POST /v1/cloudevents
//     with the API key, the event as a structured CloudEvent and in
//     binary mode.
//
// Dedup is off, as in BenchmarkIngest (BenchmarkDedup prices it, the same
// for every case), so the same request is accepted every time and no
// signing is in the loop. Compare the cases of one run: ns/op, B/op and
// allocs/op, or instructions under cachegrind (see the README's figures).
func BenchmarkWebhookCost(b *testing.B) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	registry, err := contract.Load(examples.Contracts, append(slices.Clone(examples.Types), examples.StripeEventType))
	if err != nil {
		b.Fatal(err)
	}
	const (
		stripeSecret   = "whsec_bench_5f1c2a9b7d3e4f60"
		standardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		githubSecret   = "bench-github-secret"
		apiKey         = "bench-key"
		eventID        = "evt_3QmE4oLkdIwHu7ix0kYc8N3e"
	)
	secretFile := func(s string) string {
		p := filepath.Join(b.TempDir(), "secret")
		if err := os.WriteFile(p, []byte(s+"\n"), 0o600); err != nil {
			b.Fatal(err)
		}
		return p
	}
	source := func(name, scheme, secret string, mapping eventmap.Config) SourceConfig {
		w := NewDefaultWebhookConfig()
		w.Scheme = scheme
		w.SecretFiles = []string{secretFile(secret)}
		w.Mapping = mapping
		return SourceConfig{Name: name, EventTypes: []string{examples.StripeEventType}, Webhook: &w}
	}
	cfg := NewDefaultConfig()
	cfg.GRPCAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Dedup.Window = 0
	cfg.Sources = []SourceConfig{
		{Name: "pusher", KeyHashes: []string{HashKey(apiKey)}, EventTypes: []string{"*"}},
		source("stripe", webhook.SchemeStripe, stripeSecret, eventmap.Config{DefaultType: examples.StripeEventType}),
		source("standard", webhook.SchemeStandard, standardSecret, eventmap.Config{Type: eventmap.FixedType(examples.StripeEventType)}),
		source("github", webhook.SchemeGitHub, githubSecret, eventmap.Config{Types: map[string]string{"payment_intent": examples.StripeEventType}}),
	}
	svc, err := New(cfg, served(registry), &positionedKafka{}, WithClock(func() time.Time { return now }),
		WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	srv, err := NewServer(svc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		srv.grpcLis.Close()
		srv.httpLis.Close()
	})
	handler := srv.http.Handler

	// The event: the example Stripe event, created a second before now.
	var m map[string]any
	if err := json.Unmarshal(examples.StripeEventJSON, &m); err != nil {
		b.Fatal(err)
	}
	m["created"] = now.Add(-time.Second).Unix()
	event, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	occurred := now.Add(-time.Second).Format(time.RFC3339)

	stripeSig := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: event, Secret: stripeSecret, Timestamp: now}).Header
	standard, err := standardwebhooks.NewWebhook(standardSecret)
	if err != nil {
		b.Fatal(err)
	}
	standardSig, err := standard.Sign(eventID, now, event)
	if err != nil {
		b.Fatal(err)
	}
	gh := hmac.New(sha256.New, []byte(githubSecret))
	gh.Write(event)
	githubSig := "sha256=" + hex.EncodeToString(gh.Sum(nil))

	envelope := fmt.Appendf(nil, `{"events":[{"id":%q,"type":%q,"occurred_at":%q,"payload":%s}]}`,
		eventID, examples.StripeEventType, occurred, event)
	structured := fmt.Appendf(nil, `{"specversion":"1.0","id":%q,"source":"//payments.example/stripe","type":%q,"time":%q,"datacontenttype":"application/json","data":%s}`,
		eventID, examples.StripeEventType, occurred, event)

	for _, c := range []struct {
		name   string
		path   string
		body   []byte
		header map[string]string
	}{
		{"push", "/v1/events", envelope, map[string]string{"Content-Type": "application/json", "X-Api-Key": apiKey}},
		{"webhook_stripe", "/v1/webhooks/stripe", event, map[string]string{"Content-Type": "application/json", "Stripe-Signature": stripeSig}},
		{"webhook_standard", "/v1/webhooks/standard", event, map[string]string{"Content-Type": "application/json",
			"webhook-id": eventID, "webhook-timestamp": strconv.FormatInt(now.Unix(), 10), "webhook-signature": standardSig}},
		{"webhook_github", "/v1/webhooks/github", event, map[string]string{"Content-Type": "application/json",
			"X-GitHub-Event": "payment_intent", "X-GitHub-Delivery": eventID, "X-Hub-Signature-256": githubSig}},
		{"cloudevents_structured", "/v1/cloudevents", structured, map[string]string{"Content-Type": "application/cloudevents+json", "X-Api-Key": apiKey}},
		{"cloudevents_binary", "/v1/cloudevents", event, map[string]string{"Content-Type": "application/json", "X-Api-Key": apiKey,
			"ce-specversion": "1.0", "ce-id": eventID, "ce-source": "//payments.example/stripe", "ce-type": examples.StripeEventType, "ce-time": occurred}},
	} {
		tmpl, err := http.NewRequest(http.MethodPost, "http://sluice.test"+c.path, nil)
		if err != nil {
			b.Fatal(err)
		}
		for k, v := range c.header {
			tmpl.Header.Set(k, v)
		}
		tmpl.ContentLength = int64(len(c.body))
		body := &replayBody{}
		w := &benchWriter{header: http.Header{}}
		serve := func() {
			r := *tmpl
			body.Reset(c.body)
			r.Body = body
			w.reset()
			handler.ServeHTTP(w, &r)
		}
		// Accepted, as every iteration is: a case that is refused would
		// price a refusal.
		w.keep = true
		serve()
		if w.code != http.StatusOK || !bytes.Contains(w.body.Bytes(), []byte(`"outcome":"ACCEPTED"`)) {
			b.Fatalf("%s: %d %s", c.name, w.code, w.body.Bytes())
		}
		w.keep = false
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				serve()
				if w.code != http.StatusOK {
					b.Fatalf("%s: %d", c.name, w.code)
				}
			}
		})
	}
}

// replayBody is a request body read again for every request, without an
// allocation of its own.
type replayBody struct{ bytes.Reader }

func (*replayBody) Close() error { return nil }

var _ io.ReadCloser = (*replayBody)(nil)

// benchWriter is a ResponseWriter that keeps the status, and the body
// when keep is set.
type benchWriter struct {
	header http.Header
	code   int
	keep   bool
	body   bytes.Buffer
}

func (w *benchWriter) Header() http.Header { return w.header }

func (w *benchWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if w.keep {
		return w.body.Write(p)
	}
	return len(p), nil
}

func (w *benchWriter) reset() {
	clear(w.header)
	w.code = 0
	w.body.Reset()
}
