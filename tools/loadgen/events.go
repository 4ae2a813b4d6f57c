package loadgen

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/examples"
	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	shopv1 "github.com/sluicehq/sluice/gen/examples/shop/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// Event types the load generator can send: two of the example contracts.
const (
	TypeOrderPlaced = "examples.shop.v1.OrderPlaced" // ~700 B as JSON in the standard matrix
	TypeLogLine     = "examples.logs.v1.LogLine"     // ~300 B as binary in the standard matrix
)

// payload is one contract message in the run's encoding, and its binary
// form (what Kafka gets, for direct).
type payload struct {
	encoded []byte
	binary  []byte
	// text is encoded as a string, made once: every JSON event shares it.
	text string
}

// Generator makes the run's events: unique ids RunID-<n> in send order,
// partition keys in turn, occurred_at from the clock, and every
// InvalidEvery-th event with a payload that breaks a contract rule. It is
// safe for concurrent use.
type Generator struct {
	runID          string
	typ            string
	json           bool
	valid, invalid payload
	invalidEvery   uint64
	keys           []string
	now            func() time.Time
	next           atomic.Uint64
}

// NewGenerator builds the payloads once; every event reuses them.
func NewGenerator(cfg Config, now func() time.Time) (*Generator, error) {
	g := &Generator{
		runID:        cfg.RunID,
		typ:          cfg.EventType,
		json:         cfg.Encoding == EncodingJSON,
		invalidEvery: uint64(cfg.InvalidEvery),
		now:          now,
	}
	if g.runID == "" {
		g.runID = NewRunID()
	}
	var err error
	if g.valid, err = buildPayload(cfg.EventType, cfg.Encoding, cfg.EventBytes, false); err != nil {
		return nil, err
	}
	if g.invalid, err = buildPayload(cfg.EventType, cfg.Encoding, cfg.EventBytes, true); err != nil {
		return nil, err
	}
	g.keys = make([]string, cfg.Keys)
	for i := range g.keys {
		g.keys[i] = "key-" + strconv.Itoa(i)
	}
	return g, nil
}

// NewRunID returns a fresh run id: "lg" and 12 random hex digits.
func NewRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return "lg" + hex.EncodeToString(b[:])
}

// RunID is the prefix of every event id of the run.
func (g *Generator) RunID() string { return g.runID }

// PayloadBytes is the size of one valid payload in the run's encoding.
func (g *Generator) PayloadBytes() int { return len(g.valid.encoded) }

// IsInvalid reports whether the n-th event (0-based) breaks a rule.
func (g *Generator) IsInvalid(n uint64) bool {
	return g.invalidEvery > 0 && (n+1)%g.invalidEvery == 0
}

// EventID is the id of the n-th event (0-based).
func (g *Generator) EventID(n uint64) string { return g.runID + "-" + strconv.FormatUint(n, 10) }

// Batch returns the next n events.
func (g *Generator) Batch(n int) []*ingestv1.Event {
	first := g.next.Add(uint64(n)) - uint64(n)
	at := timestamppb.New(g.now())
	out := make([]*ingestv1.Event, n)
	for i := range out {
		k := first + uint64(i)
		p := g.valid
		if g.IsInvalid(k) {
			p = g.invalid
		}
		ev := &ingestv1.Event{Id: g.EventID(k), Type: g.typ, OccurredAt: at, PartitionKey: g.keys[k%uint64(len(g.keys))]}
		if g.json {
			ev.Payload = &ingestv1.Event_Json{Json: p.text}
		} else {
			ev.Payload = &ingestv1.Event_Binary{Binary: p.encoded}
		}
		out[i] = ev
	}
	return out
}

// binaryOf returns the protobuf binary of ev's payload, as the gateway
// would publish it.
func (g *Generator) binaryOf(ev *ingestv1.Event) []byte {
	if g.json {
		if ev.GetJson() == string(g.invalid.encoded) {
			return g.invalid.binary
		}
		return g.valid.binary
	}
	return ev.GetBinary()
}

// buildPayload makes the example message of typ, breaks a rule when
// invalid, and pads its free-text field so that its encoding is about size
// bytes (size 0: no padding).
func buildPayload(typ, encoding string, size int, invalid bool) (payload, error) {
	var (
		msg    proto.Message
		pad    func(string)
		maxPad int
	)
	switch typ {
	case TypeOrderPlaced:
		m := &shopv1.OrderPlaced{}
		if err := protojson.Unmarshal(examples.OrderPlacedJSON, m); err != nil {
			return payload{}, fmt.Errorf("loadgen: example %s: %w", typ, err)
		}
		if invalid {
			m.Currency = "eur" // breaks ^[A-Z]{3}$
		}
		msg, pad, maxPad = m, func(s string) { m.Note = s }, 500
	case TypeLogLine:
		m := &logsv1.LogLine{}
		if err := protojson.Unmarshal(examples.LogLineJSON, m); err != nil {
			return payload{}, fmt.Errorf("loadgen: example %s: %w", typ, err)
		}
		if invalid {
			m.TraceId = "XYZ" // breaks ^[0-9a-f]{32}$
		}
		base := m.Message
		msg, pad, maxPad = m, func(s string) { m.Message = base + " " + s }, 8000
	default:
		return payload{}, fieldErr("type", "unknown event type "+typ)
	}
	encode := func() ([]byte, error) {
		if encoding == EncodingBinary {
			return proto.Marshal(msg)
		}
		b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(msg)
		if err != nil {
			return nil, err
		}
		var out bytes.Buffer
		if err := json.Compact(&out, b); err != nil {
			return nil, err
		}
		return out.Bytes(), nil
	}
	enc, err := encode()
	if err != nil {
		return payload{}, fmt.Errorf("loadgen: encode %s: %w", typ, err)
	}
	if size > 0 && len(enc) < size {
		// The padding's own framing (a space, a length prefix, or the JSON
		// member) is small; one correction gets within a few bytes.
		n := size - len(enc)
		for range 3 {
			if n > maxPad {
				return payload{}, fieldErr("event-bytes", fmt.Sprintf("%d is more than %s can be padded to", size, typ))
			}
			pad(strings.Repeat("x", max(n, 0)))
			if enc, err = encode(); err != nil {
				return payload{}, fmt.Errorf("loadgen: encode %s: %w", typ, err)
			}
			if len(enc) <= size {
				break
			}
			n -= len(enc) - size
		}
	}
	bin, err := proto.Marshal(msg)
	if err != nil {
		return payload{}, fmt.Errorf("loadgen: encode %s: %w", typ, err)
	}
	return payload{encoded: enc, binary: bin, text: string(enc)}, nil
}
