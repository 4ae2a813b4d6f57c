package cloudevents

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// Mode is the HTTP binding's content mode a request was read in.
type Mode uint8

const (
	// Binary: the context attributes in ce-* headers, the body the data.
	Binary Mode = iota + 1
	// Structured: one event as application/cloudevents+json.
	Structured
	// Batch: a JSON array of events as application/cloudevents-batch+json.
	Batch
)

func (m Mode) String() string {
	switch m {
	case Binary:
		return "binary"
	case Structured:
		return "structured"
	case Batch:
		return "batch"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// PartitionKeyExtension is the Partitioning extension's attribute, which
// names the event's partition key (and wins over subject).
const PartitionKeyExtension = "partitionkey"

// Event is one CloudEvent as decoded: its context attributes in their
// canonical string form where the spec gives one, and its data in the form
// a contract reads. It shares no memory with the request.
type Event struct {
	SpecVersion string // "1.0" for an event not refused
	ID          string
	Source      string // the sender's source attribute; never sluice's source
	Type        string // the CloudEvents type; the contract type is the caller's to map
	Subject     string // "" when absent (the spec forbids an empty one)
	Time        time.Time
	HasTime     bool   // Time was sent
	DataSchema  string // "" when absent
	// DataContentType is datacontenttype as sent: the member in structured
	// mode, Content-Type in binary mode; "" when absent.
	DataContentType string
	// Extensions are the extension attributes, partitionkey included, in
	// their canonical string form: a JSON integer as its decimal digits, a
	// boolean as true or false. Nil when there are none.
	Extensions map[string]string
	// PartitionKey is the partitionkey extension, else the subject, else "".
	PartitionKey string
	// The data, in one of two forms, or neither when the event has none.
	// JSON holds one JSON value in UTF-8 (the contract's JSON: an object
	// for a contract message; the contract check refuses any other value).
	// Binary, when not nil, holds bytes the contract reads as protobuf
	// binary; it may be empty, which is a message of default fields.
	JSON   string
	Binary []byte
}

// HasData reports whether e carries data.
func (e *Event) HasData() bool { return e.JSON != "" || e.Binary != nil }

// Attributes are the extensions that become the envelope's attributes:
// Extensions without partitionkey, which is the partition key instead. It
// returns a new map, nil when there are none.
func (e *Event) Attributes() map[string]string {
	n := len(e.Extensions)
	if _, ok := e.Extensions[PartitionKeyExtension]; ok {
		n--
	}
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for k, v := range e.Extensions {
		if k != PartitionKeyExtension {
			m[k] = v
		}
	}
	return m
}

// Envelope is e as sluice's envelope, for the gateway to judge as it
// judges a pushed event (envelope rules, contract, dedup window):
//   - id is the CloudEvents id;
//   - type is contractType, which the caller maps from e.Type (directly or
//     through a source's table);
//   - occurred_at is the CloudEvents time, or receivedAt when the event has
//     none, as the pollers do for items without a time;
//   - partition_key is e.PartitionKey;
//   - the payload is e.JSON or e.Binary, none when the event has no data
//     (the envelope's rules then refuse it: a contract needs a payload);
//   - attributes are e.Attributes().
//
// The CloudEvents source is not in it: the caller records it beside the
// authenticated source, which it never replaces.
func (e *Event) Envelope(contractType string, receivedAt time.Time) *ingestv1.Event {
	at := receivedAt
	if e.HasTime {
		at = e.Time
	}
	ev := &ingestv1.Event{
		Id:           e.ID,
		Type:         contractType,
		OccurredAt:   timestamppb.New(at),
		PartitionKey: e.PartitionKey,
		Attributes:   e.Attributes(),
	}
	switch {
	case e.JSON != "":
		ev.Payload = &ingestv1.Event_Json{Json: e.JSON}
	case e.Binary != nil:
		ev.Payload = &ingestv1.Event_Binary{Binary: e.Binary}
	}
	return ev
}

// Decoded is what one request holds: its events in order, and for each
// event that is refused, why.
type Decoded struct {
	Mode   Mode
	Events []Event
	// Refused is nil when no event is refused, else len(Events) long and
	// non-nil at i when event i is refused. A refused event keeps what
	// was read of it (its id, to answer it by).
	Refused []*Refusal
}

// Refusal is why a request or one event is refused: a reason of the one
// enum every answer uses, and where.
type Refusal struct {
	Reason ingestv1.Reason
	// Field is the attribute, member or header at fault, by its
	// CloudEvents name ("id", "time", "data", "datacontenttype", an
	// extension's name, cut to 64 bytes), or "Content-Type" for a
	// request's media type; "" for the event or request as a whole.
	Field string
	Msg   string
}

func (r *Refusal) Error() string {
	return "cloudevents: " + r.Reason.String() + ": " + r.Msg
}
