package dlq

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/record"
)

// TestRecordBatchBytes: record.BatchBytes is the size kgo measures against
// ProducerBatchMaxBytes, or up to 3 bytes more (a flexible produce request
// frames the batch with a uvarint): a record of the maximum is produced,
// one of 4 bytes more fails with MESSAGE_TOO_LARGE.
func TestRecordBatchBytes(t *testing.T) {
	_, addrs := newTopicCluster(t, nil)
	const maxBytes = 4096
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ProducerBatchMaxBytes(maxBytes))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, key := range [][]byte{nil, []byte("k"), bytes.Repeat([]byte("k"), 300)} {
		r := eventRecord(t, record.DLQTopic(testTopic), "e1", string(key), nil)
		r.Key = key
		r.Value = make([]byte, maxBytes-record.BatchBytes(r))
		for record.BatchBytes(r) > maxBytes {
			r.Value = r.Value[:len(r.Value)-1]
		}
		if got := record.BatchBytes(r); got != maxBytes {
			t.Fatalf("key %d bytes: could not build a record of %d bytes, got %d", len(key), maxBytes, got)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers}).FirstErr(); err != nil {
			t.Fatalf("key %d bytes: a record of exactly ProducerBatchMaxBytes: %v", len(key), err)
		}
		r.Value = append(r.Value, 0, 0, 0, 0)
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers}).FirstErr()
		if !errors.Is(err, kerr.MessageTooLarge) {
			t.Fatalf("key %d bytes: 4 bytes over: %v, want MESSAGE_TOO_LARGE", len(key), err)
		}
	}
}

