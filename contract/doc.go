// Package contract is sluice's descriptor-set registry: it loads event
// contracts at run time, decodes payloads with them and judges them against
// their protovalidate rules.
//
//	reg, err := contract.LoadFile("contracts.binpb", []string{"examples.shop.v1.OrderPlaced"})
//	c, ok := reg.Lookup(event.GetType())      // !ok: UNKNOWN_EVENT_TYPE
//	value, err := c.CheckJSON(payload)        // or c.CheckBinary(payload)
//	var m *contract.MalformedError            // errors.As: MALFORMED
//	var v *contract.ViolationError            // errors.As: SCHEMA_VIOLATION, v.Violations
//	// any other error is the gateway's fault (a rule that cannot be evaluated)
//
// # Loading
//
// Load takes a serialized FileDescriptorSet or buf image and the full
// names of the event types. Descriptors are built from the set, never from
// types compiled into the binary, so a contract changes by shipping a new
// set; a file the set imports but lacks comes from the compiled-in ones.
// Load fails, naming what is wrong, when the set does not build, a type is
// missing or not a message, or a rule does not compile. A Registry is
// immutable and safe for concurrent use.
//
// # What is refused
//
// Each Check returns the bytes to publish or exactly one of:
//
//   - *MalformedError: the payload is not the contract's message: wire data
//     or JSON that does not decode, an unknown field at any depth (but see
//     CheckJSONAllowUnknown), a duplicate JSON field, invalid UTF-8, a
//     missing proto2 required field, a Timestamp or Duration out of range,
//     a google.protobuf.Value JSON cannot write, or nesting deeper than
//     WithMaxDepth (default 32), counted as the payload's JSON nests in
//     either form (depth.go).
//   - *ViolationError: the payload decoded but broke rules; each Violation
//     names the field path, rule id and message. All are reported, in field
//     order, up to FullReportBytes; a larger message reports its first
//     (Partial), so a refusal costs a small multiple of the input's size.
//   - another error: a rule could not be evaluated, not the sender's fault.
//
// Rules are judged as protovalidate v1.4.0 judges them. The standard rules
// of each field (string, numeric, enum, bool, repeated, map, timestamp and
// duration rules, patterns, well-known formats, required, ignore, oneof
// and message oneof rules) are compiled at load into direct checks, and
// protovalidate, told to skip those fields, checks the rest: CEL, message
// rules beside CEL, predefined rules. The answers are protovalidate's, the
// same violations in the same order (rules.go; FuzzCompiledRules holds
// them to it). Contract.Rules names each field's choice.
//
// The same input always gets the same kind of answer. No input panics the
// process: binary is walked before it is decoded, so only wire data that
// parses, with known fields in their wire types within the depth limit,
// reaches the decoder, and a decoder panic is recovered as MalformedError.
// Work is bounded by the input size and the depth limit. Contract.Decoders
// names the decoders chosen at load (decoders.go).
//
// CheckJSONAllowUnknown, chosen per call (the gateway per source and
// type), skips member names and enum names the contract lacks, as
// protojson's DiscardUnknown does; all else is judged as CheckJSON judges
// it, skipped text included (JSON, UTF-8, depth).
//
// # What is published
//
// CheckBinary returns its input unchanged once valid: the published value
// is what the source sent. CheckJSON returns the message's deterministic
// binary. Either decodes, with the same contract, to the message that was
// validated. Fingerprint identifies a contract's schema: SHA-256 over the
// message's name and its file with all transitive imports, without
// comments or image metadata. Contract.JSONSchema describes the JSON the
// REST API takes, complete for what Check accepts (schema.go).
//
// # Compatibility and versions
//
// Compare and CompareRegistries judge a new set against the running one,
// per event type, matching fields by number. Each difference is a Finding
// with a stable rule id (the Rule* constants say what each breaks) and the
// directions it breaks: Backward (readers on the new version meet old
// events) or Forward (readers on the old version meet new ones). A Policy
// per type picks the mode: backward (default), forward, full or none;
// AllowTightening lets a tightened rule pass. Report.Err lists the
// findings that break what the mode requires. Rollout order (gateways take
// a version before sources use it) is not a finding.
//
// Versions is what a process serves: Registry is the current one, taken
// once per request, and Lookup finds each type's last few contracts by
// fingerprint, so the consumer reads a record with the version that
// published it. Swaps are serialized; readers never wait.
//
// # What it does not do
//
// It does not check the envelope's own fields beyond Registry.Validate,
// does not deduplicate, does not watch the descriptor set file (package
// reload does), and does not canonicalize binary payloads.
package contract
