package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"
	"google.golang.org/grpc/metadata"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/gateway/envelope"
	"github.com/sluicehq/sluice/gateway/openapi"
	"github.com/sluicehq/sluice/gateway/webhook"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/record"
)

// Admitter makes records durable, in Kafka or in the local spool
// (*admission.Admission). out[i].Err is nil only once records[i] is durable,
// and out[i].Refusal says why not otherwise; Admit returns by ctx's
// deadline.
type Admitter interface {
	Admit(ctx context.Context, records []*kgo.Record) (out []admission.Admitted)
}

// Service implements sluice.ingest.v1.IngestService for gRPC and, through
// grpc-gateway, for REST.
type Service struct {
	cfg Config
	// contracts is the registry served now; a reload swaps it. A request
	// takes it once and is judged with it to the end.
	contracts *contract.Versions
	// docs is the REST API's description (HTTP.OpenAPI) of the registry
	// served, or nil.
	docs    *openapi.Docs
	pub     Admitter
	sources *sources
	dedup   *dedupWindow // nil when dedup is off
	// webhooks are the endpoints of the sources with a webhook block, by
	// source name.
	webhooks map[string]*webhookSource
	// topics are the event types' topics; topicNames the same topics by
	// their number.
	topics     map[string]topic
	topicNames []string
	now        func() time.Time
	log        *slog.Logger
	metrics    *metrics
	// skipValidation decodes payloads without their contracts' rules.
	skipValidation bool
	// tracer makes the gateway's spans when tracing is set (tracing.go);
	// without it the gateway makes none.
	tracer  trace.Tracer
	tracing bool
	// checking admits Limits.CheckingEvents events at a time to be checked.
	checking *semaphore.Weighted
	// memory and streamMemory are the two halves of
	// Limits.RequestMemoryBytes: one for requests (REST, unary gRPC), one
	// for PublishStream batches, so that neither can starve the other.
	// Each is shared among the sources (tenancy.go).
	memory, streamMemory *memoryBudget
	// replicas is the gateways the sources' rates are divided among
	// (SetReplicas); 1 until told otherwise. replicasMu orders the calls.
	replicasMu sync.Mutex
	replicas   int
	// streamWorkers are the streams' readers and senders, which outlive
	// their handler until the stream is closed.
	streamWorkers sync.WaitGroup
	// draining is closed when the server starts shutting down: streams
	// stop reading batches, answer those in flight and end, so that a
	// client's idle stream does not hold the shutdown to its deadline.
	draining  chan struct{}
	drainOnce sync.Once
	receiving receiving
	streams   streamSlots
	// conflictLog paces the log lines of IDEMPOTENCY_CONFLICT refusals
	// (every one is counted in sluice_events_total); conflictsUnlogged
	// counts those it held back since the last line.
	conflictLog       *rate.Limiter
	conflictsUnlogged atomic.Int64
}

// conflictLogRate and conflictLogBurst bound the log lines of refused
// conflicts: a sender that reuses ids in a loop fills the counters, not
// the log.
const (
	conflictLogRate  = 5
	conflictLogBurst = 20
)

// Option configures a Service.
type Option interface{ apply(*options) }

type options struct {
	now func() time.Time
	reg prometheus.Registerer
	log *slog.Logger
	// skipValidation is set only by WithoutValidation, which exists only
	// in benchmark builds.
	skipValidation bool
	tp             trace.TracerProvider
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithClock replaces time.Now, for the skew window and the dedup window.
func WithClock(now func() time.Time) Option { return optionFunc(func(o *options) { o.now = now }) }

// WithRegisterer registers the gateway's metrics on r; by default none
// are. Nothing unregisters them. On an r that holds them already (another
// Service's), New fails with an error wrapping
// prometheus.AlreadyRegisteredError and leaves r as it was: two Services'
// counts in one series would read as one gateway's, and each one's gauges
// (dedup entries, request memory) are its own. Services that share a
// registry each register through prometheus.WrapRegistererWith, under the
// same label name with a value of their own.
func WithRegisterer(r prometheus.Registerer) Option {
	return optionFunc(func(o *options) { o.reg = r })
}

// WithLogger replaces slog.Default(). A nil logger keeps it.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) {
		if l != nil {
			o.log = l
		}
	})
}

