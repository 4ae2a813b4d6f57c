package dlq

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/record"
)

// writeAudit produces rep to record.AuditTopic, keyed by the replayed topic so
// that a replay's records keep their order. It uses its own deadline so
// that a replay canceled part way is still audited.
func writeAudit(ctx context.Context, cl *kgo.Client, rep *ReplayReport) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("dlq: audit record: %w", err)
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), adminTimeout)
	defer cancel()
	if err := cl.ProduceSync(actx, &kgo.Record{Topic: record.AuditTopic, Key: []byte(rep.Topic), Value: b}).FirstErr(); err != nil {
		return fmt.Errorf("dlq: audit record to %s: %w", record.AuditTopic, err)
	}
	return nil
}
