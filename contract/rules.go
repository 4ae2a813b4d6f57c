package contract

import (
	"errors"
	"strconv"
	"strings"
	"sync"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Compiled rule checks.
//
// At load, every field's standard protovalidate rules that this package
// knows (rules_scalar.go) are compiled into direct checks on the decoded
// message, and protovalidate is told to skip those fields (a Filter). The
// rest stay with protovalidate, per field: CEL expressions, message-level
// rules, predefined rules, and every standard rule not compiled here. A
// field is compiled whole or not at all, so one rule never runs twice and
// a field's violations come from one side only.
//
// The answers are protovalidate's: the same verdict, and for refusals the
// same field paths, rule ids and messages in the same order. protovalidate
// checks a message's own rules first, then its oneofs, then its fields in
// declaration order, each field's own rules before what is nested in it; a
// compiled check keeps that order, and when both sides report, the two
// lists are merged by that order (ruleKey). Entries of one map are in
// iteration order on both sides, which protobuf does not define. When only
// the first failed rule is asked for (fail-fast), it is the first of the
// two sides' first.
//
// FuzzCompiledRules holds the compiled checks to protovalidate on every
// example contract and on one that uses every standard rule.

// rulePlan is the compiled checks of one contract.
type rulePlan struct {
	root *msgRules
	// skip holds the descriptors whose rules are compiled: protovalidate's
	// filter leaves them out.
	skip map[protoreflect.Descriptor]struct{}
	// native is set when protovalidate has nothing left to check.
	native bool
	// filter is the option that has protovalidate skip them.
	filter []protovalidate.ValidationOption
	// fields says, per field with rules, which side checks it.
	fields []FieldRules
}

// FieldRules says which side checks one field's rules.
type FieldRules struct {
	// Field is the field's full name, or a message's for the rules on
	// the message as a whole.
	Field string
	// Compiled is set when the gateway's own checks run the field's rules;
	// otherwise protovalidate does, and Reason says why.
	Compiled bool
	Reason   string
}

// Rules returns, per field with rules reachable from the contract, which
// side checks them, chosen at load.
func (c *Contract) Rules() []FieldRules { return c.rules.fields }

// msgRules is the compiled checks of one message type.
type msgRules struct {
	md        protoreflect.MessageDescriptor
	msgOneofs []msgOneofRule
	oneofs    []oneofRule
	fields    []*fieldRule
	// native: nothing at this message or below is left to protovalidate.
	native bool
	// walk: something at this message or below is compiled.
	walk bool
	done bool
}

// msgOneofRule is a message oneof rule: at most one of the fields set,
// or exactly one when required.
type msgOneofRule struct {
	fields          []protoreflect.FieldDescriptor
	required        bool
	tooMany, tooFew ruleFail
}

// compileMessageOneofs compiles a message's rules when they are oneof
// rules only; nil otherwise.
func compileMessageOneofs(md protoreflect.MessageDescriptor, mr *validate.MessageRules) []msgOneofRule {
	if len(mr.GetCel()) > 0 || len(mr.GetCelExpression()) > 0 || len(mr.ProtoReflect().GetUnknown()) > 0 {
		return nil
	}
	left := proto.CloneOf(mr)
	left.SetOneof(nil)
	if proto.Size(left) > 0 || len(mr.GetOneof()) == 0 {
		return nil
	}
	var out []msgOneofRule
	for _, r := range mr.GetOneof() {
		if len(r.GetFields()) == 0 || len(r.ProtoReflect().GetUnknown()) > 0 {
			return nil
		}
		o := msgOneofRule{required: r.GetRequired()}
		seen := make(map[string]bool)
		for _, name := range r.GetFields() {
			fd := md.Fields().ByName(protoreflect.Name(name))
			if fd == nil || seen[name] {
				return nil
			}
			seen[name] = true
			o.fields = append(o.fields, fd)
		}
		names := strings.Join(r.GetFields(), ", ")
		o.tooMany = ruleFail{rule: "message.oneof", msg: "only one of " + names + " can be set"}
		o.tooFew = ruleFail{rule: "message.oneof", msg: "one of " + names + " must be set"}
		out = append(out, o)
	}
	return out
}

type oneofRule struct {
	od   protoreflect.OneofDescriptor
	rank int32
}

type fieldRule struct {
	fd       protoreflect.FieldDescriptor
	name     string
	rank     int32
	compiled bool
	// Compiled rules (compiled only).
	ignoreAlways bool
	required     bool
	ignoreEmpty  bool
	value        []valueCheck
	list         []valueCheck // on the list as a whole
	items        *itemRules
	mapRules     []valueCheck
	keys, values *itemRules
	// sub is the message type to walk into (the field's, its items' or its
	// map values'), nil when nothing in it is compiled.
	sub *msgRules
}

// itemRules are the rules on each item of a list, or key or value of a
// map.
type itemRules struct {
	checks      []valueCheck
	ignoreEmpty bool
	zero        protoreflect.Value
	kind        protoreflect.Kind
}

// valueCheck checks one value; it returns the failed rule or nil. A check
// that reports several rules (a string's length and byte bounds) is
// several checks.
type valueCheck func(protoreflect.Value) *ruleFail

// ruleFail is a failed rule, built at load.
type ruleFail struct {
	rule, msg string
}

// errNotCompiled says why a field is left to protovalidate.
type errNotCompiled string

func (e errNotCompiled) Error() string { return string(e) }

// compileRules builds the compiled checks of a contract. Anything it does
// not know, or any doubt, leaves the field to protovalidate; a shape that
// it cannot keep in protovalidate's order leaves the whole contract to it.
func compileRules(md protoreflect.MessageDescriptor) *rulePlan {
	p := &rulePlan{skip: make(map[protoreflect.Descriptor]struct{})}
	c := &ruleCompiler{plan: p, msgs: make(map[protoreflect.FullName]*msgRules)}
	p.root = c.message(md)
	if c.unsafe {
		// Some items or map values protovalidate leaves alone hold
		// messages with compiled fields: keep the whole contract to
		// protovalidate.
		fields := make([]FieldRules, len(p.fields))
		for i, f := range p.fields {
			fields[i] = FieldRules{Field: f.Field, Reason: "the contract ignores message items"}
		}
		return &rulePlan{fields: fields}
	}
	p.native = p.root.native
	p.filter = []protovalidate.ValidationOption{protovalidate.WithFilter(ruleFilter(p.skip))}
	return p
}

type ruleCompiler struct {
	plan   *rulePlan
	msgs   map[protoreflect.FullName]*msgRules
	unsafe bool
}

func (c *ruleCompiler) message(md protoreflect.MessageDescriptor) *msgRules {
	if m, ok := c.msgs[md.FullName()]; ok {
		return m
	}
	m := &msgRules{md: md, native: true}
	c.msgs[md.FullName()] = m
	mr, err := protovalidate.ResolveMessageRules(md)
	switch {
	case err != nil:
		m.native = false
	case mr != nil && proto.Size(mr) > 0:
		if m.msgOneofs = compileMessageOneofs(md, mr); m.msgOneofs != nil {
			c.plan.skip[md] = struct{}{}
			m.walk = true
		} else {
			// Message-level CEL stays with protovalidate, and the
			// message's oneof rules with it.
			m.native = false
			c.plan.fields = append(c.plan.fields, FieldRules{Field: string(md.FullName()), Reason: "message rules in CEL"})
		}
	}
	inMsgOneof := make(map[protoreflect.Name]bool)
	for _, r := range mr.GetOneof() {
		for _, f := range r.GetFields() {
			inMsgOneof[protoreflect.Name(f)] = true
		}
	}
	oneofs := md.Oneofs()
	for i := range oneofs.Len() {
		od := oneofs.Get(i)
		or, err := protovalidate.ResolveOneofRules(od)
		switch {
		case err != nil:
			m.native = false
		case or.GetRequired() && len(or.ProtoReflect().GetUnknown()) == 0:
			m.oneofs = append(m.oneofs, oneofRule{od: od, rank: oneofRank(od)})
			c.plan.skip[od] = struct{}{}
			m.walk = true
		}
	}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		f := c.field(fd, inMsgOneof[fd.Name()])
		if f == nil {
			continue
		}
		if f.compiled {
			c.plan.skip[fd] = struct{}{}
		} else {
			m.native = false
		}
		if f.compiled || f.sub != nil {
			m.fields = append(m.fields, f)
			m.walk = true
		}
	}
	m.done = true
	return m
}

