// Package record owns every byte layout of a sluice Kafka record: the
// headers of an event as the gateway publishes it, the envelope a dead
// letter carries, the spooled form the disk spool keeps, the records of
// sluice.audit, the names of the topics, and the bounds of each. Producers, the consumer, the DLQ tools
// and the load generator build and parse records here and nowhere else.
//
// # Usage
//
//	rec := record.NewEvent(&record.Event{Topic: record.TopicOf(topics, typ), ID: id, ...})
//	h, err := record.ParseEvent(rec) // *HeaderError names the first bad header
//
//	dl := record.NewDeadLetter(record.DLQTopic(rec.Topic), rec, &record.Envelope{...})
//	env, err := record.ParseEnvelope(dl) // *EnvelopeError
//
//	b := record.AppendSpooled(nil, rec)
//	back, err := record.DecodeSpooled(b)
//
//	dec, err := record.NewDecision(d)    // a record of AuditTopic
//	d, err = record.ParseDecision(dec)   // ErrNotDecision: a replay's report
//
// # Format
//
// An event record's key is its partition key, or its id when it has none;
// its value is the contract message in protobuf binary. Its headers come in
// a fixed order: sluice-event-id, sluice-event-type, sluice-source,
// sluice-occurred-at, sluice-ingested-at, sluice-schema-fingerprint,
// traceparent and tracestate (when the record carries a trace context),
// then sluice-attr-<key> for each attribute, sorted by key, then any extra headers (Event.Extra). Times are
// internal/utctime's layout: RFC 3339 in UTC with nine fractional digits.
//
// An event a signed webhook delivered carries, as extra headers,
// sluice-webhook-scheme, sluice-webhook-body (the body as received, byte
// for byte: the value is not the signed bytes) and
// sluice-webhook-header-<name in lower case> for each header the scheme
// signs with, as received: a consumer verifies the delivery again from
// these alone, with the scheme's secret. ParseEvent ignores them.
//
// A record an operator's replay produced (consumer/dlq) is the dead
// letter's key, value and original headers, its envelope removed, with
// sluice-replay-id (1 to 64 letters, digits, '-' or '_') and
// sluice-replay-actor (1 to 256 bytes of UTF-8 without control
// characters) last (WithReplay), naming the last replay only. ParseEvent
// reads them, both or neither, into EventHeaders.ReplayID and ReplayActor.
//
// A dead letter is the original key, value and headers followed by the
// sluice-dlq-* envelope headers (Envelope). A DLQ record that is read and
// produced again keeps one envelope: OriginalHeaders drops the old one.
//
// A record of AuditTopic is a JSON object whose "kind" says what it is: a
// Decision (one audit row; key IdentityKey(source, id), so that an
// event's decisions are in one partition, in the order recorded) or a
// replay's report (KindReplay, keyed by the topic replayed).
//
// A spooled record is a version byte, then uvarint-length-prefixed topic,
// key and value, then a uvarint header count and each header's key and
// value (AppendSpooled). The spool frames and checksums each record; this
// encoding only has to refuse what it cannot parse.
//
// # Guarantees
//
//   - ParseEvent accepts exactly what NewEvent and WithReplay write:
//     required headers once each, id and type not empty, times within
//     years 0000 to 9999, the replay headers within their bounds.
//     ParseEnvelope accepts what NewDeadLetter writes. Both return typed
//     errors naming the header, never panic (fuzzed: FuzzParseEvent,
//     FuzzParseReplay, FuzzParseEnvelope, FuzzDecodeSpooled;
//     ParseDecision by audit's FuzzParseDecision).
//   - Limits.Sizes bounds the bytes a record within the gateway's limits
//     takes in franz-go's buffer, in a produce batch and in the spool, so
//     that the spool and the producer are sized to hold any record the
//     gateway accepts. DeadLetterBound bounds a dead letter the same way,
//     that of a replayed record included.
//   - NewParkedCopy never returns a record over its byte bound: a value
//     that does not fit is cut, and the copy says how long it was.
//
// # What it does not do
//
// It does not produce, consume or validate against contracts, and it holds
// no state.
package record
