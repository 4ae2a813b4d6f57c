// Package envelope decodes the publish request envelope: the bytes of a
// REST body or of a gRPC message in, a Batch of events or a typed Failure
// out. It is the gateway's first reading of untrusted input; the gateway
// keeps the transports (reading and decompressing bodies, answering), and
// the contract judges each payload afterwards.
//
// DecodeJSONBatch reads {"events": [...]} by RFC 8259 with exact,
// case-sensitive field names, through sluice's one strict JSON tokenizer
// (internal/jsonscan). DecodeWireBatch reads a PublishRequest, or a
// PublishStreamRequest, in protobuf's binary format. Valid holds a decoded
// Event to the Event message's protovalidate rules without reflection.
//
// # Guarantees
//
//   - The whole request is refused, with a Failure, when the request
//     itself cannot be read: bad syntax, an unknown or repeated top-level
//     field, text that is not UTF-8 where the format requires it (MALFORMED),
//     or more than Limits.MaxEvents events (BATCH_TOO_LARGE). A MALFORMED
//     Failure has at most one FieldViolation, under Rule.
//   - One event is refused, with a MALFORMED Rejection at its index in
//     Batch.Refused, when the request is readable but that event is not: an
//     unknown or repeated field, a field of the wrong type, text that is
//     not Unicode, a bad occurred_at. The first problem of an event is the
//     one reported; the rest of the event is still read, for its syntax and
//     for its id, to answer it by.
//   - What the wire decoder accepts it builds as proto.Unmarshal would, and
//     it refuses what proto.Unmarshal would keep as unknown fields. What the
//     JSON decoder accepts cleanly, encoding/json reads alike
//     (FuzzDecodeJSONBatch, FuzzDecodeWireBatch hold them to it).
//   - Neither recurses on the input's nesting. What they build is bounded
//     by a constant factor of the input: at most MaxEvents events,
//     MaxAttributeKeys attributes an event, and nothing of what is skipped.
//   - What they keep is copied out of the input, which the caller may
//     reuse once they return.
//   - Messages, fields and offsets of refusals are part of the gateway's
//     answers, and stable.
//
// # What it does not do
//
// It does not decompress, authenticate, read a body from a connection or
// bound its size: the gateway does, before. It checks a JSON payload's
// syntax only and keeps its text; decoding a payload to its contract's
// message, and validating it, is the contract's. It knows nothing of HTTP
// statuses or gRPC codes: the gateway maps a Failure's reason to those.
package envelope
