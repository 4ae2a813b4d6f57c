package admission

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/publish"
)

// scriptedKafka is admission's kafka with the test in the middle: each
// Publish or Send is handed to the test, which says which of its records
// fail; the others go to the real producer (and a kfake broker). Once
// released, calls the test has not taken go through.
type scriptedKafka struct {
	real     *publish.Producer
	calls    chan scriptedCall
	auto     atomic.Bool
	released chan struct{} // closed when auto is set
}

type scriptedCall struct {
	values []string
	fail   chan []bool // the test's verdict: fail[i] fails record i
}

func newScriptedKafka(p *publish.Producer) *scriptedKafka {
	return &scriptedKafka{real: p, calls: make(chan scriptedCall), released: make(chan struct{})}
}

func (k *scriptedKafka) release() {
	if k.auto.CompareAndSwap(false, true) {
		close(k.released)
	}
}

func (k *scriptedKafka) Publish(ctx context.Context, records []*kgo.Record) []error {
	return k.Send(ctx, records).Wait(ctx)
}

func (k *scriptedKafka) Send(ctx context.Context, records []*kgo.Record) sending {
	fail := make([]bool, len(records))
	if !k.auto.Load() {
		c := scriptedCall{values: recordValues(records), fail: make(chan []bool, 1)}
		select {
		case k.calls <- c:
			fail = <-c.fail // a call the test took waits for its verdict
		case <-k.released:
		}
	}
	errs := make([]error, len(records))
	var pass []*kgo.Record
	var at []int
	for i, r := range records {
		if fail[i] {
			errs[i] = &publish.ProduceError{Topic: r.Topic, Err: kerr.NotEnoughReplicas}
			continue
		}
		pass = append(pass, r)
		at = append(at, i)
	}
	for j, err := range k.real.Publish(ctx, pass) {
		errs[at[j]] = err
	}
	return scriptedSent(errs)
}

// scriptedSent is a scripted call, answered by the time Send returns.
type scriptedSent []error

func (s scriptedSent) Wait(context.Context) []error { return s }

// Settled is closed: a scripted call is answered whole by the time Send
// returns.
func (s scriptedSent) Settled() <-chan struct{} { return closedChan }

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (k *scriptedKafka) DeliveryTimeout() time.Duration {
	if k.real == nil {
		return publish.NewDefaultConfig().DeliveryTimeout
	}
	return k.real.DeliveryTimeout()
}

// HandedOver reports false, as for a Send the producer cut short, so that
// the drainer settles each call before it sends the next: the test answers
// the calls one at a time.
func (s scriptedSent) HandedOver() bool { return len(s) == 0 }

// next waits for the next call and checks that it carries want.
func (k *scriptedKafka) next(t *testing.T, what string, want ...string) scriptedCall {
	t.Helper()
	select {
	case c := <-k.calls:
		if !slices.Equal(c.values, want) {
			t.Fatalf("%s: the call carried %v, want %v", what, c.values, want)
		}
		return c
	case <-waitCtx(t).Done():
		t.Fatalf("%s: no call to Kafka", what)
	}
	return scriptedCall{}
}

func recordValues(records []*kgo.Record) []string {
	out := make([]string, len(records))
	for i, r := range records {
		out[i] = string(r.Value)
	}
	return out
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	t.Cleanup(cancel)
	return ctx
}

