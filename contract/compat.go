package contract

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/internal/clip"
)

// Mode says which readers a new version of a contract must keep working
// for.
type Mode string

const (
	ModeBackward Mode = "backward" // the default: consumers on the new version read events of the old
	ModeForward  Mode = "forward"  // consumers on the old version read events of the new
	ModeFull     Mode = "full"     // both
	ModeNone     Mode = "none"     // no check
)

// ParseMode reads a mode as a config spells it; "" is ModeBackward.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return ModeBackward, nil
	case ModeBackward, ModeForward, ModeFull, ModeNone:
		return m, nil
	}
	return "", fmt.Errorf("contract: compatibility mode %q: must be backward, forward, full or none", s)
}

// requires is the directions a mode forbids breaking.
func (m Mode) requires() Direction {
	switch m {
	case ModeForward:
		return Forward
	case ModeFull:
		return Backward | Forward
	case ModeNone:
		return 0
	}
	return Backward
}

// Policy is how a new version of one event type is judged.
type Policy struct {
	Mode Mode
	// AllowTightening takes a protovalidate rule that gets stricter in backward and full mode.
	AllowTightening bool
}

// Policies are the policy of every event type.
type Policies struct {
	Default Policy            // zero value: backward, no tightening
	Types   map[string]Policy // per event type, overriding Default
}

// For returns typ's policy, its mode spelt out ("" becomes ModeBackward).
// An entry of Types replaces Default whole.
func (p Policies) For(typ string) Policy {
	pol, ok := p.Types[typ]
	if !ok {
		pol = p.Default
	}
	if pol.Mode == "" {
		pol.Mode = ModeBackward
	}
	return pol
}

// Direction is a set of reader/writer pairings a change breaks.
type Direction uint8

const (
	Backward Direction = 1 << iota // breaks new readers of old events
	Forward                        // breaks old readers of new events
)

func (d Direction) String() string {
	switch d {
	case 0:
		return "none"
	case Backward:
		return "backward"
	case Forward:
		return "forward"
	case Backward | Forward:
		return "backward+forward"
	}
	return fmt.Sprintf("Direction(%d)", uint8(d))
}

const both = Backward | Forward

