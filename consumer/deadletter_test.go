package consumer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluicehq/sluice/consumer/dlq"
	"github.com/sluicehq/sluice/internal/eventtest"
	"github.com/sluicehq/sluice/internal/logtest"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// newTopicCluster is eventtest.TopicCluster: the test topic, its DLQ,
// parked and audit topics, with the topic configs given by name.
func newTopicCluster(t testing.TB, configs map[string]map[string]string) (*kfake.Cluster, []string) {
	return eventtest.TopicCluster(t, configs)
}

// bigLogLine is a LogLine whose message is n random letters: it decodes,
// breaks the contract's max_bytes and does not compress much.
func bigLogLine(t testing.TB, n int) []byte {
	t.Helper()
	rnd := rand.New(rand.NewPCG(1, uint64(n)))
	msg := make([]byte, n)
	for i := range msg {
		msg[i] = byte('a' + rnd.IntN(26))
	}
	b := protowire.AppendTag(logLine(t), 3, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

// produceLarge produces recs with a client that takes records of up to
// 4 MiB.
func produceLarge(t testing.TB, addrs []string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ProducerBatchMaxBytes(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestDeadLetterRefusedParksCopy: a dead letter Kafka refuses for good is
// parked as a bounded copy, with its envelope, the refusal and, when the
// value had to be cut, sluice-dlq-truncated; the partition commits past it
// and the other events are written.
func TestDeadLetterRefusedParksCopy(t *testing.T) {
	tests := []struct {
		name    string
		value   int // bytes of the failing event's message; 0 for a plain LogLine
		configs map[string]map[string]string
		fault   *kfake.Fault
		refusal string
		wantCut bool
	}{
		{
			name:    "too large for dlq.max_record_bytes",
			value:   1200 << 10,
			configs: map[string]map[string]string{testTopic: {"max.message.bytes": strconv.Itoa(4 << 20)}},
			refusal: "MESSAGE_TOO_LARGE",
			wantCut: true,
		},
		{
			name:    "too large for the DLQ topic's max.message.bytes",
			value:   64 << 10,
			configs: map[string]map[string]string{record.DLQTopic(testTopic): {"max.message.bytes": "8192"}},
			refusal: "MESSAGE_TOO_LARGE",
		},
		{
			name:    "DLQ topic not authorized",
			fault:   &kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: record.DLQTopic(testTopic), Err: kerr.TopicAuthorizationFailed, Count: -1},
			refusal: "TOPIC_AUTHORIZATION_FAILED",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl, addrs := newTopicCluster(t, tt.configs)
			if tt.fault != nil {
				cl.Fault(*tt.fault)
			}
			failing := logLine(t)
			if tt.value > 0 {
				failing = bigLogLine(t, tt.value)
			}
			var recs []*kgo.Record
			var ids []string
			for i := range 10 {
				id := fmt.Sprintf("e%05d", i)
				v := logLine(t)
				if i == 3 {
					v = failing
				} else {
					ids = append(ids, id)
				}
				recs = append(recs, eventRecord(t, testTopic, id, id, v))
			}
			produceLarge(t, addrs, recs...)

			s := newMemSink()
			s.setFail(func(b []sink.Event) error {
				if b[0].ID == "e00003" {
					return sink.PermanentError(errors.New("receiver 422"))
				}
				return nil
			})
			cfg := testConfig("refused")
			reg := prometheus.NewRegistry()
			r := start(t, cfg, addrs, s, WithRegisterer(reg))
			waitFor(t, 20*time.Second, "the refused dead letter parked", func() bool {
				return len(readAll(t, addrs, record.ParkedTopic(testTopic))) == 1
			})
			waitFor(t, 20*time.Second, "committed past it", func() bool {
				return committed(t, addrs, "refused", testTopic)[0] == 10
			})
			waitFor(t, 20*time.Second, "the other events written", func() bool { return s.hasAll(ids) })
			if n := counter(t, reg, "sluice_consumer_dead_letter_produce_errors_total",
				map[string]string{"topic": record.DLQTopic(testTopic), "class": "permanent"}); n != 1 {
				t.Errorf("%v permanent DLQ produce errors counted, want 1", n)
			}
			if err := r.stop(); err != nil {
				t.Fatal(err)
			}

			if n := len(readAll(t, addrs, record.DLQTopic(testTopic))); n != 0 {
				t.Fatalf("%d records in the DLQ", n)
			}
			rec := readAll(t, addrs, record.ParkedTopic(testTopic))[0]
			env := mustEnvelope(t, rec)
			if env.ParkedReason != record.ParkedDLQRefused || env.Class != "permanent" || env.Retryable ||
				env.SourceTopic != testTopic || env.SourceOffset != 3 || !strings.Contains(env.Error, "receiver 422") ||
				!strings.Contains(env.Refusal, record.DLQTopic(testTopic)) || !strings.Contains(env.Refusal, tt.refusal) {
				t.Fatalf("parked envelope %+v", env)
			}
			if h, err := record.ParseEvent(rec); err != nil || h.ID != "e00003" {
				t.Fatalf("event headers of the parked copy: %+v, %v", h, err)
			}
			if !bytes.HasPrefix(failing, rec.Value) {
				t.Fatal("parked value is not a prefix of the original")
			}
			if tt.wantCut {
				if env.TruncatedFrom != len(failing) || len(rec.Value) >= len(failing) || record.BatchBytes(rec) > int(cfg.DLQ.MaxRecordBytes) {
					t.Fatalf("cut copy: %s %d, value %d of %d bytes, record %d bytes", record.DLQHeaderTruncated, env.TruncatedFrom,
						len(rec.Value), len(failing), record.BatchBytes(rec))
				}
			} else if env.TruncatedFrom != 0 || len(rec.Value) != len(failing) {
				t.Fatalf("copy cut although it fits: %s %d, value %d of %d bytes", record.DLQHeaderTruncated, env.TruncatedFrom,
					len(rec.Value), len(failing))
			}
		})
	}
}

// runConsumer runs a consumer with kopts added to start's; done is closed
// when Run returns, with its error in *runErr. The test's end stops it.
func runConsumer(t *testing.T, cfg Config, addrs []string, s sink.Sink, kopts []kgo.Opt, opts ...Option) (c *Consumer, done <-chan struct{}, runErr *error) {
	t.Helper()
	c, err := New(cfg, testVersions(t), s, append([]kgo.Opt{
		kgo.SeedBrokers(addrs...),
		kgo.FetchMaxWait(50 * time.Millisecond),
		kgo.HeartbeatInterval(100 * time.Millisecond),
	}, kopts...), opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ch := make(chan struct{})
	runErr = new(error)
	go func() {
		defer close(ch)
		*runErr = c.Run(ctx)
	}()
	t.Cleanup(func() {
		stop()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Error("Run did not return")
		}
	})
	return c, ch, runErr
}

// TestDeadLetterAndParkedRefusedStopsRun: when Kafka refuses the dead
// letter and its parked copy, Run stops with a DeadLetterError naming the
// record, and the committed offset stays below it.
func TestDeadLetterAndParkedRefusedStopsRun(t *testing.T) {
	cl, addrs := newTopicCluster(t, nil)
	for _, tp := range []string{record.DLQTopic(testTopic), record.ParkedTopic(testTopic)} {
		cl.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: tp, Err: kerr.TopicAuthorizationFailed, Count: -1})
	}
	produceEvents(t, addrs, 10, 10)
	s := newMemSink()
	s.setFail(func(b []sink.Event) error {
		if b[0].ID == "e00004" {
			return sink.PermanentError(errors.New("receiver 422"))
		}
		return nil
	})
	var logs logtest.Buffer
	_, done, runErr := runConsumer(t, testConfig("stop"), addrs, s, nil, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run still running 20s after the record was refused")
	}
	err := *runErr
	var dle *dlq.DeadLetterError
	if !errors.As(err, &dle) || dle.Topic != testTopic || dle.Partition != 0 || dle.Offset != 4 ||
		dle.Refused != record.DLQTopic(testTopic) || dle.Parked != record.ParkedTopic(testTopic) || !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("Run returned %v, want a DeadLetterError for %s/0@4", err, testTopic)
	}
	if !strings.Contains(err.Error(), testTopic+"/0@4") {
		t.Fatalf("error %q does not name the record", err)
	}
	if off, ok := committed(t, addrs, "stop", testTopic)[0]; ok && off > 4 {
		t.Fatalf("committed %d, past the refused record at 4", off)
	}
	for _, tp := range []string{record.DLQTopic(testTopic), record.ParkedTopic(testTopic)} {
		if n := len(readAll(t, addrs, tp)); n != 0 {
			t.Fatalf("%d records in %s", n, tp)
		}
	}
	if !strings.Contains(logs.String(), "dead letter and parked copy refused") {
		t.Fatal("the stop was not logged")
	}
}