// breakCursor makes the spool's cursor writes fail, as a full or read-only
// disk would: the temp file the cursor is written through is taken by a
// directory, so opening it for writing fails (EISDIR), even for root.
func breakCursor(t *testing.T, dir string) (fix func()) {
	t.Helper()
	tmp := filepath.Join(dir, "cursor.tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.Remove(tmp); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDrainRewindsWhenAckFails: the drainer's last publish before the
// switch to DIRECT fails part way and the cursor write that acknowledges
// what did get through fails too. The drainer must still go back to the
// first record not acknowledged: records after it that were never
// published must not be covered by a later acknowledgement and deleted.
func TestDrainRewindsWhenAckFails(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	k := newScriptedKafka(newTestProducer(t, c.ListenAddrs(), nil))
	defer k.release()
	dir := t.TempDir()
	s := openSpool(t, dir, nil)
	defer s.Close()
	cfg := NewDefaultConfig()
	cfg.LatencyThreshold = 300 * time.Millisecond
	cfg.DrainTimeout = time.Second
	cfg.DrainBackoffMax = 200 * time.Millisecond
	ackFailed := make(chan struct{}, 1)
	log := slog.New(&matchHandler{match: "acknowledging the spool", seen: ackFailed})
	a, err := newAdmission(cfg, k, s, WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	recs := keyed(topic, 0, 6, 1) // one key: one partition, one order

	// r0 and r1 fail in Kafka and are spooled.
	admitted := make(chan []Admitted, 1)
	go func() { admitted <- a.Admit(context.Background(), recs[0:2]) }()
	k.next(t, "direct publish", "00000000", "00000001").fail <- []bool{true, true}
	for i, r := range <-admitted {
		if r.Err != nil || r.Durability != DurabilityLocalDisk {
			t.Fatalf("r%d: %+v", i, r)
		}
	}
	// The drainer publishes them; meanwhile r2-r4 are spooled behind.
	drain := k.next(t, "first drain", "00000000", "00000001")
	for i, r := range a.Admit(context.Background(), recs[2:5]) {
		if r.Err != nil || r.Durability != DurabilityLocalDisk {
			t.Fatalf("r%d: %+v", i+2, r)
		}
	}
	drain.fail <- []bool{false, false}
	// Caught up, the drainer takes the mode lock to publish the rest and
	// switch: r2 gets through, r3 and r4 fail, and the cursor write for r2
	// fails.
	last := k.next(t, "drain under the mode lock", "00000002", "00000003", "00000004")
	fix := breakCursor(t, dir)
	last.fail <- []bool{false, true, true}
	select {
	case <-ackFailed:
	case <-waitCtx(t).Done():
		t.Fatal("the cursor write never failed")
	}
	// The disk recovers, r5 comes in, and from now on Kafka takes all: r5
	// must not be acknowledged before r3 and r4 are published.
	fix()
	k.release()
	if r := a.Admit(context.Background(), recs[5:6]); r[0].Err != nil {
		t.Fatalf("r5: %+v", r[0])
	}
	waitMode(t, a, ModeDirect)
	checkKeyOrder(t, consumeAll(t, c.ListenAddrs(), topic, len(recs)))
	if !s.Empty() {
		t.Fatalf("spool not empty after the drain: %+v", s.Stats())
	}
}

// matchHandler is a logger that signals seen when a record's message or
// attributes contain match.
type matchHandler struct {
	match string
	seen  chan struct{}
}

func (h *matchHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *matchHandler) Handle(_ context.Context, r slog.Record) error {
	text := r.Message
	r.Attrs(func(a slog.Attr) bool {
		text += " " + a.Value.String()
		return true
	})
	if strings.Contains(text, h.match) {
		select {
		case h.seen <- struct{}{}:
		default:
		}
	}
	return nil
}

func (h *matchHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *matchHandler) WithGroup(string) slog.Handler      { return h }

// TestFallbackKeepsKeyOrder: a direct publish fails and its records fall
// back to the spool, while the drainer finds the spool empty and returns
// to DIRECT. The fallen-back record must still reach Kafka before the next
// record of its key, which its sender sends once the first is answered.
func TestFallbackKeepsKeyOrder(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	k := newScriptedKafka(newTestProducer(t, c.ListenAddrs(), nil))
	defer k.release()
	s := openSpool(t, t.TempDir(), nil)
	defer s.Close()
	cfg := NewDefaultConfig()
	cfg.LatencyThreshold = 300 * time.Millisecond
	inWindow, leave := make(chan struct{}), make(chan struct{})
	a, err := newAdmission(cfg, k, s, WithLogger(discardLogger()), withBeforeFallback(func() {
		close(inWindow)
		<-leave
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	recs := keyed(topic, 0, 2, 1)

	// r0's direct publish fails; r0 stops on its way to the spool.
	first := make(chan []Admitted, 1)
	go func() { first <- a.Admit(context.Background(), recs[0:1]) }()
	k.next(t, "direct publish of r0", "00000000").fail <- []bool{true}
	<-inWindow
	// The drainer finds the spool empty: DIRECT.
	waitMode(t, a, ModeDirect)
	close(leave)
	if r := <-first; r[0].Err != nil || r[0].Durability != DurabilityLocalDisk {
		t.Fatalf("r0: %+v", r[0])
	}
	// The drainer takes r0; before Kafka answers it, r0's sender sends r1.
	drain := k.next(t, "drain of r0", "00000000")
	second := make(chan []Admitted, 1)
	go func() { second <- a.Admit(context.Background(), recs[1:2]) }()
	k.release() // a direct publish of r1 goes straight through
	if r := <-second; r[0].Err != nil {
		t.Fatalf("r1: %+v", r[0])
	}
	drain.fail <- []bool{false}
	waitMode(t, a, ModeDirect)
	checkKeyOrder(t, consumeAll(t, c.ListenAddrs(), topic, len(recs)))
}
