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

// logLineType is the contract every hostile event names.
const logLineType = "examples.logs.v1.LogLine"

// garbage is a request message that does not decode as protobuf: a tag
// with a reserved wire type.
var garbage = wire{0xff, 0xff, 0xff, 0xff}

// giantCountBatch is a PublishRequest of n empty events in protobuf wire
// form: the bytes 0a 00 (field 1, length 0) n times. Two bytes each on the
// wire, every one is a whole Event message once decoded.
func giantCountBatch(n int) wire {
	return wire(bytes.Repeat([]byte{0x0a, 0x00}, n))
}

// giantCountREST is the REST body {"events":[{},{},...]} with as many
// empty events as fit in limit bytes.
func giantCountREST(limit int) []byte {
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

// logLineJSON is a valid examples.logs.v1.LogLine as JSON whose message
// is messageBytes long.
func logLineJSON(messageBytes int, at time.Time) []byte {
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

// badAttributeKey is the i-th attribute key of a violation bomb: upper
// case, so it breaks the envelope's key pattern ^[a-z0-9][a-z0-9._-]*$.
func badAttributeKey(i int) string { return "K" + strconv.Itoa(i) }

// violationREST is a REST body of one LogLine event with a valid payload
// and keys attributes that each break the key pattern (and together
// max_pairs): one rule violation per key.
func violationREST(keys int, at time.Time) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"events":[{"id":"violation-bomb","type":%q,"occurred_at":%q,"payload":%s,"attributes":{`,
		logLineType, at.UTC().Format(time.RFC3339Nano), logLineJSON(1, at))
	for i := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + badAttributeKey(i) + `":""`)
	}
	b.WriteString(`}}]}`)
	return b.Bytes()
}

// violationGRPC is violationREST as a PublishRequest in wire form.
func violationGRPC(keys int, at time.Time) wire {
	attrs := make(map[string]string, keys)
	for i := range keys {
		attrs[badAttributeKey(i)] = ""
	}
	return marshal(&ingestv1.PublishRequest{Events: []*ingestv1.Event{{
		Id:         "violation-bomb",
		Type:       logLineType,
		OccurredAt: timestamppb.New(at),
		Payload:    &ingestv1.Event_Json{Json: string(logLineJSON(1, at))},
		Attributes: attrs,
	}}})
}

// streamBatch is a PublishStreamRequest of n valid LogLine events whose
// messages are messageBytes long, in wire form. Its ids are fixed, so a
// gateway that sees it again answers DUPLICATE: it is the cost of holding
// batches and their answers that a sender of it measures, not Kafka's.
func streamBatch(n, messageBytes int, at time.Time) wire {
	payload := string(logLineJSON(messageBytes, at))
	req := &ingestv1.PublishStreamRequest{BatchId: 1, Events: make([]*ingestv1.Event, n)}
	for i := range req.Events {
		req.Events[i] = &ingestv1.Event{
			Id:         "stream-" + strconv.Itoa(i),
			Type:       logLineType,
			OccurredAt: timestamppb.New(at),
			Payload:    &ingestv1.Event_Json{Json: payload},
		}
	}
	return marshal(req)
}

func marshal(m proto.Message) wire {
	b, err := proto.Marshal(m)
	if err != nil {
		panic("hostile: a request does not marshal: " + err.Error()) // built here: cannot fail
	}
	return wire(b)
}
