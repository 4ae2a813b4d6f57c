package publish

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/sluicehq/sluice/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestMurmur2MatchesJavaClient(t *testing.T) {
	// Vectors from Kafka's UtilsTest.testMurmur2.
	for in, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		if got := murmur2([]byte(in)); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestPublishConsume(t *testing.T) {
	const topic = "ingest.order.created"
	c := newCluster(t, []string{topic})
	testPublishConsume(t, c.ListenAddrs(), topic, 3, nil)
}

// testPublishConsume publishes events to topic (with the given number of
// partitions), consumes them and checks every field that reached Kafka. It
// runs against kfake and, in TestIntegrationKafkaPublishConsume, against a
// real broker. edit adjusts the producer's config (nil: the tests').
func testPublishConsume(t *testing.T, brokers []string, topic string, partitions int, edit func(*Config)) {
	reg := prometheus.NewRegistry()
	p := newTestProducer(t, brokers, edit, WithRegisterer(reg))

	base := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	var events []*record.Event
	for i := range 30 {
		e := &record.Event{
			Topic:       topic,
			Key:         fmt.Appendf(nil, "customer-%d", i%5),
			Value:       fmt.Appendf(nil, "payload-%d", i),
			ID:          fmt.Sprintf("evt-%02d", i),
			Type:        "order.created",
			Source:      "shop",
			OccurredAt:  base.Add(time.Duration(i) * time.Second),
			IngestedAt:  base.Add(time.Minute + time.Duration(i)*time.Nanosecond),
			Fingerprint: "sha256:abc",
		}
		switch i % 3 {
		case 0:
			e.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
			e.Attributes = map[string]string{"region": "eu", "channel": "web"}
		case 1:
			e.Key = nil // keyed by event id
		}
		events = append(events, e)
	}
	records := make([]*kgo.Record, len(events))
	for i, e := range events {
		records[i] = record.NewEvent(e)
	}

	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	for i, err := range p.Publish(ctx, records) {
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}

	byID := make(map[string]*record.Event)
	for _, e := range events {
		byID[e.ID] = e
	}
	partitionOfKey := make(map[string]int32)
	for _, r := range consume(t, brokers, topic, len(events)) {
		h, err := record.ParseEvent(r)
		if err != nil {
			t.Fatalf("offset %d: %v", r.Offset, err)
		}
		e := byID[h.ID]
		if e == nil {
			t.Fatalf("unexpected event id %q", h.ID)
		}
		delete(byID, h.ID)

		wantKey := e.Key
		if len(wantKey) == 0 {
			wantKey = []byte(e.ID)
		}
		if !bytes.Equal(r.Key, wantKey) || !bytes.Equal(r.Value, e.Value) {
			t.Errorf("%s: key %q value %q, want %q %q", e.ID, r.Key, r.Value, wantKey, e.Value)
		}
		if want := record.NewEvent(e).Headers; !reflect.DeepEqual(r.Headers, want) {
			t.Errorf("%s: headers\n got %q\nwant %q", e.ID, r.Headers, want)
		}
		want := record.EventHeaders{
			ID: e.ID, Type: e.Type, Source: e.Source,
			OccurredAt: e.OccurredAt, IngestedAt: e.IngestedAt,
			Fingerprint: e.Fingerprint, Traceparent: e.Traceparent, Attributes: e.Attributes,
		}
		if !reflect.DeepEqual(h, want) {
			t.Errorf("%s: parsed headers\n got %+v\nwant %+v", e.ID, h, want)
		}
		// Per-key partition stability, the Java client's way.
		if want := javaPartition(wantKey, partitions); r.Partition != want {
			t.Errorf("%s: key %q in partition %d, the Java client would pick %d", e.ID, wantKey, r.Partition, want)
		}
		if prev, ok := partitionOfKey[string(wantKey)]; ok && prev != r.Partition {
			t.Errorf("key %q in partitions %d and %d", wantKey, prev, r.Partition)
		}
		partitionOfKey[string(wantKey)] = r.Partition
	}
	if len(byID) != 0 {
		t.Errorf("events not consumed: %v", byID)
	}

	if got := counterValue(t, reg, "sluice_produce_records_total", "result", "acked"); got != float64(len(events)) {
		t.Errorf("acked records counted %v, want %d", got, len(events))
	}
	if got := histogramCount(t, reg, "sluice_produce_latency_seconds"); got != uint64(len(events)) {
		t.Errorf("latency observations %d, want %d", got, len(events))
	}
}

func TestPublishConcurrent(t *testing.T) {
	const (
		topic      = "ingest.concurrent"
		goroutines = 16
		calls      = 20
		perCall    = 10
	)
	c := newCluster(t, []string{topic})
	p := newTestProducer(t, c.ListenAddrs(), nil)

	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for g := range goroutines {
		wg.Go(func() {
			key := fmt.Appendf(nil, "key-%d", g)
			seq := 0
			for range calls {
				records := make([]*kgo.Record, perCall)
				for i := range records {
					records[i] = record.NewEvent(&record.Event{Topic: topic, Key: key, Value: fmt.Appendf(nil, "%d", seq), ID: fmt.Sprintf("%d-%d", g, seq), Type: "t"})
					seq++
				}
				for i, err := range p.Publish(ctx, records) {
					if err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("goroutine %d record %d: %w", g, i, err))
						mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	// Every key's records arrive in the order each goroutine published them.
	next := make(map[string]int)
	for _, r := range consume(t, c.ListenAddrs(), topic, goroutines*calls*perCall) {
		want := fmt.Sprint(next[string(r.Key)])
		if string(r.Value) != want {
			t.Fatalf("key %s: got record %s, want %s", r.Key, r.Value, want)
		}
		next[string(r.Key)]++
	}
}

// TestPublishUnreachable checks that Publish answers every record with a
// retryable timeout when no broker answers, and returns once ctx ends.
func TestPublishUnreachable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		brokers func(t *testing.T) []string
	}{
		{"closed port", func(t *testing.T) []string { return []string{closedPort(t)} }},
		{"cluster gone", func(t *testing.T) []string {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "ingest.t"))
			if err != nil {
				t.Fatal(err)
			}
			addrs := c.ListenAddrs()
			c.Close()
			return addrs
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestProducer(t, tc.brokers(t), func(c *Config) { c.DialTimeout = 100 * time.Millisecond })
			records := []*kgo.Record{
				record.NewEvent(&record.Event{Topic: "ingest.t", ID: "1", Type: "t"}),
				record.NewEvent(&record.Event{Topic: "ingest.t", ID: "2", Type: "t"}),
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			for i, err := range p.Publish(ctx, records) {
				if !errors.Is(err, ErrTimeout) || !Retryable(err) {
					t.Errorf("record %d: got %v, want a retryable ErrTimeout", i, err)
				}
				var pe *ProduceError
				if !errors.As(err, &pe) || pe.RetryAfter != NewDefaultConfig().RetryAfter || pe.Topic != "ingest.t" {
					t.Errorf("record %d: got %#v, want a *ProduceError with the topic and RetryAfter", i, err)
				}
			}
			pingCtx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if err := p.Ping(pingCtx); err == nil {
				t.Error("Ping succeeded with no broker")
			}
		})
	}
}

// TestPublishBufferFull checks that a full client buffer pushes back at
// once: the records that do not fit fail with a retryable ErrBufferFull,
// the one buffered waits until ctx ends.
func TestPublishBufferFull(t *testing.T) {
	p := newTestProducer(t, []string{closedPort(t)}, func(c *Config) { c.MaxBufferedRecords = 1 })
	records := make([]*kgo.Record, 3)
	for i := range records {
		records[i] = record.NewEvent(&record.Event{Topic: "ingest.t", ID: fmt.Sprint(i), Type: "t"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	for i, err := range p.Publish(ctx, records) {
		want := ErrBufferFull
		if i == 0 {
			want = ErrTimeout
		}
		if !errors.Is(err, want) || !Retryable(err) {
			t.Errorf("record %d: got %v, want a retryable %v", i, err, want)
		}
	}
}

// TestSendRefusesTheRestAfterARefusal: when a record of a Send does not fit
// in the buffer, no later record of the same Send is handed over, even one
// small enough to fit: the caller spools the refused ones, so a later one
// in Kafka would overtake them.
func TestSendRefusesTheRestAfterARefusal(t *testing.T) {
	p := newTestProducer(t, []string{closedPort(t)}, func(c *Config) {
		c.BatchMaxBytes, c.MaxBufferedBytes, c.DeliveryTimeout = 1024, 1024, time.Second
	})
	rec := func(n int) *kgo.Record {
		return &kgo.Record{Topic: "ingest.t", Key: []byte("k"), Value: make([]byte, n)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	held := p.Send(ctx, []*kgo.Record{rec(400)}) // stays buffered: no broker
	for i, err := range p.Publish(ctx, []*kgo.Record{rec(700), rec(50)}) {
		if !errors.Is(err, ErrBufferFull) || !Retryable(err) {
			t.Errorf("record %d: got %v, want a retryable ErrBufferFull", i, err)
		}
	}
	if n := p.client.BufferedProduceRecords(); n != 1 {
		t.Errorf("%d records buffered, want only the first Send's", n)
	}
	if err := held.Wait(ctx)[0]; !errors.Is(err, ErrTimeout) {
		t.Errorf("the buffered record: %v, want ErrTimeout", err)
	}
}

func TestPublishContextDone(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	p := newTestProducer(t, c.ListenAddrs(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i, err := range p.Publish(ctx, []*kgo.Record{record.NewEvent(&record.Event{Topic: topic, ID: "1", Type: "t"})}) {
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.Canceled) || !Retryable(err) {
			t.Errorf("record %d: got %v, want a retryable ErrTimeout caused by the cancellation", i, err)
		}
	}
	if n := p.client.BufferedProduceRecords(); n != 0 {
		t.Errorf("%d records buffered after a Publish with a done context, want none produced", n)
	}
}

func TestPublishInvalidRecords(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	p := newTestProducer(t, c.ListenAddrs(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	errs := p.Publish(ctx, []*kgo.Record{
		nil,
		{Value: []byte("no topic")},
		record.NewEvent(&record.Event{Topic: topic, ID: "ok", Type: "t"}),
	})
	for i, err := range errs[:2] {
		var pe *ProduceError
		if err == nil || Retryable(err) || !errors.As(err, &pe) || pe.RetryAfter != 0 {
			t.Errorf("record %d: got %v, want a permanent *ProduceError", i, err)
		}
	}
	if errs[2] != nil {
		t.Errorf("valid record: %v", errs[2])
	}
	if got := p.Publish(ctx, nil); len(got) != 0 {
		t.Errorf("Publish(nil) = %v, want no errors", got)
	}
}

func TestPublishTooLarge(t *testing.T) {
	const topic = "ingest.t"
	large := make([]byte, 8<<10)
	rand.Read(large) // incompressible
	for _, tc := range []struct {
		name    string
		cluster []kfake.Opt
		config  func(*Config)
	}{
		{
			name:    "refused by the broker",
			cluster: []kfake.Opt{kfake.BrokerConfigs(map[string]string{"message.max.bytes": "4096"})},
		},
		{
			name:   "refused by the client",
			config: func(c *Config) { c.BatchMaxBytes = 4096 },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, []string{topic}, tc.cluster...)
			reg := prometheus.NewRegistry()
			p := newTestProducer(t, c.ListenAddrs(), func(c *Config) {
				c.Compression = "none"
				if tc.config != nil {
					tc.config(c)
				}
			}, WithRegisterer(reg))
			ctx, cancel := context.WithTimeout(context.Background(), testWait)
			defer cancel()

			err := p.Publish(ctx, []*kgo.Record{record.NewEvent(&record.Event{Topic: topic, ID: "big", Type: "t", Value: large})})[0]
			if !errors.Is(err, kerr.MessageTooLarge) || Retryable(err) {
				t.Fatalf("got %v, want a permanent MESSAGE_TOO_LARGE", err)
			}
			if got := counterValue(t, reg, "sluice_produce_errors_total", "class", "permanent"); got != 1 {
				t.Errorf("permanent errors counted %v, want 1", got)
			}
			if got := counterValue(t, reg, "sluice_produce_records_total", "result", "failed"); got != 1 {
				t.Errorf("failed records counted %v, want 1", got)
			}
			// The producer keeps working for records that fit.
			if err := p.Publish(ctx, []*kgo.Record{record.NewEvent(&record.Event{Topic: topic, ID: "small", Type: "t"})})[0]; err != nil {
				t.Fatalf("small record after a large one: %v", err)
			}
		})
	}
}

func TestCloseFlushes(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	reg := prometheus.NewRegistry()
	// With a one minute linger, records leave the client before the test's
	// deadline only if Close flushes them.
	p := newTestProducer(t, c.ListenAddrs(), func(c *Config) { c.Linger = time.Minute }, WithRegisterer(reg))

	records := make([]*kgo.Record, 5)
	for i := range records {
		records[i] = record.NewEvent(&record.Event{Topic: topic, ID: fmt.Sprint(i), Type: "t"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	result := make(chan []error, 1)
	go func() { result <- p.Publish(ctx, records) }()
	waitFor(t, "records buffered", func() bool { return p.client.BufferedProduceRecords() == int64(len(records)) })

	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, err := range receive(t, result) {
		if err != nil {
			t.Errorf("record %d: %v", i, err)
		}
	}
	consume(t, c.ListenAddrs(), topic, len(records))

	// Closed: nothing is produced, everything is answered ErrClosed.
	for i, err := range p.Publish(ctx, records[:2]) {
		if !errors.Is(err, ErrClosed) || !Retryable(err) {
			t.Errorf("record %d after Close: got %v, want a retryable ErrClosed", i, err)
		}
	}
	if err := p.Close(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: got %v, want ErrClosed", err)
	}
	if err := p.Ping(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Ping after Close: got %v, want ErrClosed", err)
	}
	// Close unregistered the metrics: a new producer can register them.
	newTestProducer(t, c.ListenAddrs(), nil, WithRegisterer(reg))
}

func TestCloseDeadline(t *testing.T) {
	p := newTestProducer(t, []string{closedPort(t)}, nil)
	records := []*kgo.Record{record.NewEvent(&record.Event{Topic: "ingest.t", ID: "1", Type: "t"})}
	result := make(chan []error, 1)
	go func() { result <- p.Publish(context.Background(), records) }()
	waitFor(t, "record buffered", func() bool { return p.client.BufferedProduceRecords() == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := p.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close with an unreachable broker: got %v, want the deadline", err)
	}
	// The record the flush could not deliver is failed, retryably.
	for i, err := range receive(t, result) {
		if !errors.Is(err, ErrClosed) || !Retryable(err) {
			t.Errorf("record %d: got %v, want a retryable ErrClosed", i, err)
		}
	}
}

func TestPing(t *testing.T) {
	c := newCluster(t, nil)
	p := newTestProducer(t, c.ListenAddrs(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if err := p.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func TestNewProducer(t *testing.T) {
	reg := prometheus.NewRegistry()
	newTestProducer(t, []string{"127.0.0.1:9092"}, nil, WithRegisterer(reg))

	cfg := NewDefaultConfig()
	cfg.Brokers = []string{"127.0.0.1:9092"}
	if _, err := NewProducer(cfg, nil, WithRegisterer(reg)); err == nil {
		t.Error("second producer registered the same metrics on one registry")
	}
	cfg.Compression = "brotli"
	if _, err := NewProducer(cfg, nil); err == nil || err.Error() != `kafka.compression: must be one of "none", "snappy", "lz4", "zstd", "gzip", got "brotli"` {
		t.Errorf("invalid config: got %v", err)
	}
	// The buffered records gauge reads the client.
	if got := gaugeValue(t, reg, "sluice_producer_buffered_records"); got != 0 {
		t.Errorf("buffered records %v, want 0", got)
	}
}

// receive waits for Publish's answer, failing the test after testWait.
func receive(t testing.TB, result <-chan []error) []error {
	t.Helper()
	select {
	case errs := <-result:
		return errs
	case <-time.After(testWait):
		t.Fatal("Publish did not return")
		return nil
	}
}

func gather(t testing.TB, reg *prometheus.Registry, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	t.Fatalf("metric %s not registered", name)
	return nil
}

func counterValue(t testing.TB, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	for _, m := range gather(t, reg, name).GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func histogramCount(t testing.TB, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	return gather(t, reg, name).GetMetric()[0].GetHistogram().GetSampleCount()
}

func gaugeValue(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return gather(t, reg, name).GetMetric()[0].GetGauge().GetValue()
}

// TestRecordsBatchWhileARequestIsInFlight: with the default config (no
// linger) a lone record goes out in a request of its own, and records that
// arrive while the broker holds that request wait in the client and leave
// together in the next one: batches form from load, not from a timer.
func TestRecordsBatchWhileARequestIsInFlight(t *testing.T) {
	const (
		topic = "ingest.t"
		later = 12
	)
	c := newCluster(t, []string{topic})
	var (
		mu       sync.Mutex
		requests []int32 // records per produce request, in arrival order
	)
	held := make(chan struct{})
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		var n int32
		for _, tp := range kreq.(*kmsg.ProduceRequest).Topics {
			for _, pp := range tp.Partitions {
				var b kmsg.RecordBatch
				if err := b.ReadFrom(pp.Records); err != nil {
					t.Errorf("produce request: %v", err)
				}
				n += b.NumRecords
			}
		}
		mu.Lock()
		requests = append(requests, n)
		first := len(requests) == 1
		mu.Unlock()
		if first {
			close(held)
			c.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	p := newTestProducer(t, c.ListenAddrs(), nil)
	if p.cfg.Linger != 0 {
		t.Fatalf("default linger %v, want none", p.cfg.Linger)
	}

	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	event := func(i int) []*kgo.Record {
		return []*kgo.Record{record.NewEvent(&record.Event{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), ID: fmt.Sprint(i), Type: "t"})}
	}
	results := make(chan []error, later+1)
	go func() { results <- p.Publish(ctx, event(0)) }()
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the lone record's produce request never reached the broker")
	}
	for i := 1; i <= later; i++ {
		go func() { results <- p.Publish(ctx, event(i)) }()
	}
	waitFor(t, "the later records buffered", func() bool { return p.client.BufferedProduceRecords() == later+1 })
	close(release)
	for range later + 1 {
		for _, err := range receive(t, results) {
			if err != nil {
				t.Fatalf("publish: %v", err)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []int32{1, later}; !reflect.DeepEqual(requests, want) {
		t.Errorf("records per produce request: got %v, want %v", requests, want)
	}
}

// TestSettledOutlivesWait: a Wait that gives up leaves the Send unsettled
// while the broker holds its request, and Settled closes once the client
// answered; a Send whose Wait got every answer is settled by then.
func TestSettledOutlivesWait(t *testing.T) {
	const topic = "ingest.t"
	c := newCluster(t, []string{topic})
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { <-release })
		return nil, nil, false
	})
	p := newTestProducer(t, c.ListenAddrs(), nil)
	recs := func() []*kgo.Record {
		return []*kgo.Record{record.NewEvent(&record.Event{Topic: topic, Key: []byte("k"), ID: "1", Type: "t"})}
	}
	s := p.Send(context.Background(), recs())
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	errs := s.Wait(short)
	cancel()
	if !errors.Is(errs[0], ErrTimeout) {
		t.Fatalf("Wait while the broker holds the request: %v, want ErrTimeout", errs[0])
	}
	select {
	case <-s.Settled():
		t.Fatal("settled while the broker holds the request")
	default:
	}
	once.Do(func() { close(release) })
	select {
	case <-s.Settled():
	case <-time.After(testWait):
		t.Fatal("not settled after the broker answered")
	}
	ok := p.Send(context.Background(), recs())
	if errs := ok.Wait(context.Background()); errs[0] != nil {
		t.Fatalf("second Send: %v", errs[0])
	}
	select {
	case <-ok.Settled():
	default:
		t.Fatal("a Send whose Wait got every answer is not settled")
	}
}
