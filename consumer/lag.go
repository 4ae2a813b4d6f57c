package consumer

import (
	"context"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// lagLoop measures lag and decides whether the DLQ needs draining.
func (c *Consumer) lagLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.LagInterval)
	defer t.Stop()
	for {
		c.measureLag(ctx)
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

func (c *Consumer) measureLag(ctx context.Context) {
	parts := c.assigned()
	if len(parts) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.LagInterval+5*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.client)
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
		c.log.Debug("lag: list end offsets", "err", err)
		return
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		c.log.Debug("lag: list start offsets", "err", err)
		return
	}
	committed, err := adm.FetchOffsets(ctx, c.cfg.Group)
	if err != nil {
		c.log.Debug("lag: fetch offsets", "err", err)
		return
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
		c.m.lag.WithLabelValues(p.tp.topic, strconv.Itoa(int(p.tp.partition))).Set(float64(lag))
		if p.dlq && end.Offset > max(pos, p.next.Load()) {
			pending[p] = end.Offset
		}
	}
	c.maybeStartPass(pending)
}
