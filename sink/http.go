package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/clip"
	"github.com/sluicehq/sluice/internal/outbound"
	"github.com/sluicehq/sluice/internal/retryafter"
	"github.com/sluicehq/sluice/internal/utctime"
	"github.com/sluicehq/sluice/record"
)

// HTTP is the HTTP sink: one POST per event, in batch order, each carrying
// the event's identity as its Idempotency-Key and its payload fingerprint.
// The receiver is what makes a second POST of the same key harmless, and
// what can tell of a conflict by echoing the fingerprint it holds.
type HTTP struct {
	url           string
	header        http.Header
	client        *http.Client    // redirects stay on the URL's origin
	transport     *http.Transport // nil when the client came from WithHTTPClient
	timeout       time.Duration
	maxRetryAfter time.Duration
	now           func() time.Time

	mu     sync.RWMutex // guards closed against Close during Write
	closed bool
}

var _ Sink = (*HTTP)(nil)

// Bounds on reading a response: errPrefixLen bytes of a refused request's
// body go into its error; at most drainLen more are read and discarded so
// the connection can be reused. A longer body costs the connection.
const (
	errPrefixLen = 512
	drainLen     = 64 << 10
)

// Headers of the HTTP sink's protocol, besides Content-Type.
const (
	// HeaderIdempotencyKey carries IdempotencyKey(source, id).
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderPayloadFingerprint carries the event's PayloadFingerprint in
	// a request and, in a 2xx response, the one the receiver holds under
	// the key.
	HeaderPayloadFingerprint = "Sluice-Payload-Fingerprint"
)

// IdempotencyKey is the Idempotency-Key of identity (source, id): each
// part path-escaped, so that no part holds the "/" between them and
// distinct identities have distinct keys. It is record.IdentityKey, the
// key of the event's records in sluice.audit.
func IdempotencyKey(source, id string) string { return record.IdentityKey(source, id) }

// StatusError is a receiver's answer other than 2xx.
type StatusError struct {
	Source     string
	EventID    string
	StatusCode int
	// Body is a prefix of the response body, at most 512 bytes.
	Body string
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("http: event %q of %q: status %d", e.EventID, e.Source, e.StatusCode)
	}
	return fmt.Sprintf("http: event %q of %q: status %d: %s", e.EventID, e.Source, e.StatusCode, e.Body)
}

// httpEnvelope is the body of one POST.
type httpEnvelope struct {
	ID                string          `json:"id"`
	Type              string          `json:"type"`
	Source            string          `json:"source"`
	OccurredAt        string          `json:"occurred_at"`
	IngestedAt        string          `json:"ingested_at"`
	PartitionKey      string          `json:"partition_key"`
	SchemaFingerprint string          `json:"schema_fingerprint"`
	Payload           json.RawMessage `json:"payload"`
}

// OpenHTTP resolves the configured headers (reading HeadersFromEnv) and
// returns the sink; it sends nothing.
func OpenHTTP(cfg HTTPConfig, opts ...Option) (*HTTP, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	o := buildOptions(opts)
	header := make(http.Header, len(cfg.Headers)+len(cfg.HeadersFromEnv)+2)
	for name, value := range cfg.Headers {
		header.Set(name, value)
	}
	for name, env := range cfg.HeadersFromEnv {
		value, _ := o.lookupEnv(env)
		if value == "" {
			return nil, bad("http.headers_from_env["+name+"]", "environment variable %s is unset or empty", env)
		}
		if !validHeaderValue(value) {
			return nil, bad("http.headers_from_env["+name+"]", "environment variable %s holds control characters", env)
		}
		header.Set(name, value)
	}
	header.Set("Content-Type", "application/json")

	h := &HTTP{
		url:           cfg.URL,
		header:        header,
		timeout:       cfg.RequestTimeout,
		maxRetryAfter: cfg.MaxRetryAfter,
		now:           o.now,
	}
	client := o.httpClient
	if client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = cfg.MaxIdleConns
		t.MaxIdleConnsPerHost = cfg.MaxIdleConns
		h.transport = t
		client = &http.Client{Transport: t, CheckRedirect: keepPOST}
	}
	// The configured headers (credentials, often) and the events go to the
	// configured origin only, whichever client sends them.
	h.client = outbound.StayOnOrigin(client)
	return h, nil
}

// keepPOST follows only 307 and 308, which resend the POST with its body;
// after 301, 302 or 303 the client would send a GET and lose the event, so
// the redirect itself is answered (and classified) instead.
func keepPOST(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("http: stopped after 10 redirects")
	}
	if c := req.Response.StatusCode; c != http.StatusTemporaryRedirect && c != http.StatusPermanentRedirect {
		return http.ErrUseLastResponse
	}
	return nil
}

// Name returns "http".
func (h *HTTP) Name() string { return KindHTTP }