// New builds the service. cfg must pass Validate. contracts is the
// registry served, swapped by a reload (PrepareContracts, then
// contracts.Swap); a request is judged by the registry served when it
// began.
func New(cfg Config, contracts *contract.Versions, pub Admitter, opts ...Option) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{now: time.Now, log: slog.Default()}
	for _, opt := range opts {
		opt.apply(&o)
	}
	s := &Service{
		cfg:            cfg,
		contracts:      contracts,
		pub:            pub,
		sources:        newSources(cfg.Sources, cfg.Limits.MaxRequestBytes),
		topics:         map[string]topic{},
		now:            o.now,
		log:            o.log,
		skipValidation: o.skipValidation,
		conflictLog:    rate.NewLimiter(conflictLogRate, conflictLogBurst),
		draining:       make(chan struct{}),
	}
	s.tracer, s.tracing = tracerOf(o.tp)
	registry := contracts.Registry()
	for _, t := range registry.Types() {
		name := record.TopicOf(cfg.Topics, t)
		s.topics[t] = topic{name: name, num: len(s.topicNames)}
		s.topicNames = append(s.topicNames, name)
	}
	for t := range cfg.Topics {
		if _, ok := s.topics[t]; !ok {
			return nil, fieldErr("topics."+t, "no contract of that type is loaded")
		}
	}
	var err error
	if cfg.HTTP.OpenAPI {
		if s.docs, err = openapi.New(contracts.Registry, docsLimits(cfg.Limits), o.log); err != nil {
			return nil, err
		}
	}
	var dedupLen func() float64
	if cfg.Dedup.Window > 0 {
		s.dedup = newDedupWindow(cfg.Dedup, o.now, func() { s.metrics.dedupEvictions.Inc() })
		dedupLen = func() float64 { return float64(s.dedup.len()) }
	} else {
		dedupLen = func() float64 { return 0 }
	}
	if s.metrics, err = newMetrics(o.reg, dedupLen, func() float64 { return s.memory.inUse() }, func() float64 { return s.streamMemory.inUse() }); err != nil {
		return nil, err
	}
	if err := s.newTenancies(); err != nil {
		return nil, err
	}
	if err := s.registerSourceGauges(o.reg); err != nil {
		return nil, err
	}
	s.replicas = 1
	s.metrics.initLabels(sourceNames(cfg.Sources), registry.Types())
	if s.webhooks, err = s.newWebhookSources(registryTypes{registry}, []webhook.Option{webhook.WithClock(o.now), webhook.WithLogger(o.log)}); err != nil {
		return nil, err
	}
	for name, ws := range s.webhooks {
		s.metrics.initWebhook(name)
		s.log.Info("webhook source", "source", name, "path", webhookPath+name, "scheme", ws.cfg.Scheme, "format", ws.cfg.Format)
	}
	if err := registerWebhookPools(o.reg, s.webhooks); err != nil {
		return nil, err
	}
	s.checking = semaphore.NewWeighted(int64(cfg.Limits.CheckingEvents))
	s.receiving.timeout = cfg.Limits.ReceiveTimeout
	return s, nil
}

// refusal is event i's refusal from decoding, if it did not decode.
func (b *batch) refusal(i int) *ingestv1.Rejection {
	if b.refused == nil {
		return nil
	}
	return b.refused[i]
}

// checkingUnitBytes is the request bytes that weigh as much as one event
// in the checking gate: checking costs by the bytes decoded and validated
// as well as by the events.
const checkingUnitBytes = 8 << 10

// checkingWeight is a request's place in the checking gate: its events, or
// its bytes in units of checkingUnitBytes if that is more, at most the
// whole gate.
func (s *Service) checkingWeight(events, bytes int) int {
	return min(max(events, (bytes+checkingUnitBytes-1)/checkingUnitBytes), s.cfg.Limits.CheckingEvents)
}

// waitTurn waits for room to check n events: at most Limits.MaxQueueWait,
// and at most half of what ctx's deadline leaves, so that a request that
// got its turn still has time to be checked and published. It returns nil,
// and the caller hands the turn back with s.checking.Release(n), or the
// rejection of a request that did not get its turn.
func (s *Service) waitTurn(ctx context.Context, n int64) *ingestv1.Rejection {
	// With room now and no one waiting, the turn is taken without the
	// timer and context a wait needs.
	if ctx.Err() == nil && s.checking.TryAcquire(n) {
		return nil
	}
	wait := s.cfg.Limits.MaxQueueWait
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d)/2)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := s.checking.Acquire(wctx, n); err != nil {
		s.metrics.shed.Add(float64(n))
		return s.unavailable(fmt.Sprintf("the gateway is at capacity: no room to check %d events within %v", n, wait.Round(time.Millisecond)))
	}
	return nil
}

