package gateway_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/consumer"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/logtest"
	"github.com/sluicehq/sluice/record"
)

// payloadFingerprint is the sink's payload fingerprint of js, a LogLine
// payload: the SHA-256 of its canonical binary, which CheckJSON returns.
func payloadFingerprint(t *testing.T, js []byte) string {
	t.Helper()
	r, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := r.Lookup(typeLog)
	canon, err := c.CheckJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// otherLogLine is examples.LogLineJSON with another message: the same
// contract, another payload.
func otherLogLine(t *testing.T) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(examples.LogLineJSON, &m); err != nil {
		t.Fatal(err)
	}
	m["message"] = "a second payload under the same id"
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reordered is js with its top-level keys in reverse order: the same
// payload written another way.
func reordered(t *testing.T, js []byte) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// encoding/json writes sorted keys; write them reversed by hand.
	var b strings.Builder
	b.WriteByte('{')
	for i := len(keys) - 1; i >= 0; i-- {
		k := keys[i]
		if i != len(keys)-1 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(m[k])
	}
	b.WriteByte('}')
	return []byte(b.String())
}

func wantConflict(t *testing.T, what string, r *ingestv1.EventResult, fingerprint, accepted string) {
	t.Helper()
	rej := r.GetRejection()
	if r.GetOutcome() != ingestv1.Outcome_REJECTED || rej.GetReason() != ingestv1.Reason_IDEMPOTENCY_CONFLICT || rej.GetRetryable() {
		t.Fatalf("%s: %v, want REJECTED IDEMPOTENCY_CONFLICT, not retryable", what, r)
	}
	if r.GetPosition() != nil || r.Durability != nil {
		t.Errorf("%s: a refused event has a position: %v", what, r)
	}
	c := rej.GetConflict()
	if c.GetFingerprint() != fingerprint || c.GetAcceptedFingerprint() != accepted {
		t.Errorf("%s: conflict %v, want fingerprint %s and accepted %s", what, c, fingerprint, accepted)
	}
}

