package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc/metadata"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/gateway/webhook"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/clip"
	"github.com/sluicehq/sluice/internal/eventmap"
	"github.com/sluicehq/sluice/internal/strictyaml"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/record"
)

// Webhook deliveries: POST /v1/webhooks/{source}, for a source with a
// webhook block. A delivery is authenticated by its signature, which
// covers the body, so the body is read before the sender is known. It is
// read under its source's pre-authentication bounds: the body's bytes
// (max_body_bytes, refused unread from its Content-Length, and stopped
// past it), its time (read_timeout) and a memory pool of the source's own
// (preauth_memory_bytes), which an unauthenticated flood of one source's
// path can exhaust, never the memory of authenticated callers or of
// another source. Once verified, the delivery is charged to the request
// memory as any request, mapped to an event (package eventmap, the
// pollers' mapping) and judged as pushed events are: envelope, contract,
// dedup window, admission.
//
// Answers speak to senders, which retry on a 5xx or a timeout and on
// nothing else: 200 once the event is durable (DUPLICATE too), 401 for a
// signature that does not verify (never worth a retry), the reason's 4xx
// for an event that can never be accepted, and 503 with Retry-After for
// every refusal that is worth a retry, RATE_LIMITED included (429 would
// be dropped by most senders). The body is the same typed JSON as every
// other answer.

// Webhook formats: the body is one event's JSON, or a CloudEvents HTTP
// binding request.
const (
	WebhookFormatJSON        = "json"
	WebhookFormatCloudEvents = "cloudevents"
)

// webhookPath is the prefix of a webhook source's endpoint.
const webhookPath = "/v1/webhooks/"

// webhookOverhead is charged to a source's pre-authentication pool on top
// of a body's bytes: the request's structures and the verifier's work.
const webhookOverhead = 4 << 10

// WebhookConfig is a source's webhook block.
type WebhookConfig struct {
	// Config is how deliveries are verified: scheme, secrets, tolerance.
	webhook.Config `yaml:",inline"`
	// MaxBodyBytes bounds a delivery's body, read before it is verified.
	// Default 1 MiB.
	MaxBodyBytes int `yaml:"max_body_bytes"`
	// ReadTimeout bounds the time a body takes to arrive. Default 10s.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// PreauthMemoryBytes is the source's pool for bodies not yet
	// verified; a delivery is charged its body (Content-Length, or
	// MaxBodyBytes without one) and webhookOverhead. Default 8 MiB.
	PreauthMemoryBytes int64 `yaml:"preauth_memory_bytes"`
	// Format is json (the body is one event) or cloudevents (a
	// CloudEvents HTTP binding request, signed). Default json.
	Format string `yaml:"format"`
	// Mapping turns a json delivery into an event; what it leaves unset
	// comes from the scheme's defaults (WebhookMapping).
	Mapping eventmap.Config `yaml:"mapping"`
	// AllowUnknownFields are contract types whose JSON may carry fields
	// the contract does not have: providers add fields without notice.
	// The published message holds the contract's fields; the body as
	// received travels beside it (record.HeaderWebhookBody).
	AllowUnknownFields []string `yaml:"allow_unknown_fields"`
}

// NewDefaultWebhookConfig returns the defaults documented on
// WebhookConfig.
func NewDefaultWebhookConfig() WebhookConfig {
	return WebhookConfig{
		Config:             webhook.NewDefaultConfig(),
		MaxBodyBytes:       1 << 20,
		ReadTimeout:        10 * time.Second,
		PreauthMemoryBytes: 8 << 20,
		Format:             WebhookFormatJSON,
	}
}

// UnmarshalYAML starts from NewDefaultWebhookConfig, so a config file sets
// only what differs, and refuses unknown keys.
func (c *WebhookConfig) UnmarshalYAML(n *yaml.Node) error {
	type plain WebhookConfig
	d := plain(NewDefaultWebhookConfig())
	if err := strictyaml.Decode(n, &d); err != nil {
		return fmt.Errorf("webhook block at line %d: %w", n.Line, err)
	}
	*c = WebhookConfig(d)
	return nil
}

// maxWebhookBodyBytes bounds MaxBodyBytes.
const maxWebhookBodyBytes = 64 << 20

