package sink

import (
	"context"
	"time"
)

// Event is one Kafka record as the consumer tier hands it to a sink: the
// envelope from the record's headers, the contract message in protobuf
// binary as published, and its canonical JSON rendering. Its identity is
// (Source, ID).
type Event struct {
	ID     string
	Type   string
	Source string
	Key    []byte
	Value  []byte // the contract message, protobuf binary
	JSON   []byte // the same message as protojson, for sinks that store JSON
	// PayloadFingerprint names the message's content, whatever its
	// encoding: Fingerprint of its canonical (deterministic) protobuf
	// encoding. Two events of one identity with the same fingerprint are
	// the same event; with different ones, a Conflict.
	PayloadFingerprint string
	OccurredAt         time.Time
	IngestedAt         time.Time
	SchemaFingerprint  string

	Topic     string
	Partition int32
	Offset    int64

	// Group is the consumer group delivering the event. ReplayID and
	// ReplayActor name the operator's replay that produced its record
	// (its sluice-replay-id and sluice-replay-actor headers), empty for
	// a record the gateway published. None of them is part of the event:
	// the table sinks store them in its written audit row.
	Group                 string
	ReplayID, ReplayActor string
	// TraceID is the trace id of the record's traceparent header (32
	// lowercase hex digits), "" when it has none: not part of the event
	// either; the table sinks store it in the written audit row.
	TraceID string
}

// Conflict is an event of a batch whose identity the sink already held
// with another payload: the sink kept what it held and recorded this copy
// beside it.
type Conflict struct {
	// Index is the event's index in the batch given to Write.
	Index int
	// StoredFingerprint is the PayloadFingerprint of what the sink kept.
	StoredFingerprint string
}

// Sink writes events somewhere, idempotently by identity (source, event
// id): writing an event a second time, in the same batch or another,
// leaves the sink as after the first write. Write returns a nil error only
// when every event of the batch is durable in the sink; it then also
// returns the Conflicts it newly recorded, which the caller counts and
// logs. An error applies to the whole batch, and comes with no Conflicts;
// the caller splits a failed batch to find the event that fails alone.
type Sink interface {
	// Name labels the sink in metrics, logs and DLQ envelopes.
	Name() string
	Write(ctx context.Context, batch []Event) ([]Conflict, error)
	Close() error
}
