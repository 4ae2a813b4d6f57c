package faultsuite

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/twmb/franz-go/pkg/kgo"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/record"
)

// TestHookAnswer: the webhook sender reads the gateway's answers as a
// provider does (retry on a 5xx, nothing else) and the checker holds each
// to the webhook contract: the status and the typed body agree.
func TestHookAnswer(t *testing.T) {
	const id = "run-steady-msg_w0-7"
	result := func(outcome string, rejection string) string {
		return `{"results":[{"index":0,"id":"` + id + `","outcome":"` + outcome + `"` + rejection + `}]}`
	}
	accepted := `,"durability":"KAFKA","kafka":{"topic":"t","partition":1,"offset":9}`
	for _, tc := range []struct {
		name       string
		code       int
		retryAfter string
		body       string
		outcome    ingestv1.Outcome
		retry      bool
		wait       time.Duration
		wrong      string // a part of what breaks the contract; "" when nothing does
	}{
		{name: "accepted", code: 200, body: result("ACCEPTED", accepted), outcome: ingestv1.Outcome_ACCEPTED},
		{name: "duplicate", code: 200, body: result("DUPLICATE", accepted), outcome: ingestv1.Outcome_DUPLICATE},
		{name: "bad signature", code: 401, body: `{"reason":"UNAUTHENTICATED","retryable":false,"message":"the delivery does not verify"}`,
			outcome: ingestv1.Outcome_REJECTED},
		{name: "contract", code: 422, body: result("REJECTED", `,"rejection":{"reason":"SCHEMA_VIOLATION","retryable":false}`),
			outcome: ingestv1.Outcome_REJECTED},
		{name: "spool full", code: 503, retryAfter: "2", body: result("REJECTED", `,"rejection":{"reason":"BUFFER_FULL","retryable":true,"retry_after":"2s"}`),
			outcome: ingestv1.Outcome_REJECTED, retry: true, wait: 2 * time.Second},
		{name: "pool full", code: 503, retryAfter: "1", body: `{"reason":"UNAVAILABLE","retryable":true,"retry_after":"1s"}`,
			outcome: ingestv1.Outcome_REJECTED, retry: true, wait: time.Second},
		{name: "2xx rejected", code: 200, body: result("REJECTED", `,"rejection":{"reason":"SCHEMA_VIOLATION"}`), wrong: "does not acknowledge"},
		{name: "acknowledged with a 5xx", code: 503, body: result("ACCEPTED", accepted), wrong: "not 2xx"},
		{name: "5xx not to be retried", code: 503, body: `{"reason":"MALFORMED","retryable":false}`, wrong: "retryable false"},
		{name: "429, which senders do not retry", code: 429, body: `{"reason":"RATE_LIMITED","retryable":true,"retry_after":"1s"}`, wrong: "retryable true"},
		{name: "another delivery's result", code: 200, body: strings.Replace(result("ACCEPTED", accepted), id, "other", 1), wrong: "for id"},
		{name: "a proxy's page", code: 502, body: "<html>bad gateway</html>", wrong: "not the typed answer"},
		{name: "an empty 2xx", code: 200, body: "", wrong: "no body"},
		{name: "a refusal without a reason", code: 400, body: `{"retryable":false}`, wrong: "without a reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, retry, wrong := hookAnswer(id, tc.code, tc.retryAfter, []byte(tc.body))
			if tc.wrong != "" {
				if !strings.Contains(wrong, tc.wrong) {
					t.Fatalf("wrong = %q, want it to say %q", wrong, tc.wrong)
				}
				return
			}
			if wrong != "" || r.Outcome != tc.outcome || retry != tc.retry || r.RetryAfter != tc.wait {
				t.Fatalf("outcome %v retry %v wait %v wrong %q; want %v %v %v", r.Outcome, retry, r.RetryAfter, wrong, tc.outcome, tc.retry, tc.wait)
			}
		})
	}
}

// TestVerifyHookRecord: a webhook event's record verifies again, with the
// Standard Webhooks library, from its headers alone, and a record whose
// body, signed headers or id were changed does not.
func TestVerifyHookRecord(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	const id = "run-gateway-sigkill-msg_w1-42"
	body := hookBody(id, 42, false)
	at := time.Now()
	sig, err := wh.Sign(id, at, body)
	if err != nil {
		t.Fatal(err)
	}
	// A record as the gateway writes one (record.HeaderWebhookBody and the
	// signed headers after the event's own).
	build := func() *kgo.Record {
		return &kgo.Record{Headers: []kgo.RecordHeader{
			{Key: record.HeaderEventID, Value: []byte(id)},
			{Key: record.HeaderSource, Value: []byte(hookSource)},
			{Key: record.HeaderWebhookScheme, Value: []byte("standard")},
			{Key: record.HeaderWebhookBody, Value: body},
			{Key: record.WebhookHeaderPrefix + "webhook-id", Value: []byte(id)},
			{Key: record.WebhookHeaderPrefix + "webhook-timestamp", Value: []byte(strconv.FormatInt(at.Unix(), 10))},
			{Key: record.WebhookHeaderPrefix + "webhook-signature", Value: []byte(sig)},
		}}
	}
	set := func(key string, value []byte) func(*kgo.Record) {
		return func(r *kgo.Record) {
			for i := range r.Headers {
				if r.Headers[i].Key == key {
					r.Headers[i].Value = value
				}
			}
		}
	}
	drop := func(key string) func(*kgo.Record) {
		return func(r *kgo.Record) {
			r.Headers = slices.DeleteFunc(r.Headers, func(h kgo.RecordHeader) bool { return h.Key == key })
		}
	}
	other := hookBody("run-gateway-sigkill-msg_w1-43", 43, false)
	otherSig, err := wh.Sign("run-gateway-sigkill-msg_w1-43", at, other)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(*kgo.Record)
		ok     bool
	}{
		{name: "as written", ok: true},
		{name: "a byte of the body changed", change: set(record.HeaderWebhookBody, append([]byte(" "), body...))},
		{name: "no body", change: drop(record.HeaderWebhookBody)},
		{name: "no signature", change: drop(record.WebhookHeaderPrefix + "webhook-signature")},
		{name: "another timestamp", change: set(record.WebhookHeaderPrefix+"webhook-timestamp", []byte(strconv.FormatInt(at.Unix()+1, 10)))},
		{name: "another delivery under this id", change: func(r *kgo.Record) {
			set(record.HeaderWebhookBody, other)(r)
			set(record.WebhookHeaderPrefix+"webhook-id", []byte("run-gateway-sigkill-msg_w1-43"))(r)
			set(record.WebhookHeaderPrefix+"webhook-signature", []byte(otherSig))(r)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := build()
			if tc.change != nil {
				tc.change(rec)
			}
			key, err := verifyHookRecord(wh, rec)
			if key != identity(hookSource, id) || (err == nil) != tc.ok {
				t.Fatalf("key %q, err %v; want %q, verified %v", key, err, identity(hookSource, id), tc.ok)
			}
		})
	}
}
