package contract

import (
	"errors"
	"strings"
	"sync"

	"buf.build/go/hyperpb"
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