// hasRules reports whether md or a message reachable from it has rules.
func (c *ruleCompiler) hasRules(md protoreflect.MessageDescriptor) bool {
	seen := make(map[protoreflect.FullName]bool)
	var visit func(md protoreflect.MessageDescriptor) bool
	visit = func(md protoreflect.MessageDescriptor) bool {
		if seen[md.FullName()] {
			return false
		}
		seen[md.FullName()] = true
		if mr, err := protovalidate.ResolveMessageRules(md); err != nil || proto.Size(mr) > 0 {
			return true
		}
		for i := range md.Oneofs().Len() {
			if or, err := protovalidate.ResolveOneofRules(md.Oneofs().Get(i)); err != nil || proto.Size(or) > 0 {
				return true
			}
		}
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			if fr, err := protovalidate.ResolveFieldRules(fd); err != nil || proto.Size(fr) > 0 {
				return true
			}
			if sub := messageOf(fd); sub != nil && visit(sub) {
				return true
			}
		}
		return false
	}
	return visit(md)
}

func oneofRank(od protoreflect.OneofDescriptor) int32 { return int32(od.Index()) - 1<<20 }

// field compiles one field's rules; nil when there is nothing to check or
// walk into.
func (c *ruleCompiler) field(fd protoreflect.FieldDescriptor, inMsgOneof bool) *fieldRule {
	f := &fieldRule{fd: fd, name: string(fd.Name()), rank: int32(fd.Index()), ignoreEmpty: fd.HasPresence()}
	fr, err := protovalidate.ResolveFieldRules(fd)
	var sub *msgRules
	if md := messageOf(fd); md != nil && c.hasRules(md) {
		sub = c.message(md)
		if !sub.done {
			// A recursive type: its checks are still being built, so
			// protovalidate keeps the field's own rules.
			f.sub = sub
			if fr, err := protovalidate.ResolveFieldRules(fd); err != nil || (fr != nil && proto.Size(fr) > 0) {
				c.note(fd, false, "recursive message")
			}
			return f
		}
		if sub.walk {
			f.sub = sub
		}
	}
	if err != nil {
		c.note(fd, false, "rules do not resolve")
		return f
	}
	if fr != nil && !fr.HasIgnore() && inMsgOneof {
		fr = proto.CloneOf(fr)
		fr.SetIgnore(validate.Ignore_IGNORE_IF_ZERO_VALUE)
	}
	if fr == nil || proto.Size(fr) == 0 {
		if sub != nil && !sub.native {
			// protovalidate walks into it for what is left there.
			return f
		}
		f.compiled = true
		if f.sub == nil {
			return nil
		}
		return f
	}
	if fr.GetIgnore() == validate.Ignore_IGNORE_ALWAYS {
		// protovalidate checks nothing of the field, nor below it.
		f.compiled, f.ignoreAlways = true, true
		c.note(fd, true, "")
		return f
	}
	if err := c.compileField(f, fr); err != nil {
		c.note(fd, false, err.Error())
		if f.sub != nil && (fr.GetRepeated().GetItems().GetIgnore() != validate.Ignore_IGNORE_UNSPECIFIED ||
			fr.GetMap().GetValues().GetIgnore() != validate.Ignore_IGNORE_UNSPECIFIED) {
			// protovalidate skips some of the messages the compiled checks
			// would walk into.
			c.unsafe = true
		}
		f.reset()
		return f
	}
	if sub != nil && !sub.native && !f.ignoreAlways {
		c.note(fd, false, "its message has rules left to protovalidate")
		f.reset()
		return f
	}
	f.compiled = true
	c.note(fd, true, "")
	return f
}

