package gateway

import (
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/time/rate"

	"github.com/sluicehq/sluice/gateway/envelope"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// batch is one request as the service publishes it: the events, and for
// each event that did not decode, its refusal.
type batch struct {
	batchID uint64                // PublishStreamRequest's batch_id; 0 otherwise
	events  []*ingestv1.Event     // never nil entries
	refused []*ingestv1.Rejection // nil, or len(events): non-nil at i when event i did not decode
	size    int                   // bytes of the request as received
	// extra is nil, or len(events): the record headers event i adds
	// besides its own (a webhook's body and signature, CloudEvents'
	// ce_* headers).
	extra [][]kgo.RecordHeader
	// links is nil, or len(events): a CloudEvent's distributed tracing
	// extension (its own traceparent) at i, for its `send` span's link.
	links []string
	// paid is the reservation of the request's bytes from its source's
	// bytes_rate bucket taken before the body was read (source.prepay),
	// or nil.
	paid *rate.Reservation
}

// add appends an event and its refusal, if any. The slices grow to at most
// limit, the most events a batch holds.
func (b *batch) add(ev *ingestv1.Event, rej *ingestv1.Rejection, limit int) {
	if n := len(b.events); n == cap(b.events) {
		c := min(max(2*n, 8), limit)
		b.events = append(make([]*ingestv1.Event, 0, c), b.events...)
		if b.refused != nil {
			b.refused = append(make([]*ingestv1.Rejection, 0, c), b.refused...)
		}
	}
	if rej != nil && b.refused == nil {
		b.refused = make([]*ingestv1.Rejection, len(b.events), cap(b.events))
	}
	b.events = append(b.events, ev)
	if b.refused != nil {
		b.refused = append(b.refused, rej)
	}
}

// envelopeLimitsOf is what the envelope decoders may build of one request.
// Attributes past maxAttributes are kept up to one more, so validation
// still refuses the event (map.max_pairs).
func envelopeLimitsOf(l LimitsConfig) envelope.Limits {
	return envelope.Limits{MaxEvents: l.MaxEventsPerRequest, MaxAttributeKeys: maxAttributes + 1}
}

// decodeJSONBatch is envelope.DecodeJSONBatch, answered as the gateway's.
func decodeJSONBatch(body []byte, lim envelope.Limits) (*batch, *Failure) {
	return fromEnvelope(envelope.DecodeJSONBatch(body, lim))
}

// decodeWireBatch is envelope.DecodeWireBatch, answered as the gateway's.
func decodeWireBatch(msg []byte, stream bool, lim envelope.Limits) (*batch, *Failure) {
	return fromEnvelope(envelope.DecodeWireBatch(msg, stream, lim))
}

// fromEnvelope is a decoded request as the service's batch, or its
// refusal as the Failure clients see: same reason, message and
// violations, so the HTTP status, gRPC code and answer bytes are the
// rejection table's for that reason.
func fromEnvelope(b envelope.Batch, f *envelope.Failure) (*batch, *Failure) {
	if f != nil {
		return nil, &Failure{Reason: f.Reason, Message: f.Message, Violations: f.Violations}
	}
	return &batch{batchID: b.BatchID, events: b.Events, refused: b.Refused, size: b.Size}, nil
}
