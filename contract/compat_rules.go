package contract

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sluicehq/sluice/internal/clip"
)

// How protovalidate rules are compared. The FieldRules, MessageRules and
// OneofRules of the old and new side are walked together, field by field
// of the rules messages; a rules message inside another (string in
// FieldRules, items in RepeatedRules) is walked in turn, its name added to
// the rule path. Each leaf rule is judged by its name in ruleSemantics. A
// rule the table does not know (a rule of a newer protovalidate, a
// predefined rule extension, bytes this build cannot decode) counts as
// tightened whenever it changes, and its Reason says so. Leaves are judged
// one at a time: two changes that cancel out (a min_len raised while an
// ignore rule makes the field optional) are each reported.
//
// Each rule is read as protovalidate reads it, not by protobuf presence:
// a rule set to the value that checks nothing (a prefix, suffix or
// contains of "", a string pattern of "", a flag set false, a minimum of
// 0, well_known_regex KNOWN_REGEX_UNSPECIFIED, ignore IGNORE_UNSPECIFIED)
// is no rule, as if unset; a rule whose zero value still checks (const,
// len, a maximum, not_contains "", which refuses every value, a bytes
// pattern, which refuses bytes that are not UTF-8) is compared by
// presence. string.strict is read with its default, true when unset, and
// only where a header regex (well_known_regex) makes it matter: the two
// are compared together, as the set of strings they admit. A field mask's
// in and not_in lists admit or refuse a path's children with it.
//
// Numeric bounds (gt, gte, lt, lte of the number, duration and timestamp
// rules) are compared as the range they admit, exactly: gt v is gte the
// next value after v (v+1 for integers, one nanosecond for durations and
// timestamps, the next float for floats), so gt: 0 → gte: 1 on an integer
// is no change at all. An exclusive range (protovalidate's lower bound
// above the upper one: outside the two) is not ordered; any change to
// one counts as tightening. A field whose rules move between integer
// kinds (uint32 rules to uint64, with a widened field) is compared by
// rule name across them, so the same bounds are no change.

// ruleSemantic is how a leaf rule's change is judged.
type ruleSemantic uint8

const (
	semUnknown     ruleSemantic = iota // any change is tightening
	semNoEffect                        // does not decide what passes (example)
	semFlag                            // a bool; true is stricter
	semAtLeast                         // a minimum; larger is stricter, unset is 0
	semAtMost                          // a maximum; smaller is stricter, unset is none
	semExact                           // one value to match (const, len, pattern); any other is stricter
	semPrefix                          // a longer prefix of the old one is stricter
	semSuffix                          // likewise for suffixes
	semContains                        // a string containing the old one is stricter
	semNotContains                     // a substring of the old one is stricter
	semIn                              // the values allowed; fewer are stricter, none is no rule
	semNotIn                           // the values refused; more are stricter
	semAll                             // conditions that must all hold (cel_expression); more are stricter
	semCEL                             // CEL rules, by id
	semOneofRules                      // MessageRules.oneof, by their fields
	semIgnore                          // the ignore enum: unspecified, if zero value, always: looser in that order
	semBound                           // gt, gte, lt, lte: compared as the range they admit
	semHeaderRegex                     // well_known_regex and strict, compared together
)

var ruleSemantics = map[protoreflect.Name]ruleSemantic{
	"required": semFlag, "unique": semFlag, "defined_only": semFlag, "finite": semFlag,
	"lt_now": semFlag, "gt_now": semFlag,
	// The well-known string and bytes formats.
	"email": semFlag, "hostname": semFlag, "ip": semFlag, "ipv4": semFlag, "ipv6": semFlag, "uri": semFlag,
	"uri_ref": semFlag, "address": semFlag, "uuid": semFlag, "tuuid": semFlag, "ulid": semFlag,
	"ip_with_prefixlen": semFlag, "ipv4_with_prefixlen": semFlag, "ipv6_with_prefixlen": semFlag,
	"ip_prefix": semFlag, "ipv4_prefix": semFlag, "ipv6_prefix": semFlag, "host_and_port": semFlag,
	"protobuf_fqn": semFlag, "protobuf_dot_fqn": semFlag,

	"min_len": semAtLeast, "min_bytes": semAtLeast, "min_items": semAtLeast, "min_pairs": semAtLeast,
	"max_len": semAtMost, "max_bytes": semAtMost, "max_items": semAtMost, "max_pairs": semAtMost, "within": semAtMost,
	"const": semExact, "len": semExact, "len_bytes": semExact, "pattern": semExact,
	"well_known_regex": semHeaderRegex, "strict": semHeaderRegex,
	"prefix": semPrefix, "suffix": semSuffix, "contains": semContains, "not_contains": semNotContains,
	"in": semIn, "not_in": semNotIn,
	"cel_expression": semAll, "cel": semCEL, "oneof": semOneofRules,
	"ignore":  semIgnore,
	"example": semNoEffect,
	"gt":      semBound, "gte": semBound, "lt": semBound, "lte": semBound,
}

