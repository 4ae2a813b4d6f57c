package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	stripewebhook "github.com/stripe/stripe-go/v82/webhook"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/gateway/webhook"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/eventmap"
	"github.com/sluicehq/sluice/record"
)

// Secrets of the test webhook sources, as each provider spells them.
const (
	stripeSecret   = "whsec_test_5f1c2a9b7d3e4f60"
	standardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
)

// secretFile writes a secret to a file of the test's and returns its path.
func secretFile(t *testing.T, secret string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// webhookSources adds a Stripe source (every Stripe type to
// examples.stripe.v1.Event) and a Standard Webhooks source (each delivery
// an examples.shop.v1.OrderPlaced) to the test config; edit changes
// them.
func webhookSources(t *testing.T, edit func(stripe, standard *gateway.WebhookConfig)) func(*gateway.Config) {
	stripe := gateway.NewDefaultWebhookConfig()
	stripe.Scheme = webhook.SchemeStripe
	stripe.SecretFiles = []string{secretFile(t, stripeSecret)}
	stripe.Mapping.DefaultType = examples.StripeEventType
	standard := gateway.NewDefaultWebhookConfig()
	standard.Scheme = webhook.SchemeStandard
	standard.SecretFiles = []string{secretFile(t, standardSecret)}
	standard.Mapping.Type = eventmap.FixedType(typeOrder)
	standard.Mapping.PartitionKey = eventmap.Pointer("/customer/customer_id")
	if edit != nil {
		edit(&stripe, &standard)
	}
	return func(c *gateway.Config) {
		c.Sources = append(c.Sources,
			gateway.SourceConfig{Name: "stripe", EventTypes: []string{examples.StripeEventType}, Webhook: &stripe},
			gateway.SourceConfig{Name: "shop", EventTypes: []string{typeOrder}, Webhook: &standard})
	}
}

// stripeEvent is the example Stripe event with its id and creation time.
func stripeEvent(t *testing.T, id string, created time.Time) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(examples.StripeEventJSON, &m); err != nil {
		t.Fatal(err)
	}
	m["id"], m["created"] = id, created.Unix()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// deliver POSTs body to the source's webhook endpoint with headers.
func (h *harness) deliver(source string, body []byte, headers map[string]string) (*http.Response, []byte) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+h.srv.HTTPAddr()+"/v1/webhooks/"+source, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
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

// signStripe signs body as Stripe does, with stripe-go.
func signStripe(body []byte, secret string, at time.Time) map[string]string {
	p := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at})
	return map[string]string{"Stripe-Signature": p.Header}
}

// signStandard signs body as a Standard Webhooks sender does, with the
// Standard Webhooks library.
func signStandard(t *testing.T, id string, body []byte, secret string, at time.Time) map[string]string {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := wh.Sign(id, at, body)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"webhook-id": id, "webhook-timestamp": strconv.FormatInt(at.Unix(), 10), "webhook-signature": sig}
}