func TestParkedCopy(t *testing.T) {
	env := record.Envelope{Class: "permanent", Error: "x", Sink: "mem", SourceTopic: testTopic, Group: "g",
		ParkedReason: record.ParkedDLQRefused, Refusal: "ingest.x.dlq: MESSAGE_TOO_LARGE"}
	value := bytes.Repeat([]byte("v"), 10000)
	tests := []struct {
		name     string
		maxBytes int
		wantCut  bool
		wantErr  bool
	}{
		{"fits whole", 64 << 10, false, false},
		{"cut to fit", 4096, true, false},
		{"headers alone too large", 600, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := eventRecord(t, testTopic, "e1", "k", value)
			got, err := record.NewParkedCopy(record.ParkedTopic(testTopic), src, &env, tt.maxBytes)
			if tt.wantErr {
				var ce *record.CopyTooLargeError
				if !errors.As(err, &ce) || ce.MaxRecordBytes != tt.maxBytes {
					t.Fatalf("err %v, want a record.CopyTooLargeError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := record.BatchBytes(got); n > tt.maxBytes {
				t.Fatalf("copy takes %d bytes, over %d", n, tt.maxBytes)
			}
			parsed := mustEnvelope(t, got)
			if !bytes.HasPrefix(value, got.Value) || parsed.ParkedReason != record.ParkedDLQRefused || parsed.Refusal != env.Refusal {
				t.Fatalf("copy %+v, value %d bytes", parsed, len(got.Value))
			}
			if cut := len(got.Value) < len(value); cut != tt.wantCut || (parsed.TruncatedFrom == len(value)) != tt.wantCut {
				t.Fatalf("value %d of %d bytes, %s %d", len(got.Value), len(value), record.DLQHeaderTruncated, parsed.TruncatedFrom)
			}
			if tt.wantCut && tt.maxBytes-record.BatchBytes(got) > 8 {
				t.Fatalf("cut copy takes %d of %d bytes: more of the value fits", record.BatchBytes(got), tt.maxBytes)
			}
			if h, err := record.ParseEvent(got); err != nil || h.ID != "e1" {
				t.Fatalf("event headers of the copy: %+v, %v", h, err)
			}
		})
	}
}

func TestLogThrottle(t *testing.T) {
	lt := logThrottle{every: time.Second}
	t0 := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	steps := []struct {
		at       time.Duration
		ok       bool
		wantHeld int
	}{
		{0, true, 0},
		{100 * time.Millisecond, false, 0},
		{900 * time.Millisecond, false, 0},
		{time.Second, true, 2},
		{1500 * time.Millisecond, false, 0},
		{3 * time.Second, true, 1},
	}
	for _, st := range steps {
		held, ok := lt.allow(t0.Add(st.at))
		if ok != st.ok || held != st.wantHeld {
			t.Fatalf("at %v: allow = %d, %v; want %d, %v", st.at, held, ok, st.wantHeld, st.ok)
		}
	}
}

// TestProducerSend: a dead letter lands in its DLQ topic; one whose produce
// fails transiently is retried until Kafka takes it; one Kafka refuses for
// good is parked as a copy, itself retried while it fails transiently;
// when the copy is refused too Send returns a *DeadLetterError; when ctx
// ends first, ctx's error, and nothing is produced.
func TestProducerSend(t *testing.T) {
	dlqTopic, parkedTopic := record.DLQTopic(testTopic), record.ParkedTopic(testTopic)
	refuse := func(topic string) kfake.Fault {
		return kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: kerr.TopicAuthorizationFailed, Count: -1}
	}
	flaky := func(topic string) kfake.Fault {
		return kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: kerr.NotEnoughReplicas, Count: -1}
	}
	tests := []struct {
		name string
		// refused faults every produce to its topics for good; transient
		// to its topic until the producer has retried a few times.
		refused   []string
		transient string
		cancel    bool // cancel Send while it retries
		wantTopic string
		wantErr   string // "dead letter" for a *DeadLetterError, "canceled" for ctx's
	}{
		{name: "acknowledged", wantTopic: dlqTopic},
		{name: "transient, retried until it lands", transient: dlqTopic, wantTopic: dlqTopic},
		{name: "refused, parked as a copy", refused: []string{dlqTopic}, wantTopic: parkedTopic},
		{name: "refused, its copy retried until it lands", refused: []string{dlqTopic}, transient: parkedTopic, wantTopic: parkedTopic},
		{name: "refused, its copy refused", refused: []string{dlqTopic, parkedTopic}, wantErr: "dead letter"},
		{name: "transient until ctx ends", transient: dlqTopic, cancel: true, wantErr: "canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl, addrs := newTopicCluster(t, nil)
			for _, tp := range tt.refused {
				cl.Fault(refuse(tp))
			}
			var flakes *kfake.FaultHandle
			if tt.transient != "" {
				flakes = cl.Fault(flaky(tt.transient))
			}
			const maxRecordBytes = 64 << 10
			kc, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.ProducerBatchMaxBytes(maxRecordBytes),
				// The client checks a produce's context when it retries,
				// after a metadata refresh: at most every MetadataMinAge.
				kgo.MetadataMinAge(20*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer kc.Close()
			p := NewProducer(kc, ProducerConfig{
				ProduceTimeout: 50 * time.Millisecond,
				Backoff:        backoff.Config{Initial: time.Millisecond, Max: 5 * time.Millisecond},
				MaxRecordBytes: maxRecordBytes,
				MaxErrorBytes:  1024,
			})
			src := eventRecord(t, testTopic, "e1", "k", logLine(t))
			src.Partition, src.Offset = 0, 41
			env := record.Envelope{Class: "permanent", Error: "receiver 422", Sink: "mem", Attempts: 1,
				FirstFailureAt: time.Now().UTC(), LastFailureAt: time.Now().UTC(), SourceTopic: testTopic, SourceOffset: 41, Group: "g"}

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// Send's retries and refusals are events on the span in ctx.
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			defer func() { _ = tp.Shutdown(context.Background()) }()
			ctx, span := tp.Tracer("test").Start(ctx, "dead_letter")
			type sent struct {
				topic string
				env   record.Envelope
				err   error
			}
			done := make(chan sent, 1)
			go func() {
				topic, env, err := p.Send(ctx, dlqTopic, src, env)
				done <- sent{topic, env, err}
			}()
			if tt.transient != "" {
				retried := p.m.errors.WithLabelValues(tt.transient, "retryable")
				waitFor(t, 20*time.Second, "failed produces retried", func() bool { return testutil.ToFloat64(retried) >= 3 })
				if tt.cancel {
					cancel()
				} else {
					flakes.Remove()
				}
			}
			var got sent
			select {
			case got = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Send did not return")
			}
			span.End()
			events := map[string]int{}
			for _, ev := range spans.Ended()[0].Events() {
				events[ev.Name]++
			}
			if (events["retry"] >= 3) != (tt.transient != "") || (events["refused"] == 1) != (len(tt.refused) > 0) {
				t.Fatalf("span events %v", events)
			}

			switch tt.wantErr {
			case "dead letter":
				var dle *DeadLetterError
				if !errors.As(got.err, &dle) || dle.Topic != testTopic || dle.Offset != 41 || dle.Refused != dlqTopic ||
					dle.Parked != parkedTopic || !errors.Is(got.err, kerr.TopicAuthorizationFailed) {
					t.Fatalf("Send = %v, want a DeadLetterError for %s/0@41", got.err, testTopic)
				}
				if n := testutil.ToFloat64(p.m.undeliverable.WithLabelValues(testTopic)); n != 1 {
					t.Fatalf("%v undeliverable counted, want 1", n)
				}
			case "canceled":
				if !errors.Is(got.err, context.Canceled) {
					t.Fatalf("Send = %v, want ctx's error", got.err)
				}
			default:
				if got.err != nil {
					t.Fatal(got.err)
				}
			}
			for _, tp := range []string{dlqTopic, parkedTopic} {
				want := 0
				if tp == tt.wantTopic {
					want = 1
				}
				if n := len(readAll(t, addrs, tp)); n != want {
					t.Fatalf("%d records in %s, want %d", n, tp, want)
				}
			}
			if tt.wantErr != "" {
				return
			}
			if got.topic != tt.wantTopic {
				t.Fatalf("Send landed in %s, want %s", got.topic, tt.wantTopic)
			}
			rec := readAll(t, addrs, tt.wantTopic)[0]
			stored := mustEnvelope(t, rec)
			if stored.SourceOffset != 41 || stored.Class != "permanent" || !bytes.Equal(rec.Value, src.Value) ||
				stored.ParkedReason != got.env.ParkedReason || stored.Refusal != got.env.Refusal {
				t.Fatalf("stored envelope %+v, Send's %+v", stored, got.env)
			}
			if refused := tt.wantTopic == parkedTopic; refused != (got.env.ParkedReason == record.ParkedDLQRefused) ||
				refused != strings.Contains(got.env.Refusal, "TOPIC_AUTHORIZATION_FAILED") || got.env.Retryable {
				t.Fatalf("envelope %+v for a dead letter landing in %s", got.env, tt.wantTopic)
			}
		})
	}
}