// The rule ids of findings. Doc comments say which directions each breaks
// and why; the Compatibility section of the package documentation has
// them in one table.
const (
	// RuleMessageRemoved: an event type is not a message of the new image.
	// Both: nothing can decode or validate the type under the new version.
	RuleMessageRemoved = "message_removed"
	// RuleFieldAdded: a field number the old version lacks. Compatible:
	// old readers skip it as unknown, new readers of old events see its
	// default (its protovalidate rules are compared against none).
	RuleFieldAdded = "field_added"
	// RuleFieldRemoved: a field number gone without its number and name
	// reserved. Both: a later version may take the number or name again
	// with another meaning, and misread events written before.
	RuleFieldRemoved = "field_removed"
	// RuleFieldReserved: a field gone with its number and name reserved.
	// Compatible.
	RuleFieldReserved = "field_reserved"
	// RuleFieldReservedReused: a new field takes a number or name the old
	// version reserved. Both: events from before the reservation used it
	// with another meaning.
	RuleFieldReservedReused = "field_reserved_reused"
	// RuleFieldRenamed: the same number under another name. Both: REST
	// sources send fields by name and sinks store the JSON, so old and
	// new JSON no longer name the same field.
	RuleFieldRenamed = "field_renamed"
	// RuleJSONNameChanged: the same field under another json_name. Both,
	// as a rename.
	RuleJSONNameChanged = "json_name_changed"
	// RuleFieldTypeChanged: another type whose wire or JSON form differs
	// (string→int64, int32→sint32, fixed32→int32, string↔bytes: JSON
	// base64, enum↔int32: JSON names or numbers), whose values are read
	// differently on the same wire type (int32↔uint32, bool↔int64), or
	// another message or enum type. Both.
	RuleFieldTypeChanged = "field_type_changed"
	// RuleFieldTypeWidened: int32→int64, uint32→uint64, sint32→sint64.
	// Forward: the wire form of every old value reads the same in the
	// wider type, but old readers truncate new values beyond the narrower
	// one. (The JSON of a 64-bit integer is a string, of a 32-bit one a
	// number; protojson reads both forms either way.)
	RuleFieldTypeWidened = "field_type_widened"
	// RuleFieldTypeNarrowed: the reverse of a widening. Backward: new
	// readers truncate old values beyond the narrower type.
	RuleFieldTypeNarrowed = "field_type_narrowed"
	// RuleFieldCardinalityChanged: singular, repeated and map are not
	// interchangeable; a proto2 field that became required or stopped
	// being is RuleFieldLabelChanged. Both: the JSON form differs, and
	// the wire form of a map or a packed list is another.
	RuleFieldCardinalityChanged = "field_cardinality_changed"
	// RuleFieldLabelChanged: a proto2 field became required (Backward:
	// old events may lack it and are refused) or stopped being required
	// (Forward: old readers refuse new events that lack it).
	RuleFieldLabelChanged = "field_label_changed"
	// RuleFieldPresenceChanged: a singular field gained or lost explicit
	// presence (proto3 optional). Compatible: the wire form is the same;
	// only whether a zero value set is told from one unset changes.
	RuleFieldPresenceChanged = "field_presence_changed"
	// RuleFieldDefaultChanged: a proto2 default changed. Both: a field
	// left unset reads as another value on each side.
	RuleFieldDefaultChanged = "field_default_changed"
	// RuleFieldOneofChanged: a field moved into, out of, or between oneofs
	// (proto3 optional's synthetic oneofs do not count). Both: which
	// fields exclude each other changes, and a reader keeps only the last
	// member of a oneof it sees.
	RuleFieldOneofChanged = "field_oneof_changed"
	// RuleEnumValueAdded: a number the enum lacked. Compatible for an
	// open enum. Forward for one closed in the old version (proto2, or
	// the editions feature enum_type: CLOSED): old readers refuse the
	// number (protobuf keeps it as an unknown field, which sluice
	// refuses).
	RuleEnumValueAdded = "enum_value_added"
	// RuleEnumValueRemoved: a number gone without its number and name
	// reserved. Backward: new readers and validators meet it in old events
	// (defined_only refuses it, JSON shows a bare number, a closed enum
	// refuses it).
	RuleEnumValueRemoved = "enum_value_removed"
	// RuleEnumValueReserved: a value gone with its number and name
	// reserved. Compatible for an open enum; Backward for one closed in
	// the new version, whose readers refuse the number in old events.
	RuleEnumValueReserved = "enum_value_reserved"
	// RuleEnumClosed: an open enum became closed. Backward: old events
	// may carry numbers it does not define (an open enum keeps them),
	// which new readers refuse.
	RuleEnumClosed = "enum_closed"
	// RuleEnumOpened: a closed enum became open. Forward: new events may
	// carry numbers it does not define, which old readers, for whom the
	// enum is closed, refuse.
	RuleEnumOpened = "enum_opened"
	// RuleEnumValueRenumbered: a name under another number. Both: the same
	// number means another value on each side.
	RuleEnumValueRenumbered = "enum_value_renumbered"
	// RuleEnumValueRenamed: a number under another name. Both: JSON
	// carries enum values by name.
	RuleEnumValueRenamed = "enum_value_renamed"
	// RuleEnumValueReservedReused: a new value takes a number or name the
	// old version reserved. Both.
	RuleEnumValueReservedReused = "enum_value_reserved_reused"
	// RuleTightened: a protovalidate rule that refuses events valid
	// before. Backward (Tightening): sources still on the old version
	// send events the gateway now refuses; unless the policy allows
	// tightening. Readers do not validate again, so no rule breaks
	// Forward.
	RuleTightened = "rule_tightened"
	// RuleLoosened: a protovalidate rule removed or relaxed. Compatible.
	RuleLoosened = "rule_loosened"
	// RuleMessageChanged: only the message of a CEL rule changed.
	// Compatible: the same events pass.
	RuleMessageChanged = "rule_message_changed"
)

