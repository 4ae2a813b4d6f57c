package cloudevents

import "fmt"

// The envelope's rules for what a CloudEvent becomes (sluice.ingest.v1.Event
// in proto/sluice/ingest/v1/ingest.proto; TestEnvelopeRulesMatchTheContract
// keeps them equal): an attribute's key and value, and the partition key,
// in characters.
const (
	maxAttributeKeyChars   = 64
	maxAttributeValueChars = 256
	maxPartitionKeyChars   = 256
)

// coreAttributes is how many context attributes an event can have besides
// its extensions: specversion, id, source, type, time, subject,
// dataschema and datacontenttype.
const coreAttributes = 8

// contentTypeHeader and protobufContentType are the content-type header
// RecordHeaders writes: the record's value is the contract message in
// protobuf binary.
const (
	contentTypeHeader   = "content-type"
	protobufContentType = "application/protobuf"
)

// Limits bounds what decoding one request builds. Every allocation of
// Decode is within a constant factor of the body and these.
type Limits struct {
	// MaxEvents bounds the events of a batch: event MaxEvents+1 stops
	// decoding and refuses the request BATCH_TOO_LARGE.
	MaxEvents int
	// MaxBodyBytes bounds the body: a larger one is refused
	// BATCH_TOO_LARGE, unread.
	MaxBodyBytes int
	// MaxEventBytes bounds one event's data in the form the contract
	// reads (the JSON text, or the bytes data_base64 or a binary-mode body
	// holds): past it the event is refused EVENT_TOO_LARGE.
	MaxEventBytes int
	// MaxAttributes bounds the extensions of an event that become
	// attributes (partitionkey aside; an extension sent as null counts):
	// past it the event is refused SCHEMA_VIOLATION, as a pushed event
	// with more attributes is.
	MaxAttributes int
	// MaxContextBytes bounds an event's context attributes: the bytes of
	// their names and values as RecordHeaders writes them, extensions
	// included. Past it the event is refused EVENT_TOO_LARGE. It bounds
	// what a binary-mode request's headers add to an event, and the ce_*
	// headers of its record (RecordHeaderBytes).
	MaxContextBytes int
}

// NewDefaultLimits returns the gateway's default limits: 500 events a
// request, 4 MiB a body, 256 KiB an event's data, 16 attributes and 16 KiB
// of context attributes an event.
func NewDefaultLimits() Limits {
	return Limits{
		MaxEvents:       500,
		MaxBodyBytes:    4 << 20,
		MaxEventBytes:   256 << 10,
		MaxAttributes:   16,
		MaxContextBytes: 16 << 10,
	}
}

// minContextBytes is the least MaxContextBytes that holds the required
// attributes of a small event.
const minContextBytes = 256

// Validate says which limit is wrong and why.
func (l Limits) Validate() error {
	bad := func(field, why string) error {
		return fmt.Errorf("cloudevents: %s: %s", field, why)
	}
	switch {
	case l.MaxEvents <= 0:
		return bad("MaxEvents", fmt.Sprintf("%d must be > 0", l.MaxEvents))
	case l.MaxBodyBytes <= 0:
		return bad("MaxBodyBytes", fmt.Sprintf("%d must be > 0", l.MaxBodyBytes))
	case l.MaxEventBytes <= 0:
		return bad("MaxEventBytes", fmt.Sprintf("%d must be > 0", l.MaxEventBytes))
	case l.MaxAttributes < 0:
		return bad("MaxAttributes", fmt.Sprintf("%d must be >= 0", l.MaxAttributes))
	case l.MaxContextBytes < minContextBytes:
		return bad("MaxContextBytes", fmt.Sprintf("%d must be >= %d", l.MaxContextBytes, minContextBytes))
	}
	return nil
}

// RecordHeaderBytes bounds the bytes, keys and values, of the headers
// RecordHeaders returns for an event Decode accepted under l: its context
// bytes, a "ce_" for each attribute, and the content-type header in place
// of datacontenttype.
func (l Limits) RecordHeaderBytes() int {
	return l.MaxContextBytes + len("ce_")*(coreAttributes+l.MaxAttributes+1) +
		len(contentTypeHeader) + len(protobufContentType)
}
