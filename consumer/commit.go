package consumer

import (
	"context"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (c *Consumer) commitLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			cctx, cancel := context.WithTimeout(ctx, c.cfg.RevokeTimeout)
			c.commitParts(cctx, c.assigned())
			cancel()
		case <-ctx.Done():
			return
		}
	}
}

// commitParts commits the finished offsets of partitions still assigned.
func (c *Consumer) commitParts(ctx context.Context, parts []*partState) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	live := parts[:0:0]
	for _, p := range parts {
		if !p.gone.Load() {
			live = append(live, p)
		}
	}
	c.commitLocked(ctx, live)
}

// commitPartsAlways commits the finished offsets of revoked partitions.
func (c *Consumer) commitPartsAlways(ctx context.Context, parts []*partState) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	c.commitLocked(ctx, parts)
}

func (c *Consumer) commitLocked(ctx context.Context, parts []*partState) {
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	type pending struct {
		p   *partState
		off int64
	}
	var todo []pending
	for _, p := range parts {
		off, ok := p.wm.Committable()
		p.mu.Lock()
		prev := p.committed
		p.mu.Unlock()
		if !ok || off <= prev {
			continue
		}
		if offsets[p.tp.topic] == nil {
			offsets[p.tp.topic] = make(map[int32]kgo.EpochOffset)
		}
		offsets[p.tp.topic][p.tp.partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
		todo = append(todo, pending{p, off})
	}
	if len(todo) == 0 {
		return
	}
	var failed map[topicPartition]bool
	c.client.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			c.log.Warn("commit", "err", err)
			failed = map[topicPartition]bool{}
			for _, t := range todo {
				failed[t.p.tp] = true
			}
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					if failed == nil {
						failed = map[topicPartition]bool{}
					}
					failed[topicPartition{t.Topic, p.Partition}] = true
					c.log.Warn("commit", "topic", t.Topic, "partition", p.Partition, "code", p.ErrorCode)
				}
			}
		}
	})
	for _, t := range todo {
		if failed[t.p.tp] {
			continue
		}
		t.p.mu.Lock()
		t.p.committed = t.off
		t.p.mu.Unlock()
		c.m.committed.WithLabelValues(t.p.tp.topic, strconv.Itoa(int(t.p.tp.partition))).Set(float64(t.off))
	}
}
