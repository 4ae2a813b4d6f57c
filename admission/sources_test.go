package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
)

// fromSource builds n records of source over its own keys (k0..k(keys-1),
// prefixed with the source), numbered in their value after the source's
// name, so that order per key can be checked and sources told apart.
func fromSource(source, topic string, from, n, keys int) []*kgo.Record {
	out := make([]*kgo.Record, n)
	for i := range out {
		seq := from + i
		out[i] = record.NewEvent(&record.Event{Topic: topic, Key: []byte(fmt.Sprintf("%s-k%d", source, seq%keys)),
			Value: []byte(fmt.Sprintf("%s-%08d-%0200d", source, seq, 0)),
			ID:    fmt.Sprintf("%s-%d", source, seq), Type: "t", Source: source, OccurredAt: time.Unix(1, 0), IngestedAt: time.Unix(1, 0), Fingerprint: "f"})
	}
	return out
}

// sharedSpoolConfig is a spool of 64 KiB in 16 KiB segments: with two
// sources of weight 1 and half reserved, each is guaranteed 12 KiB and
// 24 KiB are shared.
func sharedSpoolConfig(c *buffer.Config) { c.MaxBytes = 64 << 10; c.SegmentBytes = 16 << 10 }

func newSharedAdmission(t *testing.T, p *publish.Producer, s *buffer.Spool, edit func(*Config), reg prometheus.Registerer) *Admission {
	t.Helper()
	cfg := NewDefaultConfig()
	cfg.LatencyThreshold = 300 * time.Millisecond
	cfg.DrainTimeout = time.Second
	cfg.DrainBackoffMax = 200 * time.Millisecond
	if edit != nil {
		edit(&cfg)
	}
	a, err := New(cfg, p, s, WithLogger(discardLogger()), WithRegisterer(reg),
		WithSourceShares(map[string]float64{"a": 1, "b": 1}, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// spoolBytesOf is sluice_source_spool_bytes{source} in reg, or -1 when
// there is no such series.
func spoolBytesOf(t *testing.T, reg *prometheus.Registry, source string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sluice_source_spool_bytes" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if l := m.GetLabel(); len(l) == 1 && l[0].GetValue() == source {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// fillShare sends source's records in batches of ten while Kafka is down
// until one is refused for the source's share, checking that every other
// answer is LOCAL_DISK; it returns the records accepted and the refusal.
func fillShare(t *testing.T, a *Admission, source, topic string, from int) ([]*kgo.Record, Admitted) {
	t.Helper()
	var accepted []*kgo.Record
	for batch := range 200 {
		recs := fromSource(source, topic, from+batch*10, 10, 4)
		for i, r := range a.Admit(context.Background(), recs) {
			if r.Err == nil && r.Durability == DurabilityLocalDisk {
				accepted = append(accepted, recs[i])
				continue
			}
			if r.Err == nil {
				t.Fatalf("%s during the outage: %+v", source, r)
			}
			return accepted, r
		}
	}
	t.Fatalf("%s: 2000 records and no refusal", source)
	return nil, Admitted{}
}

// checkShareRefusal: a refusal for source's share is RefusedFull with a
// retry-after and a *SourceFullError naming the source.
func checkShareRefusal(t *testing.T, r Admitted, source string) {
	t.Helper()
	var sf *SourceFullError
	if r.Refusal != RefusedFull || r.RetryAfter <= 0 || !errors.As(r.Err, &sf) || sf.Source != source || !errors.Is(r.Err, buffer.ErrFull) {
		t.Fatalf("%s's refusal: %+v, want RefusedFull for its share with a retry-after", source, r)
	}
}

// TestSourceShareDuringOutage: while Kafka is down, source a's backlog
// fills a's share of the spool (its guarantee and the shared remainder)
// and a is refused for it, BUFFER_FULL with a retry-after; b's records
// are still spooled and answered LOCAL_DISK up to b's guarantee, and a
// stays refused meanwhile. Once Kafka is back every accepted record
// reaches Kafka in per-key order, the shares are given back (the metric
// says 0) and a is spooled again in the next outage.
func TestSourceShareDuringOutage(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	var o outage
	o.install(c)
	defer o.on.Store(false) // before the producer closes
	p := newTestProducer(t, c.ListenAddrs(), func(c *publish.Config) { c.DeliveryTimeout = time.Second })
	s := openSpool(t, t.TempDir(), sharedSpoolConfig)
	defer s.Close()
	reg := prometheus.NewRegistry()
	a := newSharedAdmission(t, p, s, nil, reg)
	defer a.Close()

	o.on.Store(true)
	acceptedA, refusal := fillShare(t, a, "a", topic, 0)
	checkShareRefusal(t, refusal, "a")
	heldA := spoolBytesOf(t, reg, "a")
	// a holds its 12 KiB guarantee and most of the 24 KiB remainder.
	if heldA < 30<<10 || heldA > 36<<10 {
		t.Fatalf("a holds %v bytes of the spool, want its guarantee and the remainder, 36 KiB less a record", heldA)
	}

	// b: 20 records of 440 bytes framed, within its 12 KiB, each five
	// after a request of a's that is refused.
	var acceptedB []*kgo.Record
	for i := range 4 {
		for _, r := range a.Admit(context.Background(), fromSource("a", topic, 10000+i*10, 10, 4)) {
			checkShareRefusal(t, r, "a")
		}
		recs := fromSource("b", topic, i*5, 5, 4)
		for j, r := range a.Admit(context.Background(), recs) {
			if r.Err != nil || r.Durability != DurabilityLocalDisk {
				t.Fatalf("b's record %d beside a full a: %+v", i*5+j, r)
			}
			acceptedB = append(acceptedB, recs[j])
		}
	}
	if got := spoolBytesOf(t, reg, "b"); got <= 0 || got > 12<<10 {
		t.Fatalf("b holds %v bytes of the spool", got)
	}
	if got := spoolBytesOf(t, reg, ""); got != -1 {
		t.Fatalf("a series for an unconfigured source: %v", got)
	}

	o.on.Store(false)
	waitMode(t, a, ModeDirect)
	accepted := append(acceptedA, acceptedB...)
	got := consumeAll(t, c.ListenAddrs(), topic, len(accepted))
	checkKeyOrder(t, got)
	in := map[string]bool{}
	for _, r := range got {
		in[string(r.Value)] = true
	}
	for _, r := range accepted {
		if !in[string(r.Value)] {
			t.Fatalf("acknowledged record %.12s is not in Kafka", r.Value)
		}
	}
	for _, src := range []string{"a", "b"} {
		if got := spoolBytesOf(t, reg, src); got != 0 {
			t.Fatalf("%s holds %v bytes of a drained spool", src, got)
		}
	}

	o.on.Store(true)
	recs := fromSource("a", topic, 20000, 10, 4)
	for i, r := range a.Admit(context.Background(), recs) {
		if r.Err != nil || r.Durability != DurabilityLocalDisk {
			t.Fatalf("a's record %d in the next outage: %+v", i, r)
		}
	}
}

// TestSourceShareChargedAtStart: what a spooled before a restart is
// charged to a by the next admission over the spool, so a is refused for
// its share at once, and b is still spooled.
func TestSourceShareChargedAtStart(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	var o outage
	o.install(c)
	defer o.on.Store(false) // before the producer closes
	p := newTestProducer(t, c.ListenAddrs(), func(c *publish.Config) { c.DeliveryTimeout = time.Second })
	dir := t.TempDir()
	spoolFirst := func(c *Config) { c.SpoolFirst = true }

	o.on.Store(true)
	s := openSpool(t, dir, sharedSpoolConfig)
	reg := prometheus.NewRegistry()
	a := newSharedAdmission(t, p, s, spoolFirst, reg)
	_, refusal := fillShare(t, a, "a", topic, 0)
	checkShareRefusal(t, refusal, "a")
	before := spoolBytesOf(t, reg, "a")
	a.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openSpool(t, dir, sharedSpoolConfig)
	defer s.Close()
	reg = prometheus.NewRegistry()
	a = newSharedAdmission(t, p, s, spoolFirst, reg)
	defer a.Close()
	if got := spoolBytesOf(t, reg, "a"); got != before {
		t.Fatalf("after the restart a holds %v bytes of the spool, before it %v", got, before)
	}
	for _, r := range a.Admit(context.Background(), fromSource("a", topic, 10000, 10, 4)) {
		checkShareRefusal(t, r, "a")
	}
	for i, r := range a.Admit(context.Background(), fromSource("b", topic, 0, 10, 4)) {
		if r.Err != nil || r.Durability != DurabilityLocalDisk {
			t.Fatalf("b's record %d after the restart: %+v", i, r)
		}
	}
}

// TestSourceShareGivenBackOnce: records published again after a rewind
// (here the cursor write fails, so the drainer goes back to the first
// record it could not acknowledge) are given back to their source once:
// the records still in the spool stay charged.
func TestSourceShareGivenBackOnce(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	k := newScriptedKafka(newTestProducer(t, c.ListenAddrs(), nil))
	defer k.release()
	dir := t.TempDir()
	s := openSpool(t, dir, nil)
	defer s.Close()
	cfg := NewDefaultConfig()
	cfg.SpoolFirst = true
	cfg.DrainBatch = 2
	cfg.DrainTimeout = time.Second
	cfg.DrainBackoffMax = 200 * time.Millisecond
	a, err := newAdmission(cfg, k, s, WithLogger(discardLogger()), WithSourceShares(map[string]float64{"a": 1}, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	fix := breakCursor(t, dir)
	recs := fromSource("a", topic, 0, 6, 1)
	for i, r := range a.Admit(context.Background(), recs) {
		if r.Err != nil {
			t.Fatalf("r%d: %+v", i, r)
		}
	}
	held := a.shares.tenant("a")
	each := held.Used() / 6
	// r0 and r1 reach Kafka; r2 and r3 fail until r0 and r1 were
	// published twice. Each drain call waits for the one before it, so
	// when the drainer sends r2 again it has given back what it will for
	// r0 and r1.
	first := string(recs[0].Value)
	published := 0
	for published < 2 {
		var call scriptedCall
		select {
		case call = <-k.calls:
		case <-waitCtx(t).Done():
			t.Fatal("no drain call")
		}
		if call.values[0] == first {
			published++
			call.fail <- make([]bool, len(call.values))
			continue
		}
		call.fail <- []bool{true, true}
	}
	var call scriptedCall
	select {
	case call = <-k.calls:
	case <-waitCtx(t).Done():
		t.Fatal("no drain call after r0 and r1")
	}
	got := held.Used()
	fix()
	k.release()
	call.fail <- make([]bool, len(call.values)) // before any Fatal: Close waits for this call
	if got != 4*each {
		t.Fatalf("after r0 and r1 were published twice a holds %d, want the 4 records left, %d", got, 4*each)
	}
	waitFor(t, "the spool drained and given back", func() bool { return s.Empty() && held.Used() == 0 })
}

// TestSourceShareUnconfigured: a source with no share of its own borrows
// from the remainder only: refused once it is lent out, naming the
// source, while the configured sources still get their guarantees; it
// has no series of sluice_source_spool_bytes.
func TestSourceShareUnconfigured(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	var o outage
	o.install(c)
	defer o.on.Store(false) // before the producer closes
	p := newTestProducer(t, c.ListenAddrs(), func(c *publish.Config) { c.DeliveryTimeout = time.Second })
	s := openSpool(t, t.TempDir(), sharedSpoolConfig)
	defer s.Close()
	reg := prometheus.NewRegistry()
	a := newSharedAdmission(t, p, s, func(c *Config) { c.SpoolFirst = true }, reg)
	defer a.Close()

	o.on.Store(true)
	accepted, refusal := fillShare(t, a, "x", topic, 0)
	var sf *SourceFullError
	if !errors.As(refusal.Err, &sf) || sf.Source != "x" || sf.Guaranteed || refusal.RetryAfter <= 0 {
		t.Fatalf("x's refusal: %+v", refusal)
	}
	if held := a.shares.other.Used(); held > 24<<10 || len(accepted) == 0 {
		t.Fatalf("x holds %d bytes in %d records, want at most the 24 KiB remainder", held, len(accepted))
	}
	for _, src := range []string{"a", "b"} {
		for batch := range 2 {
			for i, r := range a.Admit(context.Background(), fromSource(src, topic, batch*10, 10, 4)) {
				if r.Err != nil {
					t.Fatalf("%s's record %d beside a full x: %+v", src, batch*10+i, r)
				}
			}
		}
	}
	if got := spoolBytesOf(t, reg, "x"); got != -1 {
		t.Fatalf("a series for the unconfigured x: %v", got)
	}
}

// TestSourceShareTooSmallIsLogged: a source whose share cannot hold the
// spool's largest record is named in a warning at start; one whose share
// can is not.
func TestSourceShareTooSmallIsLogged(t *testing.T) {
	for _, tc := range []struct {
		maxRecord int
		warned    bool
	}{{4 << 10, false}, {40 << 10, true}} {
		s := openSpool(t, t.TempDir(), func(c *buffer.Config) {
			sharedSpoolConfig(c)
			c.MaxRecordBytes, c.MaxBatchBytes = tc.maxRecord, tc.maxRecord
		})
		seen := make(chan struct{}, 1)
		log := slog.New(&matchHandler{match: "share of the spool is smaller", seen: seen})
		// Each of a and b may hold its 12 KiB and the 24 KiB remainder.
		a, err := newAdmission(NewDefaultConfig(), newScriptedKafka(nil), s, WithLogger(log),
			WithSourceShares(map[string]float64{"a": 1, "b": 1}, 0.5))
		if err != nil {
			t.Fatal(err)
		}
		a.Close()
		s.Close()
		if warned := len(seen) > 0; warned != tc.warned {
			t.Errorf("max_record_bytes %d: warned %v, want %v", tc.maxRecord, warned, tc.warned)
		}
	}
}

// windowKafka hands every Send to the test and answers it when the test
// says, while the drainer keeps several batches in flight (HandedOver);
// once released it answers every later Send at once, as published.
type windowKafka struct {
	calls    chan windowCall
	released atomic.Bool
}

type windowCall struct {
	n       int
	verdict chan []error
	settled chan struct{} // closed by answer
}

// answer gives the call its verdict: the client has answered its records.
func (c windowCall) answer(errs []error) {
	c.verdict <- errs
	close(c.settled)
}

func (c windowCall) Settled() <-chan struct{} { return c.settled }

func (k *windowKafka) DeliveryTimeout() time.Duration { return 10 * time.Second }

func (k *windowKafka) Publish(ctx context.Context, records []*kgo.Record) []error {
	return k.Send(ctx, records).Wait(ctx)
}

func (k *windowKafka) Send(_ context.Context, records []*kgo.Record) sending {
	c := windowCall{n: len(records), verdict: make(chan []error, 1), settled: make(chan struct{})}
	if k.released.Load() {
		c.answer(make([]error, len(records)))
	} else {
		k.calls <- c
	}
	return c
}

func (c windowCall) HandedOver() bool { return true }

func (c windowCall) Wait(ctx context.Context) []error {
	select {
	case errs := <-c.verdict:
		return errs
	case <-ctx.Done():
		errs := make([]error, c.n)
		for i := range errs {
			errs[i] = ctx.Err()
		}
		return errs
	}
}

// TestSourceShareGivenBackInOrder: the first of three batches in flight
// fails and the two after it are published; the drainer rewinds and
// publishes all again. Every record is given back once, the first two
// too, though the later ones were published before them.
func TestSourceShareGivenBackInOrder(t *testing.T) {
	s := openSpool(t, t.TempDir(), nil)
	defer s.Close()
	cfg := NewDefaultConfig()
	cfg.SpoolFirst = true
	cfg.DrainBatch = 2
	cfg.DrainTimeout = time.Second
	cfg.DrainBackoffMax = 200 * time.Millisecond
	k := &windowKafka{calls: make(chan windowCall, 16)}
	a, err := newAdmission(cfg, k, s, WithLogger(discardLogger()), WithSourceShares(map[string]float64{"a": 1}, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer k.released.Store(true)
	for i, r := range a.Admit(context.Background(), fromSource("a", "ingest.t", 0, 6, 1)) {
		if r.Err != nil {
			t.Fatalf("r%d: %+v", i, r)
		}
	}
	var calls []windowCall
	for len(calls) < 3 {
		select {
		case c := <-k.calls:
			calls = append(calls, c)
		case <-waitCtx(t).Done():
			t.Fatalf("%d batches in flight, want 3", len(calls))
		}
	}
	k.released.Store(true)
	failed := &publish.ProduceError{Topic: "ingest.t", Err: kerr.NotEnoughReplicas}
	calls[0].answer([]error{failed, failed})
	calls[1].answer(make([]error, calls[1].n))
	calls[2].answer(make([]error, calls[2].n))
	waitFor(t, "the spool drained", func() bool {
		for {
			select {
			case c := <-k.calls: // sent before the release was seen
				c.answer(make([]error, c.n))
			default:
				return s.Empty()
			}
		}
	})
	if got := a.shares.tenant("a").Used(); got != 0 {
		t.Fatalf("a holds %d bytes of a drained spool", got)
	}
}

// TestSourceShareStartsOverDamage: a spooled record damaged after the
// spool was opened stops the charging at start, not the start: the
// records before it are charged to their source.
func TestSourceShareStartsOverDamage(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, nil)
	defer s.Close()
	var data [][]byte
	for _, r := range fromSource("a", "ingest.t", 0, 3, 1) {
		data = append(data, record.AppendSpooled(nil, r))
	}
	pos, err := s.Append(context.Background(), data...)
	if err != nil {
		t.Fatal(err)
	}
	// The third record's payload, past its frame header, gets a flipped
	// byte.
	third := pos.Offset + buffer.FrameBytes(len(data[0])) + buffer.FrameBytes(len(data[1]))
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%020d.seg", pos.Segment)), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	at := third + buffer.FrameBytes(0) + 10
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
	f.Close()

	k := &windowKafka{calls: make(chan windowCall, 16)}
	k.released.Store(true)
	a, err := newAdmission(NewDefaultConfig(), k, s, WithLogger(discardLogger()), WithSourceShares(map[string]float64{"a": 1}, 0.5))
	if err != nil {
		t.Fatalf("New over a damaged record: %v", err)
	}
	defer a.Close()
	want := buffer.FrameBytes(len(data[0])) + buffer.FrameBytes(len(data[1]))
	if got := a.shares.tenant("a").Used(); got != want {
		t.Fatalf("a holds %d, want the two records before the damage, %d", got, want)
	}
}
