package contract

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"

	"buf.build/go/hyperpb"
	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Registry holds the event contracts loaded from one descriptor set. It is
// immutable after Load and safe for concurrent use.
type Registry struct {
	// image is the descriptor set the registry was loaded from, for
	// comparing a reload against (Compare).
	image     []byte
	contracts map[string]*Contract
	types     []string
	validator protovalidate.Validator
	// failFast is validator stopping at the first failed rule, built so:
	// the option given per call costs a copy of the configuration, on
	// every event.
	failFast protovalidate.Validator
	arenas   arenaPool
}

// Load builds a registry from a serialized FileDescriptorSet or buf image.
// types are the fully-qualified message names that are event types; a name
// that is not a message in the set is an error naming it. An empty types
// list is an error.
//
// Descriptors are built from the set itself. A file the set imports but
// does not contain (an image built without its imports) is taken from the
// descriptors compiled into this binary, if it has them.
func Load(image []byte, types []string, opts ...Option) (*Registry, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt.apply(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if len(types) == 0 {
		return nil, errors.New("contract: no event types given")
	}

	set := new(descriptorpb.FileDescriptorSet)
	if err := proto.Unmarshal(image, set); err != nil {
		return nil, fmt.Errorf("contract: decode descriptor set: %w", err)
	}
	if len(set.GetFile()) == 0 {
		return nil, errors.New("contract: descriptor set has no files")
	}
	files, err := buildFiles(set)
	if err != nil {
		return nil, err
	}
	local, err := newTypes(files)
	if err != nil {
		return nil, err
	}
	fp, err := newFingerprinter(image, files)
	if err != nil {
		return nil, err
	}

	r := &Registry{image: slices.Clone(image), contracts: make(map[string]*Contract, len(types))}
	descs := make([]protoreflect.MessageDescriptor, 0, len(types))
	for _, name := range types {
		if _, ok := r.contracts[name]; ok {
			continue
		}
		d, err := files.FindDescriptorByName(protoreflect.FullName(name))
		if err != nil {
			return nil, fmt.Errorf("contract: event type %q: not found in the descriptor set", name)
		}
		md, ok := d.(protoreflect.MessageDescriptor)
		if !ok || md.IsMapEntry() {
			return nil, fmt.Errorf("contract: event type %q: not a message", name)
		}
		r.contracts[name] = &Contract{
			typ:         name,
			desc:        md,
			msgType:     dynamicpb.NewMessageType(md),
			binary:      proto.UnmarshalOptions{RecursionLimit: binaryLevels(o.maxDepth), Resolver: local, AllowPartial: true},
			fingerprint: fp.fingerprint(md),
			maxDepth:    o.maxDepth,
			hasRequired: hasRequiredFields(md),
			wire:        newWireChecker(md, local, o.maxDepth),
			canon:       newCanonPlan(md),
			scanPlans:   newScanPlans(md, true),
			json:        protojson.UnmarshalOptions{RecursionLimit: binaryLevels(o.maxDepth), Resolver: local, AllowPartial: true},
			registry:    r,
		}
		c := r.contracts[name]
		c.rules = compileRules(md)
		c.decoders = Decoders{Binary: "hyperpb", JSON: "transcoder"}
		if why := hyperpbRefuses(md); why != "" {
			c.decoders.Binary, c.decoders.BinaryReason = "dynamicpb", why
		} else {
			c.parser = hyperpb.CompileMessageDescriptor(md, hyperpb.WithExtensionsFromTypes(local))
		}
		var why string
		if c.transcoder, why = newJSONTranscoder(md, o.maxDepth, local); c.transcoder == nil {
			c.decoders.JSON, c.decoders.JSONReason = "protojson", why
		}
		r.types = append(r.types, name)
		descs = append(descs, md)
	}
	sort.Strings(r.types)

	newValidator := func(more ...protovalidate.ValidatorOption) (protovalidate.Validator, error) {
		v, err := protovalidate.New(append([]protovalidate.ValidatorOption{
			protovalidate.WithExtensionTypeResolver(chainResolver{local, protoregistry.GlobalTypes}),
			protovalidate.WithMessageDescriptors(descs...),
		}, more...)...)
		if err != nil {
			return nil, fmt.Errorf("contract: create validator: %w", err)
		}
		return v, nil
	}
	if r.validator, err = newValidator(); err != nil {
		return nil, err
	}
	if r.failFast, err = newValidator(protovalidate.WithFailFast()); err != nil {
		return nil, err
	}
	if err := checkRulesCompile(r.validator, descs); err != nil {
		return nil, err
	}
	return r, nil
}

// LoadFile reads a descriptor set file and calls Load.
func LoadFile(path string, types []string, opts ...Option) (*Registry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("contract: read descriptor set: %w", err)
	}
	return Load(b, types, opts...)
}