// Finding is one difference between the old and the new version of an
// event type.
type Finding struct {
	Type   string    // the event type
	Path   string    // field path from the event type, dotted as protovalidate does ("items.sku"); "" for the message itself
	Rule   string    // what changed: one of the Rule* ids
	Reason string    // one sentence a human acts on, naming old and new values
	Breaks Direction // the directions it breaks; 0: compatible (reported for information)
	// Tightening marks a protovalidate rule that refuses events valid before; it breaks Backward unless the policy allows tightening.
	Tightening bool
	// ValidateRule is the protovalidate rule path for rule findings ("string.min_len", "required", "cel[order_placed.free_order_needs_invoice]", ...), "" otherwise.
	ValidateRule string
}

func (f Finding) String() string {
	var b strings.Builder
	b.WriteString(f.Type)
	if f.Path != "" {
		b.WriteString(" ")
		b.WriteString(f.Path)
	}
	b.WriteString(": ")
	b.WriteString(f.Rule)
	if f.ValidateRule != "" {
		b.WriteString(" ")
		b.WriteString(f.ValidateRule)
	}
	b.WriteString(": ")
	b.WriteString(f.Reason)
	if f.Breaks == 0 {
		b.WriteString(" (compatible)")
	} else {
		fmt.Fprintf(&b, " (breaks %s)", f.Breaks)
	}
	return b.String()
}

// breaks is what f breaks under p: a tightening the policy allows breaks
// nothing.
func (f Finding) breaks(p Policy) Direction {
	if f.Tightening && p.AllowTightening {
		return f.Breaks &^ Backward
	}
	return f.Breaks
}

// TypeReport is the verdict on one event type.
type TypeReport struct {
	Type       string
	Policy     Policy
	Old, New   string    // fingerprints; New "" when the type is gone
	Findings   []Finding // sorted by path, then rule
	Compatible bool      // no finding breaks a direction the policy's mode requires
}

// Breaking returns the findings that make it incompatible under its policy.
func (t TypeReport) Breaking() []Finding {
	var out []Finding
	need := t.Policy.Mode.requires()
	for _, f := range t.Findings {
		if f.breaks(t.Policy)&need != 0 {
			out = append(out, f)
		}
	}
	return out
}

// Report is the verdict on every event type compared.
type Report struct{ Types []TypeReport } // sorted by type

// Compatible says whether every type is.
func (r *Report) Compatible() bool {
	for _, t := range r.Types {
		if !t.Compatible {
			return false
		}
	}
	return true
}

// Err is nil for a compatible report, else an *IncompatibleError.
func (r *Report) Err() error {
	var fs []Finding
	for _, t := range r.Types {
		fs = append(fs, t.Breaking()...)
	}
	if len(fs) == 0 {
		return nil
	}
	return &IncompatibleError{Findings: fs}
}

// IncompatibleError is a new image that breaks what the policies require:
// the breaking findings of every type, in the report's order.
type IncompatibleError struct{ Findings []Finding }

// incompatibleListed bounds the findings an IncompatibleError's message
// spells out; the rest are counted.
const incompatibleListed = 3

