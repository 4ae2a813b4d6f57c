package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/retryafter"
)

// maxAnswerBytes bounds the REST answer body read; an answer to 500 events
// is far below it.
const maxAnswerBytes = 8 << 20

type restTarget struct {
	url    string
	key    string
	client *http.Client
}

func newRESTTarget(cfg Config) (*restTarget, error) {
	tc, err := cfg.clientTLS()
	if err != nil {
		return nil, err
	}
	base := cfg.Addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
		if tc != nil {
			base = "https://" + cfg.Addr
		}
	}
	// HTTP/1.1 with or without TLS (a TLSClientConfig turns HTTP/2 off),
	// so that TLS and plaintext runs differ only in TLS.
	tr := &http.Transport{
		MaxIdleConns:        cfg.Concurrency,
		MaxIdleConnsPerHost: cfg.Concurrency,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
		TLSClientConfig:     tc,
	}
	return &restTarget{url: strings.TrimSuffix(base, "/") + "/v1/events", key: cfg.APIKey, client: &http.Client{Transport: tr}}, nil
}

// NewSender shares the target's connection pool.
func (t *restTarget) NewSender() (Sender, error) { return sharedSender{t.send}, nil }

func (t *restTarget) Close() error {
	t.client.CloseIdleConnections()
	return nil
}

// restEvent is an event as POST /v1/events takes it: the payload is the
// contract message as a JSON object.
type restEvent struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	OccurredAt   string          `json:"occurred_at"`
	PartitionKey string          `json:"partition_key,omitempty"`
	Payload      json.RawMessage `json:"payload"`
}

func restBody(events []*ingestv1.Event) ([]byte, error) {
	list := make([]restEvent, len(events))
	for i, ev := range events {
		list[i] = restEvent{
			ID: ev.GetId(), Type: ev.GetType(), PartitionKey: ev.GetPartitionKey(),
			OccurredAt: ev.GetOccurredAt().AsTime().Format(time.RFC3339Nano),
			Payload:    json.RawMessage(ev.GetJson()),
		}
	}
	return json.Marshal(struct {
		Events []restEvent `json:"events"`
	}{list})
}

func (t *restTarget) send(ctx context.Context, events []*ingestv1.Event) (Answer, error) {
	body, err := restBody(events)
	if err != nil {
		return Answer{}, fmt.Errorf("loadgen: rest body: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return Answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", t.key)
	resp, err := t.client.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return Answer{}, err
	}
	if len(raw) > maxAnswerBytes {
		return Answer{}, &AnswerError{Msg: "body over 8 MiB"}
	}
	return ParseRESTAnswer(resp.StatusCode, resp.Header.Get("Retry-After"), raw, len(events))
}

// ParseRESTAnswer reads the gateway's answer to a REST request of n events:
// a body with "results" is the per-event answer (whatever the status:
// 200, 207, 422 or a shared refusal such as 503); any other body is a
// whole-request refusal, its reason from the typed error body and its
// wait from the body or the Retry-After header. An empty 2xx body (the
// plain HTTP baseline) acknowledges every event. A body that is neither
// is an *AnswerError.
func ParseRESTAnswer(code int, retryAfter string, body []byte, n int) (Answer, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		if code >= 200 && code < 300 {
			rs := make([]EventResult, n)
			for i := range rs {
				rs[i].Outcome = ingestv1.Outcome_ACCEPTED
			}
			return Answer{Results: rs}, nil
		}
		return Answer{Failure: &Failure{Code: "http:" + strconv.Itoa(code), RetryAfter: parseRetryAfter(retryAfter)}}, nil
	}
	var probe struct {
		Results json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(trimmed, &probe); err != nil {
		return Answer{}, &AnswerError{Msg: fmt.Sprintf("status %d: body is not JSON", code), Err: err}
	}
	lenient := protojson.UnmarshalOptions{DiscardUnknown: true}
	if probe.Results != nil {
		var resp ingestv1.PublishResponse
		if err := lenient.Unmarshal(trimmed, &resp); err != nil {
			return Answer{}, &AnswerError{Msg: fmt.Sprintf("status %d: results", code), Err: err}
		}
		rs, err := resultsOf(resp.GetResults(), n)
		return Answer{Results: rs}, err
	}
	var eb ingestv1.ErrorBody
	if err := lenient.Unmarshal(trimmed, &eb); err != nil {
		return Answer{}, &AnswerError{Msg: fmt.Sprintf("status %d: error body", code), Err: err}
	}
	f := &Failure{Code: "http:" + strconv.Itoa(code), Retryable: eb.GetRetryable(), RetryAfter: parseRetryAfter(retryAfter)}
	if eb.GetReason() != ingestv1.Reason_REASON_UNSPECIFIED {
		f.Reason = eb.GetReason().String()
	}
	if d := eb.GetRetryAfter().AsDuration(); d > 0 {
		f.RetryAfter = d
	}
	return Answer{Failure: f}, nil
}

// parseRetryAfter reads Retry-After; anything unreadable is no wait.
func parseRetryAfter(v string) time.Duration {
	d, _ := retryafter.Parse(v, time.Now())
	return d
}