// validate checks the block; field names come back under the caller's
// prefix ("sources[0].webhook").
func (c WebhookConfig) validate(prefix string) error {
	if err := c.Config.Validate(); err != nil {
		var ce *webhook.ConfigError
		if errors.As(err, &ce) {
			return fieldErr(prefix+"."+ce.Field, ce.Reason)
		}
		return fieldErr(prefix, err.Error())
	}
	switch {
	case c.MaxBodyBytes < 1 || c.MaxBodyBytes > maxWebhookBodyBytes:
		return fieldErr(prefix+".max_body_bytes", fmt.Sprintf("must be within [1, %d]", maxWebhookBodyBytes))
	case c.ReadTimeout <= 0:
		return fieldErr(prefix+".read_timeout", "must be positive")
	case c.PreauthMemoryBytes < int64(c.MaxBodyBytes)+webhookOverhead:
		return fieldErr(prefix+".preauth_memory_bytes", fmt.Sprintf("must hold one body of max_body_bytes and %d bytes more: at least %d",
			webhookOverhead, int64(c.MaxBodyBytes)+webhookOverhead))
	case c.Format != WebhookFormatJSON && c.Format != WebhookFormatCloudEvents:
		return fieldErr(prefix+".format", fmt.Sprintf("%q is not json or cloudevents", c.Format))
	case len(c.HMAC.Header) > maxHeaderNameBytes:
		return fieldErr(prefix+".hmac.header", fmt.Sprintf("longer than %d bytes", maxHeaderNameBytes))
	case len(c.HMAC.TimestampHeader) > maxHeaderNameBytes:
		return fieldErr(prefix+".hmac.timestamp_header", fmt.Sprintf("longer than %d bytes", maxHeaderNameBytes))
	}
	if c.Format == WebhookFormatJSON {
		if err := c.mapping().Validate(); err != nil {
			var me *eventmap.ConfigError
			if errors.As(err, &me) {
				return fieldErr(prefix+".mapping."+me.Field, me.Reason)
			}
			return fieldErr(prefix+".mapping", err.Error())
		}
	}
	return nil
}

// mapping is the block's mapping with the scheme's defaults under it.
func (c WebhookConfig) mapping() eventmap.Config {
	return c.Mapping.Inherit(WebhookMapping(c.Scheme))
}

// WebhookMapping is a scheme's default mapping: where its deliveries
// carry their id, their provider type and their time. A type table
// (mapping.types) or a contract type is the source's to give.
//
//   - standard: id webhook-id; type /type, as the Standard Webhooks
//     payload format has it; time webhook-timestamp, which is signed;
//   - stripe: id /id, type /type, time /created (Unix seconds), the
//     Stripe event object's;
//   - github: id X-GitHub-Delivery, type X-GitHub-Event;
//   - shopify: id X-Shopify-Webhook-Id, type X-Shopify-Topic, time
//     X-Shopify-Triggered-At;
//   - hmac: nothing.
//
// A time the mapping does not find is the signature's timestamp, or the
// time of receipt for a scheme without one.
func WebhookMapping(scheme string) eventmap.Config {
	switch scheme {
	case webhook.SchemeStandard:
		return eventmap.Config{ID: eventmap.Header("webhook-id"), Type: eventmap.TypeFrom(eventmap.Pointer("/type"))}
	case webhook.SchemeStripe:
		return eventmap.Config{ID: eventmap.Pointer("/id"), Type: eventmap.TypeFrom(eventmap.Pointer("/type")),
			OccurredAt: eventmap.Pointer("/created")}
	case webhook.SchemeGitHub:
		return eventmap.Config{ID: eventmap.Header("X-GitHub-Delivery"), Type: eventmap.TypeFrom(eventmap.Header("X-GitHub-Event"))}
	case webhook.SchemeShopify:
		return eventmap.Config{ID: eventmap.Header("X-Shopify-Webhook-Id"), Type: eventmap.TypeFrom(eventmap.Header("X-Shopify-Topic")),
			OccurredAt: eventmap.Header("X-Shopify-Triggered-At")}
	}
	return eventmap.Config{}
}

// webhookSource is a source's webhook endpoint, ready to serve.
type webhookSource struct {
	src      *source
	cfg      WebhookConfig
	verifier *webhook.Verifier
	mapping  *eventmap.Mapping // nil for the cloudevents format
	preauth  *memoryBudget
	// signed are the headers the scheme signs with, as the record names
	// them (record.WebhookHeaderPrefix and the name in lower case).
	signed []string
}