// zeroIsNoRule says whether fd, a leaf rule, checks nothing when set to
// its zero value, so that being set to it is the same as being unset.
// Every flag (false turns it off) and minimum (0 admits all) does;
// besides them, the rules whose CEL holds for every value at zero: a
// prefix, suffix or contains of "" (string or bytes), a string pattern of
// "" (a bytes pattern converts the bytes to a string first, which fails
// on bytes that are not UTF-8), well_known_regex KNOWN_REGEX_UNSPECIFIED
// and ignore IGNORE_UNSPECIFIED.
func zeroIsNoRule(fd protoreflect.FieldDescriptor) bool {
	if fd.IsList() || fd.Message() != nil {
		return false
	}
	switch ruleSemantics[fd.Name()] {
	case semFlag, semAtLeast, semIgnore:
		return true
	}
	switch fd.Name() {
	case "prefix", "suffix", "contains", "well_known_regex":
		return true
	case "pattern":
		return fd.ContainingMessage().FullName() == "buf.validate.StringRules"
	}
	return false
}

// ignoreLooseness orders buf.validate.Ignore from strict to loose.
var ignoreLooseness = map[protoreflect.EnumNumber]int{
	protoreflect.EnumNumber(validate.Ignore_IGNORE_UNSPECIFIED):   0,
	protoreflect.EnumNumber(validate.Ignore_IGNORE_IF_ZERO_VALUE): 1,
	protoreflect.EnumNumber(validate.Ignore_IGNORE_ALWAYS):        2,
}

// integerRules are the rules messages of the integer kinds, comparable
// with each other by rule name.
var integerRules = map[protoreflect.FullName]bool{
	"buf.validate.Int32Rules": true, "buf.validate.Int64Rules": true, "buf.validate.UInt32Rules": true,
	"buf.validate.UInt64Rules": true, "buf.validate.SInt32Rules": true, "buf.validate.SInt64Rules": true,
	"buf.validate.Fixed32Rules": true, "buf.validate.Fixed64Rules": true, "buf.validate.SFixed32Rules": true,
	"buf.validate.SFixed64Rules": true,
}

func fieldRulesOf(fd protoreflect.FieldDescriptor) protoreflect.Message {
	if fd != nil {
		if r, ok := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules); ok && r != nil {
			return r.ProtoReflect()
		}
	}
	return new(validate.FieldRules).ProtoReflect()
}

func messageRulesOf(md protoreflect.MessageDescriptor) protoreflect.Message {
	if r, ok := proto.GetExtension(md.Options(), validate.E_Message).(*validate.MessageRules); ok && r != nil {
		return r.ProtoReflect()
	}
	return new(validate.MessageRules).ProtoReflect()
}

func oneofRulesOf(od protoreflect.OneofDescriptor) protoreflect.Message {
	if od != nil {
		if r, ok := proto.GetExtension(od.Options(), validate.E_Oneof).(*validate.OneofRules); ok && r != nil {
			return r.ProtoReflect()
		}
	}
	return new(validate.OneofRules).ProtoReflect()
}

// compareFieldRules compares the rules of a field (of nil: a field the
// old version lacks, against no rules).
func (w *schemaWalk) compareFieldRules(path string, of, nf protoreflect.FieldDescriptor) {
	w.compareRules(path, "", fieldRulesOf(of), fieldRulesOf(nf))
}

func (w *schemaWalk) compareMessageRules(path string, old, new protoreflect.MessageDescriptor) {
	w.compareRules(path, "", messageRulesOf(old), messageRulesOf(new))
}

// compareOneofRules compares the rules of each oneof of new with those of
// the old oneof of its name. A oneof gone has no rules left to tighten;
// its fields are reported moved.
func (w *schemaWalk) compareOneofRules(path string, old, new protoreflect.MessageDescriptor) {
	oneofs := new.Oneofs()
	for i := range oneofs.Len() {
		no := oneofs.Get(i)
		if no.IsSynthetic() {
			continue
		}
		w.compareRules(join(path, no.Name()), "", oneofRulesOf(old.Oneofs().ByName(no.Name())), oneofRulesOf(no))
	}
}

