package consumer

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLostWaitsForCommitInProgress: onLost retires the lost partitions
// under the committer's lock. A commit that took them for ours and is
// still going (here: the lock held) ends before onLost returns, so it
// goes out under the generation they were lost in, which the group
// refuses: franz-go rejoins only after onLost returns, and a commit that
// waited past the rejoin would go out under the next generation, which
// the group takes, for partitions another member owns by then. The
// zombie-consumer fault scenario (tests/faultsuite) is where a paused
// consumer wakes into this.
func TestLostWaitsForCommitInProgress(t *testing.T) {
	addrs := newCluster(t, 1)
	c, err := New(testConfig("lost"), testVersions(t), newMemSink(), []kgo.Opt{kgo.SeedBrokers(addrs...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.client.Close)
	c.dispatcher.assign(map[string][]int32{testTopic: {0}})
	p := c.dispatcher.assigned()[0]

	c.committer.mu.Lock() // a commit in progress
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		c.onLost(t.Context(), c.client, map[string][]int32{testTopic: {0}})
	}()
	select {
	case <-returned:
		c.committer.mu.Unlock()
		t.Fatal("onLost returned while a commit was in progress: that commit could still go out after the rejoin, under the next generation")
	case <-time.After(300 * time.Millisecond):
	}
	if p.gone.Load() {
		t.Error("the partition was retired while a commit that took it for ours was in progress")
	}
	c.committer.mu.Unlock()
	<-returned
	if !p.gone.Load() || p.ctx.Err() == nil {
		t.Fatal("onLost left the lost partition ours")
	}
}