// publishBatch judges one decoded request, REST or unary gRPC. A
// whole-request failure (the rate, the limits, a request that did not
// decode) is returned as a *Failure; every other outcome is a per-event
// result. For gRPC, a request whose every event was refused for the same
// pressure reason is a whole-request failure too (pushBack).
func (s *Service) publishBatch(ctx context.Context, transport string, src *source, b *batch) (*ingestv1.PublishResponse, *Failure) {
	if f := s.admitBatch(src, b); f != nil {
		s.metrics.requests.WithLabelValues(transport, f.Reason.String()).Inc()
		return nil, f
	}
	s.metrics.requests.WithLabelValues(transport, "ok").Inc()
	s.metrics.requestEvents.Observe(float64(len(b.events)))
	results := s.judge(ctx, src, b)
	if transport == "grpc" {
		if f := pushBack(results); f != nil {
			return nil, f
		}
	}
	return &ingestv1.PublishResponse{Results: results}, nil
}

// source is the caller's source: the one the gRPC tap or authenticateREST
// found, or, for a call that came another way, the one its metadata names.
func (s *Service) source(ctx context.Context) (*source, *Failure) {
	if src, ok := sourceOf(ctx); ok {
		return src, nil
	}
	return s.sources.authenticate(ctx)
}

// Ingest judges events that sluice pulled itself (a poller) under the
// given source name: the same checks, dedup window and admission as pushed
// events and a result for every event, by index. Authentication, the
// per-request limits and a source's rate do not apply: a poller is trusted
// and paces itself against its partner.
func (s *Service) Ingest(ctx context.Context, sourceName string, events []*ingestv1.Event) []*ingestv1.EventResult {
	return s.judge(ctx, &source{name: sourceName}, &batch{events: events})
}

// pushBack turns a request whose every event was refused for the same
// pressure reason (BUFFER_FULL or UNAVAILABLE) into a whole-request
// UNAVAILABLE with ErrorInfo and RetryInfo, so a gRPC client's retry policy
// sees it; REST says the same with 503 and Retry-After (batchHTTPStatus).
func pushBack(results []*ingestv1.EventResult) *Failure {
	if len(results) == 0 {
		return nil
	}
	first := results[0].GetRejection()
	var wait time.Duration
	for _, r := range results {
		rej := r.GetRejection()
		if r.GetOutcome() != ingestv1.Outcome_REJECTED || rej.GetReason() != first.GetReason() || !rej.GetRetryable() {
			return nil
		}
		wait = max(wait, rej.GetRetryAfter().AsDuration())
	}
	switch first.GetReason() {
	case ingestv1.Reason_BUFFER_FULL, ingestv1.Reason_UNAVAILABLE:
		return &Failure{Reason: first.GetReason(), RetryAfter: wait, Message: first.GetMessage()}
	}
	return nil
}

// admitBatch applies the whole-request limits and the source's rates
// (events/s, and bytes/s unless b's bytes were taken before it was read),
// and counts b's bytes as the source's received.
func (s *Service) admitBatch(src *source, b *batch) *Failure {
	events, size := b.events, b.size
	if src.tenancy != nil {
		src.receivedBytes.Add(float64(size))
	}
	l := s.cfg.Limits
	if len(events) > l.MaxEventsPerRequest {
		return &Failure{Reason: ingestv1.Reason_BATCH_TOO_LARGE,
			Message: fmt.Sprintf("%d events is over the limit of %d per request", len(events), l.MaxEventsPerRequest)}
	}
	if size > l.MaxRequestBytes {
		return &Failure{Reason: ingestv1.Reason_BATCH_TOO_LARGE,
			Message: fmt.Sprintf("%d bytes is over the limit of %d per request", size, l.MaxRequestBytes)}
	}
	return src.admit(s.now(), len(events), size, b.paid)
}

// refuseAll answers every event of a batch with a whole-batch failure; a
// stream keeps going after one batch is refused.
func (s *Service) refuseAll(src *source, events []*ingestv1.Event, f *Failure) []*ingestv1.EventResult {
	results := make([]*ingestv1.EventResult, len(events))
	for i, ev := range events {
		results[i] = rejected(i, ev.GetId(), f.rejection())
	}
	s.count(src, events, results)
	return results
}

