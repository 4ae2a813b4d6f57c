package contract

import (
	"errors"
	"strings"
	"sync"

	"buf.build/go/hyperpb"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// pooledPayloadBytes bounds the payloads decoded on a pooled arena. An
// arena keeps the largest block it has grown to, and a message takes a
// small multiple of its payload's size, so a pooled arena holds at most a
// small multiple of this; a larger payload gets an arena of its own, which
// the garbage collector takes back with the message.
const pooledPayloadBytes = 64 << 10

// arenaPool recycles the arenas that binary payloads are decoded on, so a
// decode in the steady state allocates nothing. The pool itself is
// bounded by the garbage collector, which empties it under no load.
type arenaPool struct{ pool sync.Pool }

// get returns an arena for a payload of n bytes.
func (p *arenaPool) get(n int) *hyperpb.Shared {
	if n <= pooledPayloadBytes {
		if a, ok := p.pool.Get().(*hyperpb.Shared); ok {
			return a
		}
	}
	return new(hyperpb.Shared)
}

// put takes back the arena get returned for a payload of n bytes. Every
// message decoded on it is dead from here on.
func (p *arenaPool) put(a *hyperpb.Shared, n int) {
	if n > pooledPayloadBytes {
		return
	}
	a.Free()
	p.pool.Put(a)
}

// detach returns err with nothing that points into a decoded message: a
// rule's message or a rule error's text may quote a field's value, and the
// message's memory is reused once its arena is put back. The typed errors
// keep their type; any other becomes its text.
func detach(err error) error {
	var verr *ViolationError
	if errors.As(err, &verr) {
		for i := range verr.Violations {
			v := &verr.Violations[i]
			v.Field, v.Rule, v.Message = strings.Clone(v.Field), strings.Clone(v.Rule), strings.Clone(v.Message)
		}
		return verr
	}
	return errors.New(err.Error())
}

// Decoders names the decoders a contract's payloads go through, chosen at
// load: the fast ones unless the contract has a shape they do not handle
// as protobuf-go does, when the reason says which.
type Decoders struct {
	// Binary is "hyperpb", or "dynamicpb" with BinaryReason.
	Binary, BinaryReason string
	// JSON is "transcoder", or "protojson" with JSONReason.
	JSON, JSONReason string
}

// Decoders returns the decoders chosen for the contract at load.
func (c *Contract) Decoders() Decoders { return c.decoders }

// hyperpbRefuses returns why hyperpb v0.1.3 may not decode md's payloads,
// or "". hyperpb decodes a contract only where FuzzBinaryDecoders has held
// it to protobuf-go's answers: messages of proto3 files, without
// extensions. And it misreads map entries whose value is a message when
// the entry is not exactly its key then its value (a key alone, the value
// first, a key twice), refusing some that protobuf-go takes and panicking
// on others. Such contracts decode with dynamicpb.
func hyperpbRefuses(md protoreflect.MessageDescriptor) string {
	seen := make(map[protoreflect.FullName]bool)
	var walk func(md protoreflect.MessageDescriptor) string
	walk = func(md protoreflect.MessageDescriptor) string {
		if seen[md.FullName()] {
			return ""
		}
		seen[md.FullName()] = true
		switch {
		case md.ParentFile().Syntax() != protoreflect.Proto3:
			return string(md.FullName()) + " is not in a proto3 file"
		case md.ExtensionRanges().Len() > 0:
			return string(md.FullName()) + " can hold extensions"
		}
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			if fd.IsMap() && fd.MapValue().Message() != nil {
				return "field " + string(fd.FullName()) + " is a map with message values"
			}
			if fd.Message() != nil {
				if why := walk(fd.Message()); why != "" {
					return why
				}
			}
		}
		return ""
	}
	return walk(md)
}
