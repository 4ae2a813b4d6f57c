package client

import (
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"sync"
	"time"
)

// uuidV7 makes RFC 9562 version 7 UUIDs: 48 bits of Unix milliseconds,
// then a 12-bit counter that orders the ids of one millisecond (method 1
// of RFC 9562 section 6.2), then 62 random bits. The ids of one generator
// sort in the order they were made, even when the clock steps back.
type uuidV7 struct {
	clock func() time.Time
	mu    sync.Mutex
	ms    int64
	seq   uint16
	rnd   *rand.ChaCha8
}

func newUUIDv7(clock func() time.Time) *uuidV7 {
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // never fails (crypto/rand's contract)
	return &uuidV7{clock: clock, rnd: rand.NewChaCha8(seed)}
}

func (g *uuidV7) next() string {
	var u [16]byte
	g.mu.Lock()
	ms := g.clock().UnixMilli()
	if ms > g.ms {
		g.ms, g.seq = ms, 0
	} else if g.seq++; g.seq > 0xfff {
		// The counter is spent, or the clock stepped back: borrow the
		// next millisecond so the order holds.
		g.ms, g.seq = g.ms+1, 0
	}
	ms, seq := g.ms, g.seq
	rnd := g.rnd.Uint64()
	g.mu.Unlock()
	u[0], u[1], u[2], u[3], u[4], u[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	u[6] = 0x70 | byte(seq>>8)
	u[7] = byte(seq)
	for i := 8; i < 16; i++ {
		u[i] = byte(rnd >> (8 * (15 - i)))
	}
	u[8] = 0x80 | u[8]&0x3f
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return string(s[:])
}
