package consumer

import (
	"context"
	"log/slog"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// committer commits the finished offsets of partitions and measures their
// lag. One lock, mu: it serializes commits, so that a periodic commit
// never lands after a revoke's final commit of the same partition, and
// guards every partState.committed.
type committer struct {
	client *kgo.Client
	group  string
	log    *slog.Logger
	// committedGauge is sluice_consumer_committed_offset, lag
	// sluice_consumer_lag.
	committedGauge, lag *prometheus.GaugeVec

	mu sync.Mutex
}

// commit commits the finished offsets of the partitions still ours.
func (cm *committer) commit(ctx context.Context, parts []*partState) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	live := parts[:0:0]
	for _, p := range parts {
		if !p.gone.Load() {
			live = append(live, p)
		}
	}
	cm.commitLocked(ctx, live)
}

// retire retires the partitions (partState.retire) between commits: a
// periodic commit that saw them ours has landed, and the next one skips
// them.
func (cm *committer) retire(parts []*partState) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	for _, p := range parts {
		p.retire()
	}
}

// commitRevoked commits the finished offsets of revoked partitions.
func (cm *committer) commitRevoked(ctx context.Context, parts []*partState) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	cm.commitLocked(ctx, parts)
}

// committedOffset returns the last offset committed of p; -1 before any.
func (cm *committer) committedOffset(p *partState) int64 {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return p.committed
}

func (cm *committer) commitLocked(ctx context.Context, parts []*partState) {
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	type pending struct {
		p   *partState
		off int64
	}
	var todo []pending
	for _, p := range parts {
		off, ok := p.wm.committable()
		if !ok || off <= p.committed {
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
	cm.client.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			cm.log.Warn("commit", "err", err)
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
					cm.log.Warn("commit", "topic", t.Topic, "partition", p.Partition, "code", p.ErrorCode)
				}
			}
		}
	})
	for _, t := range todo {
		if failed[t.p.tp] {
			continue
		}
		t.p.committed = t.off
		cm.committedGauge.WithLabelValues(t.p.tp.topic, strconv.Itoa(int(t.p.tp.partition))).Set(float64(t.off))
	}
}