func (f *fieldRule) reset() {
	*f = fieldRule{fd: f.fd, name: f.name, rank: f.rank, ignoreEmpty: f.fd.HasPresence(), sub: f.sub}
}

func (c *ruleCompiler) note(fd protoreflect.FieldDescriptor, compiled bool, reason string) {
	c.plan.fields = append(c.plan.fields, FieldRules{Field: string(fd.FullName()), Compiled: compiled, Reason: reason})
}

// messageOf returns the message type a field holds (its map's values'),
// or nil.
func messageOf(fd protoreflect.FieldDescriptor) protoreflect.MessageDescriptor {
	if fd.IsMap() {
		return fd.MapValue().Message()
	}
	return fd.Message()
}

func (c *ruleCompiler) compileField(f *fieldRule, fr *validate.FieldRules) error {
	fd := f.fd
	if len(fr.ProtoReflect().GetUnknown()) > 0 {
		return errNotCompiled("unknown rule options")
	}
	if len(fr.GetCel()) > 0 || len(fr.GetCelExpression()) > 0 {
		return errNotCompiled("CEL")
	}
	switch fr.GetIgnore() {
	case validate.Ignore_IGNORE_UNSPECIFIED:
	case validate.Ignore_IGNORE_IF_ZERO_VALUE:
		f.ignoreEmpty = true
	case validate.Ignore_IGNORE_ALWAYS:
		f.ignoreAlways = true
		return nil
	default:
		return errNotCompiled("ignore " + fr.GetIgnore().String())
	}
	if fd.HasPresence() {
		f.ignoreEmpty = true
	}
	f.required = fr.GetRequired()
	switch {
	case fd.IsMap():
		mr := fr.GetMap()
		if fr.WhichType() != validate.FieldRules_Type_not_set_case && mr == nil {
			return errNotCompiled("rules do not fit the field")
		}
		if mr == nil {
			return nil
		}
		checks, err := compileMapRules(mr)
		if err != nil {
			return err
		}
		f.mapRules = checks
		if mr.HasKeys() {
			if f.keys, err = compileItem(fd.MapKey(), mr.GetKeys()); err != nil {
				return err
			}
		}
		if mr.HasValues() {
			if f.values, err = compileItem(fd.MapValue(), mr.GetValues()); err != nil {
				return err
			}
		}
	case fd.IsList():
		rr := fr.GetRepeated()
		if fr.WhichType() != validate.FieldRules_Type_not_set_case && rr == nil {
			return errNotCompiled("rules do not fit the field")
		}
		if rr == nil {
			return nil
		}
		checks, err := compileRepeatedRules(fd, rr)
		if err != nil {
			return err
		}
		f.list = checks
		if rr.HasItems() {
			if f.items, err = compileItem(fd, rr.GetItems()); err != nil {
				return err
			}
		}
	default:
		checks, err := compileValue(fd, fr)
		if err != nil {
			return err
		}
		f.value = checks
	}
	return nil
}

