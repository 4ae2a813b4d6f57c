// Package cloudevents decodes the CloudEvents HTTP protocol binding,
// version 1.0: a request's header and body in, its events or typed
// refusals out. It does not authenticate, judge contracts or publish; the
// gateway does, with what Decode returns.
//
// # Usage
//
//	dec, refused := cloudevents.Decode(r.Header, body, limits)
//	if refused != nil {
//		// the whole request: refused.Reason, refused.Field, refused.Msg
//	}
//	for i := range dec.Events {
//		e := &dec.Events[i]
//		if dec.Refused != nil && dec.Refused[i] != nil {
//			// this event only; e.ID is what was read of its id
//			continue
//		}
//		ev := e.Envelope(contractTypeOf(e.Type), receivedAt) // *ingestv1.Event
//		// e.Source beside the authenticated source; RecordHeaders(e) for
//		// the Kafka binding's ce_* headers where a source asks for them
//	}
//
// # Modes
//
// The mode comes from Content-Type, matched case-insensitively as the
// binding says:
//   - application/cloudevents-batch+json: batch mode, a JSON array of
//     events in the JSON format, each judged on its own (like sluice's own
//     envelope: a bad event refuses that event, a bad array the request).
//     Decoding stops at event Limits.MaxEvents+1: BATCH_TOO_LARGE.
//   - application/cloudevents+json: structured mode, one event in the JSON
//     format.
//   - anything else, with a ce-specversion header: binary mode. Each
//     context attribute is a ce-<name> header (names in any letter case);
//     a value is unquoted when it is a double-quoted string and then
//     percent-decoded once, and must then be UTF-8. Content-Type is the
//     datacontenttype, the body the data. ce-datacontenttype must not be
//     sent.
//
// In structured and batch mode the body is the whole event: ce-* headers
// beside it (the binding lets a sender add them) are not read. Other
// event formats (application/cloudevents+avro, ...) and a charset other
// than UTF-8 are refused. Neither a CloudEvents media type nor
// ce-specversion: the request is not a CloudEvent, MALFORMED.
//
// Interop: the CloudEvents Go SDK (v2.16.2) neither percent-encodes
// binary-mode header values nor decodes them (its issue 1331). Its values
// read the same here unless they hold '%', which this package decodes as
// the binding requires: "100%" is refused (a '%' not followed by two hex
// digits), "%41" reads "A". Non-ASCII text it sends as raw UTF-8 reads
// as sent.
//
// # What is checked
//
// The JSON format is read strictly, by RFC 8259, with the tokenizer the
// envelope uses (internal/jsonscan): a duplicate member, invalid UTF-8, a
// byte order mark, a lone surrogate in an attribute, or data after the
// value are refused. Per event, by the spec:
//   - specversion must be exactly "1.0"; anything else is the event's
//     refusal whatever else is wrong with it, naming the version;
//   - id, source and type are required non-empty strings, subject and
//     dataschema non-empty when present; source must parse as a
//     URI-reference, dataschema as an absolute URI; time is an RFC 3339
//     date-time (checked by its grammar: time.Parse alone takes a one-digit
//     hour) within years 1 to 9999 in UTC, what occurred_at holds; a leap
//     second is refused;
//   - every String is UTF-8 without control characters or noncharacters;
//   - attribute names are lower-case ASCII letters and digits; "data" is
//     reserved; JSON null is unset;
//   - an extension's value is a string, a boolean (kept as true or false)
//     or an Integer: a JSON number of digits and an optional minus sign
//     within 32 bits (kept as its decimal digits); a fraction, an
//     exponent, an object or an array is refused;
//   - datacontenttype is a media type (type/subtype), with or without
//     data;
//   - data and data_base64 are not both present; data_base64 is base64
//     (standard alphabet, padded).
//
// # Mapping
//
// Event holds the attributes; Event.Envelope maps it to sluice's envelope:
//   - id is the id, which the envelope's rules then judge as any id;
//   - type is the contract type, which the caller maps from the CloudEvents
//     type (directly or through a source's table);
//   - time is occurred_at; an event without time gets the receipt time
//     the caller passes, as the pollers' items without a time do;
//   - source is not in the envelope: the caller records it beside the
//     authenticated source, which it never replaces (identity stays
//     (authenticated source, id));
//   - the partitionkey extension is the partition key, else subject, else
//     none (the id then keys the record);
//   - every other extension is an attribute, in its canonical string form.
//
// Data becomes the payload in the form a contract reads:
//   - data with a JSON datacontenttype (*/json, */*+json, or none, which
//     the JSON format reads as application/json): the JSON value's text as
//     sent. A contract message is an object; data of another JSON value (a
//     string, a number, null) is decoded here and refused by the contract
//     check (MALFORMED), as a pushed payload that is not an object is;
//   - data_base64: the bytes; with a JSON datacontenttype they must be one
//     JSON value in UTF-8 and become the JSON payload; with
//     application/protobuf, application/x-protobuf or none they are the
//     contract message in protobuf binary (the JSON format makes no
//     assumption of JSON for bytes without a type);
//   - binary mode: the body, JSON for a JSON Content-Type (one JSON value
//     in UTF-8), else protobuf binary for application/protobuf,
//     application/x-protobuf or no Content-Type. An empty body is no data,
//     but for protobuf, where it is a message of default fields;
//   - any other datacontenttype (text/plain, application/xml, ...) is
//     refused, MALFORMED naming it: a contract reads JSON or protobuf.
//     So is protobuf in data rather than data_base64.
//
// An event without data decodes; the envelope's rules refuse it, since a
// contract needs a payload.
//
// # Refusals
//
// Every refusal is a *Refusal: a reason of sluice's one enum, the field
// (the CloudEvents name of the attribute or member at fault), and a
// message that quotes at most 64 bytes of the input.
//   - MALFORMED: whatever breaks the binding, the JSON format or the spec.
//   - BATCH_TOO_LARGE (the request): a body over Limits.MaxBodyBytes, a
//     batch past Limits.MaxEvents.
//   - EVENT_TOO_LARGE (the event): data over Limits.MaxEventBytes in the
//     form the contract reads; context attributes over
//     Limits.MaxContextBytes.
//   - SCHEMA_VIOLATION (the event): an extension that cannot be the
//     attribute it becomes, by the envelope's attribute rules (as a pushed
//     event's attribute would be): more than Limits.MaxAttributes
//     extensions besides partitionkey, a name over 64 characters, a value
//     over 256; or a partition key (partitionkey, else subject) over the
//     envelope's 256 characters. Such an extension is refused with its
//     event, never dropped: what a sender sends is kept or refused.
//
// # Bounds
//
// Decode never panics and never recurses on the input's nesting (the
// tokenizer skips nested values with a bit a level). It allocates within
// a constant factor of the body: at most Limits.MaxEvents events, each
// event's context attributes within Limits.MaxContextBytes (binary-mode
// headers are bounded before they are decoded: one per attribute, three
// times MaxContextBytes in all), and data copied once. It copies what it
// keeps out of the body and header.
//
// # Kafka
//
// RecordHeaders gives the CloudEvents Kafka protocol binding's ce_*
// headers for an event, for records that a CloudEvents consumer is to read
// (off unless a deployment asks for it; the gateway's record carries its
// own sluice-* headers beside them). The record's value stays the
// contract message in protobuf binary, so content-type is
// application/protobuf. Limits.RecordHeaderBytes bounds their size.
//
// # What it does not do
//
// It reads no other event format (Avro, Protobuf) and no CloudEvents
// version but 1.0 (0.3 is refused). CloudEvents over gRPC, AMQP, MQTT or
// Kafka as input are not supported. It does not authenticate (an API key,
// a client certificate or a webhook signature is checked before the body
// is decoded), validate data against a contract, or check id against the
// envelope's id pattern: the gateway does all of that after it.
package cloudevents
