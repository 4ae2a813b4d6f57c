package hostile

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// The hostile messages. Each is built once and sent many times: the
// client holds one copy of each, whatever the number of callers.

// LogLineType is the contract every hostile event names.
const LogLineType = "examples.logs.v1.LogLine"

// Garbage is a request message that does not decode as protobuf: a tag
// with a reserved wire type.
var Garbage = Wire{0xff, 0xff, 0xff, 0xff}

// GiantCountBatch is a PublishRequest of n empty events in protobuf wire
// form: the bytes 0a 00 (field 1, length 0) n times. Two bytes each on the
// wire, every one is a whole Event message once decoded.
func GiantCountBatch(n int) Wire {
	return Wire(bytes.Repeat([]byte{0x0a, 0x00}, n))
}

// GiantCountREST is the REST body {"events":[{},{},...]} with as many
// empty events as fit in limit bytes.
func GiantCountREST(limit int) []byte {
	const head, tail = `{"events":[`, `]}`
	// head + n × "{}" + (n-1) × "," + tail
	n := (limit - len(head) - len(tail) + 1) / 3
	var b bytes.Buffer
	b.Grow(len(head) + 3*n + len(tail))
	b.WriteString(head)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("{}")
	}
	b.WriteString(tail)
	return b.Bytes()
}

// LogLineJSON is a valid examples.logs.v1.LogLine as JSON whose message
// is messageBytes long.
func LogLineJSON(messageBytes int, at time.Time) []byte {
	b, err := protojson.Marshal(&logsv1.LogLine{
		Service:   "hostile",
		Severity:  logsv1.Severity_SEVERITY_INFO,
		Message:   strings.Repeat("m", max(messageBytes, 1)),
		Timestamp: timestamppb.New(at),
		Host:      "127.0.0.1",
	})
	if err != nil {
		panic("hostile: a LogLine does not marshal: " + err.Error()) // a fixed message: cannot fail
	}
	return b
}

// BadAttributeKey is the i-th attribute key of a violation bomb: upper
// case, so it breaks the envelope's key pattern ^[a-z0-9][a-z0-9._-]*$.
func BadAttributeKey(i int) string { return "K" + strconv.Itoa(i) }

// ViolationREST is a REST body of one LogLine event with a valid payload
// and keys attributes that each break the key pattern (and together
// max_pairs): one rule violation per key.
func ViolationREST(keys int, at time.Time) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"events":[{"id":"violation-bomb","type":%q,"occurred_at":%q,"payload":%s,"attributes":{`,
		LogLineType, at.UTC().Format(time.RFC3339Nano), LogLineJSON(1, at))
	for i := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + BadAttributeKey(i) + `":""`)
	}
	b.WriteString(`}}]}`)
	return b.Bytes()
}

// ViolationGRPC is ViolationREST as a PublishRequest in wire form.
func ViolationGRPC(keys int, at time.Time) Wire {
	attrs := make(map[string]string, keys)
	for i := range keys {
		attrs[BadAttributeKey(i)] = ""
	}
	return marshal(&ingestv1.PublishRequest{Events: []*ingestv1.Event{{
		Id:         "violation-bomb",
		Type:       LogLineType,
		OccurredAt: timestamppb.New(at),
		Payload:    &ingestv1.Event_Json{Json: string(LogLineJSON(1, at))},
		Attributes: attrs,
	}}})
}

// StreamBatch is a PublishStreamRequest of n valid LogLine events whose
// messages are messageBytes long, in wire form. Its ids are fixed, so a
// gateway that sees it again answers DUPLICATE: it is the cost of holding
// batches and their answers that a sender of it measures, not Kafka's.
func StreamBatch(n, messageBytes int, at time.Time) Wire {
	payload := string(LogLineJSON(messageBytes, at))
	req := &ingestv1.PublishStreamRequest{BatchId: 1, Events: make([]*ingestv1.Event, n)}
	for i := range req.Events {
		req.Events[i] = &ingestv1.Event{
			Id:         "stream-" + strconv.Itoa(i),
			Type:       LogLineType,
			OccurredAt: timestamppb.New(at),
			Payload:    &ingestv1.Event_Json{Json: payload},
		}
	}
	return marshal(req)
}

func marshal(m proto.Message) Wire {
	b, err := proto.Marshal(m)
	if err != nil {
		panic("hostile: a request does not marshal: " + err.Error()) // built here: cannot fail
	}
	return Wire(b)
}