// candidate is an event that passed every check and waits to be published.
type candidate struct {
	index    int
	event    *ingestv1.Event
	contract *contract.Contract
	value    []byte
	key      digest          // the dedup window's digest of (source, id); dedup on only
	wait     <-chan struct{} // set while another publish of the id is in flight
	topic    topic           // set when it is published
	// first is the candidate of the same id earlier in the request, for a
	// repeat.
	first *candidate
	// extra are the record headers the event adds (batch.extra).
	extra []kgo.RecordHeader
	// sum is the payload's fingerprint once computed (hasSum): taken for
	// every event with dedup on, and otherwise only for an id the request
	// repeats.
	sum    [sha256.Size]byte
	hasSum bool
}

// fingerprint is the payload's fingerprint: the SHA-256 of its canonical
// binary (contract.Canonical), as the sinks take it. A JSON payload's
// value is canonical already (CheckJSON); a binary one is proven so, or
// re-encoded.
func (c *candidate) fingerprint() ([sha256.Size]byte, error) {
	if !c.hasSum {
		canon := c.value
		if c.event.GetJson() == "" {
			var err error
			if canon, err = c.contract.Canonical(c.value); err != nil {
				return c.sum, err
			}
		}
		c.sum, c.hasSum = sha256.Sum256(canon), true
	}
	return c.sum, nil
}

// print is what the dedup window keeps of the fingerprint; fingerprint
// must have been taken.
func (c *candidate) print() payloadPrint { return payloadPrint(binary.BigEndian.Uint64(c.sum[:8])) }

// String is the print as a fingerprint's prefix: "sha256:" and its 16 hex
// digits.
func (p payloadPrint) String() string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(p))
	return fingerprintPrefix + hex.EncodeToString(b[:])
}

// fingerprintPrefix names the digest of a payload fingerprint, as the
// sinks write it.
const fingerprintPrefix = "sha256:"

func formatFingerprint(sum [sha256.Size]byte) string {
	return fingerprintPrefix + hex.EncodeToString(sum[:])
}

// judge checks, deduplicates and publishes a batch, and answers every
// event. It returns once every accepted event is acknowledged by Kafka and
// every other event has its rejection.
func (s *Service) judge(ctx context.Context, src *source, b *batch) []*ingestv1.EventResult {
	events := b.events
	results := make([]*ingestv1.EventResult, len(events))
	pctx, cancel := context.WithDeadline(ctx, s.publishDeadline(ctx))
	defer cancel()
	tr := s.recordTraceOf(ctx)
	if tr.span != nil {
		tr.links = b.links
	}
	ingestedAt := s.now()
	registry := s.contracts.Registry()

	turn := int64(s.checkingWeight(len(events), b.size))
	if rej := s.waitTurn(pctx, turn); rej != nil {
		for i, ev := range events {
			results[i] = rejected(i, ev.GetId(), rej)
		}
		s.count(src, events, results)
		tr.outcomes(results)
		return results
	}
	var owners, waiters []*candidate
	// seen finds an id repeated in the batch; one event repeats none.
	var seen map[string]*candidate
	if len(events) > 1 {
		seen = make(map[string]*candidate, len(events))
	}
	violations := s.cfg.Limits.MaxViolationsPerResponse
	for i, ev := range events {
		rej := b.refusal(i)
		var c *candidate
		if rej == nil {
			c, rej = s.check(registry, src, ev, ingestedAt)
		}
		if rej != nil {
			violations -= capViolations(rej, min(violations, s.cfg.Limits.MaxViolationsPerEvent))
			results[i] = rejected(i, ev.GetId(), rej)
			continue
		}
		c.index = i
		if b.extra != nil {
			c.extra = b.extra[i]
		}
		if seen != nil {
			if first := seen[ev.GetId()]; first != nil {
				// The same id earlier in this batch: judged after it settles.
				c.first = first
				waiters = append(waiters, c)
				continue
			}
			seen[ev.GetId()] = c
		}
		if s.dedup == nil {
			owners = append(owners, c)
			continue
		}
		owners, waiters = s.claim(src, c, results, owners, waiters)
	}
	// The rest waits on Kafka or the spool, not on this CPU.
	s.checking.Release(turn)
	if tr.span != nil {
		tr.checked(results, len(owners)+len(waiters))
		if s.dedup != nil {
			tr.event("dedup", attribute.Int("owned", len(owners)), attribute.Int("waiting", len(waiters)))
		}
	}
	s.publish(pctx, src, owners, results, tr, ingestedAt)

	// Ids that were being published elsewhere, or repeated in this batch:
	// wait for that attempt, then they are duplicates or ours to publish.
	for round := 0; len(waiters) > 0 && round < 3; round++ {
		var again []*candidate
		owners = owners[:0]
		for _, c := range waiters {
			if c.wait != nil {
				select {
				case <-c.wait:
				case <-pctx.Done():
					results[c.index] = rejected(c.index, c.event.GetId(), s.unavailable("an earlier attempt of this event id is still being published"))
					continue
				}
			}
			if s.dedup == nil {
				// Dedup off: a repeat is published again, unless it
				// carries another payload than the accepted first.
				if results[c.index] = s.repeat(src, c, results); results[c.index] == nil {
					owners = append(owners, c)
				}
				continue
			}
			owners, again = s.claim(src, c, results, owners, again)
		}
		s.publish(pctx, src, owners, results, tr, ingestedAt)
		waiters = again
	}
	for _, c := range waiters {
		results[c.index] = rejected(c.index, c.event.GetId(), s.unavailable("this event id is being published by another request"))
	}
	s.count(src, events, results)
	tr.outcomes(results)
	return results
}