func (w *schemaWalk) ruleChange(path, vrule string, tightened bool, format string, args ...any) {
	f := Finding{Type: w.typ, Path: path, Rule: RuleLoosened, ValidateRule: vrule, Reason: fmt.Sprintf(format, args...)}
	if tightened {
		f.Rule, f.Breaks, f.Tightening = RuleTightened, Backward, true
	}
	w.findings = append(w.findings, f)
}

func joinRule(prefix string, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// compareRules compares two rules messages, prefix naming them in the rule
// path. Their fields are matched by name: the descriptors differ only
// for rules of two integer kinds.
func (w *schemaWalk) compareRules(path, prefix string, old, new protoreflect.Message) {
	od, nd := old.Descriptor(), new.Descriptor()
	if od == nd && proto.Equal(old.Interface(), new.Interface()) {
		return
	}
	skip := map[protoreflect.Name]bool{}
	// The kind of rules moved between integer kinds: compare them by name.
	if typ := nd.Oneofs().ByName("type"); typ != nil && od == nd {
		oc, nc := old.WhichOneof(typ), new.WhichOneof(typ)
		if oc != nil && nc != nil && oc != nc && integerRules[oc.Message().FullName()] && integerRules[nc.Message().FullName()] {
			skip[oc.Name()], skip[nc.Name()] = true, true
			w.compareRules(path, joinRule(prefix, string(nc.Name())), old.Get(oc).Message(), new.Get(nc).Message())
		}
	}
	var names []protoreflect.Name
	for _, d := range []protoreflect.MessageDescriptor{nd, od} {
		for i := range d.Fields().Len() {
			if n := d.Fields().Get(i).Name(); !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	bounds, header := false, false
	for _, name := range names {
		sem := ruleSemantics[name]
		if skip[name] {
			continue
		}
		switch sem {
		case semBound:
			bounds = true
			continue
		case semHeaderRegex:
			header = true
			continue
		}
		l := newLeaf(old, new, od.Fields().ByName(name), nd.Fields().ByName(name))
		if !l.oset && !l.nset || l.equal() {
			continue
		}
		vrule := joinRule(prefix, string(name))
		if fd := l.fd(); fd.Message() != nil && !fd.IsList() && strings.HasPrefix(string(fd.Message().FullName()), "buf.validate.") {
			w.compareRules(path, vrule, l.message(true), l.message(false))
			continue
		}
		w.compareLeaf(path, vrule, sem, l)
	}
	if bounds {
		w.compareBounds(path, prefix, old, new)
	}
	if header {
		w.compareHeaderRegex(path, prefix, old, new)
	}
	w.compareUnknown(path, prefix, old, new)
}

// leaf is one rule on both sides; ofd or nfd is nil when that side's rules
// message has no such field.
type leaf struct {
	ofd, nfd   protoreflect.FieldDescriptor
	ov, nv     protoreflect.Value
	oset, nset bool
	old, new   protoreflect.Message
}

// newLeaf reads one rule of old and new; a rule set to a zero value that
// checks nothing (zeroIsNoRule) reads as unset.
func newLeaf(old, new protoreflect.Message, ofd, nfd protoreflect.FieldDescriptor) leaf {
	l := leaf{ofd: ofd, nfd: nfd, old: old, new: new}
	l.ov, l.oset = ruleValue(old, ofd)
	l.nv, l.nset = ruleValue(new, nfd)
	return l
}

// ruleValue is the value of rule fd in m and whether it is set, as
// protovalidate reads it.
func ruleValue(m protoreflect.Message, fd protoreflect.FieldDescriptor) (protoreflect.Value, bool) {
	if fd == nil || !m.Has(fd) {
		return protoreflect.Value{}, false
	}
	v := m.Get(fd)
	if zeroIsNoRule(fd) && v.Equal(fd.Default()) {
		return protoreflect.Value{}, false
	}
	return v, true
}

func (l leaf) fd() protoreflect.FieldDescriptor {
	if l.nfd != nil {
		return l.nfd
	}
	return l.ofd
}

func (l leaf) equal() bool {
	if l.oset != l.nset {
		return false
	}
	if l.ofd == l.nfd {
		return l.ov.Equal(l.nv)
	}
	return valueKey(l.ofd, l.ov) == valueKey(l.nfd, l.nv)
}

// message is the old (or new) side of a rules message field, empty when
// unset.
func (l leaf) message(old bool) protoreflect.Message {
	switch {
	case old && l.oset:
		return l.ov.Message()
	case !old && l.nset:
		return l.nv.Message()
	case l.nfd != nil:
		return l.new.NewField(l.nfd).Message()
	}
	return l.old.NewField(l.ofd).Message()
}

func (l leaf) oldText() string { return sideText(l.ofd, l.ov, l.oset) }
func (l leaf) newText() string { return sideText(l.nfd, l.nv, l.nset) }

func sideText(fd protoreflect.FieldDescriptor, v protoreflect.Value, set bool) string {
	if !set {
		return "unset"
	}
	return clip.String(valueText(fd, v), 120)
}

func (w *schemaWalk) compareLeaf(path, vrule string, sem ruleSemantic, l leaf) {
	changed := func(tightened bool) {
		w.ruleChange(path, vrule, tightened, "%s changed from %s to %s", vrule, l.oldText(), l.newText())
	}
	switch sem {
	case semNoEffect:
	case semFlag:
		if o, n := l.oset && l.ov.Bool(), l.nset && l.nv.Bool(); o != n {
			changed(n)
		}
	case semAtLeast, semAtMost:
		o, oknown := numberOf(l.ofd, l.ov)
		n, nknown := numberOf(l.nfd, l.nv)
		if !l.oset {
			o, oknown = number{i: new(big.Int)}, true
		}
		if !l.nset {
			n, nknown = number{i: new(big.Int)}, true
		}
		c, ok := n.cmp(o)
		switch {
		case !oknown || !nknown || !ok:
			w.ruleChange(path, vrule, true, "%s changed from %s to %s, which this comparison cannot order: counted as tightening", vrule, l.oldText(), l.newText())
		case sem == semAtLeast && c != 0:
			changed(c > 0)
		case sem == semAtMost && (!l.oset || !l.nset):
			changed(l.nset)
		case sem == semAtMost && c != 0:
			changed(c < 0)
		}
	case semExact:
		changed(l.nset)
	case semPrefix, semSuffix, semContains, semNotContains:
		if !l.oset || !l.nset {
			changed(l.nset)
			return
		}
		o, n := stringOf(l.ov), stringOf(l.nv)
		looser := map[ruleSemantic]bool{
			semPrefix:      strings.HasPrefix(o, n),
			semSuffix:      strings.HasSuffix(o, n),
			semContains:    strings.Contains(o, n),
			semNotContains: strings.Contains(n, o),
		}[sem]
		changed(!looser)
	case semIn, semNotIn:
		o, n := listKeys(l.ofd, l.ov, l.oset), listKeys(l.nfd, l.nv, l.nset)
		covers := slices.Contains[[]string]
		if l.fd().ContainingMessage().FullName() == "buf.validate.FieldMaskRules" {
			covers = coversPath
		}
		grown, shrunk := !subset(n, o, covers), !subset(o, n, covers)
		if !grown && !shrunk {
			return // the same values in another order
		}
		tightened := shrunk
		switch {
		case sem == semNotIn:
			tightened = grown
		case len(n) == 0: // no list is no rule: every value passes
			tightened = false
		case len(o) == 0:
			tightened = true
		}
		var detail []string
		if d := missing(o, n); len(d) > 0 && (sem == semNotIn || len(n) > 0) {
			detail = append(detail, map[ruleSemantic]string{semIn: "no longer allowed: ", semNotIn: "no longer refused: "}[sem]+d)
		}
		if d := missing(n, o); len(d) > 0 && (sem == semNotIn || len(o) > 0) {
			detail = append(detail, map[ruleSemantic]string{semIn: "newly allowed: ", semNotIn: "newly refused: "}[sem]+d)
		}
		reason := fmt.Sprintf("%s changed from %s to %s", vrule, l.oldText(), l.newText())
		if len(detail) > 0 {
			reason += " (" + strings.Join(detail, "; ") + ")"
		}
		w.ruleChange(path, vrule, tightened, "%s", reason)
	case semAll:
		o, n := listKeys(l.ofd, l.ov, l.oset), listKeys(l.nfd, l.nv, l.nset)
		for _, e := range n {
			if !slices.Contains(o, e) {
				w.ruleChange(path, vrule+"["+clip.String(e, 80)+"]", true, "%s added: %s", vrule, clip.String(e, 200))
			}
		}
		for _, e := range o {
			if !slices.Contains(n, e) {
				w.ruleChange(path, vrule+"["+clip.String(e, 80)+"]", false, "%s removed: %s", vrule, clip.String(e, 200))
			}
		}
	case semCEL:
		w.compareCEL(path, vrule, l)
	case semOneofRules:
		w.compareMessageOneofs(path, vrule, l)
	case semIgnore:
		o, n := protoreflect.EnumNumber(0), protoreflect.EnumNumber(0)
		if l.oset {
			o = l.ov.Enum()
		}
		if l.nset {
			n = l.nv.Enum()
		}
		ol, ok1 := ignoreLooseness[o]
		nl, ok2 := ignoreLooseness[n]
		switch {
		case !ok1 || !ok2:
			w.ruleChange(path, vrule, true, "%s changed from %s to %s, a value this comparison does not know: counted as tightening", vrule, l.oldText(), l.newText())
		case nl != ol:
			changed(nl < ol)
		}
	default:
		w.ruleChange(path, vrule, true, "%s changed from %s to %s; this comparison does not know the rule, so any change counts as tightening", vrule, l.oldText(), l.newText())
	}
}

// compareCEL compares two lists of buf.validate.Rule by id (by expression
// for a rule without one).
func (w *schemaWalk) compareCEL(path, vrule string, l leaf) {
	type rule struct{ id, message, expression string }
	rules := func(v protoreflect.Value, set bool) []rule {
		var out []rule
		if !set {
			return out
		}
		list := v.List()
		for i := range list.Len() {
			m := list.Get(i).Message()
			f := m.Descriptor().Fields()
			r := rule{m.Get(f.ByName("id")).String(), m.Get(f.ByName("message")).String(), m.Get(f.ByName("expression")).String()}
			if r.id == "" {
				r.id = r.expression
			}
			out = append(out, r)
		}
		return out
	}
	find := func(rs []rule, id string) (rule, bool) {
		i := slices.IndexFunc(rs, func(r rule) bool { return r.id == id })
		if i < 0 {
			return rule{}, false
		}
		return rs[i], true
	}
	o, n := rules(l.ov, l.oset), rules(l.nv, l.nset)
	name := func(id string) string { return vrule + "[" + clip.String(id, 80) + "]" }
	expr := func(e string) string { return clip.String(e, 200) }
	for _, or := range o {
		nr, ok := find(n, or.id)
		switch {
		case !ok:
			w.ruleChange(path, name(or.id), false, "CEL rule %s removed (expression %s)", or.id, expr(or.expression))
		case nr.expression != or.expression:
			w.ruleChange(path, name(or.id), true, "CEL rule %s expression changed from %s to %s", or.id, expr(or.expression), expr(nr.expression))
		case nr.message != or.message:
			w.findings = append(w.findings, Finding{Type: w.typ, Path: path, Rule: RuleMessageChanged, ValidateRule: name(or.id),
				Reason: fmt.Sprintf("CEL rule %s message changed from %q to %q", or.id, clip.String(or.message, 120), clip.String(nr.message, 120))})
		}
	}
	for _, nr := range n {
		if _, ok := find(o, nr.id); !ok {
			w.ruleChange(path, name(nr.id), true, "CEL rule %s added (expression %s)", nr.id, expr(nr.expression))
		}
	}
}

// compareMessageOneofs compares MessageRules.oneof lists, each rule known
// by the fields it names.
func (w *schemaWalk) compareMessageOneofs(path, vrule string, l leaf) {
	rules := func(v protoreflect.Value, set bool) map[string]bool {
		out := map[string]bool{}
		if !set {
			return out
		}
		list := v.List()
		for i := range list.Len() {
			m := list.Get(i).Message()
			f := m.Descriptor().Fields()
			var fields []string
			names := m.Get(f.ByName("fields")).List()
			for j := range names.Len() {
				fields = append(fields, names.Get(j).String())
			}
			out[strings.Join(fields, ",")] = m.Get(f.ByName("required")).Bool()
		}
		return out
	}
	o, n := rules(l.ov, l.oset), rules(l.nv, l.nset)
	for _, k := range slices.Sorted(maps.Keys(o)) {
		name := vrule + "[" + k + "]"
		req, ok := n[k]
		switch {
		case !ok:
			w.ruleChange(path, name, false, "oneof rule over %s removed", k)
		case req != o[k]:
			w.ruleChange(path, name, req, "oneof rule over %s: required changed from %t to %t", k, o[k], req)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(n)) {
		if _, ok := o[k]; !ok {
			w.ruleChange(path, vrule+"["+k+"]", true, "oneof rule over %s added (required: %t): at most one of them may be set", k, n[k])
		}
	}
}

// bound is the lower or upper bound of a numeric rules message.
type bound struct {
	set  bool
	name protoreflect.Name // gt, gte, lt or lte
	text string
	raw  number // as given
	incl number // the inclusive bound it amounts to
}

func boundOf(m protoreflect.Message, lower bool) (bound, bool) {
	strict, inclusive := protoreflect.Name("lt"), protoreflect.Name("lte")
	if lower {
		strict, inclusive = "gt", "gte"
	}
	for _, name := range []protoreflect.Name{strict, inclusive} {
		fd := m.Descriptor().Fields().ByName(name)
		if fd == nil || !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		n, ok := numberOf(fd, v)
		if !ok {
			return bound{}, false
		}
		b := bound{set: true, name: name, text: string(name) + " " + valueText(fd, v), raw: n, incl: n}
		if name == strict {
			b.incl = n.next(fd, lower)
		}
		return b, true
	}
	return bound{}, true
}

func (w *schemaWalk) compareBounds(path, prefix string, old, new protoreflect.Message) {
	ol, ok1 := boundOf(old, true)
	ou, ok2 := boundOf(old, false)
	nl, ok3 := boundOf(new, true)
	nu, ok4 := boundOf(new, false)
	same := func(a, b bound) bool { return a.set == b.set && a.name == b.name && a.text == b.text }
	if same(ol, nl) && same(ou, nu) {
		return
	}
	rangeText := func(l, u bound) string {
		parts := []string{}
		for _, b := range []bound{l, u} {
			if b.set {
				parts = append(parts, b.text)
			}
		}
		if len(parts) == 0 {
			return "no bounds"
		}
		return strings.Join(parts, ", ")
	}
	name := func(bs ...bound) string {
		for _, b := range bs {
			if b.set {
				return joinRule(prefix, string(b.name))
			}
		}
		return prefix
	}
	if !ok1 || !ok2 || !ok3 || !ok4 || exclusive(ol, ou) || exclusive(nl, nu) {
		w.ruleChange(path, name(nl, nu, ol, ou), true,
			"%s range changed from %s to %s; an exclusive range (lower bound above the upper) is not ordered by this comparison, so the change counts as tightening",
			prefix, rangeText(ol, ou), rangeText(nl, nu))
		return
	}
	for _, side := range []struct {
		lower    bool
		old, new bound
	}{{true, ol, nl}, {false, ou, nu}} {
		o, n := side.old, side.new
		if same(o, n) {
			continue
		}
		which := "upper"
		if side.lower {
			which = "lower"
		}
		tightened := false
		switch {
		case !o.set:
			tightened = true
		case !n.set:
		default:
			c, ok := n.incl.cmp(o.incl)
			if !side.lower {
				c = -c
			}
			if ok && c == 0 {
				continue // the same bound, written another way (gt: 0 and gte: 1 on integers)
			}
			tightened = !ok || c > 0
		}
		text := func(b bound) string {
			if !b.set {
				return "unset"
			}
			return b.text
		}
		w.ruleChange(path, name(n, o), tightened, "%s %s bound changed from %s to %s", prefix, which, text(o), text(n))
	}
}

// headerRegex is what StringRules.well_known_regex and strict admit
// together: regex 0 admits every string; strict is read with
// protovalidate's default, true when unset.
type headerRegex struct {
	regex  protoreflect.EnumNumber
	strict bool
	text   string
}

const (
	headerName  = protoreflect.EnumNumber(validate.KnownRegex_KNOWN_REGEX_HTTP_HEADER_NAME)
	headerValue = protoreflect.EnumNumber(validate.KnownRegex_KNOWN_REGEX_HTTP_HEADER_VALUE)
)

func headerRegexOf(m protoreflect.Message) headerRegex {
	fields := m.Descriptor().Fields()
	h := headerRegex{strict: true}
	if fd := fields.ByName("well_known_regex"); fd != nil {
		if v, ok := ruleValue(m, fd); ok {
			h.regex = v.Enum()
			h.text = elementText(fd, v)
		}
	}
	if fd := fields.ByName("strict"); fd != nil && m.Has(fd) {
		h.strict = m.Get(fd).Bool()
	}
	if h.regex == 0 {
		return headerRegex{strict: true, text: "unset"}
	}
	if h.strict {
		h.text += " (strict)"
	} else {
		h.text += " (strict: false)"
	}
	return h
}

// within says whether every string h admits, o admits too. A strict
// header name is a loose one, and any header name a header value of the
// same strictness or a loose one; a regex this comparison does not know
// is within only itself.
func (h headerRegex) within(o headerRegex) bool {
	switch {
	case o.regex == 0 || h == o:
		return true
	case h.regex == 0:
		return false
	}
	known := func(r protoreflect.EnumNumber) bool { return r == headerName || r == headerValue }
	if !known(h.regex) || !known(o.regex) {
		return false
	}
	return (h.regex == o.regex || h.regex == headerName && o.regex == headerValue) && (h.strict || !o.strict)
}

// compareHeaderRegex compares well_known_regex and strict as the strings
// they admit together, named by well_known_regex when the regex changed
// and by strict when only its strictness did.
func (w *schemaWalk) compareHeaderRegex(path, prefix string, old, new protoreflect.Message) {
	o, n := headerRegexOf(old), headerRegexOf(new)
	if o == n {
		return
	}
	name := "well_known_regex"
	if o.regex == n.regex {
		name = "strict"
	}
	vrule := joinRule(prefix, name)
	w.ruleChange(path, vrule, !o.within(n), "%s changed from %s to %s (strict unset is strict)", vrule, o.text, n.text)
}

// exclusive is protovalidate's reversed range: a lower bound above the
// upper one admits the values outside the two.
func exclusive(l, u bound) bool {
	if !l.set || !u.set {
		return false
	}
	c, ok := l.raw.cmp(u.raw)
	return !ok || c > 0
}

// compareUnknown compares what the rules messages hold beyond their known
// fields: predefined rule extensions and bytes this build cannot decode.
func (w *schemaWalk) compareUnknown(path, prefix string, old, new protoreflect.Message) {
	exts := func(m protoreflect.Message) map[protoreflect.FullName]protoreflect.Value {
		out := map[protoreflect.FullName]protoreflect.Value{}
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			if fd.IsExtension() {
				out[fd.FullName()] = v
			}
			return true
		})
		return out
	}
	o, n := exts(old), exts(new)
	names := slices.Collect(maps.Keys(o))
	for k := range n {
		if _, ok := o[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		ov, oset := o[k]
		nv, nset := n[k]
		if oset && nset && ov.Equal(nv) {
			continue
		}
		w.ruleChange(path, joinRule(prefix, "("+string(k)+")"), true,
			"predefined rule %s changed; this comparison does not know it, so any change counts as tightening", k)
	}
	if !bytes.Equal(old.GetUnknown(), new.GetUnknown()) {
		w.ruleChange(path, joinRule(prefix, "(unknown fields)"), true,
			"rules this build does not know (unknown fields of %s) changed; any change counts as tightening", new.Descriptor().FullName())
	}
}

// number is a rule's value as a number: integers, and durations and
// timestamps in nanoseconds, exactly; floats as they are.
type number struct {
	i     *big.Int
	f     float64
	float bool
}

func numberOf(fd protoreflect.FieldDescriptor, v protoreflect.Value) (number, bool) {
	if fd == nil || !v.IsValid() {
		return number{}, false
	}
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return number{i: big.NewInt(v.Int())}, true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return number{i: new(big.Int).SetUint64(v.Uint())}, true
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return number{f: v.Float(), float: true}, true
	case protoreflect.MessageKind:
		if s, n, ok := secondsNanosOf(fd, v); ok {
			i := new(big.Int).Mul(big.NewInt(s), big.NewInt(1e9))
			return number{i: i.Add(i, big.NewInt(int64(n)))}, true
		}
	}
	return number{}, false
}

func secondsNanosOf(fd protoreflect.FieldDescriptor, v protoreflect.Value) (int64, int32, bool) {
	switch fd.Message().FullName() {
	case "google.protobuf.Duration", "google.protobuf.Timestamp":
		return secondsNanos(v.Message())
	}
	return 0, 0, false
}

// cmp orders a and b; false when they cannot be (NaN, a float against an
// integer).
func (a number) cmp(b number) (int, bool) {
	switch {
	case a.float != b.float:
		return 0, false
	case a.float:
		if math.IsNaN(a.f) || math.IsNaN(b.f) {
			return 0, false
		}
		return cmp.Compare(a.f, b.f), true
	}
	return a.i.Cmp(b.i), true
}

// next is the value after a (up) or before it, in fd's kind.
func (a number) next(fd protoreflect.FieldDescriptor, up bool) number {
	if a.float {
		if fd.Kind() == protoreflect.FloatKind {
			to := float32(math.Inf(-1))
			if up {
				to = float32(math.Inf(1))
			}
			return number{f: float64(math.Nextafter32(float32(a.f), to)), float: true}
		}
		return number{f: math.Nextafter(a.f, map[bool]float64{true: math.Inf(1), false: math.Inf(-1)}[up]), float: true}
	}
	step := big.NewInt(-1)
	if up {
		step = big.NewInt(1)
	}
	return number{i: new(big.Int).Add(a.i, step)}
}

func stringOf(v protoreflect.Value) string {
	if b, ok := v.Interface().([]byte); ok {
		return string(b)
	}
	return v.String()
}

// valueKey is a scalar value as a string that equals another's when the
// values are the same, across integer kinds too.
func valueKey(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	if fd == nil || !v.IsValid() {
		return ""
	}
	if fd.IsList() {
		return strings.Join(listKeys(fd, v, true), "\x00")
	}
	return elementKey(fd, v)
}

// elementKey is valueKey of one value of fd, a list's element for a list.
func elementKey(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	if n, ok := numberOf(fd, v); ok {
		if n.float {
			return strconv.FormatFloat(n.f, 'g', -1, 64)
		}
		return n.i.String()
	}
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BytesKind:
		return stringOf(v)
	case protoreflect.BoolKind:
		return strconv.FormatBool(v.Bool())
	case protoreflect.EnumKind:
		return strconv.Itoa(int(v.Enum()))
	case protoreflect.MessageKind, protoreflect.GroupKind:
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(v.Message().Interface())
		return string(b)
	}
	return fmt.Sprint(v.Interface())
}

func listKeys(fd protoreflect.FieldDescriptor, v protoreflect.Value, set bool) []string {
	if !set || fd == nil {
		return nil
	}
	list := v.List()
	out := make([]string, 0, list.Len())
	for i := range list.Len() {
		out = append(out, elementKey(fd, list.Get(i)))
	}
	return out
}

// missing lists the values of a that b lacks, for a Reason.
func missing(a, b []string) string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, strconv.Quote(x))
		}
	}
	return clip.String(strings.Join(out, ", "), 120)
}