// TestDeadLetterTransientRetried: while Kafka fails DLQ produces
// transiently the dead letter is retried, neither parked nor committed,
// with the warnings spaced; once Kafka takes it, it is in the DLQ.
func TestDeadLetterTransientRetried(t *testing.T) {
	cl, addrs := newTopicCluster(t, nil)
	h := cl.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: record.DLQTopic(testTopic), Err: kerr.NotEnoughReplicas, Count: -1})
	produceEvents(t, addrs, 5, 5)
	s := newMemSink()
	s.setFail(func(b []sink.Event) error {
		if b[0].ID == "e00002" {
			return sink.PermanentError(errors.New("receiver 422"))
		}
		return nil
	})
	cfg := testConfig("transient")
	cfg.WriteTimeout = 50 * time.Millisecond
	var logs logtest.Buffer
	reg := prometheus.NewRegistry()
	// The client checks a produce's context when it retries, after a
	// metadata refresh: at most every MetadataMinAge.
	_, done, runErr := runConsumer(t, cfg, addrs, s, []kgo.Opt{kgo.MetadataMinAge(20 * time.Millisecond)},
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), WithRegisterer(reg))
	failures := func() float64 {
		return counter(t, reg, "sluice_consumer_dead_letter_produce_errors_total",
			map[string]string{"topic": record.DLQTopic(testTopic), "class": "retryable"})
	}
	waitFor(t, 20*time.Second, "failed DLQ produces retried", func() bool { return failures() >= 10 })
	if off := committed(t, addrs, "transient", testTopic)[0]; off > 2 {
		t.Fatalf("committed %d past the dead letter still being produced", off)
	}
	if n := strings.Count(logs.String(), "dead-letter produce failing"); n > 2 {
		t.Fatalf("%d warnings for %v failed produces", n, failures())
	}
	h.Remove()
	waitFor(t, 20*time.Second, "the dead letter in the DLQ", func() bool { return len(readAll(t, addrs, record.DLQTopic(testTopic))) == 1 })
	waitFor(t, 20*time.Second, "committed past it", func() bool { return committed(t, addrs, "transient", testTopic)[0] == 5 })
	select {
	case <-done:
		t.Fatalf("Run returned: %v", *runErr)
	default:
	}
	if n := len(readAll(t, addrs, record.ParkedTopic(testTopic))); n != 0 {
		t.Fatalf("a transient failure parked %d records", n)
	}
}