// newWebhookSources builds the endpoints of the sources with a webhook
// block, checking the contract types their mappings and allowances name
// against the registry and the source's allowance.
func (s *Service) newWebhookSources(registry contractTypes, opts []webhook.Option) (map[string]*webhookSource, error) {
	out := map[string]*webhookSource{}
	for i, c := range s.cfg.Sources {
		if c.Webhook == nil {
			continue
		}
		prefix := fmt.Sprintf("sources[%d].webhook", i)
		src := s.sources.byName[c.Name]
		ws := &webhookSource{src: src, cfg: *c.Webhook, preauth: newSourceBudget(c.Webhook.PreauthMemoryBytes)}
		var types []string
		if c.Webhook.Format == WebhookFormatJSON {
			m, err := eventmap.New(c.Webhook.mapping())
			if err != nil {
				return nil, fieldErr(prefix+".mapping", err.Error())
			}
			ws.mapping = m
			types = m.Config().ContractTypes()
			if len(types) == 0 {
				return nil, fieldErr(prefix+".mapping.types", "map the provider's types to contract types (or give type: a contract type, or default_type)")
			}
		}
		for _, t := range append(types, c.Webhook.AllowUnknownFields...) {
			if !registry.has(t) {
				return nil, fieldErr(prefix, fmt.Sprintf("%s: no contract of that type is loaded", t))
			}
			if !src.mayPublish(t) {
				return nil, fieldErr(prefix, fmt.Sprintf("%s: the source may not publish that type (event_types)", t))
			}
		}
		v, err := webhook.New(c.Webhook.Config, opts...)
		if err != nil {
			return nil, fieldErr(prefix, err.Error())
		}
		ws.verifier = v
		for _, h := range v.SignatureHeaders() {
			ws.signed = append(ws.signed, record.WebhookHeaderPrefix+strings.ToLower(h))
		}
		out[c.Name] = ws
	}
	return out, nil
}

// contractTypes is what newWebhookSources asks of a registry.
type contractTypes interface{ has(typ string) bool }

// registryTypes are a registry's types.
type registryTypes struct{ r *contract.Registry }

func (t registryTypes) has(typ string) bool { _, ok := t.r.Lookup(typ); return ok }