// TestProducerParksCutCopy: a dead letter over MaxRecordBytes is parked as
// a copy cut to fit, counted, its envelope saying how long the value was.
func TestProducerParksCutCopy(t *testing.T) {
	_, addrs := newTopicCluster(t, nil)
	const maxRecordBytes = 16 << 10
	kc, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ProducerBatchMaxBytes(maxRecordBytes))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	p := NewProducer(kc, ProducerConfig{ProduceTimeout: 5 * time.Second,
		Backoff: backoff.Config{Initial: time.Millisecond, Max: time.Millisecond}, MaxRecordBytes: maxRecordBytes, MaxErrorBytes: 1024})
	value := bigLogLine(t, 64<<10)
	src := eventRecord(t, testTopic, "big", "k", value)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topic, env, err := p.Send(ctx, record.DLQTopic(testTopic), src, record.Envelope{Class: "permanent", Error: "x", Sink: "mem",
		SourceTopic: testTopic, Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	if topic != record.ParkedTopic(testTopic) || env.TruncatedFrom != len(value) || !strings.Contains(env.Refusal, "MESSAGE_TOO_LARGE") {
		t.Fatalf("Send = %s, %+v", topic, env)
	}
	rec := readAll(t, addrs, topic)[0]
	if record.BatchBytes(rec) > maxRecordBytes || !bytes.HasPrefix(value, rec.Value) || mustEnvelope(t, rec).TruncatedFrom != len(value) {
		t.Fatalf("parked copy of %d bytes, value %d of %d", record.BatchBytes(rec), len(rec.Value), len(value))
	}
	if n := testutil.ToFloat64(p.m.truncated.WithLabelValues(topic)); n != 1 {
		t.Fatalf("%v truncated copies counted, want 1", n)
	}
}