// publishDeadline is when events stop waiting for Kafka: PublishTimeout
// from now, or a little before the caller's own deadline, so the caller
// hears UNAVAILABLE instead of its deadline passing unanswered.
func (s *Service) publishDeadline(ctx context.Context) time.Time {
	now := time.Now()
	d := now.Add(s.cfg.PublishTimeout)
	if cd, ok := ctx.Deadline(); ok {
		margin := cd.Sub(now) / 10
		if margin > 250*time.Millisecond {
			margin = 250 * time.Millisecond
		}
		if cd = cd.Add(-margin); cd.Before(d) {
			d = cd
		}
	}
	return d
}

// check runs every per-event check short of dedup and publishing, with
// the batch's registry. now is when the batch arrived, which the skew
// window is around.
func (s *Service) check(registry *contract.Registry, src *source, ev *ingestv1.Event, now time.Time) (*candidate, *ingestv1.Rejection) {
	if !envelope.Valid(ev) {
		if err := registry.Validate(ev); err != nil {
			return nil, violationRejection(err, "")
		}
	}
	typ := ev.GetType()
	if !src.mayPublish(typ) {
		return nil, reject(ingestv1.Reason_FORBIDDEN_EVENT_TYPE, fmt.Sprintf("source %s may not publish %s", src.name, typ))
	}
	c, ok := registry.Lookup(typ)
	if !ok {
		return nil, reject(ingestv1.Reason_UNKNOWN_EVENT_TYPE, "no contract is loaded for type "+typ)
	}
	size := len(ev.GetBinary()) + len(ev.GetJson())
	if size > s.cfg.Limits.MaxEventBytes {
		return nil, reject(ingestv1.Reason_EVENT_TOO_LARGE,
			fmt.Sprintf("payload of %d bytes is over the limit of %d", size, s.cfg.Limits.MaxEventBytes))
	}
	at := ev.GetOccurredAt().AsTime()
	if at.Before(now.Add(-s.cfg.Limits.MaxEventAge)) || at.After(now.Add(s.cfg.Limits.MaxEventFuture)) {
		r := reject(ingestv1.Reason_EVENT_TIME_OUT_OF_RANGE, fmt.Sprintf(
			"occurred_at %s is outside [now-%s, now+%s]", at.Format(time.RFC3339), s.cfg.Limits.MaxEventAge, s.cfg.Limits.MaxEventFuture))
		r.Violations = []*ingestv1.FieldViolation{{Field: "occurred_at", Rule: "sluice.skew_window", Message: r.Message}}
		return nil, r
	}
	var value []byte
	var err error
	switch {
	case s.skipValidation && ev.GetJson() != "":
		value, err = c.DecodeJSON(readOnlyBytes(ev.GetJson()))
	case s.skipValidation:
		value, err = c.DecodeBinary(ev.GetBinary())
	case ev.GetJson() != "" && src.allowUnknown[typ]:
		// A sender that adds fields without notice, on purpose
		// (webhook.allow_unknown_fields): the contract's fields are
		// checked and published, the rest passed over.
		value, err = c.CheckJSONAllowUnknown(readOnlyBytes(ev.GetJson()))
	case ev.GetJson() != "":
		value, err = c.CheckJSON(readOnlyBytes(ev.GetJson()))
	default:
		value, err = c.CheckBinary(ev.GetBinary())
	}
	if err != nil {
		return nil, violationRejection(err, "payload.")
	}
	if len(value) > s.cfg.Limits.MaxEventBytes {
		// JSON that is smaller than its binary form (packed numbers, say):
		// the record must stay within what the spool and Kafka were sized
		// for (RecordLimits).
		return nil, reject(ingestv1.Reason_EVENT_TOO_LARGE, fmt.Sprintf(
			"payload of %d bytes in protobuf binary is over the limit of %d", len(value), s.cfg.Limits.MaxEventBytes))
	}
	cand := &candidate{event: ev, contract: c, value: value}
	if s.dedup != nil {
		cand.key = s.dedup.digest(dedupKey{source: src.name, id: ev.GetId()})
		if _, err := cand.fingerprint(); err != nil {
			return nil, violationRejection(err, "payload.")
		}
	}
	return cand, nil
}