// webhookRoutes serves the webhook endpoints, ahead of authenticateREST:
// a delivery is authenticated by its signature, over its body.
func (s *Service) webhookRoutes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.EscapedPath(), webhookPath) {
			s.serveWebhook(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveWebhook is POST /v1/webhooks/{source}.
func (s *Service) serveWebhook(w http.ResponseWriter, r *http.Request) {
	start := s.now()
	ctx := r.Context()
	var span requestSpan
	defer func() {
		tracing.Observe(ctx, s.metrics.requestDuration.WithLabelValues("webhook"), s.now().Sub(start).Seconds())
		span.end()
	}()
	fail := func(f *Failure) {
		s.metrics.requests.WithLabelValues("webhook", f.Reason.String()).Inc()
		span.fail(f)
		writeWebhookFailure(w, f)
	}
	name := strings.TrimPrefix(r.URL.EscapedPath(), webhookPath)
	ws := s.webhooks[name]
	if ws == nil {
		skipBody(w, r)
		s.metrics.requests.WithLabelValues("webhook", ingestv1.Reason_MALFORMED.String()).Inc()
		writeFailureStatus(w, &Failure{Reason: ingestv1.Reason_MALFORMED,
			Message: "no webhook source named " + clip.String(name, 100) + ": a source's webhook block serves " + webhookPath + "<source name>"}, http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		skipBody(w, r)
		w.Header().Set("Allow", http.MethodPost)
		writeFailureStatus(w, &Failure{Reason: ingestv1.Reason_MALFORMED, Message: "method " + r.Method + " not allowed: webhooks are POST"}, http.StatusMethodNotAllowed)
		return
	}
	// The sender's traceparent and tracestate headers, when sent, are the
	// parent of the request's span (and the records' trace context).
	if len(r.Header["Traceparent"]) > 0 || len(r.Header["Tracestate"]) > 0 {
		md := metadata.MD{}
		restTraceMetadata(md, r.Header)
		ctx = metadata.NewIncomingContext(ctx, md)
	}
	ctx, span = s.startRequest(ctx, spanWebhook, "webhook", ws.src)
	body, hold, f := s.readWebhook(w, r, ws)
	if f != nil {
		fail(f)
		return
	}
	defer hold.release()
	delivery, err := ws.verifier.Verify(webhook.Request{Header: r.Header, Body: body})
	if err != nil {
		var ref *webhook.Refusal
		if errors.As(err, &ref) {
			s.metrics.webhookRefusals.WithLabelValues(name, string(ref.Reason)).Inc()
		}
		fail(&Failure{Reason: ingestv1.Reason_UNAUTHENTICATED, Message: "the delivery does not verify: " + err.Error()})
		return
	}
	// Verified: the body moves from the source's pool to the request
	// memory every authenticated request is charged to.
	ctx = withSource(ctx, ws.src)
	leave, f := s.enterRequest(ws.src)
	if f != nil {
		fail(f)
		return
	}
	defer leave()
	main, f := s.holdMemory(ctx, ws.src, requestCost(len(body)))
	if f != nil {
		fail(f)
		return
	}
	defer main.release()
	hold.release()
	received := s.now()
	if !delivery.Timestamp.IsZero() {
		received = delivery.Timestamp
	}
	b, f := s.webhookBatch(ws, r.Header, body, received)
	if f != nil {
		fail(f)
		return
	}
	span.decoded(b)
	resp, f := s.publishBatch(ctx, "webhook", ws.src, b)
	if f != nil {
		span.fail(f)
		writeWebhookFailure(w, f) // counted by publishBatch
		return
	}
	code, wait := webhookStatus(resp.GetResults())
	if wait > 0 {
		w.Header().Set("Retry-After", retryAfterHeader(wait))
	}
	s.writeAnswerStatus(w, resp, code)
}

// readWebhook reads a delivery's body under the source's
// pre-authentication bounds, charged to its pool; the caller releases the
// hold.
func (s *Service) readWebhook(w http.ResponseWriter, r *http.Request, ws *webhookSource) ([]byte, *memoryHold, *Failure) {
	limit := ws.cfg.MaxBodyBytes
	if r.ContentLength > int64(limit) {
		skipBody(w, r)
		return nil, nil, &Failure{Reason: ingestv1.Reason_BATCH_TOO_LARGE,
			Message: fmt.Sprintf("body of %d bytes is over the source's limit of %d (webhook.max_body_bytes)", r.ContentLength, limit)}
	}
	if coding, f := requestCoding(r.Header); f != nil || coding != codingIdentity {
		skipBody(w, r)
		return nil, nil, &Failure{Reason: ingestv1.Reason_MALFORMED, Message: "a webhook body is taken as sent: no Content-Encoding"}
	}
	size := limit
	if r.ContentLength >= 0 {
		size = int(r.ContentLength)
	}
	// The pool is the source's alone, and waiting on it would hold a
	// connection for a sender that has not shown it may: no room now is
	// a refusal now, which a sender retries.
	hold, ok := ws.preauth.takeNow(int64(size) + webhookOverhead)
	if !ok {
		skipBody(w, r)
		s.metrics.webhookPreauthRefusals.WithLabelValues(ws.src.name).Inc()
		return nil, nil, &Failure{Reason: ingestv1.Reason_UNAVAILABLE, RetryAfter: s.cfg.UnavailableRetryAfter,
			Message: "the source's webhook bodies awaiting verification fill its pool (webhook.preauth_memory_bytes)"}
	}
	if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(ws.cfg.ReadTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		hold.release()
		return nil, nil, &Failure{Reason: ingestv1.Reason_UNAVAILABLE, RetryAfter: s.cfg.UnavailableRetryAfter, Message: "reading the body: " + err.Error()}
	}
	body, f := readBody(&requestBody{ReadCloser: r.Body, limit: int64(limit)}, size, r.ContentLength >= 0, func(error) *Failure { return nil })
	if f != nil {
		hold.release()
		switch {
		case f.Reason == ingestv1.Reason_BATCH_TOO_LARGE: // a body sent without a Content-Length, stopped past the limit
			f.Message = fmt.Sprintf("body is over the source's limit of %d bytes (webhook.max_body_bytes)", limit)
		case f.Reason == ingestv1.Reason_MALFORMED && strings.Contains(f.Message, "read timeout"):
			f.Message = fmt.Sprintf("the body did not arrive in full within %v (webhook.read_timeout)", ws.cfg.ReadTimeout)
		}
		return nil, nil, f
	}
	return body, hold, nil
}

// webhookBatch maps a verified delivery to the batch it publishes, each
// event with the record headers that let a consumer verify it again.
func (s *Service) webhookBatch(ws *webhookSource, h http.Header, body []byte, at time.Time) (*batch, *Failure) {
	extra := []kgo.RecordHeader{
		{Key: record.HeaderWebhookScheme, Value: []byte(ws.cfg.Scheme)},
		{Key: record.HeaderWebhookBody, Value: body},
	}
	for i, name := range ws.verifier.SignatureHeaders() {
		if v := h.Values(name); len(v) == 1 {
			extra = append(extra, kgo.RecordHeader{Key: ws.signed[i], Value: []byte(v[0])})
		}
	}
	b := &batch{size: len(body)}
	switch ws.cfg.Format {
	case WebhookFormatCloudEvents:
		return s.cloudEventsBatch(ws.src, h, body, at, extra)
	}
	ev, err := ws.mapping.Map(eventmap.Input{Doc: body, Header: h, Time: at})
	if err != nil {
		var ut *eventmap.UnknownTypeError
		if errors.As(err, &ut) {
			ev = &ingestv1.Event{}
			b.add(ev, reject(ingestv1.Reason_UNKNOWN_EVENT_TYPE, fmt.Sprintf("the delivery's type %.200q maps to no contract type (webhook.mapping.types)", ut.Type)), 1)
			b.extra = [][]kgo.RecordHeader{nil}
			return b, nil
		}
		field := "mapping"
		var fe *eventmap.FieldError
		if errors.As(err, &fe) {
			field = "mapping." + fe.Field
		}
		return nil, &Failure{Reason: ingestv1.Reason_MALFORMED, Message: "the delivery does not map to an event: " + err.Error(),
			Violations: []*ingestv1.FieldViolation{{Field: field, Rule: "sluice.webhook_mapping", Message: err.Error()}}}
	}
	b.add(ev, nil, 1)
	b.extra = [][]kgo.RecordHeader{extra}
	return b, nil
}

// webhookStatus is a webhook answer's status: 200 when every event is
// ACCEPTED or DUPLICATE; 503 with the longest Retry-After when any refusal
// is worth a retry (a sender retries on 5xx, so that is the only way to
// ask for one); else what batchHTTPStatus says of the refusals.
func webhookStatus(results []*ingestv1.EventResult) (int, time.Duration) {
	var wait time.Duration
	retry := false
	for _, r := range results {
		if rej := r.GetRejection(); r.GetOutcome() == ingestv1.Outcome_REJECTED && rej.GetRetryable() {
			retry = true
			wait = max(wait, rej.GetRetryAfter().AsDuration())
		}
	}
	if retry {
		return http.StatusServiceUnavailable, max(wait, time.Second)
	}
	code, _ := batchHTTPStatus(results)
	return code, 0
}

// writeWebhookFailure writes a whole-request failure as a sender
// understands it: a retryable one as 503 with Retry-After, whatever its
// reason's status (RATE_LIMITED's 429 is not retried by senders).
func writeWebhookFailure(w http.ResponseWriter, f *Failure) {
	if traits(f.Reason).retryable {
		writeFailureStatus(w, f, http.StatusServiceUnavailable)
		return
	}
	writeFailure(w, f)
}

// webhookRecordLimits are what a webhook source's events add to a record:
// the scheme, the body (an accepted one is its payload, within
// maxEventBytes) and each signed header (within webhook.MaxHeaderBytes).
func webhookRecordLimits(sources []SourceConfig, maxEventBytes int) (headers, bytes int) {
	for _, c := range sources {
		if c.Webhook == nil {
			continue
		}
		h := 2 + maxSignedHeaders
		n := len(record.HeaderWebhookScheme) + maxSchemeBytes + len(record.HeaderWebhookBody) + maxEventBytes +
			maxSignedHeaders*(len(record.WebhookHeaderPrefix)+maxHeaderNameBytes+webhook.MaxHeaderBytes)
		headers, bytes = max(headers, h), max(bytes, n)
	}
	return headers, bytes
}

// Bounds of a webhook's signed headers as records carry them.
const (
	maxSignedHeaders   = 3 // Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature
	maxHeaderNameBytes = 64
	maxSchemeBytes     = 16
)

// validWebhookPathName reports whether a source name can stand in its
// webhook path as it is: it is matched against the path as sent, escaped.
func validWebhookPathName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return name != "" && name != "." && name != ".."
}
