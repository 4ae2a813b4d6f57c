package dlq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"golang.org/x/time/rate"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/record"
)

// ReplayOptions govern a replay.
type ReplayOptions struct {
	// DryRun reports what would be replayed and produces nothing but the
	// audit records.
	DryRun bool
	// Rate bounds records replayed per second.
	Rate float64
	// Actor is who asked, for the audit records and the
	// record.HeaderReplayActor header of every record replayed: 1 to
	// record.MaxReplayActorBytes of UTF-8 without control characters.
	Actor string
	// Topics are the ingest topics a replay may produce to (the consumer's
	// source topics); the destination, the DLQ or parked topic's own
	// source topic, must be one of them. Required.
	Topics []string
	// Registry holds the contracts every record is checked against before
	// it is replayed (CheckContract), as the one version kept of each
	// type: a record of another schema version is checked against it when
	// it can read the value without loss, and refused (RefusedContract,
	// an *UnknownVersionError) when it cannot; such a record is replayed
	// with the descriptor set that has its version. Required.
	Registry *contract.Registry
	// Progress, when not nil, receives a line rewritten in place (\r) as
	// the replay goes.
	Progress io.Writer
	// Each, when not nil, is called with every selected dead letter after
	// it is checked and before it is replayed (or, in a dry run, instead),
	// with the *ReplayRefusal that keeps it from being replayed, or nil.
	Each func(DeadLetter, error)
	// Now stamps the audit records; time.Now when nil.
	Now func() time.Time
	// Auditor records the replayed row (audit.Replayed) of every
	// record replayed, once Kafka acknowledged it: the deployment's table
	// sink, where the consumer records its decisions (sluice dlq replay
	// passes the config's SQL sink). When nil, the rows go to
	// record.AuditTopic as Decisions, through the replay's client.
	Auditor audit.Writer
	// TracerProvider traces the replay: a root `replay {topic}` span, and
	// a `replay record` span per record produced, its child, linked to the
	// trace the dead letter carries; the replayed record carries the
	// `replay record` span's context. The no-op provider when nil.
	TracerProvider trace.TracerProvider
}

// Audit record actions. A replay writes AuditStarted before it produces
// anything and AuditFinished, with its counts and outcome, when it ends,
// also when it fails part way or is canceled.
const (
	AuditStarted  = "replay.started"
	AuditFinished = "replay.finished"
)

// ReplayReport is what a replay did; it is also the audit record.
type ReplayReport struct {
	// Kind is record.KindReplay in the audit records.
	Kind string `json:"kind"`
	// Action is AuditStarted or AuditFinished; ReplayID is the same in
	// both records of one replay and in the record.HeaderReplayID header
	// of every record it replays.
	Action   string `json:"action"`
	ReplayID string `json:"replay_id"`
	Actor    string `json:"actor"`
	// StartedAt is in both records, EndedAt only in the finished one.
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Topic is the DLQ or parked topic replayed, Destination its source
	// topic, where records are produced.
	Topic       string    `json:"topic"`
	Destination string    `json:"destination"`
	Selection   Selection `json:"selection"`
	DryRun      bool      `json:"dry_run"`
	Rate        float64   `json:"rate"`
	// Scanned counts records read, Matched those selected, Replayed those
	// produced to the destination (in a dry run, that would be). The
	// others refused, never replayed: Unreadable, records whose envelope
	// does not parse; Mismatched, records whose envelope names a source
	// topic other than the destination; Invalid, records whose value is
	// not a valid event of its contract (unknown type, bad sluice headers,
	// undecodable, breaking the contract's rules, or cut to fit).
	Scanned    int `json:"scanned"`
	Matched    int `json:"matched"`
	Replayed   int `json:"replayed"`
	Unreadable int `json:"unreadable"`
	Mismatched int `json:"mismatched"`
	Invalid    int `json:"invalid"`
	// Outcome is "ok" or the error, in the finished record.
	Outcome string `json:"outcome,omitempty"`
}

// Reasons of a ReplayRefusal.
const (
	RefusedUnreadable = "unreadable_envelope"
	RefusedMismatch   = "source_mismatch"
	RefusedContract   = "contract"
)

// ReplayRefusal is why a selected dead letter is not replayed.
type ReplayRefusal struct {
	// Reason is RefusedUnreadable, RefusedMismatch or RefusedContract.
	Reason string
	Err    error
}

