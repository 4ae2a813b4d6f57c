package ownership

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluicehq/sluice/internal/pulltest"
	"github.com/sluicehq/sluice/pull"
)

// TestRunnerConnectsWithItsOptions: every client of the runner (topic
// creation, the group, the cursor store's reads) uses the connection it
// was given; a cluster that wants SCRAM lets none of them in otherwise.
func TestRunnerConnectsWithItsOptions(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "pollers", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	conn := []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...),
		kgo.SASL(scram.Auth{User: "pollers", Pass: "pw"}.AsSha512Mechanism())}
	f := newFeed(t, "a")
	f.released.Store(5)
	c := testConfig("alpha", f.URL)
	c.Interval = 20 * time.Millisecond

	oc := NewDefaultConfig()
	oc.IOTimeout = 2 * time.Second
	anon, err := NewRunner(oc, []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}, []pull.Config{c}, pulltest.NewRecorder(), WithLogger(quietLog()))
	if err != nil {
		t.Fatal(err)
	}
	if err := anon.Start(t.Context()); err == nil {
		anon.Close()
		t.Fatal("a runner without credentials created the cursor topic")
	}

	rec := pulltest.NewRecorder()
	r, err := NewRunner(NewDefaultConfig(), conn, []pull.Config{c}, rec, WithLogger(quietLog()))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	eventually(t, "the feed admitted and its cursor saved", func() bool {
		v := f.visits()
		return len(rec.IDs()) == 5 && len(v) > 0 && v[len(v)-1].cursor == "5"
	})
	r.Close()

	// A second runner resumes from the cursor it reads over the same
	// connection: the feed is asked from 5 on.
	f.released.Store(8)
	seen := len(f.visits())
	r2, err := NewRunner(NewDefaultConfig(), conn, []pull.Config{c}, rec, WithLogger(quietLog()))
	if err != nil {
		t.Fatal(err)
	}
	if err := r2.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r2.Close)
	eventually(t, "the new items admitted", func() bool { return len(rec.IDs()) == 8 })
	if v := f.visits()[seen:]; len(v) == 0 || v[0].cursor != "5" {
		t.Fatalf("visits after the restart %v, want the first at the saved cursor 5", v)
	}

	if _, err := NewRunner(NewDefaultConfig(), nil, []pull.Config{c}, rec); err == nil {
		t.Fatal("a runner without a connection")
	}
}
