package ownership

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/pulltest"
	"github.com/sluicehq/sluice/pull"
)

// replicaTransport tags each request with the replica that made it.
type replicaTransport struct{ name string }

func (rt replicaTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Replica", rt.name)
	return http.DefaultTransport.RoundTrip(r)
}

// feed is a partner whose items are released by the test, five a page.
type feed struct {
	*pulltest.Partner
	released atomic.Int32
}

func newFeed(t *testing.T, prefix string) *feed {
	f := &feed{}
	f.Partner = pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		from, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		to := max(min(from+5, int(f.released.Load())), from)
		pulltest.CursorPage(w, pulltest.Items(prefix, from, to), strconv.Itoa(to))
	})
	return f
}

// visit is one request: the replica and the cursor.
type visit struct{ replica, cursor string }

func (f *feed) visits() []visit {
	var out []visit
	for _, r := range f.Requests() {
		out = append(out, visit{r.Header.Get("X-Replica"), r.URL.Query().Get("cursor")})
	}
	return out
}

func newTestRunner(t *testing.T, brokers []string, replica string, cfgs []pull.Config, ing pull.Ingester) *Runner {
	t.Helper()
	oc := NewDefaultConfig()
	oc.SessionTimeout = 6 * time.Second
	oc.RebalanceTimeout = 10 * time.Second
	r, err := NewRunner(oc, []kgo.Opt{kgo.SeedBrokers(brokers...)}, cfgs, ing, WithLogger(quietLog()),
		WithPollerOptions(pull.WithHTTPClient(&http.Client{Transport: replicaTransport{replica}})))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func running(r *Runner) []string {
	var out []string
	for _, s := range r.Status() {
		if s.State != pull.StateStopped && s.State != pull.StateAuthFailed {
			out = append(out, s.Partner)
		}
	}
	return out
}

// TestOwnership: two replicas share two pollers, one owner each; closing
// the owner of one moves it to the other replica, which resumes from the
// saved cursor.
func TestOwnership(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	alpha, beta := newFeed(t, "a"), newFeed(t, "b")
	alpha.released.Store(10)
	beta.released.Store(10)
	cfg := func(name string, f *feed) pull.Config {
		c := testConfig(name, f.URL)
		c.Interval = 20 * time.Millisecond
		return c
	}
	cfgs := []pull.Config{cfg("beta", beta), cfg("alpha", alpha)}
	rec := pulltest.NewRecorder()
	r1 := newTestRunner(t, brokers, "r1", cfgs, rec)
	r2 := newTestRunner(t, brokers, "r2", cfgs, rec)
	ctx := t.Context()
	for _, r := range []*Runner{r1, r2} {
		if err := r.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
	}
	eventually(t, "one poller on each replica", func() bool { return len(running(r1)) == 1 && len(running(r2)) == 1 })
	eventually(t, "both feeds admitted", func() bool { return len(rec.IDs()) == 20 })

	owner, other := r1, r2
	ownerName, otherName := "r1", "r2"
	if running(r1)[0] != "alpha" {
		owner, other, ownerName, otherName = r2, r1, "r2", "r1"
	}
	// While both replicas run, each feed is polled by its owner only
	// (from the visit after the assignment settled).
	settled := len(alpha.visits())
	eventually(t, "alpha polled again", func() bool { return len(alpha.visits()) > settled+2 })
	for _, v := range alpha.visits()[settled:] {
		if v.replica != ownerName {
			t.Fatalf("alpha polled by %s while %s owns it", v.replica, ownerName)
		}
	}

	owner.Close()
	handover := len(alpha.visits())
	alpha.released.Store(20)
	eventually(t, "alpha moved to the other replica", func() bool {
		n := running(other)
		return len(n) == 2
	})
	eventually(t, "alpha's new items admitted", func() bool { return len(rec.IDs()) == 30 })
	after := alpha.visits()[handover:]
	if len(after) == 0 || after[0] != (visit{otherName, "10"}) {
		t.Fatalf("first visits after the handover %v, want %s resuming at the saved cursor 10", after, otherName)
	}
	for _, v := range after {
		if v.replica != otherName {
			t.Errorf("alpha polled by %s after it was closed", v.replica)
		}
	}
	for id, n := range rec.IDs() {
		if n != 1 {
			t.Errorf("%s admitted %d times", id, n)
		}
	}

	// The cursor topic has a partition per poller; a runner with another
	// list refuses to start.
	adm := kadm.NewClient(mustClient(t, brokers))
	details, err := adm.ListTopics(ctx, "sluice.pollers")
	if err != nil || len(details["sluice.pollers"].Partitions) != 2 {
		t.Fatalf("cursor topic %+v, %v", details, err)
	}
	three := append(cfgs, cfg("gamma", alpha))
	oc := NewDefaultConfig()
	reg := prometheus.NewRegistry()
	r3, err := NewRunner(oc, []kgo.Opt{kgo.SeedBrokers(brokers...)}, three, rec, WithLogger(quietLog()), WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	var tm *TopicMismatchError
	if err := r3.Start(ctx); !errors.As(err, &tm) || tm.Partitions != 2 || tm.Pollers != 3 {
		t.Fatalf("Start with 3 pollers: %v", err)
	}
	r3.Close()
	if _, err := pull.NewMetrics(reg); err != nil {
		t.Errorf("metrics left registered after a failed start: %v", err)
	}
}

func mustClient(t *testing.T, brokers []string) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestKafkaStore: Load finds nothing in an empty partition, then the last
// save; a partition whose last record is another poller's starts afresh.
func TestKafkaStore(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "cursors"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	store := func(part int32, name string) *kafkaStore {
		return &kafkaStore{client: cl, conn: []kgo.Opt{kgo.SeedBrokers(brokers...)}, topic: "cursors", partition: part, poller: name, timeout: 10 * time.Second, log: quietLog()}
	}
	ctx := t.Context()
	s := store(1, "alpha")
	if _, ok, err := s.Load(ctx); ok || err != nil {
		t.Fatalf("empty partition: ok %v err %v", ok, err)
	}
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		if err := s.Save(ctx, pull.CursorRecord{Poller: "alpha", Position: pull.Position{Cursor: fmt.Sprint("c", i)}, SavedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := s.Load(ctx)
	if err != nil || !ok || got.Cursor != "c2" || !got.SavedAt.Equal(at) {
		t.Fatalf("Load: %+v %v %v", got, ok, err)
	}
	if _, ok, err := store(0, "alpha").Load(ctx); ok || err != nil {
		t.Fatalf("other partition: ok %v err %v", ok, err)
	}
	if _, ok, err := store(1, "renamed").Load(ctx); ok || err != nil {
		t.Fatalf("another poller's record: ok %v err %v", ok, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := s.Load(cctx); err == nil {
		t.Fatal("Load with a canceled context succeeded")
	}
}
