package admission

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
)

func TestAdmissionDirect(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	p := newTestProducer(t, c.ListenAddrs(), nil)
	s := openSpool(t, t.TempDir(), nil)
	defer s.Close()
	a := newTestAdmission(t, p, s, nil, nil)
	defer a.Close()
	for i, r := range a.Admit(context.Background(), keyed(topic, 0, 10, 3)) {
		if r.Err != nil || r.Durability != DurabilityKafka {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	if a.Mode() != ModeDirect || !s.Empty() {
		t.Fatalf("mode %v, spool empty %v", a.Mode(), s.Empty())
	}
}

// TestAdmissionOutage: while Kafka refuses produce requests, records are
// spooled and answered LOCAL_DISK; at the cap they are refused with
// ErrFull and a retry-after; when Kafka is back the spool drains in order,
// admission returns to DIRECT, and every spooled record is in Kafka.
func TestAdmissionOutage(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	var o outage
	o.install(c)
	p := newTestProducer(t, c.ListenAddrs(), func(c *publish.Config) { c.DeliveryTimeout = time.Second })
	s := openSpool(t, t.TempDir(), func(c *buffer.Config) { c.MaxBytes = 64 << 10; c.SegmentBytes = 16 << 10 })
	defer s.Close()
	reg := prometheus.NewRegistry()
	a := newTestAdmission(t, p, s, nil, reg)
	defer a.Close()

	o.on.Store(true)
	var accepted []*kgo.Record
	full := 0
	for batch := 0; batch < 200 && full == 0; batch++ {
		recs := keyed(topic, batch*10, 10, 4)
		for i, r := range a.Admit(context.Background(), recs) {
			switch {
			case r.Err == nil:
				if r.Durability != DurabilityLocalDisk {
					t.Fatalf("during the outage: %+v", r)
				}
				accepted = append(accepted, recs[i])
			case errors.Is(r.Err, buffer.ErrFull):
				if r.Refusal != RefusedFull || r.RetryAfter <= 0 {
					t.Fatalf("BUFFER_FULL without a retry-after: %+v", r)
				}
				full++
			default:
				t.Fatalf("record refused: %+v", r)
			}
		}
	}
	if full == 0 || len(accepted) == 0 {
		t.Fatalf("accepted %d, refused full %d: the cap was never reached", len(accepted), full)
	}
	if a.Mode() != ModeSpooling {
		t.Fatalf("mode %v during the outage", a.Mode())
	}

	o.on.Store(false)
	waitMode(t, a, ModeDirect)
	got := consumeAll(t, c.ListenAddrs(), topic, len(accepted))
	checkKeyOrder(t, got)
	in := map[string]bool{}
	for _, r := range got {
		in[string(r.Value)] = true
	}
	for _, r := range accepted {
		if !in[string(r.Value)] {
			t.Fatalf("acknowledged record %s is not in Kafka", r.Value)
		}
	}
	if n := testutil.ToFloat64(a.metrics.drained); int(n) < len(accepted) {
		t.Fatalf("drained %v, spooled %d", n, len(accepted))
	}
}

// TestAdmissionResumesAfterRestart: records spooled before a restart are
// drained by the next admission over the same spool directory.
func TestAdmissionResumesAfterRestart(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	var o outage
	o.install(c)
	dir := t.TempDir()
	p := newTestProducer(t, c.ListenAddrs(), func(c *publish.Config) { c.DeliveryTimeout = time.Second })

	o.on.Store(true)
	s := openSpool(t, dir, nil)
	a := newTestAdmission(t, p, s, func(c *Config) { c.SpoolFirst = true }, nil)
	recs := keyed(topic, 0, 50, 5)
	for i, r := range a.Admit(context.Background(), recs) {
		if r.Err != nil || r.Durability != DurabilityLocalDisk {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	a.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	o.on.Store(false)
	s = openSpool(t, dir, nil)
	defer s.Close()
	a = newTestAdmission(t, p, s, nil, nil)
	defer a.Close()
	if a.Mode() != ModeSpooling {
		t.Fatalf("a spool with records starts %v", a.Mode())
	}
	waitMode(t, a, ModeDirect)
	checkKeyOrder(t, consumeAll(t, c.ListenAddrs(), topic, len(recs)))
}

// TestAdmissionReturnsToDirectUnderLoad: eight senders keep sending after
// an outage, so the spool is rarely empty for long; admission gets back to
// DIRECT while they send (each sends at least 60 requests, and goes on
// until one of them is answered KAFKA), refuses nothing, and keeps each
// sender's key order across the switches.
//
// Each sender sends a request per tick of its own ticker, and waits for
// its answers: an arrival rate, so that the records the senders add while
// the drainer recovers from the outage (seconds, with kfake's dropped
// connections) stay a few tens of thousands.
func TestAdmissionReturnsToDirectUnderLoad(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	var o outage
	o.install(c)
	p := newTestProducer(t, c.ListenAddrs(), func(c *publish.Config) { c.DeliveryTimeout = time.Second; c.Linger = 0 })
	s := openSpool(t, t.TempDir(), nil)
	defer s.Close()
	a := newTestAdmission(t, p, s, nil, nil)
	defer a.Close()

	o.on.Store(true)
	for i, r := range a.Admit(context.Background(), keyed(topic, 0, 20, 4)) {
		if r.Err != nil || r.Durability != DurabilityLocalDisk {
			t.Fatalf("record %d during the outage: %+v", i, r)
		}
	}
	o.on.Store(false)

	var sent atomic.Int64
	var failed atomic.Value
	var sawDirect atomic.Bool
	var wg sync.WaitGroup
	deadline := time.Now().Add(testWait)
	for g := range 8 {
		wg.Go(func() {
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			// n stays under 100000, so that each sender's values keep
			// eight digits and a range of their own.
			for n := 0; n < 60 || !sawDirect.Load() && n < 99_000 && time.Now().Before(deadline); n++ {
				<-tick.C
				sent.Add(10)
				for _, r := range a.Admit(context.Background(), keyedAs(fmt.Sprintf("g%d-", g), topic, (g+1)*1_000_000+n*10, 10, 4)) {
					if r.Err != nil {
						failed.Store(r.Err)
					}
					if r.Durability == DurabilityKafka {
						sawDirect.Store(true)
					}
				}
			}
		})
	}
	wg.Wait()
	if !sawDirect.Load() {
		t.Fatalf("no record was answered KAFKA while the senders sent (mode %v)", a.Mode())
	}
	waitMode(t, a, ModeDirect)
	if err := failed.Load(); err != nil {
		t.Fatalf("a record was refused: %v", err)
	}
	checkKeyOrder(t, consumeAll(t, c.ListenAddrs(), topic, 20+int(sent.Load())))
}

// TestDirectAgainWhileRecordsArrive: after an outage, with senders
// sending all along, admission drains the spool and returns to DIRECT
// before they stop, and from then on their records are answered KAFKA and
// the spool stays empty. A LatencyThreshold far above any produce's keeps
// a busy machine's slow produce from sending records back to the spool.
func TestDirectAgainWhileRecordsArrive(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	var o outage
	o.install(c)
	defer o.on.Store(false) // before the producer's cleanup flushes
	p := newTestProducer(t, c.ListenAddrs(), func(c *publish.Config) { c.DeliveryTimeout = time.Second; c.Linger = 0 })

	// Records spooled during the outage, by an earlier run: admission
	// starts over them in SPOOLING, without waiting out a produce.
	o.on.Store(true)
	dir := t.TempDir()
	s := openSpool(t, dir, nil)
	earlier := newTestAdmission(t, p, s, func(c *Config) { c.SpoolFirst = true }, nil)
	for i, r := range earlier.Admit(context.Background(), keyed(topic, 0, 20, 4)) {
		if r.Err != nil || r.Durability != DurabilityLocalDisk {
			t.Fatalf("record %d during the outage: %+v", i, r)
		}
	}
	earlier.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openSpool(t, dir, nil)
	defer s.Close()
	a := newTestAdmission(t, p, s, func(c *Config) { c.LatencyThreshold = 5 * time.Second }, nil)
	defer a.Close()
	if a.Mode() != ModeSpooling {
		t.Fatalf("a spool with records starts %v", a.Mode())
	}

	// Each sender sends a request per tick and waits for its answers. A
	// request sent after direct was set must be answered KAFKA.
	const senders = 4
	var (
		direct   atomic.Bool
		requests [senders]atomic.Int64 // answered, per sender
		mu       sync.Mutex
		spooled  int // records answered LOCAL_DISK after direct was set
		refused  error
		sent     atomic.Int64
		stop     = make(chan struct{})
		stopOnce sync.Once
		wg       sync.WaitGroup
	)
	// The senders stop before admission and the spool close, also when
	// the test fails part way.
	stopSenders := func() {
		stopOnce.Do(func() { close(stop) })
		wg.Wait()
	}
	defer stopSenders()
	for g := range senders {
		wg.Go(func() {
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for n := 0; n < 99_000; n++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				after := direct.Load()
				sent.Add(10)
				for _, r := range a.Admit(context.Background(), keyedAs(fmt.Sprintf("g%d-", g), topic, (g+1)*1_000_000+n*10, 10, 4)) {
					mu.Lock()
					switch {
					case r.Err != nil:
						refused = r.Err
					case after && r.Durability != DurabilityKafka:
						spooled++
					}
					mu.Unlock()
				}
				requests[g].Add(1)
			}
		})
	}
	// The senders are spooling behind the outage's records; then Kafka
	// comes back under them.
	waitFor(t, "an answer for every sender", func() bool {
		for g := range requests {
			if requests[g].Load() == 0 {
				return false
			}
		}
		return true
	})
	o.on.Store(false)
	waitFor(t, "DIRECT, with the spool drained, while the senders send", func() bool {
		return a.Mode() == ModeDirect && s.Empty()
	})
	direct.Store(true)
	var base [senders]int64
	for g := range requests {
		base[g] = requests[g].Load()
	}
	waitFor(t, "ten more requests from every sender", func() bool {
		for g := range requests {
			if requests[g].Load() < base[g]+10 {
				return false
			}
		}
		return true
	})
	stopSenders()

	if refused != nil {
		t.Fatalf("a record was refused: %v", refused)
	}
	if spooled > 0 {
		t.Fatalf("%d records sent after the return to DIRECT were answered LOCAL_DISK (mode %v)", spooled, a.Mode())
	}
	if a.Mode() != ModeDirect || !s.Empty() {
		t.Fatalf("after the senders stopped: mode %v, spool %+v", a.Mode(), s.Stats())
	}
	checkKeyOrder(t, consumeAll(t, c.ListenAddrs(), topic, 20+int(sent.Load())))
}

// TestDrainWindowFailures: the drainer keeps several small batches in
// flight while the broker fails now and then. A failure part way through
// the window rewinds to the last acknowledged record; every spooled record
// reaches Kafka, and the first copy of each keeps its key's order.
func TestDrainWindowFailures(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	var o outage
	o.install(c)
	p := newTestProducer(t, c.ListenAddrs(), func(c *publish.Config) { c.DeliveryTimeout = time.Second })
	s := openSpool(t, t.TempDir(), nil)
	defer s.Close()
	a := newTestAdmission(t, p, s, func(c *Config) {
		c.SpoolFirst = true
		c.DrainBatch = 20
		c.DrainTimeout = 200 * time.Millisecond
	}, nil)
	defer a.Close()

	o.on.Store(true)
	var recs []*kgo.Record
	for batch := range 40 {
		b := keyed(topic, batch*50, 50, 7)
		for i, r := range a.Admit(context.Background(), b) {
			if r.Err != nil {
				t.Fatalf("record %d: %+v", batch*50+i, r)
			}
		}
		recs = append(recs, b...)
	}
	// Let the drainer through one produce request at a time, so that some
	// windows end part way: the outage holds after each until a drain step
	// failed, or while the drainer waits for the client to answer records
	// it gave up on (which takes more requests let through), until four
	// steps failed. Then for good.
	drainErrors := func() float64 { return testutil.ToFloat64(a.metrics.drainErrors) }
	for round := 0; drainErrors() < 4; round++ {
		if round == 1000 {
			t.Fatalf("%d requests let through one at a time, and %v drain steps failed", round, drainErrors())
		}
		passed := o.passed.Load()
		o.allow.Store(1)
		waitFor(t, "a produce request let through", func() bool { return o.passed.Load() > passed })
		failed := drainErrors()
		waitFor(t, "a drain step that fails after it, or a drain waiting for the client", func() bool {
			return drainErrors() > failed || a.drainer.unsettled.any()
		})
	}
	o.on.Store(false)
	got := consumeAll(t, c.ListenAddrs(), topic, len(recs))
	checkKeyOrder(t, got)
	if n := testutil.ToFloat64(a.metrics.drainErrors); n == 0 {
		t.Fatal("no drain failed: the outages missed the drainer")
	}
}

// TestAdmissionKeyOrderUnderSwitches hammers the switches between DIRECT
// and SPOOLING: the broker drops produce requests on and off, the client
// buffer is small enough to refuse part of a request, and the in-flight
// budget is small enough to spool whole ones, while eight senders send
// records over keys of their own, each waiting for its answers. Every
// record is accepted, reaches Kafka, and the first copies of each key's
// records are in the order they were admitted. Run it with -race.
func TestAdmissionKeyOrderUnderSwitches(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	var o outage
	o.install(c)
	reg := prometheus.NewRegistry()
	p := newTestProducer(t, c.ListenAddrs(), func(c *publish.Config) {
		c.DeliveryTimeout, c.Linger, c.MaxBufferedRecords = time.Second, 0, 48
	})
	s := openSpool(t, t.TempDir(), nil)
	defer s.Close()
	a := newTestAdmission(t, p, s, func(c *Config) {
		c.LatencyThreshold, c.InFlightBudget, c.DrainBatch = 200*time.Millisecond, 40, 16
	}, reg)
	defer a.Close()

	stop := make(chan struct{})
	faults := make(chan struct{})
	go func() {
		defer close(faults)
		for on := true; ; on = !on {
			o.on.Store(on)
			select {
			case <-stop:
				o.on.Store(false)
				return
			case <-time.After(time.Duration(10+rand.IntN(40)) * time.Millisecond):
			}
		}
	}()
	var (
		mu       sync.Mutex
		accepted []string
		wg       sync.WaitGroup
	)
	for g := range 8 {
		wg.Go(func() {
			for n := range 30 {
				recs := keyedAs(fmt.Sprintf("g%d-", g), topic, (g+1)*1_000_000+n*10, 10, 8)
				for i, r := range a.Admit(context.Background(), recs) {
					if r.Err != nil {
						t.Errorf("sender %d: record %s refused: %v", g, recs[i].Value, r.Err)
						continue
					}
					mu.Lock()
					accepted = append(accepted, string(recs[i].Value))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-faults
	waitMode(t, a, ModeDirect)
	checkKeyOrder(t, consumeAll(t, c.ListenAddrs(), topic, len(accepted)))
	switches := testutil.CollectAndCount(a.metrics.switches)
	t.Logf("%d records, %d mode switch series, %v spooled", len(accepted), switches, testutil.ToFloat64(a.metrics.spooled))
	if testutil.ToFloat64(a.metrics.spooled) == 0 {
		t.Error("nothing was spooled: the faults missed admission")
	}
}

// TestSpoolTakesALargeRequest: a request whose records add up to more
// than one spool append can carry is spooled in several appends, in order;
// a record too large for the spool on its own is refused permanently, and
// the records around it are spooled.
func TestSpoolTakesALargeRequest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tooLarge int // index of a record over the spool's MaxRecordBytes; -1: none
	}{
		{"over one append", -1},
		{"one record over the record limit", 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const topic = "ingest.t"
			c := newCluster(t, []string{topic})
			p := newTestProducer(t, c.ListenAddrs(), nil)
			s := openSpool(t, t.TempDir(), func(c *buffer.Config) { c.MaxRecordBytes = 300 << 10 })
			defer s.Close()
			a := newTestAdmission(t, p, s, func(c *Config) { c.SpoolFirst = true }, nil)
			defer a.Close()

			recs := keyed(topic, 0, 18, 3)
			for i, r := range recs {
				// 18 x 250 KiB: over the 4 MiB one append carries.
				r.Value = append(r.Value, make([]byte, 250<<10)...)
				if i == tc.tooLarge {
					r.Value = append(r.Value, make([]byte, 100<<10)...)
				}
			}
			var want []*kgo.Record
			for i, r := range a.Admit(context.Background(), recs) {
				if i == tc.tooLarge {
					if !errors.Is(r.Err, buffer.ErrTooLarge) || r.Refusal != RefusedTooLargeForSpool {
						t.Errorf("record %d, over the spool's record limit: %+v, want ErrTooLarge, refused as too large for the spool", i, r)
					}
					continue
				}
				if r.Err != nil || r.Durability != DurabilityLocalDisk {
					t.Fatalf("record %d: %+v", i, r)
				}
				want = append(want, recs[i])
			}
			got := consumeAll(t, c.ListenAddrs(), topic, len(want))
			checkKeyOrder(t, got)
			for _, r := range got {
				if tc.tooLarge >= 0 && strings.HasPrefix(string(r.Value), fmt.Sprintf("%08d", tc.tooLarge)) {
					t.Fatal("the refused record reached Kafka")
				}
			}
		})
	}
}

// TestAdmissionPositions: an answer says where its record is. DIRECT:
// the partition and offset at which a reader of the topic finds the
// record. SPOOLING, entered by a failed produce and then kept: the spool
// position at which the spool holds it, across appends and segments.
func TestAdmissionPositions(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	var o outage
	o.install(c)
	p := newTestProducer(t, c.ListenAddrs(), func(c *publish.Config) { c.DeliveryTimeout = time.Second })
	dir := t.TempDir()
	small := func(c *buffer.Config) { c.MaxRecordBytes, c.MaxBatchBytes, c.SegmentBytes = 1024, 2048, 4096 }
	s := openSpool(t, dir, small)
	a := newTestAdmission(t, p, s, nil, nil)

	recs := keyed(topic, 0, 12, 4)
	for i, r := range a.Admit(context.Background(), recs) {
		if r.Err != nil || r.Durability != DurabilityKafka {
			t.Fatalf("record %d: %+v", i, r)
		}
		got := kafkatest.RecordAt(t, c.ListenAddrs(), topic, r.Partition, r.Offset)
		if string(got.Value) != string(recs[i].Value) {
			t.Fatalf("record %d answered %d@%d, where Kafka has %s", i, r.Partition, r.Offset, got.Value)
		}
	}

	o.on.Store(true)
	spooled := map[buffer.Position]string{}
	for batch := range 2 { // the first falls back to the spool; the second goes there at once
		recs := keyed(topic, 100*(batch+1), 30, 4)
		for i, r := range a.Admit(context.Background(), recs) {
			if r.Err != nil || r.Durability != DurabilityLocalDisk {
				t.Fatalf("batch %d record %d: %+v", batch, i, r)
			}
			if _, dup := spooled[r.Spool]; dup {
				t.Fatalf("two records answered at %v", r.Spool)
			}
			spooled[r.Spool] = string(recs[i].Value)
		}
	}
	a.Close()
	o.on.Store(false) // the producer flushes what it holds at its close
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openSpool(t, dir, small)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	segments := map[uint64]bool{}
	for n := 0; n < len(spooled); {
		es, err := s.Next(ctx, len(spooled)-n)
		if err != nil {
			t.Fatalf("Next after %d of %d records: %v", n, len(spooled), err)
		}
		for _, e := range es {
			r, err := record.DecodeSpooled(e.Data)
			if err != nil {
				t.Fatal(err)
			}
			if want, ok := spooled[e.Pos]; !ok || want != string(r.Value) {
				t.Fatalf("the spool holds %s at %v, answered there: %q", r.Value, e.Pos, want)
			}
			segments[e.Pos.Segment] = true
		}
		n += len(es)
	}
	if len(segments) < 2 {
		t.Fatalf("the spooled records are in %d segment(s); the test needs more", len(segments))
	}
}