func headerOf(r *kgo.Record, key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// TestWebhookDeliveries: deliveries signed by the providers' own
// libraries (stripe-go, the Standard Webhooks library) are accepted once,
// answered 200, and published with the body and the signature headers a
// consumer verifies them again from; sent again they are DUPLICATE, 200.
func TestWebhookDeliveries(t *testing.T) {
	h := newHarness(t, harnessOpts{types: []string{examples.StripeEventType}, config: webhookSources(t, nil)})
	now := h.clock.Now()

	stripeBody := stripeEvent(t, "evt_3QmE4oLkdIwHu7ix0kYc8N3e", now.Add(-time.Second))
	stripeHeaders := signStripe(stripeBody, stripeSecret, now)
	resp, body := h.deliver("stripe", stripeBody, stripeHeaders)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stripe: %d %s", resp.StatusCode, body)
	}
	wantOutcomes(t, mustResults(t, body), ingestv1.Outcome_ACCEPTED)
	resp, body = h.deliver("stripe", stripeBody, stripeHeaders)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stripe again: %d %s", resp.StatusCode, body)
	}
	wantOutcomes(t, mustResults(t, body), ingestv1.Outcome_DUPLICATE)

	orderHeaders := signStandard(t, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", examples.OrderPlacedJSON, standardSecret, now)
	resp, body = h.deliver("shop", examples.OrderPlacedJSON, orderHeaders)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("standard: %d %s", resp.StatusCode, body)
	}
	wantOutcomes(t, mustResults(t, body), ingestv1.Outcome_ACCEPTED)

	recs := h.consume(h.topics[examples.StripeEventType], 1)
	if len(recs) != 1 {
		t.Fatalf("%d Stripe records, want 1", len(recs))
	}
	r := recs[0]
	for key, want := range map[string]string{
		record.HeaderEventID:                                 "evt_3QmE4oLkdIwHu7ix0kYc8N3e",
		record.HeaderSource:                                  "stripe",
		record.HeaderWebhookScheme:                           "stripe",
		record.HeaderWebhookBody:                             string(stripeBody),
		record.WebhookHeaderPrefix + "stripe-signature":      stripeHeaders["Stripe-Signature"],
		record.HeaderOccurredAt:                              now.Add(-time.Second).UTC().Format("2006-01-02T15:04:05.000000000Z"),
		record.HeaderEventType:                               examples.StripeEventType,
		record.HeaderCloudEventsSource:                       "",
		record.WebhookHeaderPrefix + "x-hub-signature-256":   "",
		record.WebhookHeaderPrefix + "webhook-signature":     "",
		record.WebhookHeaderPrefix + "webhook-timestamp":     "",
		record.WebhookHeaderPrefix + "x-shopify-hmac-sha256": "",
	} {
		got, ok := headerOf(r, key)
		if want == "" && ok || want != "" && got != want {
			t.Errorf("stripe record header %s = %q (there: %v), want %q", key, got, ok, want)
		}
	}
	// A consumer verifies the delivery again from the record alone.
	sig, _ := headerOf(r, record.WebhookHeaderPrefix+"stripe-signature")
	raw, _ := headerOf(r, record.HeaderWebhookBody)
	if err := stripewebhook.ValidatePayloadIgnoringTolerance([]byte(raw), sig, stripeSecret); err != nil {
		t.Errorf("stripe-go does not verify the record's body and signature: %v", err)
	}

	orders := h.consume(h.topics[typeOrder], 1)
	if len(orders) != 1 {
		t.Fatalf("%d order records, want 1", len(orders))
	}
	o := orders[0]
	if id, _ := headerOf(o, record.HeaderEventID); id != "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W" || string(o.Key) != "cust-1042" {
		t.Errorf("standard record: id %q key %q", id, o.Key)
	}
	hdr := http.Header{}
	for _, name := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
		v, ok := headerOf(o, record.WebhookHeaderPrefix+name)
		if !ok {
			t.Fatalf("standard record lacks %s", name)
		}
		hdr.Set(name, v)
	}
	raw, _ = headerOf(o, record.HeaderWebhookBody)
	wh, _ := standardwebhooks.NewWebhook(standardSecret)
	if err := wh.VerifyIgnoringTimestamp([]byte(raw), hdr); err != nil {
		t.Errorf("the Standard Webhooks library does not verify the record's body and headers: %v", err)
	}
}

// TestWebhookRefusals: what a delivery that must not get in is answered,
// each typed, with nothing published: a signature that does not verify
// (401, counted by reason), a body over the source's limit (413 unread),
// a provider type that maps to no contract (422), a source over its rate
// (503 with Retry-After: senders retry only 5xx), and unknown sources and
// methods.
func TestWebhookRefusals(t *testing.T) {
	h := newHarness(t, harnessOpts{types: []string{examples.StripeEventType}, config: webhookSources(t, func(stripe, _ *gateway.WebhookConfig) {
		stripe.MaxBodyBytes = 8 << 10
		stripe.Mapping.DefaultType = ""
		stripe.Mapping.Types = map[string]string{"payment_intent.succeeded": examples.StripeEventType}
	})})
	now := h.clock.Now()
	body := stripeEvent(t, "evt_refused_1", now)
	other := stripeEvent(t, "evt_refused_2", now)
	unmapped := bytes.Replace(stripeEvent(t, "evt_refused_3", now), []byte("payment_intent.succeeded"), []byte("charge.refunded"), 1)
	for _, c := range []struct {
		name    string
		source  string
		body    []byte
		headers map[string]string
		code    int
		reason  ingestv1.Reason
		refused string // sluice_webhook_refused_total reason
	}{
		{"no signature", "stripe", body, nil, 401, ingestv1.Reason_UNAUTHENTICATED, "missing_header"},
		{"another secret", "stripe", body, signStripe(body, "whsec_other", now), 401, ingestv1.Reason_UNAUTHENTICATED, "bad_signature"},
		{"another body's signature", "stripe", body, signStripe(other, stripeSecret, now), 401, ingestv1.Reason_UNAUTHENTICATED, "bad_signature"},
		{"stale", "stripe", body, signStripe(body, stripeSecret, now.Add(-6*time.Minute)), 401, ingestv1.Reason_UNAUTHENTICATED, "stale_timestamp"},
		{"future", "stripe", body, signStripe(body, stripeSecret, now.Add(6*time.Minute)), 401, ingestv1.Reason_UNAUTHENTICATED, "future_timestamp"},
		{"over the body limit", "stripe", bytes.Repeat([]byte(" "), 9<<10), nil, 413, ingestv1.Reason_BATCH_TOO_LARGE, ""},
		{"unmapped type", "stripe", unmapped, signStripe(unmapped, stripeSecret, now), 422, ingestv1.Reason_UNKNOWN_EVENT_TYPE, ""},
		{"no such source", "nobody", body, nil, 404, ingestv1.Reason_MALFORMED, ""},
		{"a source without a webhook", "all", body, nil, 404, ingestv1.Reason_MALFORMED, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, out := h.deliver(c.source, c.body, c.headers)
			if resp.StatusCode != c.code || !strings.Contains(string(out), c.reason.String()) {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, out, c.code, c.reason)
			}
			if c.refused != "" {
				if n := counterValue(t, h.reg, "sluice_webhook_refused_total", map[string]string{"source": "stripe", "reason": c.refused}); n < 1 {
					t.Errorf("sluice_webhook_refused_total{reason=%q} = %v", c.refused, n)
				}
			}
		})
	}
	if recs := h.consume(h.topics[examples.StripeEventType], 0); len(recs) != 0 {
		t.Errorf("%d records published, want none", len(recs))
	}
}