func (e *ReplayRefusal) Error() string {
	return "dlq: replay refused (" + e.Reason + "): " + e.Err.Error()
}

func (e *ReplayRefusal) Unwrap() error { return e.Err }

var (
	// ErrNoActor is returned by Replay without an actor to audit.
	ErrNoActor = errors.New("dlq: replay needs an actor for the audit record")
	// ErrNoContracts is returned by Replay without the topics it may
	// produce to or the contracts to check records against.
	ErrNoContracts = errors.New("dlq: replay needs the ingest topics and the contract registry")
)

// Replay re-produces the selected dead letters of topic, a DLQ or parked
// topic, to its source topic (the sink deduplicates by event id), at most
// opts.Rate a second. The destination comes from topic's name, never from
// a record's envelope, and must be one of opts.Topics. Each record is
// checked first: its envelope must name the destination as its source and
// its value must pass its contract; records that fail are counted and not
// produced. Records are produced with their original key, value and
// headers, envelope removed, and the replay's id and actor
// (record.WithReplay). Once Kafka acknowledged a record, its replayed row
// goes to opts.Auditor (or record.AuditTopic); a row not recorded stops
// the replay with an error.
//
// An AuditStarted record goes to record.AuditTopic before anything is produced;
// without it there is no replay. An AuditFinished record follows when the
// replay ends, however it ends. The report is returned even when the
// replay fails part way.
func Replay(ctx context.Context, conn []kgo.Opt, topic string, sel Selection, opts ReplayOptions) (ReplayReport, error) {
	tp := opts.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	tr := tp.Tracer(tracing.TracerName)
	// A replay is an operator's act, not part of any event's trace: a root
	// span, whose records link to their events' traces.
	ctx, span := tr.Start(ctx, "replay "+topic, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String(attrReplayActor, opts.Actor),
			attribute.String(attrReplayTopic, topic),
			attribute.Bool(attrReplayDryRun, opts.DryRun),
		))
	rep, err := replay(ctx, tr, conn, topic, sel, opts)
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String(attrReplayID, rep.ReplayID),
			attribute.String(tracing.AttrDestination, rep.Destination),
			attribute.Int(attrReplayScanned, rep.Scanned),
			attribute.Int(attrReplayMatched, rep.Matched),
			attribute.Int(attrReplayReplayed, rep.Replayed),
			attribute.Int(attrReplayRefused, rep.Unreadable+rep.Mismatched+rep.Invalid),
		)
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
	return rep, err
}

// Attribute keys of a replay's spans.
const (
	attrReplayID       = "sluice.replay.id"
	attrReplayActor    = "sluice.replay.actor"
	attrReplayTopic    = "sluice.replay.topic"
	attrReplayDryRun   = "sluice.replay.dry_run"
	attrReplayScanned  = "sluice.replay.scanned"
	attrReplayMatched  = "sluice.replay.matched"
	attrReplayReplayed = "sluice.replay.replayed"
	attrReplayRefused  = "sluice.replay.refused"
	attrReplayReason   = "sluice.replay.reason"
)