// TestChangedPayloadRefused: a second payload under an accepted (source,
// id) is refused IDEMPOTENCY_CONFLICT with both fingerprints, over REST
// and gRPC, within one request and across requests; the same payload in
// another form (keys reordered, binary instead of JSON) is a DUPLICATE.
// Nothing of the second payload reaches Kafka; the refusals are counted
// per source and logged.
func TestChangedPayloadRefused(t *testing.T) {
	logs := new(logtest.Buffer)
	h := newHarness(t, harnessOpts{service: []gateway.Option{gateway.WithLogger(slogJSON(logs))}})
	first, second := examples.LogLineJSON, otherLogLine(t)
	fpFirst, fpSecond := payloadFingerprint(t, first), payloadFingerprint(t, second)
	window := fpFirst[:len("sha256:")+16] // the 64 bits the dedup window keeps

	e := ev{ID: "conflict-1", Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: first}
	resp, body := h.postREST(keyAll, restBody(e))
	res := mustResults(t, body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	wantOutcomes(t, res, ingestv1.Outcome_ACCEPTED)
	original := res[0].GetKafka()
	samePosition := func(what string, r *ingestv1.EventResult, want *ingestv1.KafkaPosition) {
		t.Helper()
		if !proto.Equal(r.GetKafka(), want) || r.GetSpool() != nil {
			t.Errorf("%s: %v, want the original's position %v", what, r, want)
		}
	}

	changed := e
	changed.JSON = second
	resp, body = h.postREST(keyAll, restBody(changed))
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("REST: a changed payload answered %d %s, want 409", resp.StatusCode, body)
	}
	wantConflict(t, "REST", mustResults(t, body)[0], fpSecond, window)

	out, err := h.publishGRPC(keyAll, changed)
	if err != nil {
		t.Fatal(err)
	}
	wantConflict(t, "gRPC", out.GetResults()[0], fpSecond, window)

	// The same payload, its keys in another order and in protobuf binary:
	// one payload, a DUPLICATE at the original's position.
	same := e
	same.JSON = reordered(t, first)
	resp, body = h.postREST(keyAll, restBody(same))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the same payload reordered: %d %s", resp.StatusCode, body)
	}
	wantOutcomes(t, mustResults(t, body), ingestv1.Outcome_DUPLICATE)
	samePosition("reordered", mustResults(t, body)[0], original)
	bin := e
	bin.JSON, bin.Binary = nil, logLineBinary(t)
	if out, err = h.publishGRPC(keyAll, bin); err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, out.GetResults(), ingestv1.Outcome_DUPLICATE)
	samePosition("binary", out.GetResults()[0], original)

	// Within one request: the first is published, a repeat with the same
	// payload is a duplicate, one with another payload a conflict, which
	// names the first's whole fingerprint.
	e2 := e
	e2.ID = "conflict-2"
	c2 := changed
	c2.ID = e2.ID
	if out, err = h.publishGRPC(keyAll, e2, c2, e2); err != nil {
		t.Fatal(err)
	}
	res = out.GetResults()
	if res[0].GetOutcome() != ingestv1.Outcome_ACCEPTED || res[2].GetOutcome() != ingestv1.Outcome_DUPLICATE {
		t.Fatalf("batch: %v", res)
	}
	wantConflict(t, "in one request", res[1], fpSecond, fpFirst)

	recs := h.consume(h.topics[typeLog], 2)
	count := map[string]int{}
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	versions, err := contract.NewVersions(registry, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		// The fingerprint the refusal names is the one the sink keeps.
		if ev, err := consumer.Decode(versions, r.Topic, r); err != nil || ev.PayloadFingerprint != fpFirst {
			t.Errorf("the sink fingerprints the accepted payload %q (%v), the refusal named %s", ev.PayloadFingerprint, err, fpFirst)
		}
		id := header(r, record.HeaderEventID)
		count[id]++
		if !proto.Equal(decodeLogLine(t, r.Value), decodeLogLine(t, logLineBinary(t))) {
			t.Errorf("record %s holds the refused payload", id)
		}
	}
	if count["conflict-1"] != 1 || count["conflict-2"] != 1 {
		t.Errorf("records by id %v, want one each", count)
	}

	refused, err := testutil.GatherAndCount(h.reg, "sluice_events_total")
	if err != nil || refused == 0 {
		t.Fatalf("sluice_events_total: %d series, %v", refused, err)
	}
	if refused := counterValue(t, h.reg, "sluice_events_total", map[string]string{"source": "all", "type": typeLog, "outcome": "REJECTED", "reason": "IDEMPOTENCY_CONFLICT"}); refused != 3 {
		t.Errorf("sluice_events_total{source=all,reason=IDEMPOTENCY_CONFLICT} = %v, want 3", refused)
	}
	if n := strings.Count(logs.String(), "IDEMPOTENCY_CONFLICT"); n != 3 {
		t.Errorf("%d log lines name the conflict, want 3:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), fpSecond) || !strings.Contains(logs.String(), `"id":"conflict-1"`) {
		t.Errorf("the log does not name the id and the fingerprints:\n%s", logs.String())
	}
}

// TestChangedPayloadRefusedDedupOff: with the dedup window off, a request
// that repeats an id still may not carry two payloads under it; a repeat
// with the same payload is published again, as dedup off means.
func TestChangedPayloadRefusedDedupOff(t *testing.T) {
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) { c.Dedup.Window = 0 }})
	first, second := examples.LogLineJSON, otherLogLine(t)
	e := ev{ID: "off-1", Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: first}
	changed := e
	changed.JSON = second
	out, err := h.publishGRPC(keyAll, e, changed, e)
	if err != nil {
		t.Fatal(err)
	}
	res := out.GetResults()
	if res[0].GetOutcome() != ingestv1.Outcome_ACCEPTED || res[2].GetOutcome() != ingestv1.Outcome_ACCEPTED {
		t.Fatalf("dedup off: %v, want the first and the same-payload repeat ACCEPTED", res)
	}
	wantConflict(t, "dedup off", res[1], payloadFingerprint(t, second), payloadFingerprint(t, first))
}

func decodeLogLine(t *testing.T, b []byte) *logsv1.LogLine {
	t.Helper()
	var line logsv1.LogLine
	if err := proto.Unmarshal(b, &line); err != nil {
		t.Fatal(err)
	}
	return &line
}

func slogJSON(w io.Writer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }
