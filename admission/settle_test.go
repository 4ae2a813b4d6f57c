package admission

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/publish"
)

// heldKafka is a client that answers nothing until the test settles each
// Send: what a broker that stopped answering looks like to admission, with
// the test deciding when the client fails or writes the records. It
// stands in for the client's one behaviour the drainer must respect: a
// record the client holds may still be failed, together with the records
// buffered behind it, long after whoever sent it stopped waiting.
type heldKafka struct {
	delivery time.Duration
	sends    chan *heldSend
}

func newHeldKafka(delivery time.Duration) *heldKafka {
	return &heldKafka{delivery: delivery, sends: make(chan *heldSend, 1000)}
}

func (k *heldKafka) DeliveryTimeout() time.Duration { return k.delivery }

func (k *heldKafka) Send(_ context.Context, records []*kgo.Record) sending {
	s := &heldSend{values: recordValues(records), topic: records[0].Topic, errs: make([]error, len(records)), answered: make(chan struct{})}
	k.sends <- s
	return s
}

// next is the next Send, or fails the test when none comes in testWait.
func (k *heldKafka) next(t *testing.T, what string) *heldSend {
	t.Helper()
	select {
	case s := <-k.sends:
		return s
	case <-time.After(testWait):
		t.Fatalf("%s: no Send", what)
		return nil
	}
}

// none fails the test when a Send comes within d: the drainer must hand
// the client nothing while a record it holds could still fail.
func (k *heldKafka) none(t *testing.T, d time.Duration, why string) {
	t.Helper()
	select {
	case s := <-k.sends:
		t.Fatalf("%s, yet the drainer sent %v", why, s.values)
	case <-time.After(d):
	}
}

type heldSend struct {
	values   []string
	topic    string
	errs     []error
	answered chan struct{}
}

func (s *heldSend) HandedOver() bool { return true }

func (s *heldSend) Settled() <-chan struct{} { return s.answered }

func (s *heldSend) Wait(ctx context.Context) []error {
	select {
	case <-s.answered:
		return s.errs
	case <-ctx.Done():
		out := make([]error, len(s.errs))
		for i := range out {
			out[i] = &publish.ProduceError{Topic: s.topic, Err: fmt.Errorf("%w: %w", publish.ErrTimeout, ctx.Err())}
		}
		return out
	}
}

// settle answers every record: with err (the client failed them), or
// written (nil).
func (s *heldSend) settle(err error) {
	for i := range s.errs {
		if err != nil {
			s.errs[i] = &publish.ProduceError{Topic: s.topic, Err: err}
		}
	}
	close(s.answered)
}

// quiet is how long a test watches for a Send that must not come: several
// times the drainer's backoff and timeouts below, so that a drainer that
// does not wait would send within it.
const quiet = 600 * time.Millisecond

func newHeldAdmission(t *testing.T, k *heldKafka, edit func(*Config)) *Admission {
	t.Helper()
	cfg := NewDefaultConfig()
	cfg.LatencyThreshold = 100 * time.Millisecond
	cfg.DrainTimeout = 100 * time.Millisecond
	cfg.DrainBackoffMax = 100 * time.Millisecond
	if edit != nil {
		edit(&cfg)
	}
	a, err := newAdmission(cfg, k, openSpool(t, t.TempDir(), nil), WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// TestDrainWaitsForWhatItGaveUpOn: a drain step fails because the client
// did not answer in time. The drainer must not send the records again
// while the client still holds the first copies: the client may fail those
// later, with what is buffered behind them, and copies handed over after
// that failure would be written ahead of it. Once the client has answered,
// the drainer sends again from the first record.
func TestDrainWaitsForWhatItGaveUpOn(t *testing.T) {
	const topic = "ingest.t"
	k := newHeldKafka(10 * time.Second)
	a := newHeldAdmission(t, k, func(c *Config) { c.SpoolFirst, c.DrainBatch = true, 4 })
	for i, r := range a.Admit(context.Background(), keyed(topic, 0, 4, 2)) {
		if r.Err != nil {
			t.Fatalf("record %d: %v", i, r.Err)
		}
	}
	first := k.next(t, "the first drain")
	k.none(t, quiet, "the client still holds the first drain's records")
	first.settle(fmt.Errorf("%w: the client gave up", publish.ErrTimeout))
	again := k.next(t, "the drain after the client answered")
	if fmt.Sprint(again.values) != fmt.Sprint(first.values) {
		t.Fatalf("the drain resent %v, want %v", again.values, first.values)
	}
	again.settle(nil)
	waitFor(t, "the spool to empty", a.spool.Empty)
}

// TestDrainPipelineStopsBeforeTheDeliveryTimeout: while batches are in
// flight, the drainer adds one only while the oldest is younger than half
// the client's delivery timeout, so that none in flight can have been
// failed by the time a later one is handed over.
func TestDrainPipelineStopsBeforeTheDeliveryTimeout(t *testing.T) {
	const topic = "ingest.t"
	k := newHeldKafka(400 * time.Millisecond)
	a := newHeldAdmission(t, k, func(c *Config) { c.SpoolFirst, c.DrainBatch, c.DrainTimeout = true, 2, 10*time.Second })
	for i, r := range a.Admit(context.Background(), keyed(topic, 0, 12, 3)) {
		if r.Err != nil {
			t.Fatalf("record %d: %v", i, r.Err)
		}
	}
	var window []*heldSend
	for i := range drainWindow {
		window = append(window, k.next(t, fmt.Sprintf("batch %d of the first window", i)))
	}
	// Past half the delivery timeout the oldest in flight is written:
	// the second, older than that too, now holds the pipeline.
	time.Sleep(250 * time.Millisecond)
	window[0].settle(nil)
	k.none(t, quiet, "the oldest batch in flight is past half the delivery timeout")
	for _, s := range window[1:] {
		s.settle(nil)
	}
	for i := 0; i < 2; i++ {
		k.next(t, fmt.Sprintf("batch %d after the window settled", drainWindow+i)).settle(nil)
	}
	waitFor(t, "the spool to empty", a.spool.Empty)
}

// TestDrainWaitsForADirectPublishItReplaces: a direct publish runs out of
// time and its records are spooled; the drainer must not send the spooled
// copies while the client still holds the originals.
func TestDrainWaitsForADirectPublishItReplaces(t *testing.T) {
	const topic = "ingest.t"
	k := newHeldKafka(10 * time.Second)
	a := newHeldAdmission(t, k, nil)
	done := make(chan []Admitted, 1)
	go func() { done <- a.Admit(context.Background(), keyed(topic, 0, 3, 1)) }()
	direct := k.next(t, "the direct publish")
	for i, r := range <-done {
		if r.Err != nil || r.Durability != DurabilityLocalDisk {
			t.Fatalf("record %d: %+v, want spooled", i, r)
		}
	}
	k.none(t, quiet, "the client still holds the direct publish's records")
	direct.settle(fmt.Errorf("%w: the client gave up", publish.ErrTimeout))
	drained := k.next(t, "the drain after the client answered")
	if fmt.Sprint(drained.values) != fmt.Sprint(direct.values) {
		t.Fatalf("the drain sent %v, want %v", drained.values, direct.values)
	}
	drained.settle(nil)
	waitMode(t, a, ModeDirect)
}