// Lookup returns the contract of an event type.
func (r *Registry) Lookup(eventType string) (*Contract, bool) {
	c, ok := r.contracts[eventType]
	return c, ok
}

// Image returns the descriptor set the registry was loaded from. The
// caller must not modify it.
func (r *Registry) Image() []byte { return r.image }

// Types returns the loaded event types, sorted.
func (r *Registry) Types() []string { return slices.Clone(r.types) }

// Validate runs the registry's protovalidate rules on any message, compiled
// in or dynamic. It returns nil, a *ViolationError, or another error for a
// rule that cannot be evaluated, which is the gateway's fault, not the
// sender's. A message over FullReportBytes in protobuf binary reports only
// its first failed rule (ViolationError.Partial).
func (r *Registry) Validate(msg proto.Message) error {
	if c, ok := r.contracts[string(msg.ProtoReflect().Descriptor().FullName())]; ok {
		return c.validate(msg, -1)
	}
	return r.validate(msg, -1)
}

// FullReportBytes bounds the messages whose every failed rule is reported.
// protovalidate builds every violation of a message before it returns, a
// few hundred bytes each, and a payload of short invalid map keys or list
// items has one for every few bytes: a 256 KiB payload would build some
// 40,000. A message larger than this is checked with fail-fast and
// reported by its first failed rule only, so the work and memory of a
// refusal stay within a small multiple of the message's size.
const FullReportBytes = 4 << 10

// validate is Validate for a message of size bytes in protobuf binary (-1:
// not known yet). Every message is first checked with fail-fast, which
// costs what a full check costs for a valid message and stops at the first
// failed rule otherwise; only a small message is then checked again for
// the full report.
func (r *Registry) validate(msg proto.Message, size int, opts ...protovalidate.ValidationOption) error {
	err := r.failFast.Validate(msg, opts...)
	if err == nil {
		return nil
	}
	vs, ok := Violations(err)
	if !ok {
		return r.ruleError(msg, err)
	}
	if size < 0 {
		size = proto.Size(msg)
	}
	if size > FullReportBytes {
		return &ViolationError{Violations: vs, Partial: true}
	}
	if err = r.validator.Validate(msg, opts...); err == nil {
		// The rules do not depend on the message alone (a CEL rule on now):
		// the first check's answer stands.
		return &ViolationError{Violations: vs}
	}
	if vs, ok = Violations(err); ok {
		return &ViolationError{Violations: vs}
	}
	return r.ruleError(msg, err)
}

// validate checks msg, one of the contract's messages, against its rules:
// the compiled checks, and protovalidate for the fields left to it (see
// rules.go), in the same two steps as Registry.validate.
func (c *Contract) validate(msg proto.Message, size int) error {
	p := c.rules
	m := msg.ProtoReflect()
	if p.root == nil || m.Descriptor() != p.root.md {
		return c.registry.validate(msg, size)
	}
	if !p.root.walk {
		return c.registry.validate(msg, size)
	}
	r := c.registry
	first, fallback := p.run(m, true)
	if fallback {
		return r.validate(msg, size)
	}
	var pvFirst []keyedViolation
	if !p.native {
		err := r.failFast.Validate(msg, p.filter...)
		if err != nil {
			var ok bool
			if pvFirst, ok = keyedViolations(p.root.md, err); !ok {
				return r.ruleError(msg, err)
			}
		}
	}
	if len(first) == 0 && len(pvFirst) == 0 {
		return nil
	}
	if size < 0 {
		size = proto.Size(msg)
	}
	if size > FullReportBytes {
		return &ViolationError{Violations: mergeViolations(pvFirst, first, 1), Partial: true}
	}
	all, fallback := p.run(m, false)
	if fallback {
		return r.validate(msg, size)
	}
	var pvAll []keyedViolation
	if !p.native {
		err := r.validator.Validate(msg, p.filter...)
		if err != nil {
			var ok bool
			if pvAll, ok = keyedViolations(p.root.md, err); !ok {
				return r.ruleError(msg, err)
			}
		}
	}
	if len(all) == 0 && len(pvAll) == 0 {
		// The rules do not depend on the message alone (a CEL rule on now):
		// the first check's answer stands.
		return &ViolationError{Violations: mergeViolations(pvFirst, first, 1)}
	}
	return &ViolationError{Violations: mergeViolations(pvAll, all, 0)}
}

