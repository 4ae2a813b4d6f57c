package contract

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"buf.build/go/hyperpb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Contract is one event type: a message descriptor from the set and the
// rules on it. It is immutable and safe for concurrent use.
type Contract struct {
	typ     string
	desc    protoreflect.MessageDescriptor
	msgType protoreflect.MessageType
	// parser is the message compiled for hyperpb's table-driven decoder,
	// which binary payloads are decoded with: an order of magnitude faster
	// than dynamicpb, and its messages are read by protovalidate as any
	// protoreflect.Message. It is nil for a contract hyperpb mishandles
	// (see hyperpbRefuses), whose payloads decode into dynamicpb with
	// binary instead; decoders names the choice.
	parser *hyperpb.MessageType
	binary proto.UnmarshalOptions
	// transcoder writes a JSON payload's binary without reflection; nil
	// for a contract it does not cover, whose JSON goes through protojson.
	transcoder *jsonTranscoder
	decoders   Decoders
	// rules is the contract's compiled rule checks (rules.go).
	rules       *rulePlan
	fingerprint string
	maxDepth    int
	// hasRequired says whether the message has proto2 required fields at
	// any depth. Decoders run with AllowPartial, which skips a costly walk
	// of the message, and only such contracts pay for proto.CheckInitialized.
	hasRequired bool
	// wire walks binary payloads, and the transcoder's output, before
	// they are decoded.
	wire *wireChecker
	// canon proves binary payloads canonical (Canonical).
	canon     *canonPlan
	scanPlans scanPlans
	json      protojson.UnmarshalOptions
	registry  *Registry
}

// Type returns the event type: the message's full name.
func (c *Contract) Type() string { return c.typ }

// Descriptor returns the message descriptor, built from the descriptor set.
func (c *Contract) Descriptor() protoreflect.MessageDescriptor { return c.desc }

// Fingerprint identifies the contract's schema: "sha256:" and 32 hex
// digits. It changes when the message or anything it imports changes, not
// when only comments do. Computed once at load.
func (c *Contract) Fingerprint() string { return c.fingerprint }