// claim claims c's id in the dedup window and files c by the answer:
// results[c.index] is set when the window settles it (DUPLICATE, or
// IDEMPOTENCY_CONFLICT: accepted with another payload); c joins waiters,
// with c.wait set, when another publish of the id is in flight; c joins
// owners when it is to be published. It returns owners and waiters.
func (s *Service) claim(src *source, c *candidate, results []*ingestv1.EventResult, owners, waiters []*candidate) ([]*candidate, []*candidate) {
	cl := s.dedup.claim(c.key, c.print())
	c.wait = cl.wait
	switch {
	case cl.duplicate:
		results[c.index] = s.duplicate(c.index, c.event.GetId(), cl.origin)
	case cl.conflict:
		accepted := cl.accepted.String()
		if c.first != nil && c.first.print() == cl.accepted {
			// A repeat in the request of the payload accepted: known
			// whole.
			accepted = formatFingerprint(c.first.sum)
		}
		results[c.index] = s.conflict(src, c, accepted, "the dedup window")
	case cl.wait != nil:
		waiters = append(waiters, c)
	default:
		owners = append(owners, c)
	}
	return owners, waiters
}

// repeat judges c, a repeat of an id earlier in its request, with dedup
// off: nil when c is to be published again (its first was not accepted,
// or c carries the same payload), else its IDEMPOTENCY_CONFLICT.
func (s *Service) repeat(src *source, c *candidate, results []*ingestv1.EventResult) *ingestv1.EventResult {
	if results[c.first.index].GetOutcome() != ingestv1.Outcome_ACCEPTED {
		return nil
	}
	first, err := c.first.fingerprint()
	if err != nil {
		return rejected(c.index, c.event.GetId(), violationRejection(err, "payload."))
	}
	mine, err := c.fingerprint()
	if err != nil {
		return rejected(c.index, c.event.GetId(), violationRejection(err, "payload."))
	}
	if mine == first {
		return nil
	}
	return s.conflict(src, c, formatFingerprint(first), "the request")
}

// conflict refuses c, whose id was accepted with the payload whose
// fingerprint is accepted: IDEMPOTENCY_CONFLICT, with both fingerprints,
// logged (at most conflictLogRate lines a second). where says what
// caught it.
func (s *Service) conflict(src *source, c *candidate, accepted, where string) *ingestv1.EventResult {
	id := c.event.GetId()
	fp := formatFingerprint(c.sum)
	r := reject(ingestv1.Reason_IDEMPOTENCY_CONFLICT, fmt.Sprintf(
		"event id %q was accepted with another payload: an id names one event, send a new payload under an id of its own", id))
	r.Conflict = &ingestv1.PayloadConflict{Fingerprint: fp, AcceptedFingerprint: accepted}
	if s.conflictLog.Allow() {
		s.log.Warn("event refused IDEMPOTENCY_CONFLICT: its id was accepted with another payload",
			"source", src.name, "id", id, "type", c.event.GetType(), "fingerprint", fp, "accepted_fingerprint", accepted,
			"caught_by", where, "not_logged_before", s.conflictsUnlogged.Swap(0))
	} else {
		s.conflictsUnlogged.Add(1)
	}
	return rejected(c.index, id, r)
}