// Write POSTs the events of batch one after another, in order, and stops at
// the first failure. The events before it were delivered; the caller's
// retry sends them again with the same Idempotency-Key. An event the
// receiver answered with another Sluice-Payload-Fingerprint than it was
// sent with is a Conflict: the receiver holds another payload under its
// key. The receiver keeps no count of what it answered, so a conflicting
// event sent again is reported again.
func (h *HTTP) Write(ctx context.Context, batch []Event) ([]Conflict, error) {
	if err := checkBatch(batch); err != nil {
		return nil, err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return nil, TransientError(ErrClosed, 0)
	}
	var conflicts []Conflict
	for i := range batch {
		stored, err := h.post(ctx, &batch[i])
		if err != nil {
			return nil, err
		}
		if stored != "" && stored != batch[i].PayloadFingerprint {
			conflicts = append(conflicts, Conflict{Index: i, StoredFingerprint: stored})
		}
	}
	return conflicts, nil
}

// maxEchoedFingerprint bounds the fingerprint kept from a response.
const maxEchoedFingerprint = 128

// post sends e and returns the payload fingerprint the receiver answered
// with, "" when it did not say.
func (h *HTTP) post(ctx context.Context, e *Event) (string, error) {
	env := httpEnvelope{
		ID:                e.ID,
		Type:              e.Type,
		Source:            e.Source,
		OccurredAt:        utctime.Format(e.OccurredAt),
		IngestedAt:        utctime.Format(e.IngestedAt),
		PartitionKey:      string(e.Key),
		SchemaFingerprint: e.SchemaFingerprint,
		Payload:           json.RawMessage("null"),
	}
	if len(e.JSON) > 0 {
		env.Payload = e.JSON
	}
	body, err := json.Marshal(&env)
	if err != nil {
		// checkBatch has vetted the JSON, so this is not the event's fault
		// as far as this sink can tell.
		return "", TransientError(fmt.Errorf("http: event %q of %q: encode: %w", e.ID, e.Source, err), 0)
	}

	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return "", PermanentError(fmt.Errorf("http: event %q of %q: %w", e.ID, e.Source, outbound.RedactError(err)))
	}
	req.Header = h.header.Clone()
	req.Header.Set(HeaderIdempotencyKey, IdempotencyKey(e.Source, e.ID))
	req.Header.Set(HeaderPayloadFingerprint, e.PayloadFingerprint)

	resp, err := h.client.Do(req)
	if err != nil {
		return "", h.classifyResponse(e, err, 0, "", nil)
	}
	defer resp.Body.Close()
	var prefix []byte
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		prefix, _ = io.ReadAll(io.LimitReader(resp.Body, errPrefixLen))
	}
	// Read errors here only cost the connection; the status is the answer.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLen))
	if err := h.classifyResponse(e, nil, resp.StatusCode, resp.Header.Get("Retry-After"), prefix); err != nil {
		return "", err
	}
	// The receiver's text goes to logs: keep it short and valid UTF-8.
	stored := strings.ToValidUTF8(strings.TrimSpace(resp.Header.Get(HeaderPayloadFingerprint)), "\uFFFD")
	return clip.String(stored, maxEchoedFingerprint), nil
}

// classifyResponse is the HTTP boundary's one decision on retrying: of
// reqErr, the error of a request that got no answer, or else of the
// answer's status.
//
// Every request error is transient. Refused, reset, timed out, canceled:
// the receiver may be back. A redirect off the URL's origin
// (outbound.ErrOffOrigin, refused before anything is sent there) too: the
// events are fine and every one of them would meet the same redirect, so
// dead-lettering them as poison would drain the topic into the DLQ while
// the endpoint is misconfigured; as a transient failure it opens the
// breaker and pauses the partitions until the URL or the receiver is
// fixed.
//
// 2xx is success. 408, 429 and 5xx are transient, with the receiver's
// Retry-After (capped at MaxRetryAfter) when it gave one. Other 4xx are
// permanent: the receiver refuses this event. Anything else (an unfollowed
// redirect, 1xx) is a receiver that does not speak the protocol, which is
// transient.
func (h *HTTP) classifyResponse(e *Event, reqErr error, status int, retryAfter string, body []byte) error {
	if reqErr != nil {
		// net/http's error embeds the URL, whose query may hold a credential.
		return TransientError(fmt.Errorf("http: event %q of %q: %w", e.ID, e.Source, outbound.RedactError(reqErr)), 0)
	}
	if status >= 200 && status <= 299 {
		return nil
	}
	err := &StatusError{Source: e.Source, EventID: e.ID, StatusCode: status, Body: clip.Bytes(body, errPrefixLen)}
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusTooManyRequests, status >= 500 && status <= 599:
		d, _ := retryafter.Parse(retryAfter, h.now())
		return TransientError(err, min(d, h.maxRetryAfter))
	case status >= 400 && status <= 499:
		return PermanentError(err)
	}
	return TransientError(err, 0)
}

// Close closes the idle connections of the sink's own transport. Writes
// after Close fail with ErrClosed.
func (h *HTTP) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		if h.transport != nil {
			h.transport.CloseIdleConnections()
		}
	}
	return nil
}