func (e *IncompatibleError) Error() string {
	var b strings.Builder
	noun := "findings"
	if len(e.Findings) == 1 {
		noun = "finding"
	}
	fmt.Fprintf(&b, "contract: incompatible: %d %s: ", len(e.Findings), noun)
	for i, f := range e.Findings {
		if i == incompatibleListed {
			fmt.Fprintf(&b, "; and %d more", len(e.Findings)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(clip.String(f.String(), 400))
	}
	return b.String()
}

// imageError is an image Compare cannot read, named as old or new.
type imageError struct {
	which string
	err   error
}

func (e *imageError) Error() string {
	return "contract: " + e.which + " image: " + strings.TrimPrefix(e.err.Error(), "contract: ")
}

func (e *imageError) Unwrap() error { return e.err }

// compareSide is one image, built as Load builds it.
type compareSide struct {
	files *protoregistry.Files
	fp    *fingerprinter
}

func newCompareSide(which string, image []byte) (*compareSide, error) {
	set := new(descriptorpb.FileDescriptorSet)
	if err := proto.Unmarshal(image, set); err != nil {
		return nil, &imageError{which, fmt.Errorf("decode descriptor set: %w", err)}
	}
	if len(set.GetFile()) == 0 {
		return nil, &imageError{which, errors.New("descriptor set has no files")}
	}
	files, err := buildFiles(set)
	if err != nil {
		return nil, &imageError{which, err}
	}
	fp, err := newFingerprinter(image, files)
	if err != nil {
		return nil, &imageError{which, err}
	}
	return &compareSide{files: files, fp: fp}, nil
}

func (s *compareSide) message(typ string) (protoreflect.MessageDescriptor, bool) {
	d, err := s.files.FindDescriptorByName(protoreflect.FullName(typ))
	if err != nil {
		return nil, false
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	return md, ok && !md.IsMapEntry()
}

// Compare judges newImage against oldImage for each of types (message full names) under p.
// The error is only for an image that does not decode or build, or an old image lacking a type;
// a type missing from newImage is a "message_removed" finding, not an error.
// A policy whose mode ParseMode refuses is an error too.
func Compare(oldImage, newImage []byte, types []string, p Policies) (*Report, error) {
	oldSide, err := newCompareSide("old", oldImage)
	if err != nil {
		return nil, err
	}
	newSide, err := newCompareSide("new", newImage)
	if err != nil {
		return nil, err
	}
	types = slices.Compact(slices.Sorted(slices.Values(types)))
	report := &Report{Types: make([]TypeReport, 0, len(types))}
	for _, typ := range types {
		pol := p.For(typ)
		if _, err := ParseMode(string(pol.Mode)); err != nil {
			return nil, fmt.Errorf("contract: policy of %s: %s", typ, strings.TrimPrefix(err.Error(), "contract: "))
		}
		om, ok := oldSide.message(typ)
		if !ok {
			return nil, fmt.Errorf("contract: event type %q: not a message of the old descriptor set", typ)
		}
		tr := TypeReport{Type: typ, Policy: pol, Old: oldSide.fp.fingerprint(om)}
		if nm, ok := newSide.message(typ); ok {
			tr.New = newSide.fp.fingerprint(nm)
			tr.Findings = compareEventType(typ, om, nm)
		} else {
			tr.Findings = []Finding{{Type: typ, Rule: RuleMessageRemoved, Breaks: both,
				Reason: fmt.Sprintf("event type %s is not a message of the new descriptor set", typ)}}
		}
		slices.SortFunc(tr.Findings, func(a, b Finding) int {
			return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Rule, b.Rule),
				cmp.Compare(a.ValidateRule, b.ValidateRule), cmp.Compare(a.Reason, b.Reason))
		})
		tr.Compatible = len(tr.Breaking()) == 0
		report.Types = append(report.Types, tr)
	}
	return report, nil
}

// CompareRegistries is Compare(old.Image(), next.Image(), old.Types(), p).
func CompareRegistries(old, next *Registry, p Policies) (*Report, error) {
	return Compare(old.Image(), next.Image(), old.Types(), p)
}

// schemaWalk compares one event type's old and new descriptors. Fields
// are matched by number. Each message and each enum reachable from the
// event type is compared once, at the first path that reaches it
// breadth-first, fields in declaration order: the walk ends on recursive
// types and costs one comparison per message however widely it is shared.
// Paths name fields as the old version does; an added field, by its new
// name.
type schemaWalk struct {
	typ      string
	findings []Finding
	messages map[protoreflect.FullName]bool
	enums    map[protoreflect.FullName]bool
	queue    []messagePair
}

type messagePair struct {
	path     string
	old, new protoreflect.MessageDescriptor
}

func compareEventType(typ string, old, new protoreflect.MessageDescriptor) []Finding {
	w := &schemaWalk{typ: typ, messages: make(map[protoreflect.FullName]bool), enums: make(map[protoreflect.FullName]bool)}
	w.enqueue("", old, new)
	for len(w.queue) > 0 {
		p := w.queue[0]
		w.queue = w.queue[1:]
		w.compareMessage(p.path, p.old, p.new)
	}
	return w.findings
}

func (w *schemaWalk) enqueue(path string, old, new protoreflect.MessageDescriptor) {
	if w.messages[old.FullName()] {
		return
	}
	w.messages[old.FullName()] = true
	w.queue = append(w.queue, messagePair{path, old, new})
}

func (w *schemaWalk) add(path, rule string, breaks Direction, format string, args ...any) {
	w.findings = append(w.findings, Finding{Type: w.typ, Path: path, Rule: rule, Breaks: breaks, Reason: fmt.Sprintf(format, args...)})
}

func join(path string, name protoreflect.Name) string {
	if path == "" {
		return string(name)
	}
	return path + "." + string(name)
}

func (w *schemaWalk) compareMessage(path string, old, new protoreflect.MessageDescriptor) {
	w.compareMessageRules(path, old, new)
	w.compareOneofRules(path, old, new)
	ofs, nfs := old.Fields(), new.Fields()
	for i := range ofs.Len() {
		of := ofs.Get(i)
		fpath := join(path, of.Name())
		nf := nfs.ByNumber(of.Number())
		if nf == nil {
			w.fieldGone(fpath, of, new)
			continue
		}
		w.compareField(fpath, of, nf)
	}
	for i := range nfs.Len() {
		nf := nfs.Get(i)
		if ofs.ByNumber(nf.Number()) != nil {
			continue
		}
		fpath := join(path, nf.Name())
		switch {
		case old.ReservedRanges().Has(nf.Number()):
			w.add(fpath, RuleFieldReservedReused, both, "field %s takes number %d, which the old version reserved", nf.Name(), nf.Number())
		case old.ReservedNames().Has(nf.Name()):
			w.add(fpath, RuleFieldReservedReused, both, "field %s (%d) takes the name the old version reserved", nf.Name(), nf.Number())
		default:
			w.add(fpath, RuleFieldAdded, 0, "field %s (%d, %s) added", nf.Name(), nf.Number(), typeName(nf))
		}
		w.compareFieldRules(fpath, nil, nf)
	}
}

// fieldGone reports an old field whose number the new message lacks.
func (w *schemaWalk) fieldGone(path string, of protoreflect.FieldDescriptor, new protoreflect.MessageDescriptor) {
	number, name := new.ReservedRanges().Has(of.Number()), new.ReservedNames().Has(of.Name())
	switch {
	case number && name:
		w.add(path, RuleFieldReserved, 0, "field %s (%d) removed, its number and name reserved", of.Name(), of.Number())
	case number:
		w.add(path, RuleFieldRemoved, both, "field %s (%d) removed with its number reserved but not its name: reserve %q too", of.Name(), of.Number(), of.Name())
	case name:
		w.add(path, RuleFieldRemoved, both, "field %s (%d) removed with its name reserved but not its number: reserve %d too", of.Name(), of.Number(), of.Number())
	default:
		w.add(path, RuleFieldRemoved, both, "field %s (%d) removed without reserving its number and name, which a later field may take and misread old events with: reserve %d and %q", of.Name(), of.Number(), of.Number(), of.Name())
	}
}

func (w *schemaWalk) compareField(path string, of, nf protoreflect.FieldDescriptor) {
	if of.Name() != nf.Name() {
		w.add(path, RuleFieldRenamed, both, "field %d renamed from %s (JSON %s) to %s (JSON %s): JSON names fields, so old and new JSON disagree",
			of.Number(), of.Name(), of.JSONName(), nf.Name(), nf.JSONName())
	} else if of.JSONName() != nf.JSONName() {
		w.add(path, RuleJSONNameChanged, both, "field %s (%d) JSON name changed from %s to %s: JSON names fields, so old and new JSON disagree",
			of.Name(), of.Number(), of.JSONName(), nf.JSONName())
	}
	if oo, no := oneofName(of), oneofName(nf); oo != no {
		w.add(path, RuleFieldOneofChanged, both, "field %s (%d) moved from %s to %s", of.Name(), of.Number(), oneofText(oo), oneofText(no))
	}
	w.compareFieldRules(path, of, nf)

	if os, ns := shape(of), shape(nf); os != ns {
		w.add(path, RuleFieldCardinalityChanged, both, "field %s (%d) changed from %s %s to %s %s", of.Name(), of.Number(), os, typeName(of), ns, typeName(nf))
		return
	}
	if of.IsMap() {
		w.compareType(path, of, of.MapKey(), nf.MapKey(), "key ")
		w.compareType(path, of, of.MapValue(), nf.MapValue(), "value ")
		return
	}
	if (of.Cardinality() == protoreflect.Required) != (nf.Cardinality() == protoreflect.Required) {
		if nf.Cardinality() == protoreflect.Required {
			w.add(path, RuleFieldLabelChanged, Backward, "field %s (%d) became required: old events may lack it", of.Name(), of.Number())
		} else {
			w.add(path, RuleFieldLabelChanged, Forward, "field %s (%d) is no longer required: old readers refuse new events that lack it", of.Name(), of.Number())
		}
	}
	if !w.compareType(path, of, of, nf, "") {
		return
	}
	if (of.HasDefault() || nf.HasDefault()) && !of.Default().Equal(nf.Default()) {
		w.add(path, RuleFieldDefaultChanged, both, "field %s (%d) default changed from %v to %v", of.Name(), of.Number(), of.Default(), nf.Default())
	}
	// Presence on its own: a oneof's members and messages always have it.
	if !of.IsList() && of.HasPresence() != nf.HasPresence() && oneofName(of) == oneofName(nf) {
		w.add(path, RuleFieldPresenceChanged, 0, "field %s (%d) %s explicit presence", of.Name(), of.Number(), map[bool]string{true: "gained", false: "lost"}[nf.HasPresence()])
	}
}

// compareType compares the types of a field, a map's key or a map's value
// (which, naming the field, says which), queues messages of the same
// name and compares enums of the same name. It reports whether the types
// are the same.
func (w *schemaWalk) compareType(path string, field, of, nf protoreflect.FieldDescriptor, which string) bool {
	oldKind, newKind := of.Kind(), nf.Kind()
	if oldKind == newKind {
		switch {
		case of.Message() != nil:
			if of.Message().FullName() == nf.Message().FullName() {
				w.enqueue(path, of.Message(), nf.Message())
				return true
			}
		case of.Enum() != nil:
			if of.Enum().FullName() == nf.Enum().FullName() {
				w.compareEnum(path, of.Enum(), nf.Enum())
				return true
			}
		default:
			return true
		}
		w.add(path, RuleFieldTypeChanged, both, "field %s (%d) %stype changed from %s to %s", field.Name(), field.Number(), which, typeName(of), typeName(nf))
		return false
	}
	rule, breaks, why := kindChange(oldKind, newKind)
	w.add(path, rule, breaks, "field %s (%d) %stype changed from %s to %s: %s", field.Name(), field.Number(), which, typeName(of), typeName(nf), why)
	return false
}

// widenings are the kind changes that keep every old value's wire form
// and meaning.
var widenings = map[[2]protoreflect.Kind]bool{
	{protoreflect.Int32Kind, protoreflect.Int64Kind}:   true,
	{protoreflect.Uint32Kind, protoreflect.Uint64Kind}: true,
	{protoreflect.Sint32Kind, protoreflect.Sint64Kind}: true,
}

// kindChange judges a change between two kinds.
func kindChange(old, new protoreflect.Kind) (rule string, breaks Direction, why string) {
	switch {
	case widenings[[2]protoreflect.Kind{old, new}]:
		return RuleFieldTypeWidened, Forward, "old readers truncate new values beyond " + old.String()
	case widenings[[2]protoreflect.Kind{new, old}]:
		return RuleFieldTypeNarrowed, Backward, "new readers truncate old values beyond " + new.String()
	case old == protoreflect.MessageKind || new == protoreflect.MessageKind:
		return RuleFieldTypeChanged, both, "a message and a scalar are not read as each other"
	case isStringOrBytes(old) && isStringOrBytes(new):
		return RuleFieldTypeChanged, both, "the JSON form differs (bytes are base64)"
	case (old == protoreflect.EnumKind) != (new == protoreflect.EnumKind) && wireEncoding(old) == wireEncoding(new):
		return RuleFieldTypeChanged, both, "the JSON form differs (an enum by name, an integer by number)"
	case wireEncoding(old) == wireEncoding(new):
		return RuleFieldTypeChanged, both, "the wire form is the same but its values read differently"
	}
	return RuleFieldTypeChanged, both, "the wire form differs"
}

func isStringOrBytes(k protoreflect.Kind) bool {
	return k == protoreflect.StringKind || k == protoreflect.BytesKind
}

// wireEncoding is the encoding of a kind's values, zigzag varints apart from
// plain ones.
func wireEncoding(k protoreflect.Kind) string {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind,
		protoreflect.BoolKind, protoreflect.EnumKind:
		return "varint"
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return "zigzag"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return "fixed32"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return "fixed64"
	case protoreflect.GroupKind:
		return "group"
	}
	return "bytes"
}