// replay is Replay in the span of the replay, with tr for its records'
// spans.
func replay(ctx context.Context, tr trace.Tracer, conn []kgo.Opt, topic string, sel Selection, opts ReplayOptions) (ReplayReport, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	dest := record.SourceOf(topic)
	rep := ReplayReport{Action: AuditStarted, ReplayID: newReplayID(), Actor: opts.Actor, StartedAt: now().UTC(),
		Topic: topic, Destination: dest, Selection: sel, DryRun: opts.DryRun, Rate: opts.Rate}
	switch {
	case opts.Actor == "":
		return rep, ErrNoActor
	case record.CheckReplay(rep.ReplayID, opts.Actor) != nil:
		return rep, fmt.Errorf("dlq: replay actor: %w", record.CheckReplay(rep.ReplayID, opts.Actor))
	case opts.Rate <= 0:
		return rep, errors.New("dlq: replay rate must be positive")
	case len(opts.Topics) == 0 || opts.Registry == nil:
		return rep, ErrNoContracts
	case !record.IsDerived(topic):
		return rep, fmt.Errorf("dlq: %q is not a DLQ or parked topic", topic)
	case !slices.Contains(opts.Topics, dest):
		return rep, fmt.Errorf("dlq: %s is the DLQ or parked topic of %s, which is not an ingest topic (%s)",
			topic, dest, strings.Join(opts.Topics, ", "))
	}
	contracts, err := contract.NewVersions(opts.Registry, 1)
	if err != nil {
		return rep, err
	}
	cl, err := kgo.NewClient(append(slices.Clone(conn), kgo.RequiredAcks(kgo.AllISRAcks()))...)
	if err != nil {
		return rep, fmt.Errorf("dlq: kafka client: %w", err)
	}
	defer cl.Close()
	// No replay without a place for its audit records.
	actx, cancel := context.WithTimeout(ctx, adminTimeout)
	ends, err := kadm.NewClient(cl).ListEndOffsets(actx, record.AuditTopic)
	cancel()
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return rep, fmt.Errorf("dlq: audit topic %s must exist before a replay: %w", record.AuditTopic, err)
	}
	if err := writeAudit(ctx, cl, &rep); err != nil {
		return rep, err
	}
	auditor := opts.Auditor
	if auditor == nil {
		auditor = NewTopicAuditor(cl, now)
	}
	lim := rate.NewLimiter(rate.Limit(opts.Rate), 1)
	progress := func(final bool) {
		if opts.Progress == nil {
			return
		}
		verb := "replayed"
		if opts.DryRun {
			verb = "would replay"
		}
		fmt.Fprintf(opts.Progress, "\rscanned %d, matched %d, %s %d, refused %d", rep.Scanned, rep.Matched, verb, rep.Replayed,
			rep.Unreadable+rep.Mismatched+rep.Invalid)
		if final {
			fmt.Fprintln(opts.Progress)
		}
	}
	lastProgress := time.Time{}
	runErr := scanTopic(ctx, conn, topic, sel.Partitions, func(r *kgo.Record) error {
		rep.Scanned++
		d := readDeadLetter(r)
		if !sel.Match(&d) {
			return nil
		}
		rep.Matched++
		var refused error
		if rf := checkReplay(&d, dest, contracts); rf != nil {
			refused = rf
			switch rf.Reason {
			case RefusedUnreadable:
				rep.Unreadable++
			case RefusedMismatch:
				rep.Mismatched++
			default:
				rep.Invalid++
			}
		}
		if opts.Each != nil {
			opts.Each(d, refused)
		}
		if refused != nil {
			if span := trace.SpanFromContext(ctx); span.IsRecording() {
				span.AddEvent("refused", trace.WithAttributes(
					attribute.String(tracing.AttrEventID, d.Event.ID),
					attribute.Int64(tracing.AttrOffset, r.Offset),
					attribute.String(attrReplayReason, refused.(*ReplayRefusal).Reason)))
			}
			return nil
		}
		if !opts.DryRun {
			if err := lim.Wait(ctx); err != nil {
				return err
			}
			headers, err := record.WithReplay(record.OriginalHeaders(r), rep.ReplayID, opts.Actor)
			if err != nil {
				return err // CheckReplay passed: cannot happen
			}
			rctx, rspan := startReplayRecord(ctx, tr, r, &d, dest)
			if rspan.IsRecording() {
				// The replayed record continues the replay's trace; the
				// event's own is reached through the span's link.
				headers = withTraceContext(headers, rspan.SpanContext())
			}
			out := &kgo.Record{Topic: dest, Key: r.Key, Value: r.Value, Headers: headers}
			pctx, cancel := context.WithTimeout(rctx, adminTimeout)
			err = cl.ProduceSync(pctx, out).FirstErr()
			cancel()
			if err != nil {
				rspan.SetStatus(codes.Error, err.Error())
				rspan.End()
				return fmt.Errorf("dlq: replay to %s: %w", out.Topic, err)
			}
			if rspan.IsRecording() {
				rspan.SetAttributes(attribute.String(tracing.AttrPartition, strconv.Itoa(int(out.Partition))),
					attribute.Int64(tracing.AttrOffset, out.Offset))
			}
			rspan.End()
			rep.Replayed++ // in Kafka, audited or not
			if err := auditReplayed(ctx, auditor, &d, out, rep.ReplayID, opts.Actor, now()); err != nil {
				return err
			}
		} else {
			rep.Replayed++
		}
		if t := time.Now(); t.Sub(lastProgress) > 100*time.Millisecond {
			lastProgress = t
			progress(false)
		}
		return nil
	})
	progress(true)
	rep.Action = AuditFinished
	rep.EndedAt = now().UTC()
	rep.Outcome = "ok"
	if runErr != nil {
		rep.Outcome = runErr.Error()
	}
	if err := writeAudit(ctx, cl, &rep); err != nil {
		return rep, errors.Join(runErr, err)
	}
	return rep, runErr
}

