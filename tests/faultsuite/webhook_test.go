package faultsuite

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/tools/loadgen"
)

const (
	// hookSource is the gateway's webhook source: Standard Webhooks
	// deliveries at POST /v1/webhooks/faults-hooks.
	hookSource = "faults-hooks"
	// hookType is the deliveries' own type, which the source's table maps
	// to eventType.
	hookType = "log.line"
	// hookPace is a webhook sender's pause between deliveries.
	hookPace = 20 * time.Millisecond
	// hookForgedEvery: one delivery in hookForgedEvery is signed with
	// another secret, and refused 401 for good.
	hookForgedEvery = 50
	// hookTimeout is how long a sender waits for an answer, as a
	// provider's delivery timeout.
	hookTimeout = 10 * time.Second
	// hookFirstBackoff is a sender's first wait before a retry, doubled
	// after each one up to 5 s. It is over a second, so every retry is
	// signed with a later webhook-timestamp than the attempt before.
	hookFirstBackoff = 1100 * time.Millisecond
)

// hookTally is what the webhook senders of a scenario saw, beside the
// ledger's accounting of each delivery's identity (hookSource, its
// webhook-id).
type hookTally struct {
	deliveries int // distinct deliveries (identities)
	attempts   int
	// retries are attempts after a delivery's first; resigned those signed
	// with a later webhook-timestamp than the attempt before.
	retries, resigned int
	noAnswer          int         // attempts without an HTTP answer: refused, reset, timed out
	byStatus          map[int]int // answers by HTTP status
	// ackedOnRetry counts deliveries acknowledged on a retry, duplicates
	// those answered DUPLICATE.
	ackedOnRetry, duplicates int
	// misjudged counts answers that break the webhook contract: a 2xx
	// that does not acknowledge, a 4xx that asks for a retry, a 5xx that
	// says not to retry, a body that is not the typed answer.
	misjudged      int
	firstMisjudged string
	forged         map[string]bool // identities signed with another secret
	// from are the suite topic's end offsets when the scenario started:
	// its records are after them.
	from map[int32]int64
}

// writeHookSecret makes the webhook source's secret: 32 random bytes,
// written as Standard Webhooks spells a secret, in a file only the owner
// reads.
func (s *system) writeHookSecret() {
	s.t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		s.t.Fatal(err)
	}
	s.hookSecret = "whsec_" + base64.StdEncoding.EncodeToString(key)
	s.hookSecretFile = filepath.Join(s.dir, "faults-hooks.whsec")
	if err := os.WriteFile(s.hookSecretFile, []byte(s.hookSecret+"\n"), 0o600); err != nil {
		s.t.Fatal(err)
	}
}

// hookSender delivers webhooks as a provider does, signing with the
// Standard Webhooks library: each delivery has an id and a body fixed
// when it is made; an attempt is signed at the time it is sent. It
// retries on a 5xx, a timeout or a connection error, with the same id and
// the same body, after Retry-After or its backoff, and takes any other
// answer as final.
type hookSender struct {
	s      *system
	url    string
	client *http.Client
	signer *standardwebhooks.Webhook
	forger *standardwebhooks.Webhook // another secret's: its deliveries do not verify
}

func (s *system) newHookSender() *hookSender {
	s.t.Helper()
	signer, err := standardwebhooks.NewWebhook(s.hookSecret)
	if err != nil {
		s.t.Fatal(err)
	}
	forger, err := standardwebhooks.NewWebhook("whsec_" + base64.StdEncoding.EncodeToString([]byte("not the source's secret, 32 long")))
	if err != nil {
		s.t.Fatal(err)
	}
	return &hookSender{
		s:      s,
		url:    "http://" + s.httpAddr + "/v1/webhooks/" + hookSource,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}},
		signer: signer,
		forger: forger,
	}
}

func (h *hookSender) close() { h.client.CloseIdleConnections() }