// compileItem compiles the rules on a list's items or a map's keys or
// values.
func compileItem(fd protoreflect.FieldDescriptor, fr *validate.FieldRules) (*itemRules, error) {
	if len(fr.ProtoReflect().GetUnknown()) > 0 {
		return nil, errNotCompiled("unknown rule options")
	}
	if len(fr.GetCel()) > 0 || len(fr.GetCelExpression()) > 0 {
		return nil, errNotCompiled("CEL")
	}
	if fr.HasRequired() {
		return nil, errNotCompiled("required on items")
	}
	it := &itemRules{kind: fd.Kind()}
	switch fr.GetIgnore() {
	case validate.Ignore_IGNORE_UNSPECIFIED:
	case validate.Ignore_IGNORE_IF_ZERO_VALUE:
		if fd.Message() != nil {
			return nil, errNotCompiled("ignore on message items")
		}
		it.ignoreEmpty = true
		it.zero = itemZero(fd)
	default:
		return nil, errNotCompiled("ignore " + fr.GetIgnore().String() + " on items")
	}
	checks, err := compileValue(fd, fr)
	if err != nil {
		return nil, err
	}
	it.checks = checks
	return it, nil
}

// itemZero is the value an item is empty at, as protovalidate takes it: a
// new list element, or a map key's or value's default (a proto2 enum's
// first value, not 0).
func itemZero(fd protoreflect.FieldDescriptor) protoreflect.Value {
	if fd.IsList() {
		return dynamicpb.NewMessage(fd.ContainingMessage()).Get(fd).List().NewElement()
	}
	return fd.Default()
}

