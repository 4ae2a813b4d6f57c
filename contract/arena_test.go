package contract

import (
	"testing"

	"buf.build/go/hyperpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestArenaPoolBound: an arena that decoded a payload over
// pooledPayloadBytes is not kept for the next payload, so what the pool
// holds stays bounded by small payloads; one that decoded a small payload
// may be (sync.Pool may still drop it).
func TestArenaPoolBound(t *testing.T) {
	typ := hyperpb.CompileMessageDescriptor((&timestamppb.Timestamp{}).ProtoReflect().Descriptor())
	var p arenaPool
	use := func(n int) *hyperpb.Shared {
		a := p.get(n)
		a.NewMessage(typ) // put frees the arena, which only a used one allows
		return a
	}
	big := use(pooledPayloadBytes + 1)
	p.put(big, pooledPayloadBytes+1)
	for range 4 {
		a := use(100)
		if a == big {
			t.Fatal("an arena that held a large payload came back from the pool")
		}
		p.put(a, 100)
	}
}