// TestWebhookRateLimitedIs503: a webhook source over its rate is answered
// 503 with Retry-After, not 429, which senders do not retry.
func TestWebhookRateLimitedIs503(t *testing.T) {
	h := newHarness(t, harnessOpts{types: []string{examples.StripeEventType}, config: func(c *gateway.Config) {
		webhookSources(t, nil)(c)
		for i := range c.Sources {
			if c.Sources[i].Name == "stripe" {
				c.Sources[i].Rate, c.Sources[i].Burst = 0.001, c.Limits.MaxEventsPerRequest
			}
		}
	}})
	now := h.clock.Now()
	var last *http.Response
	var out []byte
	for i := range 11 {
		body := stripeEvent(t, fmt.Sprintf("evt_rate_%d", i), now)
		last, out = h.deliver("stripe", body, signStripe(body, stripeSecret, now))
	}
	if last.StatusCode != http.StatusServiceUnavailable || last.Header.Get("Retry-After") == "" || !strings.Contains(string(out), "RATE_LIMITED") {
		t.Fatalf("over the rate: %d Retry-After %q %s, want 503 with Retry-After and RATE_LIMITED", last.StatusCode, last.Header.Get("Retry-After"), out)
	}
}

// TestWebhookPreauthPool: bodies awaiting verification are charged to
// their source's pool: while one slow sender holds the shop source's
// pool, the shop's next delivery is refused 503 unread and counted, and
// the Stripe source, whose pool is its own, is unaffected.
func TestWebhookPreauthPool(t *testing.T) {
	h := newHarness(t, harnessOpts{types: []string{examples.StripeEventType}, config: webhookSources(t, func(_, standard *gateway.WebhookConfig) {
		standard.MaxBodyBytes = 64 << 10
		standard.PreauthMemoryBytes = 64<<10 + 4<<10 // one body at a time
		standard.ReadTimeout = 10 * time.Second
	})})
	// A sender that announces a full body and sends none of it.
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest(http.MethodPost, "http://"+h.srv.HTTPAddr()+"/v1/webhooks/shop", pr)
	req.ContentLength = 64 << 10
	var wg sync.WaitGroup
	wg.Go(func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	// Waiting on the pool's gauge, not on probes: a probe holds a share
	// of the pool while it is answered, and the slow body must find it
	// whole.
	eventually(t, "the slow body holds the shop's pool", func() bool {
		return sourceGauge(t, h, "sluice_webhook_preauth_bytes", "shop") == 64<<10+4<<10
	})
	resp, out := h.deliver("shop", examples.OrderPlacedJSON, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(out), "preauth_memory_bytes") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a delivery beside a full pool: %d %s, want 503 with Retry-After naming preauth_memory_bytes", resp.StatusCode, out)
	}
	if n := counterValue(t, h.reg, "sluice_webhook_preauth_refused_total", map[string]string{"source": "shop"}); n < 1 {
		t.Errorf("sluice_webhook_preauth_refused_total{source=shop} = %v", n)
	}
	now := h.clock.Now()
	body := stripeEvent(t, "evt_beside_a_slow_sender", now)
	if resp, out := h.deliver("stripe", body, signStripe(body, stripeSecret, now)); resp.StatusCode != http.StatusOK {
		t.Errorf("another source beside a full pool: %d %s", resp.StatusCode, out)
	}
	pw.CloseWithError(io.ErrUnexpectedEOF)
	wg.Wait()
}