func (r *Registry) ruleError(msg proto.Message, err error) error {
	return fmt.Errorf("contract: evaluate rules of %s: %w", msg.ProtoReflect().Descriptor().FullName(), err)
}

// buildFiles turns the set into descriptors, dependencies first. A file the
// set imports but lacks is taken from protoregistry.GlobalFiles; a file the
// set has is always built from the set, even if a file of the same path is
// compiled in, so the set's version of a contract is the one that counts.
func buildFiles(set *descriptorpb.FileDescriptorSet) (*protoregistry.Files, error) {
	byPath := make(map[string]*descriptorpb.FileDescriptorProto, len(set.GetFile()))
	for _, f := range set.GetFile() {
		if _, dup := byPath[f.GetName()]; dup {
			return nil, fmt.Errorf("contract: descriptor set has %q twice", f.GetName())
		}
		byPath[f.GetName()] = f
	}

	const (
		building = 1
		built    = 2
	)
	files := new(protoregistry.Files)
	state := make(map[string]int, len(byPath))
	var build func(path, importedBy string) error
	build = func(path, importedBy string) error {
		switch state[path] {
		case built:
			return nil
		case building:
			return fmt.Errorf("contract: import cycle through %q", path)
		}
		state[path] = building
		fdp, ok := byPath[path]
		if !ok {
			fd, err := protoregistry.GlobalFiles.FindFileByPath(path)
			if err != nil {
				return fmt.Errorf("contract: %q imports %q, which is neither in the descriptor set nor compiled in", importedBy, path)
			}
			imports := fd.Imports()
			for i := range imports.Len() {
				if err := build(imports.Get(i).Path(), path); err != nil {
					return err
				}
			}
			if err := files.RegisterFile(fd); err != nil {
				return fmt.Errorf("contract: register compiled-in %q: %w", path, err)
			}
			state[path] = built
			return nil
		}
		for _, dep := range fdp.GetDependency() {
			if err := build(dep, path); err != nil {
				return err
			}
		}
		fd, err := protodesc.NewFile(fdp, files)
		if err != nil {
			return fmt.Errorf("contract: build %q: %w", path, err)
		}
		if err := files.RegisterFile(fd); err != nil {
			return fmt.Errorf("contract: register %q: %w", path, err)
		}
		state[path] = built
		return nil
	}
	for _, f := range set.GetFile() {
		if err := build(f.GetName(), ""); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// newTypes registers a dynamic type for every message, enum and extension
// in files. Decoders resolve Any and extensions with it, and protovalidate
// resolves predefined rules declared in the set.
func newTypes(files *protoregistry.Files) (*protoregistry.Types, error) {
	types := new(protoregistry.Types)
	var err error
	var register func(msgs protoreflect.MessageDescriptors, enums protoreflect.EnumDescriptors, exts protoreflect.ExtensionDescriptors)
	register = func(msgs protoreflect.MessageDescriptors, enums protoreflect.EnumDescriptors, exts protoreflect.ExtensionDescriptors) {
		for i := 0; i < enums.Len() && err == nil; i++ {
			err = types.RegisterEnum(dynamicpb.NewEnumType(enums.Get(i)))
		}
		for i := 0; i < exts.Len() && err == nil; i++ {
			err = types.RegisterExtension(dynamicpb.NewExtensionType(exts.Get(i)))
		}
		for i := 0; i < msgs.Len() && err == nil; i++ {
			md := msgs.Get(i)
			if md.IsMapEntry() {
				continue
			}
			if err = types.RegisterMessage(dynamicpb.NewMessageType(md)); err == nil {
				register(md.Messages(), md.Enums(), md.Extensions())
			}
		}
	}
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		register(fd.Messages(), fd.Enums(), fd.Extensions())
		return err == nil
	})
	if err != nil {
		return nil, fmt.Errorf("contract: register types: %w", err)
	}
	return types, nil
}

// chainResolver looks an extension up in each resolver in turn.
type chainResolver []protoregistry.ExtensionTypeResolver

