package peers

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/waitfor"
)

// fakeClock is the members' clock, moved by the test only.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// member is a Membership and the last count its onChange got.
type member struct {
	*Membership
	n atomic.Int64
}

// wait bounds each wait on a member's count, in real time: the test's
// bounds are in the members' clock, which the test moves.
const wait = 20 * time.Second

func testConfig() Config {
	c := NewDefaultConfig()
	c.HeartbeatTopic = "sluice.gateways"
	c.HeartbeatInterval = time.Second
	c.MemberTTL = 5 * time.Second
	return c
}

func startMember(t *testing.T, cfg Config, conn []kgo.Opt, clock *fakeClock, id string) *member {
	t.Helper()
	m := &member{}
	ms, err := New(cfg, conn, func(n int) { m.n.Store(int64(n)) }, WithClock(clock.Now), WithID(id))
	if err != nil {
		t.Fatal(err)
	}
	m.Membership = ms
	if err := ms.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ms.Close)
	return m
}

// seenAt waits until each member read its own heartbeat written at the
// clock's time: it has read everything written before, and its expiry runs
// at that time.
func seenAt(t *testing.T, clock *fakeClock, ms ...*member) {
	t.Helper()
	now := clock.Now()
	for _, m := range ms {
		waitfor.Condition(t, wait, m.ID()+" reads its heartbeat of "+now.String(), func() bool {
			return !m.Status().SelfSeen.Before(now)
		})
	}
}

func counts(ms ...*member) []int64 {
	var out []int64
	for _, m := range ms {
		out = append(out, m.n.Load())
	}
	return out
}

// TestMembership: three members count three. One that stops without a
// word is still counted until member_ttl after its last heartbeat and is
// dropped within member_ttl + heartbeat_interval (in the members' clock);
// one that stops cleanly is dropped at once, with the clock standing
// still.
func TestMembership(t *testing.T) {
	cluster := kafkatest.Fake(t, 1, nil)
	conn := []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}
	cfg := testConfig()
	clock := &fakeClock{now: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)}

	a := startMember(t, cfg, conn, clock, "a")
	b := startMember(t, cfg, conn, clock, "b")
	c := startMember(t, cfg, conn, clock, "c")
	if got := c.n.Load(); got != 3 {
		t.Fatalf("c counted %d at start, want 3: Start reads the members that wrote before it", got)
	}
	for _, m := range []*member{a, b} {
		waitfor.Condition(t, wait, m.ID()+" counts 3", func() bool { return m.n.Load() == 3 })
	}

	// c's last heartbeat is at the clock's time now; it dies.
	last := clock.Now()
	c.stop(false)
	for clock.Now().Before(last.Add(cfg.MemberTTL)) {
		clock.Add(cfg.HeartbeatInterval)
		seenAt(t, clock, a, b)
		if got := counts(a, b); got[0] != 3 || got[1] != 3 {
			t.Fatalf("at %v after c's last heartbeat (ttl %v): counts %v, want 3 and 3", clock.Now().Sub(last), cfg.MemberTTL, got)
		}
	}
	clock.Add(cfg.HeartbeatInterval)
	seenAt(t, clock, a, b)
	for _, m := range []*member{a, b} {
		waitfor.Condition(t, wait, m.ID()+" drops c", func() bool { return m.n.Load() == 2 })
	}

	// b leaves cleanly: a drops it with its clock standing still.
	b.Close()
	waitfor.Condition(t, wait, "a drops b at its tombstone", func() bool { return a.n.Load() == 1 })
	if got := a.Status().Replicas; got != 1 {
		t.Fatalf("a's status says %d replicas", got)
	}
}

// TestMembershipJoin: a member that starts is counted by the one already
// there without its clock moving, and counts it at start.
func TestMembershipJoin(t *testing.T) {
	cluster := kafkatest.Fake(t, 1, nil)
	conn := []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}
	clock := &fakeClock{now: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)}
	a := startMember(t, testConfig(), conn, clock, "a")
	if got := a.n.Load(); got != 1 {
		t.Fatalf("a alone counts %d", got)
	}
	b := startMember(t, testConfig(), conn, clock, "b")
	if got := b.n.Load(); got != 2 {
		t.Fatalf("b counts %d at start, want 2", got)
	}
	waitfor.Condition(t, wait, "a counts b", func() bool { return a.n.Load() == 2 })
}

// TestMembershipCap: past the cap, a new member is not counted.
func TestMembershipCap(t *testing.T) {
	cluster := kafkatest.Fake(t, 1, nil)
	conn := []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}
	clock := &fakeClock{now: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)}
	cfg := testConfig()
	_ = startMember(t, cfg, conn, clock, "a")
	_ = startMember(t, cfg, conn, clock, "b")
	m := &member{}
	ms, err := New(cfg, conn, func(n int) { m.n.Store(int64(n)) }, WithClock(clock.Now), WithID("c"), WithMaxMembers(1))
	if err != nil {
		t.Fatal(err)
	}
	m.Membership = ms
	if err := ms.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ms.Close)
	if got := m.n.Load(); got != 2 {
		t.Fatalf("c with a cap of 1 other counts %d, want 2", got)
	}
}
