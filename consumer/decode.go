package consumer

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// DecodeError is a record that cannot become a sink.Event: bad sluice
// headers, an event type the registry lacks, or a value that is not a
// valid message of its contract. It is permanent: the same record always
// fails the same way.
type DecodeError struct {
	Topic     string
	Partition int32
	Offset    int64
	Err       error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("consumer: decode %s/%d@%d: %v", e.Topic, e.Partition, e.Offset, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Decode turns a source record into the event a sink receives: its
// sluice headers are parsed and its value decoded with its contract,
// rendered as protojson and fingerprinted (sink.Fingerprint of its
// deterministic protobuf encoding, so that another encoding of the same
// message has the same fingerprint). The contract's rules are not
// evaluated again: the gateway did before publishing, and the consumer's
// job is to deliver. topic names the source topic (for a DLQ record, the
// original one); the record's own partition and offset are kept.
func Decode(reg *contract.Registry, topic string, r *kgo.Record) (sink.Event, error) {
	fail := func(err error) (sink.Event, error) {
		return sink.Event{}, &DecodeError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Err: err}
	}
	h, err := record.ParseEvent(r)
	if err != nil {
		return fail(err)
	}
	c, ok := reg.Lookup(h.Type)
	if !ok {
		return fail(fmt.Errorf("unknown event type %q", h.Type))
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
	}, nil
}