func (w *schemaWalk) compareEnum(path string, old, new protoreflect.EnumDescriptor) {
	if w.enums[old.FullName()] {
		return
	}
	w.enums[old.FullName()] = true
	name := old.FullName()
	ovs, nvs := old.Values(), new.Values()
	for i := range ovs.Len() {
		ov := ovs.Get(i)
		if ovs.ByNumber(ov.Number()) != ov {
			continue // an alias: the number is judged by its first name
		}
		nv := nvs.ByNumber(ov.Number())
		moved := nvs.ByName(ov.Name())
		switch {
		case nv != nil && nv.Name() == ov.Name():
		case moved != nil:
			w.add(path, RuleEnumValueRenumbered, both, "enum %s value %s renumbered from %d to %d", name, ov.Name(), ov.Number(), moved.Number())
		case nv != nil:
			w.add(path, RuleEnumValueRenamed, both, "enum %s value %d renamed from %s to %s: JSON carries enum values by name", name, ov.Number(), ov.Name(), nv.Name())
		case new.ReservedRanges().Has(ov.Number()) && new.ReservedNames().Has(ov.Name()):
			if new.IsClosed() {
				w.add(path, RuleEnumValueReserved, Backward, "enum %s value %s (%d) removed, its number and name reserved: the enum is closed, so new readers refuse the number in old events", name, ov.Name(), ov.Number())
				continue
			}
			w.add(path, RuleEnumValueReserved, 0, "enum %s value %s (%d) removed, its number and name reserved", name, ov.Name(), ov.Number())
		default:
			w.add(path, RuleEnumValueRemoved, Backward, "enum %s value %s (%d) removed without reserving its number and name: new readers meet it in old events", name, ov.Name(), ov.Number())
		}
	}
	for i := range nvs.Len() {
		nv := nvs.Get(i)
		if ovs.ByNumber(nv.Number()) != nil || ovs.ByName(nv.Name()) != nil {
			continue
		}
		switch {
		case old.ReservedRanges().Has(nv.Number()) || old.ReservedNames().Has(nv.Name()):
			w.add(path, RuleEnumValueReservedReused, both, "enum %s value %s (%d) takes a number or name the old version reserved", name, nv.Name(), nv.Number())
		case old.IsClosed():
			w.add(path, RuleEnumValueAdded, Forward, "enum %s value %s (%d) added to an enum the old version has closed: old readers refuse the number", name, nv.Name(), nv.Number())
		default:
			w.add(path, RuleEnumValueAdded, 0, "enum %s value %s (%d) added", name, nv.Name(), nv.Number())
		}
	}
	switch oc, nc := old.IsClosed(), new.IsClosed(); {
	case !oc && nc:
		w.add(path, RuleEnumClosed, Backward, "enum %s became closed: old events may carry numbers it does not define, which new readers refuse", name)
	case oc && !nc:
		w.add(path, RuleEnumOpened, Forward, "enum %s became open: new events may carry numbers it does not define, which old readers, for whom it is closed, refuse", name)
	}
}

// shape is a field's cardinality as the wire and JSON forms see it.
func shape(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.IsMap():
		return "map"
	case fd.IsList():
		return "repeated"
	}
	return "singular"
}

// oneofName names the oneof (not proto3 optional's) fd is in, "" for none.
func oneofName(fd protoreflect.FieldDescriptor) protoreflect.Name {
	if od := realOneof(fd); od != nil {
		return od.Name()
	}
	return ""
}

func oneofText(n protoreflect.Name) string {
	if n == "" {
		return "no oneof"
	}
	return "oneof " + string(n)
}

// typeName names a field's type as a .proto file would.
func typeName(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.IsMap():
		return fmt.Sprintf("map<%s, %s>", typeName(fd.MapKey()), typeName(fd.MapValue()))
	case fd.Message() != nil:
		return string(fd.Message().FullName())
	case fd.Enum() != nil:
		return string(fd.Enum().FullName())
	}
	return fd.Kind().String()
}
