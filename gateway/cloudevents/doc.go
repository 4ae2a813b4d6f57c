// Package cloudevents decodes the CloudEvents HTTP protocol binding,
// version 1.0: a request's header and body in, its events or typed
// refusals out. It does not authenticate, judge contracts or publish; the
// gateway does, with what Decode returns.
//
//	dec, refused := cloudevents.Decode(r.Header, body, limits)
//	// refused != nil: the whole request. Else, per event i:
//	// dec.Refused[i] != nil refuses that event only;
//	// dec.Events[i].Envelope(contractType, receivedAt) is its *ingestv1.Event.
//
// # Modes
//
// The mode comes from Content-Type, matched case-insensitively:
//
//   - application/cloudevents-batch+json: batch mode, a JSON array of
//     events, each judged on its own (a bad event refuses that event, a bad
//     array the request). Decoding stops at Limits.MaxEvents+1.
//   - application/cloudevents+json: structured mode, one event.
//   - anything else, with a ce-specversion header: binary mode. Each
//     attribute is a ce-<name> header, unquoted and percent-decoded once,
//     then UTF-8; Content-Type is the datacontenttype, the body the data.
//
// In structured and batch mode ce-* headers are not read. Other event
// formats, a charset other than UTF-8, and a request with neither a
// CloudEvents media type nor ce-specversion are refused, MALFORMED.
//
// # What it guarantees
//
// The JSON format is read strictly, by RFC 8259, with the envelope's
// tokenizer (internal/jsonscan). Every event is checked by the spec
// (attributes.go): specversion exactly "1.0", the required attributes,
// URIs, RFC 3339 times within years 1 to 9999, UTF-8 without control
// characters, extension names and values. Data becomes the payload in the
// form a contract reads, JSON or protobuf binary (data.go); any other
// datacontenttype is refused.
//
// Event.Envelope maps an event to sluice's envelope: id is the id; the
// caller maps type to the contract type; time is occurred_at (else the
// receipt time the caller passes); the partitionkey extension, else
// subject, is the partition key; every other extension is an attribute.
// source is not in the envelope: the caller records it beside the
// authenticated source, which it never replaces.
//
// Every refusal is a *Refusal: one of sluice's reasons, the CloudEvents
// name of the field at fault, and a message quoting at most 64 bytes of
// the input. MALFORMED: what breaks the binding, the format or the spec.
// BATCH_TOO_LARGE (the request): a body over Limits.MaxBodyBytes, a batch
// past Limits.MaxEvents. EVENT_TOO_LARGE: data over Limits.MaxEventBytes,
// attributes over Limits.MaxContextBytes. SCHEMA_VIOLATION: an extension
// or partition key the envelope's attribute rules refuse. An extension is
// refused with its event, never dropped.
//
// Decode never panics and never recurses on the input's nesting. It
// allocates within a constant factor of the body (binary-mode headers are
// bounded before they are decoded) and copies what it keeps out of the
// body and header.
//
// RecordHeaders gives the Kafka protocol binding's ce_* headers for an
// event, within Limits.RecordHeaderBytes; the record's value stays the
// contract message in protobuf binary (content-type application/protobuf).
//
// # What it does not do
//
// It reads no other event format and no CloudEvents version but 1.0.
// CloudEvents over gRPC, AMQP, MQTT or Kafka as input are not supported.
// It does not authenticate, validate data against a contract, or check id
// against the envelope's id pattern: the gateway does, after it.
package cloudevents
