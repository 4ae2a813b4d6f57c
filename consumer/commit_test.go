package consumer

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/record"
)

// newTestCommitter is a committer of group on a kfake cluster's client,
// not joined to the group: its commits are a member-less group's.
func newTestCommitter(t *testing.T, addrs []string, group string) (*committer, *metrics) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(testTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	m := newMetrics()
	return &committer{client: cl, group: group, log: slog.New(slog.DiscardHandler), committedGauge: m.committed, lag: m.lag}, m
}

// finishedPart is a state of testTopic's partition with offsets 0..n-1
// polled and those of done finished.
func finishedPart(t *testing.T, partition int32, n int64, done ...int64) *partState {
	t.Helper()
	p := newPartState(t.Context(), topicPartition{testTopic, partition}, false)
	for o := range n {
		if err := p.wm.add(o); err != nil {
			t.Fatal(err)
		}
	}
	p.next.Store(n)
	for _, o := range done {
		p.wm.done(o)
	}
	return p
}

// TestCommitterCommits: commit commits the committable offset of the
// partitions still ours and skips retired ones; commitRevoked commits
// retired ones; a commit the broker does not take is not recorded.
func TestCommitterCommits(t *testing.T) {
	addrs := newCluster(t, 3)
	const group = "committer"
	cm, m := newTestCommitter(t, addrs, group)
	ctx := t.Context()

	ours := finishedPart(t, 0, 5, 0, 1, 3)
	gone := finishedPart(t, 1, 3, 0, 1, 2)
	none := finishedPart(t, 2, 2)
	cm.retire([]*partState{gone})
	if !gone.gone.Load() || gone.ctx.Err() == nil {
		t.Fatal("retire left the partition ours")
	}
	cm.commit(ctx, []*partState{ours, gone, none})
	got := committed(t, addrs, group, testTopic)
	if got[0] != 2 || len(got) != 1 {
		t.Fatalf("committed %v, want only partition 0 at 2", got)
	}
	if o := cm.committedOffset(ours); o != 2 {
		t.Fatalf("committedOffset = %d, want 2", o)
	}
	if v := testutil.ToFloat64(m.committed.WithLabelValues(testTopic, "0")); v != 2 {
		t.Fatalf("committed offset gauge %v, want 2", v)
	}
	if o := cm.committedOffset(none); o != -1 {
		t.Fatalf("committedOffset of a partition with nothing finished = %d", o)
	}

	cm.commitRevoked(ctx, []*partState{gone})
	if got := committed(t, addrs, group, testTopic); got[1] != 3 {
		t.Fatalf("committed %v after commitRevoked, want partition 1 at 3", got)
	}

	ours.wm.done(2)
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	cm.commit(canceled, []*partState{ours})
	if o := cm.committedOffset(ours); o != 2 {
		t.Fatalf("committedOffset = %d after a failed commit, want 2 kept", o)
	}
	cm.commit(ctx, []*partState{ours})
	if o := cm.committedOffset(ours); o != 4 {
		t.Fatalf("committedOffset = %d after the retry, want 4", o)
	}
}

// TestCommitterLag: measureLag sets the lag of each partition from its
// committed offset (or log start) to its end, and reports the DLQ
// partitions with records past this member's position; forgetLag deletes
// the series.
func TestCommitterLag(t *testing.T) {
	addrs := newCluster(t, 1)
	const group = "lag"
	ids := produceEvents(t, addrs, 5, 5)
	dlqTopic := record.DLQTopic(testTopic)
	produce(t, addrs, eventRecord(t, dlqTopic, "d0", "k", logLine(t)), eventRecord(t, dlqTopic, "d1", "k", logLine(t)))
	cm, m := newTestCommitter(t, addrs, group)
	src := finishedPart(t, 0, int64(len(ids)), 0, 1)
	cm.commit(t.Context(), []*partState{src})
	dl := newPartState(t.Context(), topicPartition{dlqTopic, 0}, true)

	pending := cm.measureLag(t.Context(), []*partState{src, dl}, 10*time.Second)
	if v := testutil.ToFloat64(m.lag.WithLabelValues(testTopic, "0")); v != 3 {
		t.Fatalf("lag %v, want 3: 5 records, 2 committed", v)
	}
	if v := testutil.ToFloat64(m.lag.WithLabelValues(dlqTopic, "0")); v != 2 {
		t.Fatalf("DLQ lag %v, want 2", v)
	}
	if len(pending) != 1 || pending[dl] != 2 {
		t.Fatalf("pending %v, want the DLQ partition up to 2", pending)
	}

	// Polled to its end, the DLQ partition has nothing for a pass.
	dl.next.Store(2)
	if pending := cm.measureLag(t.Context(), []*partState{src, dl}, 10*time.Second); len(pending) != 0 {
		t.Fatalf("pending %v with the DLQ polled to its end", pending)
	}
	if pending := cm.measureLag(t.Context(), nil, time.Second); pending != nil {
		t.Fatalf("pending %v with nothing assigned", pending)
	}

	cm.forgetLag([]*partState{src})
	if n := testutil.CollectAndCount(m.lag); n != 1 {
		t.Fatalf("%d lag series after forgetting one of two", n)
	}
}
