package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/sink"
)

// auditRowJSON is an audit row as a record of record.AuditTopic carries
// it: one JSON object per record, keyed as below. It is the one place
// that knows the layout; a writer of another layout is aligned here (or
// given with WithAuditDecoder).
type auditRowJSON struct {
	Source    string    `json:"source"`
	EventID   string    `json:"event_id"`
	Sequence  int64     `json:"sequence"`
	Action    string    `json:"action"`
	At        time.Time `json:"at"`
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	EventType string    `json:"event_type"`
	Group     string    `json:"group"`
	Sink      string    `json:"sink"`
	Class     string    `json:"class"`
	Error     string    `json:"error"`
	Attempt   int       `json:"attempt"`
	Retryable bool      `json:"retryable"`
	Detail    string    `json:"detail"`
	ReplayID  string    `json:"replay_id"`
	Actor     string    `json:"actor"`
}

// auditAction is the action of an audit row named s; the topic's other
// records (a replay's replay.started and replay.finished reports) are not
// rows.
func auditAction(s string) (sink.AuditAction, bool) {
	switch a := sink.AuditAction(s); a {
	case sink.AuditWritten, sink.AuditDeadLettered, sink.AuditRetried, sink.AuditParked, sink.AuditReplayed:
		return a, true
	}
	return "", false
}

// JSONAuditDecoder reads a record of record.AuditTopic as one audit row
// in JSON (auditRowJSON's keys). A record that is no JSON object, or whose
// action is not an audit row's (a replay's report), holds no row; one
// that is a row but does not decode is an error.
func JSONAuditDecoder() AuditDecoder { return AuditDecoderFunc(decodeAuditJSON) }

func decodeAuditJSON(r *kgo.Record) ([]sink.AuditRow, error) {
	v := bytes.TrimSpace(r.Value)
	if len(v) == 0 || v[0] != '{' {
		return nil, nil
	}
	var head struct {
		Action  string `json:"action"`
		EventID string `json:"event_id"`
	}
	if err := json.Unmarshal(v, &head); err != nil {
		return nil, fmt.Errorf("trace: audit record: %w", err)
	}
	action, ok := auditAction(head.Action)
	if !ok || head.EventID == "" {
		return nil, nil
	}
	var j auditRowJSON
	if err := json.Unmarshal(v, &j); err != nil {
		return nil, fmt.Errorf("trace: audit row: %w", err)
	}
	return []sink.AuditRow{{
		Source: j.Source, EventID: j.EventID, Sequence: j.Sequence, Action: action, At: j.At,
		Topic: j.Topic, Partition: j.Partition, Offset: j.Offset, EventType: j.EventType, Group: j.Group, Sink: j.Sink,
		Class: j.Class, Error: j.Error, Attempt: j.Attempt, Retryable: j.Retryable, Detail: j.Detail,
		ReplayID: j.ReplayID, Actor: j.Actor,
	}}, nil
}