// TestWebhookUnknownFields: a provider that adds a field without notice
// is refused MALFORMED unless the source allows unknown fields for the
// type; allowed, the event is accepted, its message holds the contract's
// fields and the body as received travels beside it.
func TestWebhookUnknownFields(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allowed_%v", allow), func(t *testing.T) {
			h := newHarness(t, harnessOpts{types: []string{examples.StripeEventType}, config: webhookSources(t, func(stripe, _ *gateway.WebhookConfig) {
				if allow {
					stripe.AllowUnknownFields = []string{examples.StripeEventType}
				}
			})})
			now := h.clock.Now()
			body := bytes.Replace(stripeEvent(t, "evt_with_a_new_field", now), []byte(`"object":"event"`),
				[]byte(`"object":"event","context":{"a":[1,2,{"b":null}]}`), 1)
			resp, out := h.deliver("stripe", body, signStripe(body, stripeSecret, now))
			if !allow {
				if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(out), "MALFORMED") || !strings.Contains(string(out), "context") {
					t.Fatalf("an unknown field, not allowed: %d %s, want 400 MALFORMED naming it", resp.StatusCode, out)
				}
				return
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("an unknown field, allowed: %d %s", resp.StatusCode, out)
			}
			recs := h.consume(h.topics[examples.StripeEventType], 1)
			if raw, _ := headerOf(recs[0], record.HeaderWebhookBody); raw != string(body) {
				t.Errorf("the body as received is not beside the message")
			}
			if bytes.Contains(recs[0].Value, []byte("context")) {
				t.Errorf("the message holds the unknown field")
			}
		})
	}
}

// TestWebhookSignedCloudEvents: a sender that signs its CloudEvents
// (Standard Webhooks over a structured CloudEvent, and over a batch)
// posts them to a webhook source of format cloudevents: verified, then
// decoded and judged per event; the body is kept for the one event it
// holds, and not for a batch's.
func TestWebhookSignedCloudEvents(t *testing.T) {
	h := newHarness(t, harnessOpts{types: []string{examples.StripeEventType}, config: webhookSources(t, func(_, standard *gateway.WebhookConfig) {
		standard.Format = gateway.WebhookFormatCloudEvents
	})})
	now := h.clock.Now()
	one := []byte(`{"specversion":"1.0","id":"signed-ce-1","source":"//shop.example","type":"` + typeOrder +
		`","time":"` + now.Format(time.RFC3339) + `","data":` + string(examples.OrderPlacedJSON) + `}`)
	req := func(body []byte, ct, id string) (*http.Response, []byte) {
		hd := signStandard(t, id, body, standardSecret, now)
		hd["Content-Type"] = ct
		return h.deliver("shop", body, hd)
	}
	resp, out := req(one, "application/cloudevents+json", "msg_signed_ce_1")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a signed CloudEvent: %d %s", resp.StatusCode, out)
	}
	batch := []byte(`[` + strings.Replace(string(one), "signed-ce-1", "signed-ce-2", 1) + `,` + strings.Replace(string(one), "signed-ce-1", "signed-ce-3", 1) + `]`)
	resp, out = req(batch, "application/cloudevents-batch+json", "msg_signed_ce_2")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a signed batch: %d %s", resp.StatusCode, out)
	}
	wantOutcomes(t, mustResults(t, out), ingestv1.Outcome_ACCEPTED, ingestv1.Outcome_ACCEPTED)
	if resp, out = h.deliver("shop", one, map[string]string{"Content-Type": "application/cloudevents+json"}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an unsigned CloudEvent: %d %s, want 401", resp.StatusCode, out)
	}
	for _, r := range h.consume(h.topics[typeOrder], 3) {
		id, _ := headerOf(r, record.HeaderEventID)
		_, kept := headerOf(r, record.HeaderWebhookBody)
		src, _ := headerOf(r, record.HeaderCloudEventsSource)
		if kept != (id == "signed-ce-1") || src != "//shop.example" {
			t.Errorf("%s: body kept %v, ce source %q", id, kept, src)
		}
		if sig, ok := headerOf(r, record.WebhookHeaderPrefix+"webhook-signature"); !ok || sig == "" {
			t.Errorf("%s: no signature header", id)
		}
	}
}

// sourceGauge is a gauge's value for a source, or -1.
func sourceGauge(t *testing.T, h *harness, name, source string) float64 {
	t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() == source {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}