func (c chainResolver) FindExtensionByName(field protoreflect.FullName) (protoreflect.ExtensionType, error) {
	for _, r := range c {
		if xt, err := r.FindExtensionByName(field); err == nil {
			return xt, nil
		}
	}
	return nil, protoregistry.NotFound
}

func (c chainResolver) FindExtensionByNumber(message protoreflect.FullName, field protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	for _, r := range c {
		if xt, err := r.FindExtensionByNumber(message, field); err == nil {
			return xt, nil
		}
	}
	return nil, protoregistry.NotFound
}

// checkRulesCompile validates an empty message of every type reachable from
// the contracts, so that a rule that does not compile fails Load instead of
// the first event that sets the field.
func checkRulesCompile(v protovalidate.Validator, roots []protoreflect.MessageDescriptor) error {
	seen := make(map[protoreflect.FullName]bool)
	var visit func(md protoreflect.MessageDescriptor) error
	visit = func(md protoreflect.MessageDescriptor) error {
		if seen[md.FullName()] {
			return nil
		}
		seen[md.FullName()] = true
		var cerr *protovalidate.CompilationError
		if err := v.Validate(dynamicpb.NewMessage(md)); errors.As(err, &cerr) {
			return fmt.Errorf("contract: rules of %s: %w", md.FullName(), err)
		}
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			if fd.IsMap() {
				fd = fd.MapValue()
			}
			if fd.Message() != nil {
				if err := visit(fd.Message()); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, md := range roots {
		if err := visit(md); err != nil {
			return err
		}
	}
	return nil
}

// fingerprinter hashes a contract's file and its transitive imports. Each
// file is hashed in a normal form: the set's bytes decoded without any
// extension resolver (so custom options keep their bytes whatever this
// binary links in), without source code info (comments do not change a
// schema) and without fields unknown to FileDescriptorProto (buf image
// bookkeeping), serialized deterministically.
type fingerprinter struct {
	files  *protoregistry.Files
	normal map[string][]byte // path → normal form
}

func newFingerprinter(image []byte, files *protoregistry.Files) (*fingerprinter, error) {
	raw := new(descriptorpb.FileDescriptorSet)
	if err := (proto.UnmarshalOptions{Resolver: new(protoregistry.Types)}).Unmarshal(image, raw); err != nil {
		return nil, fmt.Errorf("contract: decode descriptor set: %w", err)
	}
	f := &fingerprinter{files: files, normal: make(map[string][]byte, len(raw.GetFile()))}
	for _, fdp := range raw.GetFile() {
		b, err := normalForm(fdp)
		if err != nil {
			return nil, err
		}
		f.normal[fdp.GetName()] = b
	}
	return f, nil
}

func normalForm(fdp *descriptorpb.FileDescriptorProto) ([]byte, error) {
	fdp = proto.CloneOf(fdp)
	fdp.SourceCodeInfo = nil
	fdp.ProtoReflect().SetUnknown(nil)
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(fdp)
	if err != nil {
		return nil, fmt.Errorf("contract: fingerprint %q: %w", fdp.GetName(), err)
	}
	return b, nil
}

// FingerprintLen is the length of every contract's Fingerprint.
const FingerprintLen = len("sha256:") + 2*16

// fingerprint returns "sha256:" and the hex of the first 16 bytes of a
// SHA-256 over the message's full name and the normal form of its file and
// every file it imports transitively, sorted by path. Each part is length
// prefixed, so no two inputs hash the same bytes.
func (f *fingerprinter) fingerprint(md protoreflect.MessageDescriptor) string {
	seen := make(map[string]protoreflect.FileDescriptor)
	var walk func(fd protoreflect.FileDescriptor)
	walk = func(fd protoreflect.FileDescriptor) {
		if _, ok := seen[fd.Path()]; ok {
			return
		}
		seen[fd.Path()] = fd
		imports := fd.Imports()
		for i := range imports.Len() {
			walk(imports.Get(i).FileDescriptor)
		}
	}
	walk(md.ParentFile())
	paths := make([]string, 0, len(seen))
	for p := range seen {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	write := func(b []byte) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
		h.Write(b)
	}
	write([]byte(md.FullName()))
	for _, p := range paths {
		b, ok := f.normal[p]
		if !ok {
			// Compiled in, not in the set: its descriptor is the source.
			b, _ = normalForm(protodesc.ToFileDescriptorProto(seen[p]))
		}
		write([]byte(p))
		write(b)
	}
	sum := h.Sum(nil)
	return "sha256:" + hex.EncodeToString(sum[:16])
}