// subset says whether every value of a is covered by b.
func subset(a, b []string, covers func(b []string, x string) bool) bool {
	for _, x := range a {
		if !covers(b, x) {
			return false
		}
	}
	return true
}

// coversPath says whether a field mask rule's list of paths names path or
// one of its parents: protovalidate's field_mask.in admits, and not_in
// refuses, a path's children with it.
func coversPath(paths []string, path string) bool {
	for _, p := range paths {
		if path == p || strings.HasPrefix(path, p+".") {
			return true
		}
	}
	return false
}

// valueText writes a rule's value for a Reason.
func valueText(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	if fd.IsList() {
		list := v.List()
		parts := make([]string, 0, list.Len())
		for i := range list.Len() {
			parts = append(parts, elementText(fd, list.Get(i)))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return elementText(fd, v)
}

// elementText is valueText of one value of fd, a list's element for a list.
func elementText(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return strconv.Quote(v.String())
	case protoreflect.BytesKind:
		return strconv.Quote(string(v.Bytes()))
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return strconv.Itoa(int(v.Enum()))
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if s, n, ok := secondsNanosOf(fd, v); ok {
			if fd.Message().FullName() == "google.protobuf.Timestamp" {
				return time.Unix(s, int64(n)).UTC().Format(time.RFC3339Nano)
			}
			if s > -9e9 && s < 9e9 {
				return (time.Duration(s)*time.Second + time.Duration(n)).String()
			}
			return fmt.Sprintf("%ds", s)
		}
		return messageText(v.Message())
	}
	return fmt.Sprint(v.Interface())
}

func messageText(m protoreflect.Message) string {
	type field struct {
		fd protoreflect.FieldDescriptor
		v  protoreflect.Value
	}
	var fs []field
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		fs = append(fs, field{fd, v})
		return true
	})
	slices.SortFunc(fs, func(a, b field) int { return cmp.Compare(a.fd.Number(), b.fd.Number()) })
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		parts = append(parts, string(f.fd.Name())+": "+valueText(f.fd, f.v))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