// CheckBinary decodes b as the contract's message in protobuf binary,
// rejects unknown fields, invalid UTF-8 in strings and nesting deeper than
// the limit, and runs the contract's rules. It returns b itself, unchanged,
// as the bytes to publish; the caller must not modify b afterwards.
func (c *Contract) CheckBinary(b []byte) ([]byte, error) {
	err := c.decodeBinary(b, func(m protoreflect.Message) error {
		if err := c.validate(m.Interface(), len(b)); err != nil {
			return detach(err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// DecodeBinary is CheckBinary without the contract's rules: b must decode
// (unknown fields, invalid UTF-8 and depth are still refused as
// MalformedError) but protovalidate is not run. It prices validation in
// benchmarks, and tells whether a value published under another schema
// version is readable by this one without loss; it returns b itself.
func (c *Contract) DecodeBinary(b []byte) ([]byte, error) {
	if err := c.decodeBinary(b, nil); err != nil {
		return nil, err
	}
	return b, nil
}

// decodeBinary decodes b, applies every refusal short of the rules and
// calls use, if not nil, with the message. The message aliases b and may
// live on an arena that is reused once use returns: nothing use returns
// may point into it.
//
// The walk judges depth as the payload's JSON form nests, so that the
// transcoder's output, and binary sent as such, nest within the same
// limit as JSON; the decoders' own recursion limits, binaryLevels of it,
// are never what refuses.
func (c *Contract) decodeBinary(b []byte, use func(protoreflect.Message) error) error {
	if p := c.wire.check(b, c.wire.root, 1, 1); p != nil {
		return p.malformed(c.typ)
	}
	var m protoreflect.Message
	if c.parser != nil {
		a := c.registry.arenas.get(len(b))
		defer c.registry.arenas.put(a, len(b))
		hm := a.NewMessage(c.parser)
		m = hm
		if err := c.unmarshal(func() error {
			// The depth limit is the contract's, enforced by the wire walk;
			// hyperpb counts levels its own way, up to two frames for one,
			// and its limit only bounds its stack here.
			return hm.Unmarshal(b, hyperpb.WithMaxDepth(2*binaryLevels(c.maxDepth)+2), hyperpb.WithAllowAlias(true),
				hyperpb.WithAllowInvalidUTF8(true)) // the walk checked it
		}); err != nil {
			return &MalformedError{Msg: "decode " + c.typ + " from protobuf binary", Err: err}
		}
	} else {
		m = c.msgType.New()
		if err := c.unmarshal(func() error { return c.binary.Unmarshal(b, m.Interface()) }); err != nil {
			return &MalformedError{Msg: "decode " + c.typ + " from protobuf binary", Err: err}
		}
	}
	if err := c.checkInitialized(m); err != nil {
		return err
	}
	if p := scanMessage(m, c.scanPlans); p != nil {
		return p.malformed(c.typ)
	}
	if use == nil {
		return nil
	}
	return use(m)
}

// unmarshal runs a decoder on data the wire walk has let through. Should
// the decoder panic all the same, the panic is this input's refusal, not
// the gateway's crash.
func (c *Contract) unmarshal(decode func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("contract: decoder panic: %v", r)
		}
	}()
	return decode()
}

// CheckJSON decodes b as the contract's message in its protojson form
// (proto field names and lowerCamelCase names both accepted, unknown fields
// rejected), enforces the depth limit, runs the contract's rules and returns
// the message's deterministic protobuf binary, to publish. It does not
// write to b, and what it returns does not alias b.
//
// The transcoder, where it covers the contract, writes that binary
// straight from the JSON text, and the binary is decoded and validated as
// CheckBinary does; otherwise protojson decodes b into a dynamic message,
// which is validated and marshalled.
func (c *Contract) CheckJSON(b []byte) ([]byte, error) {
	return c.checkJSON(b, false)
}

// CheckJSONAllowUnknown is CheckJSON for a payload that may carry fields
// the contract lacks, as a provider's webhook does when it adds fields
// without notice: a member name the message lacks, at any depth, is
// skipped with its value instead of refused, and so is an enum name the
// enum lacks (the field, list element or map entry is not set), as
// protojson's DiscardUnknown skips them. Everything else is refused as
// CheckJSON refuses it: text that is not JSON or not UTF-8, a member of
// the contract twice, nesting deeper than WithMaxDepth (what is skipped
// counts: it is the payload's text), a "[name]" member that names a type
// of the contract's files (protojson refuses it too), and the contract's
// rules. The binary returned holds the known fields only.
//
// Whether to allow unknown fields is the caller's choice per call: the
// gateway makes it per source and event type.
func (c *Contract) CheckJSONAllowUnknown(b []byte) ([]byte, error) {
	return c.checkJSON(b, true)
}

func (c *Contract) checkJSON(b []byte, allowUnknown bool) ([]byte, error) {
	if c.transcoder == nil {
		return c.reflectJSONMode(b, true, allowUnknown)
	}
	out, err := c.transcode(b, allowUnknown)
	if err != nil {
		return nil, err
	}
	err = c.decodeBinary(out, func(m protoreflect.Message) error {
		// JSON is longer than the binary it stands for; its own length
		// keeps the fail-fast bound on what the sender sent.
		if err := c.validate(m.Interface(), len(b)); err != nil {
			return detach(err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeJSON is CheckJSON without the contract's rules: b must decode (as
// CheckJSON, refusals are MalformedError) but protovalidate is not run. It
// exists to price validation in benchmarks.
func (c *Contract) DecodeJSON(b []byte) ([]byte, error) {
	if c.transcoder == nil {
		return c.reflectJSON(b, false)
	}
	out, err := c.transcode(b, false)
	if err != nil {
		return nil, err
	}
	if err := c.decodeBinary(out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// transcode runs the transcoder. A payload it refuses is refused as the
// protojson path refuses it first: not an object, then too deep, then
// whatever the transcoder found; the transcoder reads in one pass and may
// find a wrong value before the depth the other path checks ahead.
func (c *Contract) transcode(b []byte, allowUnknown bool) ([]byte, error) {
	out, err := c.transcoder.run(make([]byte, 0, len(b)), b, allowUnknown)
	if err == nil {
		return out, nil
	}
	if !isJSONObject(b) {
		return nil, &MalformedError{Msg: c.typ + " payload is not a JSON object"}
	}
	if derr := CheckJSONDepth(b, c.maxDepth); derr != nil {
		return nil, derr
	}
	return nil, err
}

// reflectJSON is CheckJSON (DecodeJSON without validate) through protojson
// and a dynamic message: the path for contracts the transcoder does not
// cover, and the one FuzzJSONDecoders holds the transcoder's to.
func (c *Contract) reflectJSON(b []byte, validate bool) ([]byte, error) {
	return c.reflectJSONMode(b, validate, false)
}

// reflectJSONMode is reflectJSON, with DiscardUnknown if allowUnknown.
func (c *Contract) reflectJSONMode(b []byte, validate, allowUnknown bool) ([]byte, error) {
	m, err := c.decodeJSON(b, allowUnknown)
	if err != nil {
		return nil, err
	}
	if validate {
		if err := c.validate(m.Interface(), len(b)); err != nil {
			return nil, err
		}
	}
	return c.marshal(m)
}

// decodeJSON decodes b and applies every refusal short of the rules;
// allowUnknown discards unknown fields and enum names.
func (c *Contract) decodeJSON(b []byte, allowUnknown bool) (protoreflect.Message, error) {
	if !isJSONObject(b) {
		return nil, &MalformedError{Msg: c.typ + " payload is not a JSON object"}
	}
	if err := CheckJSONDepth(b, c.maxDepth); err != nil {
		return nil, err
	}
	m := c.msgType.New()
	opts := c.json
	opts.DiscardUnknown = allowUnknown
	if err := unmarshalJSON(opts, b, m); err != nil {
		return nil, &MalformedError{Msg: "decode " + c.typ + " from JSON", Err: err}
	}
	if err := c.checkInitialized(m); err != nil {
		return nil, err
	}
	return m, nil
}

// marshal returns m's deterministic protobuf binary, to publish.
func (c *Contract) marshal(m protoreflect.Message) ([]byte, error) {
	out, err := proto.MarshalOptions{Deterministic: true, AllowPartial: true}.Marshal(m.Interface())
	if err != nil {
		return nil, fmt.Errorf("contract: encode %s: %w", c.typ, err)
	}
	return out, nil
}

// unmarshalJSON is unmarshal for JSON.
func unmarshalJSON(opts protojson.UnmarshalOptions, b []byte, m protoreflect.Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("contract: decoder panic: %v", r)
		}
	}()
	return opts.Unmarshal(b, m.Interface())
}

// checkInitialized refuses a message that lacks a proto2 required field.
func (c *Contract) checkInitialized(m protoreflect.Message) error {
	if !c.hasRequired {
		return nil
	}
	if err := proto.CheckInitialized(m.Interface()); err != nil {
		return &MalformedError{Msg: c.typ + " lacks a required field", Err: err}
	}
	return nil
}

// hasRequiredFields reports whether md or any message it contains has a
// required field, or may have one through an extension.
func hasRequiredFields(md protoreflect.MessageDescriptor) bool {
	seen := make(map[protoreflect.FullName]bool)
	var walk func(md protoreflect.MessageDescriptor) bool
	walk = func(md protoreflect.MessageDescriptor) bool {
		if seen[md.FullName()] {
			return false
		}
		seen[md.FullName()] = true
		if md.RequiredNumbers().Len() > 0 || md.ExtensionRanges().Len() > 0 {
			return true
		}
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			if fd.IsMap() {
				fd = fd.MapValue()
			}
			if fd.Message() != nil && walk(fd.Message()) {
				return true
			}
		}
		return false
	}
	return walk(md)
}

// isJSONObject reports whether the first byte of b that is not JSON
// whitespace opens an object.
func isJSONObject(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}

// problem is a decoded value the gateway refuses although the decoder took
// it: an unknown field, a string that is not UTF-8, an out-of-range
// timestamp or duration. where holds the path to it, innermost first.
type problem struct {
	what  string
	where []string
	err   error // the decoder's or the wire walk's error, if any
}

func (p *problem) at(segment string) *problem {
	p.where = append(p.where, segment)
	return p
}

func (p *problem) malformed(typ string) *MalformedError {
	path := slices.Clone(p.where)
	slices.Reverse(path)
	s := ""
	for _, seg := range path {
		if s != "" && seg[0] != '[' {
			s += "."
		}
		s += seg
	}
	if s == "" {
		return &MalformedError{Msg: p.what + " in " + typ, Err: p.err}
	}
	return &MalformedError{Msg: p.what + " at " + s + " in " + typ, Err: p.err}
}

// scanMessage looks for unknown fields, strings that are not valid UTF-8,
// out-of-range timestamps and durations and google.protobuf.Values that
// JSON cannot write anywhere in m. Proto3 decoding already rejects invalid
// UTF-8; this also covers proto2 and editions files that do not. The
// other checks make binary accept what JSON accepts: the JSON form of
// these types cannot express an out-of-range time, a Value of no kind or
// a number that is not finite (protojson refuses to write them, so a
// reader could not render the event).
//
// plans, when it has a plan for m's type, names the only fields that can
// hold a problem, and the scan visits just those; a type without a plan is
// scanned field by field.
func scanMessage(m protoreflect.Message, plans scanPlans) *problem {
	if u := m.GetUnknown(); len(u) > 0 {
		num, typ, _ := protowire.ConsumeTag(u)
		if fd := m.Descriptor().Fields().ByNumber(num); fd != nil {
			// The decoder keeps a known field with the wrong wire type as unknown.
			return &problem{what: "field " + string(fd.Name()) + " has wire type " + strconv.Itoa(int(typ)) + ", which does not match its type " + fd.Kind().String()}
		}
		return &problem{what: "unknown field " + strconv.Itoa(int(num))}
	}
	switch m.Descriptor().FullName() {
	case "google.protobuf.Timestamp":
		if !validTimestamp(m) {
			return &problem{what: "google.protobuf.Timestamp out of range"}
		}
	case "google.protobuf.Duration":
		if !validDuration(m) {
			return &problem{what: "google.protobuf.Duration out of range"}
		}
	case "google.protobuf.Value":
		if why := invalidValue(m); why != "" {
			return &problem{what: "google.protobuf.Value " + why}
		}
	}
	if fields, ok := plans[m.Descriptor()]; ok {
		for _, fd := range fields {
			if m.Has(fd) {
				if p := scanNamed(fd, m.Get(fd), plans); p != nil {
					return p
				}
			}
		}
		return nil
	}
	var p *problem
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p = scanNamed(fd, v, plans)
		return p == nil
	})
	return p
}

// scanNamed is scanField with the field's name put on the problem's path.
func scanNamed(fd protoreflect.FieldDescriptor, v protoreflect.Value, plans scanPlans) *problem {
	p := scanField(fd, v, plans)
	if p != nil {
		if fd.IsExtension() {
			p.at("[" + string(fd.FullName()) + "]")
		} else {
			p.at(string(fd.Name()))
		}
	}
	return p
}

func scanField(fd protoreflect.FieldDescriptor, v protoreflect.Value, plans scanPlans) *problem {
	switch {
	case fd.IsList():
		l := v.List()
		for i := range l.Len() {
			if p := scanValue(fd, l.Get(i), plans); p != nil {
				return p.at("[" + strconv.Itoa(i) + "]")
			}
		}
	case fd.IsMap():
		kd, vd := fd.MapKey(), fd.MapValue()
		var p *problem
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			if p = scanValue(kd, k.Value(), plans); p != nil {
				p.what = "map key: " + p.what
			} else {
				p = scanValue(vd, mv, plans)
			}
			if p != nil {
				p.at("[" + strconv.Quote(k.String()) + "]")
			}
			return p == nil
		})
		return p
	default:
		return scanValue(fd, v, plans)
	}
	return nil
}

func scanValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, plans scanPlans) *problem {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if !utf8.ValidString(v.String()) {
			return &problem{what: "invalid UTF-8"}
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return scanMessage(v.Message(), plans)
	}
	return nil
}

// scanPlans maps a message type to the fields scanMessage must visit in it:
// strings the decoder does not check for UTF-8 (outside proto3), also as
// map keys or values, and fields of message type that can hold what the
// scan looks for. A type that can hold extensions has no plan: its set
// fields are not known ahead.
type scanPlans map[protoreflect.MessageDescriptor][]protoreflect.FieldDescriptor

// newScanPlans plans md and every message type reachable from it. walked
// says the payload has passed the wire walk, which refuses unknown fields:
// a nested message is then visited only if it can hold a Timestamp or a
// Duration (out of range), or a string the decoder does not check.
// Otherwise every nested message is, as it may hold unknown fields.
func newScanPlans(md protoreflect.MessageDescriptor, walked bool) scanPlans {
	holds := scanHolders(md)
	needsScan := func(fd protoreflect.FieldDescriptor) bool {
		switch fd.Kind() {
		case protoreflect.MessageKind, protoreflect.GroupKind:
			// A map field is judged by its key and value.
			return !fd.IsMap() && (!walked || holds[fd.Message().FullName()])
		case protoreflect.StringKind:
			return uncheckedString(fd)
		}
		return false
	}
	plans := scanPlans{}
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		if _, done := plans[md]; done {
			return
		}
		plans[md] = nil // planned (or being planned): cycles end here
		fields := md.Fields()
		var visit []protoreflect.FieldDescriptor
		for i := range fields.Len() {
			fd := fields.Get(i)
			if needsScan(fd) || fd.IsMap() && (needsScan(fd.MapKey()) || needsScan(fd.MapValue())) {
				visit = append(visit, fd)
			}
			switch {
			case fd.IsMap():
				if vd := fd.MapValue(); vd.Message() != nil {
					walk(vd.Message())
				}
			case fd.Message() != nil:
				walk(fd.Message())
			}
		}
		if md.ExtensionRanges().Len() > 0 {
			delete(plans, md)
			return
		}
		plans[md] = visit
	}
	walk(md)
	return plans
}

// uncheckedString says whether fd is a string the decoder does not check
// for UTF-8.
func uncheckedString(fd protoreflect.FieldDescriptor) bool {
	return fd.Kind() == protoreflect.StringKind && fd.ParentFile().Syntax() != protoreflect.Proto3
}

// reachableMessages returns md and every message type reachable from its
// fields (map entries included), each once.
func reachableMessages(md protoreflect.MessageDescriptor) []protoreflect.MessageDescriptor {
	var reachable []protoreflect.MessageDescriptor
	seen := make(map[protoreflect.FullName]bool)
	var visit func(md protoreflect.MessageDescriptor)
	visit = func(md protoreflect.MessageDescriptor) {
		if seen[md.FullName()] {
			return
		}
		seen[md.FullName()] = true
		reachable = append(reachable, md)
		fields := md.Fields()
		for i := range fields.Len() {
			if fd := fields.Get(i); fd.Message() != nil {
				visit(fd.Message()) // a map's entry message, too
			}
		}
	}
	visit(md)
	return reachable
}

// scanHolders returns the message types reachable from md that can hold,
// at any depth, a Timestamp, Duration or Value, a string the decoder does
// not check, or extensions (whose fields are not known ahead). It repeats
// until nothing changes, for recursive types.
func scanHolders(md protoreflect.MessageDescriptor) map[protoreflect.FullName]bool {
	reachable := reachableMessages(md)
	holds := make(map[protoreflect.FullName]bool)
	for changed := true; changed; {
		changed = false
		for _, m := range reachable {
			if holds[m.FullName()] {
				continue
			}
			name := m.FullName()
			h := name == "google.protobuf.Timestamp" || name == "google.protobuf.Duration" || name == "google.protobuf.Value" ||
				m.ExtensionRanges().Len() > 0
			fields := m.Fields()
			for i := 0; i < fields.Len() && !h; i++ {
				fd := fields.Get(i)
				h = uncheckedString(fd) || fd.Message() != nil && holds[fd.Message().FullName()]
			}
			if h {
				holds[name] = true
				changed = true
			}
		}
	}
	return holds
}

// Limits of google.protobuf.Timestamp (0001-01-01T00:00:00Z to
// 9999-12-31T23:59:59.999999999Z) and Duration (about ±10,000 years), as
// documented in their .proto files.
const (
	minTimestampSeconds = -62135596800
	maxTimestampSeconds = 253402300799
	maxDurationSeconds  = 315576000000
)

// secondsNanos reads the two fields that Timestamp and Duration share. A
// message whose fields are not numbered or typed as the well-known ones
// (a look-alike in the set) is reported as not ok and left alone.
func secondsNanos(m protoreflect.Message) (seconds int64, nanos int32, ok bool) {
	fields := m.Descriptor().Fields()
	s, n := fields.ByNumber(1), fields.ByNumber(2)
	if s == nil || n == nil || s.Kind() != protoreflect.Int64Kind || n.Kind() != protoreflect.Int32Kind || s.IsList() || n.IsList() {
		return 0, 0, false
	}
	return m.Get(s).Int(), int32(m.Get(n).Int()), true
}

func validTimestamp(m protoreflect.Message) bool {
	s, n, ok := secondsNanos(m)
	if !ok {
		return true
	}
	return s >= minTimestampSeconds && s <= maxTimestampSeconds && n >= 0 && n < 1e9
}

func validDuration(m protoreflect.Message) bool {
	s, n, ok := secondsNanos(m)
	if !ok {
		return true
	}
	if s < -maxDurationSeconds || s > maxDurationSeconds || n <= -1e9 || n >= 1e9 {
		return false
	}
	return !(s > 0 && n < 0) && !(s < 0 && n > 0)
}

// invalidValue says why protojson cannot write m, a google.protobuf.Value,
// or "": its kind is not set, or its number is NaN or infinite. A message
// whose fields are not the well-known ones is left alone.
func invalidValue(m protoreflect.Message) string {
	kind := m.Descriptor().Oneofs().ByName("kind")
	if kind == nil {
		return ""
	}
	fd := m.WhichOneof(kind)
	switch {
	case fd == nil:
		return "has no kind set"
	case fd.Kind() == protoreflect.DoubleKind:
		if f := m.Get(fd).Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return "number is not finite"
		}
	}
	return ""
}