// ruleFilter leaves the compiled fields and oneofs out of protovalidate.
type ruleFilter map[protoreflect.Descriptor]struct{}

func (f ruleFilter) ShouldValidate(_ protoreflect.Message, d protoreflect.Descriptor) bool {
	_, skip := f[d]
	return !skip
}

// ruleReport collects the compiled checks' violations. It is pooled: a
// check that fails nothing allocates nothing.
type ruleReport struct {
	failFast bool
	fallback bool
	path     []pathElem
	out      []keyedViolation
	buf      [16]pathElem
}

var ruleReports = sync.Pool{New: func() any { return new(ruleReport) }}

// pathElem is one step of the path to the value being checked.
type pathElem struct {
	keyElem
	name string
	key  protoreflect.MapKey // when sub is mapSub
}

// keyElem is one step of a violation's field path, ordered as
// protovalidate evaluates: a oneof before the fields, fields in declaration
// order, list items in order. Map entries have no order (mapSub).
type keyElem struct {
	rank int32
	sub  int64
}

const (
	noSub  = -1
	mapSub = -2
)

type keyedViolation struct {
	key []keyElem
	v   Violation
}

// ruleFallback is the failure of a check that cannot answer as
// protovalidate would (a value CEL refuses to read): the message is
// checked by protovalidate alone.
var ruleFallback ruleFail

func (r *ruleReport) add(f *ruleFail) bool {
	if f == &ruleFallback {
		r.fallback = true
		return true
	}
	key := make([]keyElem, len(r.path))
	var b strings.Builder
	for i, e := range r.path {
		key[i] = e.keyElem
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.name)
		switch e.sub {
		case noSub:
		case mapSub:
			b.WriteByte('[')
			b.WriteString(mapKeyString(e.key))
			b.WriteByte(']')
		default:
			b.WriteByte('[')
			b.WriteString(strconv.FormatInt(e.sub, 10))
			b.WriteByte(']')
		}
	}
	r.out = append(r.out, keyedViolation{key: key, v: Violation{Field: b.String(), Rule: f.rule, Message: f.msg}})
	return r.failFast
}

func (r *ruleReport) push(rank int32, sub int64, name string) {
	r.path = append(r.path, pathElem{keyElem: keyElem{rank: rank, sub: sub}, name: name})
}

func (r *ruleReport) pushKey(rank int32, key protoreflect.MapKey, name string) {
	r.path = append(r.path, pathElem{keyElem: keyElem{rank: rank, sub: mapSub}, name: name, key: key})
}

func (r *ruleReport) pop() { r.path = r.path[:len(r.path)-1] }