// violationRejection maps a contract error to MALFORMED or SCHEMA_VIOLATION.
// prefix is put before field paths into the payload.
func violationRejection(err error, prefix string) *ingestv1.Rejection {
	var ve *contract.ViolationError
	if errors.As(err, &ve) {
		r := reject(ingestv1.Reason_SCHEMA_VIOLATION, "")
		for _, v := range ve.Violations {
			field := prefix + v.Field
			if v.Field == "" { // a rule on the whole message
				field = strings.TrimSuffix(prefix, ".")
			}
			r.Violations = append(r.Violations, &ingestv1.FieldViolation{Field: field, Rule: v.Rule, Message: v.Message})
		}
		if len(r.Violations) > 0 {
			r.Message = fmt.Sprintf("%d contract rule(s) failed, first: %s: %s", len(r.Violations), r.Violations[0].Field, r.Violations[0].Message)
		}
		if ve.Partial {
			r.Message = fmt.Sprintf("a contract rule failed: %s: %s (a payload over %d bytes is reported by its first failed rule only)",
				r.Violations[0].Field, r.Violations[0].Message, contract.FullReportBytes)
		}
		return r
	}
	var me *contract.MalformedError
	if errors.As(err, &me) {
		// The decoder's own error names what it could not read (a field,
		// 1e999, a bad escape).
		msg := me.Msg
		if me.Err != nil {
			msg += ": " + me.Err.Error()
		}
		r := reject(ingestv1.Reason_MALFORMED, msg)
		if prefix != "" {
			r.Violations = []*ingestv1.FieldViolation{{Field: "payload", Rule: "sluice.decode", Message: msg}}
		}
		return r
	}
	return reject(ingestv1.Reason_MALFORMED, err.Error())
}

// capViolations keeps at most n of r's violations and says in its message
// how many were left out; it returns how many it kept.
func capViolations(r *ingestv1.Rejection, n int) int {
	n = max(n, 0)
	if len(r.Violations) <= n {
		return len(r.Violations)
	}
	left := len(r.Violations) - n
	r.Violations = r.Violations[:n:n]
	r.Message += fmt.Sprintf(" (%d violations listed, and %d more)", n, left)
	return n
}

// publish sends the candidates to Kafka in batch order, so events with one
// key keep their order, and settles their dedup claims.
func (s *Service) publish(ctx context.Context, src *source, cands []*candidate, results []*ingestv1.EventResult, tr recordTrace, ingestedAt time.Time) {
	if len(cands) == 0 {
		return
	}
	records := make([]*kgo.Record, len(cands))
	// sends are the events' `send` spans when the request's span records.
	var sends []trace.Span
	if tr.span != nil {
		sends = make([]trace.Span, len(cands))
	}
	for i, c := range cands {
		ev := c.event
		c.topic = s.topics[ev.GetType()]
		tp, ts := tr.tp, tr.ts
		if sends != nil {
			sends[i] = s.startSend(ctx, c.topic.name, ev.GetId(), tr.link(c.index))
			tp, ts = tracing.Headers(sends[i].SpanContext())
		}
		records[i] = record.NewEvent(&record.Event{
			Topic: c.topic.name,
			// Kafka's client only reads a key; without a partition key,
			// NewRecord keys the record by its id.
			Key:         readOnlyBytes(ev.GetPartitionKey()),
			Value:       c.value,
			ID:          ev.GetId(),
			Type:        ev.GetType(),
			Source:      src.name,
			OccurredAt:  ev.GetOccurredAt().AsTime(),
			IngestedAt:  ingestedAt,
			Fingerprint: c.contract.Fingerprint(),
			Traceparent: tp,
			Tracestate:  ts,
			Attributes:  ev.GetAttributes(),
			Extra:       c.extra,
		})
		if sends != nil {
			// The producer ends the span at Kafka's ack
			// (publish.WithTracerProvider). The context has no deadline:
			// the client fails a record whose context is done.
			records[i].Context = trace.ContextWithSpan(context.Background(), sends[i])
		}
	}
	admitted := s.pub.Admit(ctx, records)
	for i, span := range sends {
		endSend(span, admitted[i])
	}
	tr.admitted(admitted)
	// The accepted results are one allocation with their Kafka positions,
	// and the spooled ones' positions one more; they share their
	// durability.
	accepted := make([]kafkaResult, len(cands))
	var spooled []spoolPosition
	durability := []ingestv1.Durability{ingestv1.Durability_KAFKA, ingestv1.Durability_LOCAL_DISK}
	for i, c := range cands {
		a := admitted[i]
		if a.Err != nil {
			if s.dedup != nil {
				s.dedup.settle(c.key, false, origin{}, 0)
			}
			results[c.index] = rejected(c.index, c.event.GetId(), s.admitRejection(a))
			continue
		}
		k := &accepted[i]
		r := &k.result
		r.Index, r.Id, r.Outcome, r.Durability = uint32(c.index), c.event.GetId(), ingestv1.Outcome_ACCEPTED, &durability[0]
		var o origin
		switch a.Durability {
		case admission.DurabilityKafka:
			k.set(c.topic.name, a.Partition, a.Offset)
			o = kafkaOrigin(c.topic.num, a.Partition, a.Offset)
		case admission.DurabilityLocalDisk:
			if spooled == nil {
				spooled = make([]spoolPosition, len(cands))
			}
			r.Durability = &durability[1]
			spooled[i].set(r, a.Spool.Segment, a.Spool.Offset)
			o = spoolOrigin(a.Spool)
		}
		if s.dedup != nil {
			s.dedup.settle(c.key, true, o, c.print())
		}
		results[c.index] = r
	}
}