// startReplayRecord starts the `replay record` span of dead letter r
// (read as d), child of the replay's span in ctx, linked to the span
// context of the traceparent r kept from its event.
func startReplayRecord(ctx context.Context, tr trace.Tracer, r *kgo.Record, d *DeadLetter, dest string) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String(tracing.AttrMessagingSystem, tracing.MessagingSystemKafka),
			attribute.String(tracing.AttrDestination, dest),
			attribute.String(tracing.AttrOperationType, tracing.OperationSend),
			attribute.String(tracing.AttrEventID, d.Event.ID),
		),
	}
	if sc := trace.SpanContextFromContext(tracing.FromRecord(context.Background(), r.Headers)); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	return tr.Start(ctx, "replay record", opts...)
}

// withTraceContext is headers with their traceparent and tracestate
// replaced by sc's (no tracestate when sc has none).
func withTraceContext(headers []kgo.RecordHeader, sc trace.SpanContext) []kgo.RecordHeader {
	tp, ts := tracing.Headers(sc)
	out := headers[:0]
	for _, h := range headers {
		if h.Key != record.HeaderTraceparent && h.Key != record.HeaderTracestate {
			out = append(out, h)
		}
	}
	out = append(out, kgo.RecordHeader{Key: record.HeaderTraceparent, Value: []byte(tp)})
	if ts != "" {
		out = append(out, kgo.RecordHeader{Key: record.HeaderTracestate, Value: []byte(ts)})
	}
	return out
}

// traceIDOf is the trace id of r's traceparent, "" when it has none.
func traceIDOf(r *kgo.Record) string {
	for _, h := range r.Headers {
		if h.Key == record.HeaderTraceparent {
			return tracing.TraceIDOf(string(h.Value))
		}
	}
	return ""
}

// auditReplayed records the replayed row of d, produced as out, under its
// own deadline. The row's trace id is out's: the replay's own trace when
// tracing recorded it, else the event's.
func auditReplayed(ctx context.Context, a audit.Writer, d *DeadLetter, out *kgo.Record, id, actor string, at time.Time) error {
	row := audit.Row{
		Source: d.Event.Source, EventID: d.Event.ID, Action: audit.Replayed, At: at,
		Topic: d.Record.Topic, Partition: d.Record.Partition, Offset: d.Record.Offset, EventType: d.Event.Type,
		Class: d.Envelope.Class, Attempt: d.Envelope.Attempts, DLQRetries: d.Envelope.DLQRetries,
		Detail:   fmt.Sprintf("%s/%d@%d", out.Topic, out.Partition, out.Offset),
		ReplayID: id, Actor: actor, TraceID: traceIDOf(out),
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), adminTimeout)
	defer cancel()
	if err := a.Audit(actx, []audit.Row{row}); err != nil {
		return fmt.Errorf("dlq: %s/%d@%d was replayed to %s but its replayed audit row was not recorded: %w",
			d.Record.Topic, d.Record.Partition, d.Record.Offset, row.Detail, err)
	}
	return nil
}

// checkReplay returns why d may not be replayed to dest, or nil.
func checkReplay(d *DeadLetter, dest string, cs Contracts) *ReplayRefusal {
	if d.EnvelopeErr != nil {
		return &ReplayRefusal{Reason: RefusedUnreadable, Err: d.EnvelopeErr}
	}
	if d.Envelope.SourceTopic != dest {
		return &ReplayRefusal{Reason: RefusedMismatch, Err: fmt.Errorf("envelope names source topic %q, the record is in %s",
			d.Envelope.SourceTopic, d.Record.Topic)}
	}
	if err := CheckContract(cs, d.Record); err != nil {
		return &ReplayRefusal{Reason: RefusedContract, Err: err}
	}
	return nil
}

// newReplayID is a random id tying a replay's two audit records together.
func newReplayID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