// check runs m's compiled checks on msg; it returns true when fail-fast
// stopped it.
func (m *msgRules) check(msg protoreflect.Message, r *ruleReport) bool {
	for i := range m.msgOneofs {
		o := &m.msgOneofs[i]
		n := 0
		for _, fd := range o.fields {
			if msg.Has(fd) {
				n++
			}
		}
		switch {
		case n > 1:
			if r.add(&o.tooMany) {
				return true
			}
		case o.required && n != 1:
			if r.add(&o.tooFew) {
				return true
			}
		}
	}
	for _, o := range m.oneofs {
		if msg.WhichOneof(o.od) == nil {
			r.push(o.rank, noSub, string(o.od.Name()))
			stop := r.add(&failOneofRequired)
			r.pop()
			if stop {
				return true
			}
		}
	}
	for _, f := range m.fields {
		if f.check(msg, r) {
			return true
		}
	}
	return false
}

var (
	failOneofRequired = ruleFail{rule: "required", msg: "exactly one field is required in oneof"}
	failRequired      = ruleFail{rule: "required", msg: "value is required"}
)

func (f *fieldRule) check(msg protoreflect.Message, r *ruleReport) bool {
	if f.ignoreAlways {
		return false
	}
	if !f.compiled {
		// protovalidate checks the field; walk into it as it does, for
		// what is compiled there.
		if f.sub == nil || !msg.Has(f.fd) {
			return false
		}
		return f.walk(msg.Get(f.fd), r, false)
	}
	// Has costs a read of the field; only presence asks for it.
	if (f.required || f.ignoreEmpty) && !msg.Has(f.fd) {
		if f.required {
			r.push(f.rank, noSub, f.name)
			stop := r.add(&failRequired)
			r.pop()
			return stop
		}
		if f.ignoreEmpty {
			return false
		}
	}
	v := msg.Get(f.fd)
	if f.runChecks(v, r) {
		return true
	}
	return f.walk(v, r, true)
}

// runChecks runs the checks on the field's value as a whole.
func (f *fieldRule) runChecks(v protoreflect.Value, r *ruleReport) bool {
	if len(f.value) == 0 && len(f.list) == 0 && len(f.mapRules) == 0 {
		return false
	}
	r.push(f.rank, noSub, f.name)
	defer r.pop()
	for _, c := range f.value {
		if fail := c(v); fail != nil && r.add(fail) {
			return true
		}
	}
	for _, c := range f.list {
		if fail := c(v); fail != nil && r.add(fail) {
			return true
		}
	}
	for _, c := range f.mapRules {
		if fail := c(v); fail != nil {
			// protovalidate reports one of a map's bounds at most.
			return r.add(fail)
		}
	}
	return false
}

// walk checks the items, keys and values of a field (when its rules are
// compiled: checked) and walks into its messages.
func (f *fieldRule) walk(v protoreflect.Value, r *ruleReport, checked bool) bool {
	items, keys, values := f.items, f.keys, f.values
	if !checked {
		items, keys, values = nil, nil, nil
	}
	switch {
	case f.fd.IsList():
		if items == nil && f.sub == nil {
			return false
		}
		l := v.List()
		for i := range l.Len() {
			r.push(f.rank, int64(i), f.name)
			stop := items.check(l.Get(i), r) || (f.sub != nil && f.sub.check(l.Get(i).Message(), r))
			r.pop()
			if stop {
				return true
			}
		}
	case f.fd.IsMap():
		if keys == nil && values == nil && f.sub == nil {
			return false
		}
		stop := false
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			r.pushKey(f.rank, k, f.name)
			stop = keys.check(k.Value(), r) || values.check(mv, r) || (f.sub != nil && f.sub.check(mv.Message(), r))
			r.pop()
			return !stop
		})
		return stop
	case f.sub != nil:
		r.push(f.rank, noSub, f.name)
		stop := f.sub.check(v.Message(), r)
		r.pop()
		return stop
	}
	return false
}

func (it *itemRules) check(v protoreflect.Value, r *ruleReport) bool {
	if it == nil {
		return false
	}
	if it.ignoreEmpty && equalScalar(it.kind, v, it.zero) {
		return false
	}
	for _, c := range it.checks {
		if fail := c(v); fail != nil && r.add(fail) {
			return true
		}
	}
	return false
}