// hookWork is one webhook sender of a scenario's load: a delivery, then
// hookPace, until end. Delivery n of sender w has id
// <run>-<scenario>-msg_w<w>-<n> (Standard Webhooks ids are msg_…); one in
// invalidEvery breaks the contract (422) and one in hookForgedEvery is
// signed with another secret (401), the first of each among a sender's
// first three deliveries, so that a sender held back by push-back sends
// both kinds too.
func (s *system) hookWork(name string, w int, end time.Time, l *ledger) {
	h := s.newHookSender()
	defer h.close()
	for n := 0; time.Now().Before(end); n++ {
		id := fmt.Sprintf("%s-%s-msg_w%d-%d", s.run, name, w, n)
		forged := n%hookForgedEvery == 1
		l.mu.Lock()
		l.sent++
		l.hooks.deliveries++
		if forged {
			l.hooks.forged[identity(hookSource, id)] = true
		}
		l.mu.Unlock()
		h.deliver(id, hookBody(id, n, n%invalidEvery == 2), forged, l)
		time.Sleep(hookPace)
	}
}

// hookBody is a delivery in the Standard Webhooks payload shape: its type,
// its time, and a LogLine as data (an invalid one without a severity).
func hookBody(id string, n int, invalid bool) []byte {
	now := time.Now()
	line := &logsv1.LogLine{
		Service:   fmt.Sprintf("svc-%d", n%16),
		Severity:  logsv1.Severity_SEVERITY_INFO,
		Message:   "fault suite webhook " + id,
		Timestamp: timestamppb.New(now),
		Host:      "127.0.0.1",
	}
	if invalid {
		line.Severity = logsv1.Severity_SEVERITY_UNSPECIFIED
	}
	data, _ := protojson.Marshal(line)
	return fmt.Appendf(nil, `{"type":%q,"timestamp":%q,"data":%s}`, hookType, now.UTC().Format(time.RFC3339Nano), data)
}

