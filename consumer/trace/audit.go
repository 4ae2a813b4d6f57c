package trace

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/consumer/dlq"
	"github.com/sluicehq/sluice/internal/clip"
	"github.com/sluicehq/sluice/sink"
)

// JSONAuditDecoder reads a record of record.AuditTopic as the consumer
// tier writes it: a dlq.Decision, one audit row. A record that is no
// decision (a replay's replay.started and replay.finished reports, or a
// record sluice did not write) holds no row; a decision whose action is
// not an audit row's is an error.
func JSONAuditDecoder() AuditDecoder { return AuditDecoderFunc(decodeDecision) }

func decodeDecision(r *kgo.Record) ([]sink.AuditRow, error) {
	d, err := dlq.ParseDecision(r)
	if errors.Is(err, dlq.ErrNotDecision) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	row := d.Row()
	if !row.Action.Valid() || row.EventID == "" {
		return nil, fmt.Errorf("trace: audit record: a decision with action %q, event id %q", clip.String(d.Action, 32), clip.String(d.EventID, 64))
	}
	return []sink.AuditRow{row}, nil
}