// admitRejection maps a record that was not made durable, by the kind of
// refusal admission judged: a full spool is BUFFER_FULL with the spool's
// estimate of the wait; a record too large for Kafka or the spool is the
// event's fault; anything else is the gateway's, retryable unless Kafka
// refused the record for good.
func (s *Service) admitRejection(a admission.Admitted) *ingestv1.Rejection {
	err := a.Err
	switch a.Refusal {
	case admission.RefusedFull:
		wait := a.RetryAfter
		if wait <= 0 {
			wait = s.cfg.UnavailableRetryAfter
		}
		var share *admission.SourceFullError
		if errors.As(err, &share) {
			return rejectRetry(ingestv1.Reason_BUFFER_FULL, wait, fmt.Sprintf(
				"source %s is over its share of the gateway's spool: it holds %d bytes of the %d it may hold now; the others' shares are untouched",
				share.Source, share.Held, share.Limit))
		}
		return rejectRetry(ingestv1.Reason_BUFFER_FULL, wait, "the gateway's spool is full: "+err.Error())
	case admission.RefusedTooLargeForKafka:
		return reject(ingestv1.Reason_EVENT_TOO_LARGE, "Kafka refused the record as too large")
	case admission.RefusedTooLargeForSpool:
		return reject(ingestv1.Reason_EVENT_TOO_LARGE, "the record is too large for the gateway's spool: "+err.Error())
	case admission.RefusedPermanent:
		s.log.Error("kafka refused a record permanently", "err", err)
		r := reject(ingestv1.Reason_UNAVAILABLE, "Kafka refused the record: "+err.Error())
		r.Retryable = false
		return r
	}
	// RefusedRetryable, or an Admitter that gave its error and no kind:
	// doubtful refusals are retryable.
	return s.unavailable("Kafka did not acknowledge in time: " + err.Error())
}

func (s *Service) unavailable(msg string) *ingestv1.Rejection {
	return rejectRetry(ingestv1.Reason_UNAVAILABLE, s.cfg.UnavailableRetryAfter, msg)
}

// count adds each event's result to sluice_events_total, by source, type
// (only loaded ones), outcome and reason.
func (s *Service) count(src *source, events []*ingestv1.Event, results []*ingestv1.EventResult) {
	// Neighbours mostly share their labels (a batch is mostly one type and
	// one outcome): each run of them is one lookup of the counter.
	var run [3]string
	n := 0
	flush := func() {
		if n > 0 {
			s.metrics.events.WithLabelValues(src.name, run[0], run[1], run[2]).Add(float64(n))
		}
	}
	for i, r := range results {
		typ := events[i].GetType()
		if _, ok := s.topics[typ]; !ok {
			typ = "unknown" // callers choose the type; only loaded ones become labels
		}
		reason := ""
		if r.GetOutcome() == ingestv1.Outcome_REJECTED {
			reason = r.GetRejection().GetReason().String()
		}
		if labels := [3]string{typ, r.GetOutcome().String(), reason}; labels != run {
			flush()
			run, n = labels, 0
		}
		n++
	}
	flush()
}

func rejected(i int, id string, r *ingestv1.Rejection) *ingestv1.EventResult {
	return &ingestv1.EventResult{Index: uint32(i), Id: id, Outcome: ingestv1.Outcome_REJECTED, Rejection: r}
}

func metadataOf(ctx context.Context) metadata.MD {
	md, _ := metadata.FromIncomingContext(ctx)
	return md
}

// readOnlyBytes is s's bytes, not copied, for a reader that does not
// write to them: the contract's JSON checks only read their input (their
// output is a buffer of its own), and a payload is otherwise copied once
// more per event.
func readOnlyBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// PrepareContracts checks that next can be served in place of the
// registry served now and builds what serving it needs (the REST API's
// description), so that a reload fails before its swap, not after. next
// must hold every type the service publishes.
func (s *Service) PrepareContracts(next *contract.Registry) error {
	for typ := range s.topics {
		if _, ok := next.Lookup(typ); !ok {
			return fmt.Errorf("gateway: the new contracts lack %s, which the gateway publishes", typ)
		}
	}
	if s.docs != nil {
		return s.docs.Prepare(next)
	}
	return nil
}
