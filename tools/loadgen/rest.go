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

// NewSender shares the target's connection pool; the sender's buffers are
// its own (a sender sends one request at a time).
func (t *restTarget) NewSender() (Sender, error) {
	base, err := http.NewRequest(http.MethodPost, t.url, nil)
	if err != nil {
		return nil, err
	}
	base.Header.Set("Content-Type", "application/json")
	base.Header.Set("X-Api-Key", t.key)
	return &restSender{client: t.client, base: base}, nil
}

func (t *restTarget) Close() error {
	t.client.CloseIdleConnections()
	return nil
}

// restSender sends one request at a time over its target's client, and
// keeps what a request needs from one to the next: the request's header,
// the answer buffer and what reading an answer needs.
type restSender struct {
	client *http.Client
	// base is the request every send copies (URL, method, header); the
	// header map is shared by the copies, and nothing writes it.
	base *http.Request
	// bodyCap sizes the next body: the last one's length.
	bodyCap int
	payload payloadCache
	answer  bytes.Buffer
	limit   io.LimitedReader
	parser  answerParser
}

func (s *restSender) Send(ctx context.Context, events []*ingestv1.Event) (Answer, error) {
	// A body is never written again once sent: the transport may read it,
	// or send it again through GetBody, after Do returns.
	body, ok := appendRESTBody(make([]byte, 0, s.bodyCap), events, &s.payload)
	if !ok {
		var err error
		if body, err = restBody(events); err != nil {
			return Answer{}, fmt.Errorf("loadgen: rest body: %w", err)
		}
	}
	s.bodyCap = len(body)
	req := s.base.WithContext(ctx)
	// A *bytes.Reader body is one net/http knows is in memory, so the
	// transport writes the header and the body together; for any other
	// reader it flushes the header first, which costs the server a second
	// read per request and would inflate what the gateway is measured at.
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	resp, err := s.client.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	s.answer.Reset()
	s.limit = io.LimitedReader{R: resp.Body, N: maxAnswerBytes + 1}
	_, err = s.answer.ReadFrom(&s.limit)
	s.limit.R = nil
	if err != nil {
		return Answer{}, err
	}
	raw := s.answer.Bytes()
	if len(raw) > maxAnswerBytes {
		return Answer{}, &AnswerError{Msg: "body over 8 MiB"}
	}
	if ans, err, ok := s.parser.parse(raw, events, len(events)); ok {
		return ans, err
	}
	return restAnswerReflect(resp.StatusCode, resp.Header.Get("Retry-After"), raw, len(events))
}

func (s *restSender) Close() error { return nil }

// restEvent is an event as POST /v1/events takes it: the payload is the
// contract message as a JSON object.
type restEvent struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	OccurredAt   string          `json:"occurred_at"`
	PartitionKey string          `json:"partition_key,omitempty"`
	Payload      json.RawMessage `json:"payload"`
}

// restBody is the request body as encoding/json writes it. appendRESTBody
// writes the same bytes without reflection, and comes here for what it
// does not write.
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

// appendRESTBody appends restBody's bytes to dst. It reports false, and
// the caller uses restBody, when a string needs escaping or a payload does
// not encode.
func appendRESTBody(dst []byte, events []*ingestv1.Event, payloads *payloadCache) ([]byte, bool) {
	dst = append(dst, `{"events":[`...)
	for i, ev := range events {
		if i > 0 {
			dst = append(dst, ',')
		}
		id, typ, key := ev.GetId(), ev.GetType(), ev.GetPartitionKey()
		if !plainJSON(id) || !plainJSON(typ) || !plainJSON(key) {
			return dst, false
		}
		p, ok := payloads.get(ev.GetJson())
		if !ok {
			return dst, false
		}
		dst = append(dst, `{"id":"`...)
		dst = append(dst, id...)
		dst = append(dst, `","type":"`...)
		dst = append(dst, typ...)
		dst = append(dst, `","occurred_at":"`...)
		dst = ev.GetOccurredAt().AsTime().AppendFormat(dst, time.RFC3339Nano)
		dst = append(dst, '"')
		if key != "" {
			dst = append(dst, `,"partition_key":"`...)
			dst = append(dst, key...)
			dst = append(dst, '"')
		}
		dst = append(dst, `,"payload":`...)
		dst = append(dst, p...)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...), true
}

// plainJSON reports whether encoding/json writes s between quotes as it
// is: printable ASCII other than the quote, the backslash and the three
// characters it escapes for HTML.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// payloadCache holds the last few payloads as encoding/json writes a
// json.RawMessage (compacted, HTML characters escaped): a run sends the
// same two payloads over and over.
type payloadCache struct {
	entries [4]struct {
		text string
		out  []byte
	}
	next int
}

func (c *payloadCache) get(text string) ([]byte, bool) {
	for i := range c.entries {
		if e := &c.entries[i]; e.out != nil && e.text == text {
			return e.out, true
		}
	}
	out, err := json.Marshal(json.RawMessage(text))
	if err != nil {
		return nil, false
	}
	e := &c.entries[c.next]
	e.text, e.out = text, out
	c.next = (c.next + 1) % len(c.entries)
	return out, true
}

// ParseRESTAnswer reads the gateway's answer to a REST request of n events:
// a body with "results" is the per-event answer (whatever the status:
// 200, 207, 422 or a shared refusal such as 503); any other body is a
// whole-request refusal, its reason from the typed error body and its
// wait from the body or the Retry-After header. An empty 2xx body (the
// plain HTTP baseline) acknowledges every event. A body that is neither
// is an *AnswerError.
func ParseRESTAnswer(code int, retryAfter string, body []byte, n int) (Answer, error) {
	var p answerParser
	if ans, err, ok := p.parse(body, nil, n); ok {
		return ans, err
	}
	return restAnswerReflect(code, retryAfter, body, n)
}

// restAnswerReflect is ParseRESTAnswer through encoding/json and
// protojson, for every body; answerParser reads the common ones faster.
func restAnswerReflect(code int, retryAfter string, body []byte, n int) (Answer, error) {
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