func mapKeyString(k protoreflect.MapKey) string {
	switch v := k.Interface().(type) {
	case string:
		return strconv.Quote(v)
	case bool:
		return strconv.FormatBool(v)
	case int32, int64:
		return strconv.FormatInt(k.Int(), 10)
	default:
		return strconv.FormatUint(k.Uint(), 10)
	}
}

// run runs the compiled checks on msg; fallback says protovalidate is to
// check it alone.
func (p *rulePlan) run(msg protoreflect.Message, failFast bool) (_ []keyedViolation, fallback bool) {
	r := ruleReports.Get().(*ruleReport)
	r.failFast, r.fallback, r.path, r.out = failFast, false, r.buf[:0], nil
	p.root.check(msg, r)
	out, fallback := r.out, r.fallback
	r.out = nil
	clear(r.buf[:])
	ruleReports.Put(r)
	return out, fallback
}

// keyOf orders one of protovalidate's violations as ruleKey does ours.
func keyOf(md protoreflect.MessageDescriptor, path *validate.FieldPath) []keyElem {
	els := path.GetElements()
	key := make([]keyElem, 0, len(els))
	for _, e := range els {
		ke := keyElem{rank: 1 << 30, sub: noSub}
		var next protoreflect.MessageDescriptor
		switch {
		case md == nil:
		case e.HasFieldNumber():
			if fd := md.Fields().ByNumber(protoreflect.FieldNumber(e.GetFieldNumber())); fd != nil {
				ke.rank = int32(fd.Index())
				next = messageOf(fd)
			} else {
				ke.rank = 1<<30 + e.GetFieldNumber()
			}
		default:
			if od := md.Oneofs().ByName(protoreflect.Name(e.GetFieldName())); od != nil {
				ke.rank = oneofRank(od)
			}
		}
		switch e.WhichSubscript() {
		case validate.FieldPathElement_Index_case:
			ke.sub = int64(e.GetIndex())
		case validate.FieldPathElement_Subscript_not_set_case:
		default:
			ke.sub = mapSub
		}
		key = append(key, ke)
		md = next
	}
	return key
}

// ruleKeyLess reports whether a is checked before b.
func ruleKeyLess(a, b []keyElem) bool {
	for i := range min(len(a), len(b)) {
		if a[i].rank != b[i].rank {
			return a[i].rank < b[i].rank
		}
		if a[i].sub == mapSub || b[i].sub == mapSub {
			return false
		}
		if a[i].sub != b[i].sub {
			return a[i].sub < b[i].sub
		}
	}
	return len(a) < len(b)
}

// keyedViolations reads a protovalidate error's violations with their
// order keys.
func keyedViolations(md protoreflect.MessageDescriptor, err error) ([]keyedViolation, bool) {
	var verr *protovalidate.ValidationError
	if !errors.As(err, &verr) {
		return nil, false
	}
	out := make([]keyedViolation, 0, len(verr.Violations))
	for _, v := range verr.Violations {
		p := v.Proto
		out = append(out, keyedViolation{key: keyOf(md, p.GetField()), v: Violation{
			Field:   protovalidate.FieldPathString(p.GetField()),
			Rule:    p.GetRuleId(),
			Message: p.GetMessage(),
		}})
	}
	return out, true
}

// mergeViolations merges protovalidate's violations (pv) and the compiled
// checks' (ours), each in check order, into one list in check order; with
// n > 0, the first n only.
func mergeViolations(pv, ours []keyedViolation, n int) []Violation {
	if n <= 0 {
		n = len(pv) + len(ours)
	}
	out := make([]Violation, 0, min(n, len(pv)+len(ours)))
	i, j := 0, 0
	for len(out) < n && (i < len(pv) || j < len(ours)) {
		if j == len(ours) || (i < len(pv) && !ruleKeyLess(ours[j].key, pv[i].key)) {
			out = append(out, pv[i].v)
			i++
		} else {
			out = append(out, ours[j].v)
			j++
		}
	}
	return out
}
