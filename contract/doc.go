// Package contract is sluice's descriptor-set registry: it loads event
// contracts at run time, decodes payloads with them and judges them against
// their protovalidate rules.
//
// # Usage
//
//	reg, err := contract.LoadFile("contracts.binpb", []string{"examples.shop.v1.OrderPlaced"})
//	c, ok := reg.Lookup(event.GetType())      // !ok: UNKNOWN_EVENT_TYPE
//	value, err := c.CheckJSON(payload)        // or c.CheckBinary(payload)
//	value, err = c.CheckJSONAllowUnknown(payload) // a sender's extra fields skipped
//	var m *contract.MalformedError            // errors.As: MALFORMED
//	var v *contract.ViolationError            // errors.As: SCHEMA_VIOLATION, v.Violations
//	// any other error is the gateway's fault (a rule that cannot be evaluated)
//
// # Loading
//
// Load takes a serialized google.protobuf.FileDescriptorSet or a buf image
// (the same wire format) and the full names of the messages that are event
// types. Descriptors are built from the set itself, never from the types
// compiled into the binary, so a contract is added or changed by shipping a
// new set, with no rebuild; a file the set imports but does not contain is
// taken from the compiled-in descriptors, if any. Load fails, naming what is
// wrong, when the set does not decode or build, when a type is missing or
// not a message, when no types are given, and when a contract's rules do not
// compile. A registry is immutable: reloading means loading a new one.
//
// # What is refused, and how
//
// Each Check either returns the bytes to publish or exactly one of:
//
//   - *MalformedError: the payload is not the contract's message. Protobuf
//     that does not decode (truncated, bad wire data, a known field with the
//     wrong wire type), an unknown field at any depth (map entries
//     included), invalid UTF-8 in a string (proto2 files included), a missing proto2 required field, a
//     google.protobuf.Timestamp or Duration out of its valid range; JSON
//     that does not decode, is not an object, has an unknown (but see
//     CheckJSONAllowUnknown) or duplicate field or a value of the wrong type; in binary, a
//     google.protobuf.Value that JSON cannot write (no kind set, a number
//     that is not finite); and, in either form, nesting deeper than
//     WithMaxDepth (default 32), as the payload's JSON form nests (see
//     Depth).
//   - *ViolationError: the payload decoded but broke one or more rules; each
//     Violation names the field path, the rule id and the rule's message.
//     All violations are reported, in field order (entries of one map field
//     in no set order), for a message of at most FullReportBytes; a larger
//     one reports its first failed rule only (Partial), so that a refusal
//     never costs more than a small multiple of the message's size.
//   - another error: a rule could not be evaluated. That is not the
//     sender's fault and should be treated as internal.
//
// The same input always gets the same kind of answer. No input panics or
// crashes the process: a binary payload is walked once before it is
// decoded, and only wire data that parses, with every field known and in
// its wire type and within the depth limit, reaches the decoder; any
// decoder panic is recovered as a MalformedError whose cause says "decoder
// panic". Decoding is bounded by the input size and the depth limit.
//
// # Depth
//
// One rule bounds nesting in both forms: a payload may nest as deep as
// WithMaxDepth, counted as its protojson form nests. The payload's
// object is level 1, and each JSON object or array within it one more:
// a message, a map (its object; the map's values are a level below it),
// a repeated field (its array; a message in it is a level below that),
// a google.protobuf.Struct, ListValue or Empty. A google.protobuf.Value
// is the level of what it holds, and a Timestamp, Duration, FieldMask or
// wrapper is a JSON string or number, no level at all. JSON text is
// counted as written (CheckJSONDepth: an empty array counts too); binary
// by the wire walk, as the JSON that protojson would write of it (a map
// entry without its value counts the value, written as {}). So the
// binary of a message, and the JSON protojson writes of it, get the same
// verdict, and what CheckJSON publishes is within the limit as binary,
// for the gateway, the consumer and the DLQ's checks alike. The one
// exception is google.protobuf.Any, whose value is bytes to every binary
// decoder and is not walked: the JSON of an Any holds its message inline.
//
// In binary, one JSON level of Struct is three levels of messages
// (Struct, map entry, Value), so the decoders run with a recursion limit
// of 3*WithMaxDepth+1, which no payload within the rule reaches; the walk
// refuses first, as MalformedError.
//
// # How payloads are decoded
//
// Binary payloads are decoded with hyperpb, a table-driven decoder
// compiled for each contract at load, onto arenas that are recycled from
// one payload to the next (payloads up to 64 KiB; a larger one gets an
// arena of its own). Its messages are read by protovalidate like any
// other, and never outlive the check: nothing a Check returns points into
// them. The walk before it (wire.go) is what keeps the decoder's unchecked
// reads on well-formed data. A contract that is not proto3, can hold
// extensions or has a map with message values decodes with dynamicpb
// instead: there hyperpb v0.1.3 has not been held to protobuf-go's
// answers, or was found not to hold.
//
// JSON payloads are transcoded straight to the deterministic protobuf
// binary that protojson and proto.Marshal would make of them, by a
// transcoder compiled from the contract's descriptor (transcode*.go), and
// that binary is decoded and validated as a binary payload is. A contract
// the transcoder does not cover (google.protobuf.Any, extensions, proto2
// required fields, among others: newJSONTranscoder says which) goes
// through protojson and a dynamic message instead.
//
// Contract.Decoders names both choices, and sluice logs them at start.
// FuzzBinaryDecoders, FuzzTranscodeJSON and FuzzJSONDecoders hold each
// fast path to the answers, and the bytes, of the reflective one it
// replaced.
//
// # Unknown fields, allowed per call
//
// CheckJSONAllowUnknown is CheckJSON for senders that add fields without
// notice, as webhook providers do: the caller chooses it per call (the
// gateway per source and event type), never per registry. A member name
// the message lacks, at any depth (a map's keys are keys, not names), is
// skipped with its value; so is an enum name the enum lacks, and the
// field, list element or map entry it was the value of is left unset,
// for the contract's rules to judge (a defined_only or not_in: [0] rule
// refuses it as SCHEMA_VIOLATION). That is protojson's DiscardUnknown,
// which the fallback path uses and the transcoder is held to
// (FuzzTranscodeJSON, FuzzJSONDecoders). The rest is judged as CheckJSON
// judges it: the text must be JSON and UTF-8, skipped values included; a
// member of the contract may not repeat (an unknown name may, its values
// being skipped unread); a "[name]" member that names a type of the
// contract's files is refused, as protojson refuses it; and what is
// skipped counts toward WithMaxDepth, since the limit is on the payload's
// text as written. The binary returned holds the contract's fields only;
// CheckBinary takes it.
//
// # What is published
//
// CheckBinary returns its input slice unchanged once it is known valid, so
// the published value is byte for byte what the source sent. CheckJSON
// returns the deterministic protobuf binary of the decoded message. Either
// output decodes, with the same contract, to the message that was validated.
//
// Fingerprint identifies a contract's schema: a SHA-256 over the message's
// name and its file with all transitive imports, without source comments
// or buf's image metadata. It is computed at load and, for files in the
// set, does not depend on which Go types the binary links in.
//
// # The JSON Schema of a payload
//
// Contract.JSONSchema describes a payload's JSON as the REST API takes it,
// for the gateway's OpenAPI document. It is complete: every payload Check
// accepts is valid under it, in each spelling protojson reads (proto and
// JSON names, null for absent, enums by name or number, numbers as
// strings, "NaN" and the infinities), so a client generated from it never
// refuses what the gateway takes. Each rule with an exact JSON Schema
// form is stated so (formats as exact patterns where they have one,
// lengths, ranges, enums, required fields, oneofs, message CEL rules of
// the subset celSchema reads); each without one is stated wider, or not
// at all, and named in the field's description. Patterns are printed in
// the subset RE2, ECMA-262 (u flag), Rust and Python read alike
// (portablePattern). The tests hold the schema to completeness with a
// real JSON Schema validator (FuzzJSONSchemaWire, on the decoders' corpora
// too), and its sound twin, which states every inexact rule narrower
// instead, to soundness (FuzzJSONSchemaSound).
//
// # Compatibility
//
// Compare judges a new descriptor set against the one running, for each
// event type, before the new one is served; CompareRegistries does so for
// two loaded registries. Both sets are built as Load builds them. Fields
// are matched by number. Each message and enum reachable from an event
// type (through fields, map values included) is compared once, at the
// first path that reaches it breadth-first in field order, so recursive
// types end the walk and a shared type costs one comparison.
//
// Each difference is a Finding: the event type, the field path
// ("items.sku", as the old version names the fields; "" for the message
// itself), a stable rule id, a reason
// naming the old and new values, and the directions it breaks:
//
//   - Backward: readers on the new version (the gateway validating,
//     consumers decoding) meet events written under the old one.
//   - Forward: readers still on the old version meet events of the new.
//
// The rules and the directions they break:
//
//	message_removed            both      an event type is gone
//	field_removed              both      without its number and name reserved: they may be taken again
//	field_reserved             -         removed, number and name reserved
//	field_reserved_reused      both      a new field takes a number or name reserved before
//	field_added                -
//	field_renamed              both      JSON names fields: REST sources and the JSON sinks store
//	json_name_changed          both
//	field_type_changed         both      wire form (string→int64, int32→sint32), JSON form
//	                                     (string↔bytes, enum↔int32), reading (int32↔uint32), message or enum type
//	field_type_widened         forward   int32→int64, uint32→uint64, sint32→sint64: old readers truncate
//	field_type_narrowed        backward  the reverse: new readers truncate
//	field_cardinality_changed  both      singular, repeated, map
//	field_label_changed        backward (became required) or forward (no longer required), proto2
//	field_default_changed      both      proto2
//	field_oneof_changed        both      into, out of or between oneofs
//	field_presence_changed     -         proto3 optional added or dropped
//	enum_value_removed         backward  without reservation: new readers meet it in old events
//	enum_value_reserved        -         backward for an enum closed in the new version: its readers refuse the number
//	enum_value_renumbered      both
//	enum_value_renamed         both      JSON carries enum values by name
//	enum_value_reserved_reused both
//	enum_value_added           -         forward for an enum closed in the old version: old readers refuse the number
//	enum_closed                backward  an open enum became closed: old events may carry numbers it lacks
//	enum_opened                forward   a closed enum became open: old readers refuse the numbers it lets through
//	rule_tightened             backward  a protovalidate rule refuses events valid before (Tightening)
//	rule_loosened              -
//	rule_message_changed       -         only a CEL rule's message
//
// A tightened rule breaks Backward, not Forward: sources still on the old
// version send events the gateway now refuses, while readers never
// validate again. Rules are compared leaf by leaf (compat_rules.go), each
// as protovalidate reads it, an unset rule by protovalidate's default:
// minimums, maximums, flags, the in and not_in lists, prefixes and the
// like each by what they admit (a rule at a value that checks nothing,
// such as prefix: "", is no rule; string.strict unset is true, and is
// judged with the header regex it governs); numeric, duration and
// timestamp bounds exactly as the range they admit (gt: 0 is gte: 1 on
// integers); a CEL rule by id, its expression changed or added counting
// as tightening, as does a changed pattern and any change to a rule the
// table does not know. Comments change nothing, as they change no
// fingerprint.
//
// A closed enum (proto2, or the editions feature enum_type: CLOSED)
// refuses a number it does not define: protobuf keeps it as an unknown
// field, which the gateway and the consumer refuse. So a value added to
// an enum closed in the old version breaks Forward, a value removed from
// one closed in the new version breaks Backward even when reserved, and
// an enum that changes between open and closed breaks the direction
// whose readers have it closed.
//
// A Policy per type (Policies.For) picks the mode: backward (the
// default) requires that no finding breaks Backward, forward that none
// breaks Forward, full both, and none nothing, though findings are still
// reported. AllowTightening lets a tightened rule pass in backward and
// full mode. Report.Err is an *IncompatibleError listing the findings
// that break what their type's mode requires.
//
// Compatibility here is the schema's. The gateway also refuses unknown
// fields and, with defined_only, unknown values of an open enum: a
// gateway still on the old version refuses events that set a field or
// value it lacks, and one on the new version refuses events that still
// set a field removed. That is an order of rollout (gateways take a new
// version before sources use it; sources stop sending a field before it
// is removed), not a finding.
//
// # Versions
//
// A Registry never changes; a reload loads a new one and swaps it into a
// Versions, which is what a process serves. Versions.Registry is the one
// served now: a caller takes it once per request and keeps it to the end,
// so a request finishes with the version it began with. Versions also
// keeps each type's last few contracts (DefaultKeepVersions, at most
// MaxKeepVersions), one per fingerprint, newest first, and Lookup finds
// one by its fingerprint: the consumer reads a record with the version
// that published it while the tiers roll onto a new one. Package reload
// decides when to swap (the file, SIGHUP, the admin endpoint) and checks
// the new registry with CompareRegistries first.
//
// # Concurrency
//
// A Registry and its Contracts are safe for concurrent use. One
// protovalidate validator per Registry is shared by all checks; it is warmed
// with the contracts at load. Versions is safe for concurrent use; swaps
// are serialized and readers never wait for one.
//
// # What it does not do
//
// It does not check the event envelope's own fields (id, occurred_at,
// size limits) beyond Registry.Validate, does not deduplicate, does not
// watch the descriptor set file itself (package reload does), and does not canonicalize
// binary payloads: a valid binary payload is passed through as sent (for
// example, with fields out of order), which every protobuf decoder reads
// as the same message.
package contract
