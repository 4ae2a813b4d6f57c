package consumer

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/consumer/dlq"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// decodeError is a record that cannot become a sink.Event: bad sluice
// headers, an event type never served, a value that is not a valid
// message of its schema version, or one of a version not kept that the
// newest cannot read (Err is then a *dlq.UnknownVersionError). It is
// permanent, the same record always failing the same way, except for
// the last: a reload may bring the version back.
type decodeError struct {
	Topic     string
	Partition int32
	Offset    int64
	Err       error
}

func (e *decodeError) Error() string {
	return fmt.Sprintf("consumer: decode %s/%d@%d: %v", e.Topic, e.Partition, e.Offset, e.Err)
}

func (e *decodeError) Unwrap() error { return e.Err }

// Decode turns a source record into the event a sink receives: its
// sluice headers are parsed and its value decoded with the contract of its
// type and schema version (dlq.Version: the version its fingerprint header
// names when versions keeps it, else the newest when that reads the value
// without loss), rendered as protojson and fingerprinted (sink.Fingerprint
// of its deterministic protobuf encoding, so that another encoding of the
// same message has the same fingerprint); its traceparent gives it its
// TraceID (none without a valid one). The contract's rules are not
// evaluated again: the gateway did before publishing, and the consumer's
// job is to deliver. topic names the source topic (for a DLQ record, the
// original one); the record's own partition and offset are kept. It is
// exported for the gateway's tests, which check the fingerprint a sink
// keeps.
func Decode(versions *contract.Versions, topic string, r *kgo.Record) (sink.Event, error) {
	ev, _, err := decode(versions, topic, r)
	return ev, err
}

// decode is Decode, and also reports whether the record was decoded with
// its own schema version (kept) rather than the newest.
func decode(versions *contract.Versions, topic string, r *kgo.Record) (_ sink.Event, kept bool, _ error) {
	fail := func(err error) (sink.Event, bool, error) {
		return sink.Event{}, false, &decodeError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Err: err}
	}
	h, err := record.ParseEvent(r)
	if err != nil {
		return fail(err)
	}
	c, kept, err := dlq.Version(versions, h.Type, h.Fingerprint, r.Value)
	if err != nil {
		return fail(err)
	}
	js, canonical, err := c.Render(r.Value)
	if err != nil {
		return fail(err)
	}
	return sink.Event{
		ID:                 h.ID,
		Type:               h.Type,
		Source:             h.Source,
		Key:                r.Key,
		Value:              r.Value,
		JSON:               js,
		PayloadFingerprint: sink.Fingerprint(canonical),
		OccurredAt:         h.OccurredAt,
		IngestedAt:         h.IngestedAt,
		SchemaFingerprint:  h.Fingerprint,
		Topic:              topic,
		Partition:          r.Partition,
		Offset:             r.Offset,
		ReplayID:           h.ReplayID,
		ReplayActor:        h.ReplayActor,
		TraceID:            tracing.TraceIDOf(h.Traceparent),
	}, kept, nil
}

// decodeFailure is what a record Decode or dlq.CheckContract refused
// means, decided here alone: a schema version not kept that the newest
// cannot read is record.ClassSchema, retryable, since a reload may bring
// the version; anything else is record.ClassDecode, permanent. Neither is
// a failure of the sink: no write was made.
func decodeFailure(err error) *failure {
	if _, ok := errors.AsType[*dlq.UnknownVersionError](err); ok {
		return &failure{class: record.ClassSchema, err: err, retryable: true}
	}
	return &failure{class: record.ClassDecode, err: err}
}

// refused is decodeFailure, counting a record no version kept could read
// in sluice_consumer_events_by_schema_total.
func (d *deliverer) refused(err error) *failure {
	if uve, ok := errors.AsType[*dlq.UnknownVersionError](err); ok {
		d.m.bySchema.unread(uve.Type)
	}
	return decodeFailure(err)
}
