package consumer

import (
	"context"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// measureLag sets sluice_consumer_lag of parts, within timeout, and
// returns the DLQ partitions with records past this member's position,
// with their end offsets: what a drain pass would cover.
func (cm *committer) measureLag(ctx context.Context, parts []*partState, timeout time.Duration) map[*partState]int64 {
	if len(parts) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	adm := kadm.NewClient(cm.client)
	var topics []string
	seen := map[string]bool{}
	for _, p := range parts {
		if !seen[p.tp.topic] {
			seen[p.tp.topic] = true
			topics = append(topics, p.tp.topic)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		cm.log.Debug("lag: list end offsets", "err", err)
		return nil
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		cm.log.Debug("lag: list start offsets", "err", err)
		return nil
	}
	committed, err := adm.FetchOffsets(ctx, cm.group)
	if err != nil {
		cm.log.Debug("lag: fetch offsets", "err", err)
		return nil
	}
	pending := map[*partState]int64{}
	for _, p := range parts {
		end, ok := ends.Lookup(p.tp.topic, p.tp.partition)
		if !ok || end.Err != nil {
			continue
		}
		pos := int64(0)
		if s, ok := starts.Lookup(p.tp.topic, p.tp.partition); ok && s.Err == nil {
			pos = s.Offset
		}
		if o, ok := committed.Lookup(p.tp.topic, p.tp.partition); ok && o.Err == nil && o.At > pos {
			pos = o.At
		}
		lag := max(end.Offset-pos, 0)
		cm.lag.WithLabelValues(p.tp.topic, strconv.Itoa(int(p.tp.partition))).Set(float64(lag))
		if p.dlq && end.Offset > max(pos, p.next.Load()) {
			pending[p] = end.Offset
		}
	}
	return pending
}

// forgetLag deletes the lag series of partitions no longer assigned.
func (cm *committer) forgetLag(parts []*partState) {
	for _, p := range parts {
		cm.lag.DeleteLabelValues(p.tp.topic, strconv.Itoa(int(p.tp.partition)))
	}
}