// deliver sends one delivery until it has an answer that is not "retry",
// or the retries run out (two minutes: longer than any fault lasts), and
// records the answer in the ledger under (hookSource, id).
func (h *hookSender) deliver(id string, body []byte, forged bool, l *ledger) {
	ev := &ingestv1.Event{Id: id}
	signer := h.signer
	if forged {
		signer = h.forger
	}
	giveUp := time.Now().Add(2 * time.Minute)
	backoff := hookFirstBackoff
	var signedAt time.Time
	for attempt := 0; time.Now().Before(giveUp); attempt++ {
		at := time.Now()
		l.mu.Lock()
		l.hooks.attempts++
		if attempt > 0 {
			l.hooks.retries++
			if at.Unix() > signedAt.Unix() {
				l.hooks.resigned++
			}
		}
		l.mu.Unlock()
		signedAt = at
		req, err := h.request(id, body, signer, at)
		if err != nil {
			h.s.t.Errorf("webhook %s: %v", id, err)
			break
		}
		code, retryAfter, raw, err := h.post(req)
		if err != nil {
			// No answer: the gateway is down, restarting or slow. The
			// delivery may or may not be in; sending it again is safe.
			l.mu.Lock()
			l.hooks.noAnswer++
			l.mu.Unlock()
			time.Sleep(backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		l.mu.Lock()
		l.hooks.byStatus[code]++
		l.mu.Unlock()
		r, retry, wrong := hookAnswer(id, code, retryAfter, raw)
		if wrong != "" {
			l.misjudge(fmt.Sprintf("%s: status %d: %s: %.300s", id, code, wrong, raw))
		} else {
			l.record(hookSource, ev, false, r)
			l.mu.Lock()
			if r.Acknowledged() && attempt > 0 {
				l.hooks.ackedOnRetry++
			}
			if r.Outcome == ingestv1.Outcome_DUPLICATE {
				l.hooks.duplicates++
			}
			l.mu.Unlock()
		}
		if !retry {
			return
		}
		time.Sleep(max(backoff, min(r.RetryAfter, 5*time.Second)))
		backoff = min(2*backoff, 5*time.Second)
	}
	l.mu.Lock()
	l.unanswered++
	l.mu.Unlock()
}

// request is one attempt of a delivery, signed at at.
func (h *hookSender) request(id string, body []byte, signer *standardwebhooks.Webhook, at time.Time) (*http.Request, error) {
	sig, err := signer.Sign(id, at, body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	return req, nil
}

// post sends req and returns the answer's status, Retry-After and body;
// err when there is no answer within hookTimeout.
func (h *hookSender) post(req *http.Request) (int, string, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
	defer cancel()
	resp, err := h.client.Do(req.WithContext(ctx))
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		// The answer broke off: as good as none.
		return 0, "", nil, err
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), raw, nil
}

// hookAnswer reads a webhook answer as a sender does and as the ledger
// records it: the delivery's one result (the per-event result, or a
// whole-request refusal as the event's), and whether to retry, which is
// the status's to say (a 5xx). wrong says how the answer breaks the
// webhook contract, "" when it does not: a body that is not the typed
// answer for the delivery, a 2xx that does not acknowledge, a 5xx the
// body says not to retry, a 4xx it says to retry.
func hookAnswer(id string, code int, retryAfter string, raw []byte) (r loadgen.EventResult, retry bool, wrong string) {
	retry = code >= 500
	ans, err := loadgen.ParseRESTAnswer(code, retryAfter, raw, 1)
	switch {
	case err != nil:
		return loadgen.EventResult{ID: id}, retry, "not the typed answer: " + err.Error()
	case len(bytes.TrimSpace(raw)) == 0:
		return loadgen.EventResult{ID: id}, retry, "no body"
	case ans.Failure != nil:
		f := ans.Failure
		r = loadgen.EventResult{ID: id, Outcome: ingestv1.Outcome_REJECTED, Reason: f.Reason, Retryable: f.Retryable, RetryAfter: f.RetryAfter}
		if f.Reason == "" {
			return r, retry, "a refusal without a reason"
		}
	default:
		r = ans.Results[0]
		if r.ID != id {
			return r, retry, fmt.Sprintf("the result is for id %q", r.ID)
		}
	}
	switch {
	case code/100 == 2 && !r.Acknowledged():
		return r, retry, "a 2xx that does not acknowledge"
	case code/100 != 2 && r.Acknowledged():
		return r, retry, "an acknowledgement with a status that is not 2xx"
	case retry != r.Retryable:
		return r, retry, fmt.Sprintf("status %d, retryable %v", code, r.Retryable)
	}
	return r, retry, ""
}

// misjudge counts an answer that breaks the webhook contract.
func (l *ledger) misjudge(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hooks.misjudged++
	if l.hooks.firstMisjudged == "" {
		l.hooks.firstMisjudged = what
	}
}

// hookRecords is what the scenario's webhook events look like in Kafka.
type hookRecords struct {
	records  int // records of the scenario's deliveries in the topic
	verified int // of them, verified again from their headers alone
	forged   int // records of deliveries signed with another secret: must be 0
	first    string
	ids      map[string]bool // identities with a record
}

// checkHookRecords reads the suite's topic for the webhook source's
// records of the scenario and verifies each again, with the Standard
// Webhooks library, from what the record carries: the body as received
// and the signed headers. Every copy is checked: one published before a
// SIGKILL and again after it, one the spool kept and drained.
func (s *system) checkHookRecords(name string, l *ledger) hookRecords {
	s.t.Helper()
	wh, err := standardwebhooks.NewWebhook(s.hookSecret)
	if err != nil {
		s.t.Fatal(err)
	}
	prefix := fmt.Sprintf("%s-%s-", s.run, name)
	out := hookRecords{ids: map[string]bool{}}
	s.topicIDsFrom(s.topic, l.hooks.from, func(rec *kgo.Record) {
		key, err := verifyHookRecord(wh, rec)
		if !strings.HasPrefix(key, identity(hookSource, prefix)) {
			return
		}
		out.records++
		out.ids[key] = true
		if l.hooks.forged[key] {
			out.forged++
		}
		if err == nil {
			out.verified++
		} else if out.first == "" {
			out.first = fmt.Sprintf("%s at %s/%d@%d: %v", key, rec.Topic, rec.Partition, rec.Offset, err)
		}
	})
	return out
}

// verifyHookRecord returns the identity rec names and verifies it again as
// a consumer of a webhook source's records can: its body as received and
// its signed headers verify with the secret wh holds, the signed
// webhook-id is the record's event id, and the body is that delivery's
// (hookBody's).
func verifyHookRecord(wh *standardwebhooks.Webhook, rec *kgo.Record) (key string, err error) {
	var source, id string
	var body []byte
	hdr := http.Header{}
	for _, h := range rec.Headers {
		switch {
		case h.Key == record.HeaderSource:
			source = string(h.Value)
		case h.Key == record.HeaderEventID:
			id = string(h.Value)
		case h.Key == record.HeaderWebhookBody:
			body = h.Value
		case strings.HasPrefix(h.Key, record.WebhookHeaderPrefix):
			hdr.Add(strings.TrimPrefix(h.Key, record.WebhookHeaderPrefix), string(h.Value))
		}
	}
	key = identity(source, id)
	if err := wh.VerifyIgnoringTimestamp(body, hdr); err != nil {
		return key, err
	}
	switch {
	case hdr.Get("webhook-id") != id:
		return key, fmt.Errorf("signed webhook-id %q", hdr.Get("webhook-id"))
	case !bytes.Contains(body, []byte(`"fault suite webhook `+id+`"`)):
		return key, errors.New("the body is not the delivery's")
	}
	return key, nil
}

// checkHooks holds a scenario with webhook senders to the webhook
// contract: its deliveries got answers that say what their status says,
// some were accepted and some refused for good (a forged signature, a
// broken contract), and every record of them in Kafka verifies again
// while none of a forged delivery exists. It returns the line the suite
// prints for the scenario's webhooks.
func (s *system) checkHooks(t *testing.T, name string, l *ledger) string {
	t.Helper()
	recs := s.checkHookRecords(name, l)
	acked, unauthenticated, invalid, unpublished := 0, 0, 0, 0
	for key := range l.acked {
		if strings.HasPrefix(key, hookSource+"/") {
			acked++
			if !recs.ids[key] {
				unpublished++
			}
		}
	}
	for key, reason := range l.rejected {
		if !strings.HasPrefix(key, hookSource+"/") {
			continue
		}
		switch {
		case reason == ingestv1.Reason_UNAUTHENTICATED.String() && l.hooks.forged[key]:
			unauthenticated++
		case reason == ingestv1.Reason_SCHEMA_VIOLATION.String() && !l.hooks.forged[key]:
			invalid++
		default:
			t.Errorf("%s: webhook %s refused %s", name, key, reason)
		}
	}
	if l.hooks.misjudged != 0 {
		t.Errorf("%s: %d webhook answers break the webhook contract; the first: %s", name, l.hooks.misjudged, l.hooks.firstMisjudged)
	}
	if acked == 0 || unauthenticated == 0 || invalid == 0 || unauthenticated != len(l.hooks.forged) {
		t.Errorf("%s: webhooks acknowledged %d, refused 401 %d of %d forged, refused 422 %d: the scenario needs each", name, acked, unauthenticated,
			len(l.hooks.forged), invalid)
	}
	if unpublished != 0 || recs.verified != recs.records || recs.forged != 0 {
		t.Errorf("%s: %d of %d acknowledged deliveries without a record; %d webhook records, %d verified again, %d of forged deliveries; the first that does not verify: %s",
			name, unpublished, acked, recs.records, recs.verified, recs.forged, recs.first)
	}
	return fmt.Sprintf("%-25s webhooks: deliveries %d, acked %d (on a retry %d, DUPLICATE %d), refused 401 %d, 422 %d; attempts %d, retries %d (re-signed %d), no answer %d, answers by status %v; records %d, verified again %d",
		name, l.hooks.deliveries, acked, l.hooks.ackedOnRetry, l.hooks.duplicates, unauthenticated, invalid, l.hooks.attempts, l.hooks.retries,
		l.hooks.resigned, l.hooks.noAnswer, l.hooks.byStatus, recs.records, recs.verified)
}
