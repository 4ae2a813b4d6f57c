package consumer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/consumer/dlq"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// TestIntegrationKafka runs the main path and the DLQ against the real
// Kafka named by SLUICE_KAFKA_BROKERS: every event reaches the sink or the
// DLQ, the offsets are committed, and the DLQ record carries its envelope.
func TestIntegrationKafka(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic, cl := integrationTopics(ctx, t, brokers, 3, nil)
	adm := kadm.NewClient(cl)

	v := logLine(t)
	var recs []*kgo.Record
	var ids []string
	for i := range 300 {
		id := fmt.Sprintf("i%04d", i)
		ids = append(ids, id)
		recs = append(recs, eventRecord(t, topic, id, fmt.Sprintf("k%d", i%37), v))
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	s := newMemSink()
	s.setFail(func(b []sink.Event) error {
		for _, e := range b {
			if e.ID == "i0042" {
				return sink.PermanentError(errors.New("refused"))
			}
		}
		return nil
	})
	cfg := testConfig(fmt.Sprintf("%s-group", topic))
	cfg.Topics = []string{topic}
	cfg.WriteBatch = 16
	c, err := New(cfg, testVersions(t), s, []kgo.Opt{kgo.SeedBrokers(brokers...)})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx) }()
	want := append(append([]string(nil), ids[:42]...), ids[43:]...)
	waitFor(t, time.Minute, "events written", func() bool { return s.hasAll(want) })
	kopts := []kgo.Opt{kgo.SeedBrokers(brokers...)}
	var dl []dlq.DeadLetter
	waitFor(t, time.Minute, "dead letter", func() bool {
		dl = dl[:0]
		err := dlq.List(ctx, kopts, record.DLQTopic(topic), dlq.Selection{}, func(d dlq.DeadLetter) error {
			dl = append(dl, d)
			return nil
		})
		return err == nil && len(dl) == 1
	})
	waitFor(t, time.Minute, "offsets committed", func() bool {
		offs, err := adm.FetchOffsets(ctx, cfg.Group)
		if err != nil {
			return false
		}
		var sum int64
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic {
				sum += o.At
			}
		})
		return sum == int64(len(ids))
	})
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	env := dl[0].Envelope
	if dl[0].EnvelopeErr != nil || env.Class != "permanent" || env.SourceTopic != topic || dl[0].Event.ID != "i0042" {
		t.Fatalf("dead letter %+v, %v", env, dl[0].EnvelopeErr)
	}

	// The memory sink keeps no audit table: the consumer's decisions are
	// in sluice.audit, which other tests share, one per record.
	written, dead := map[string]bool{}, map[string]record.Decision{}
	waitFor(t, time.Minute, "the decisions in "+record.AuditTopic, func() bool {
		recs, err := readToEnd(ctx, kopts, record.AuditTopic)
		if err != nil {
			return false
		}
		for _, r := range recs {
			d, err := record.ParseDecision(r)
			if err != nil || d.Group != cfg.Group {
				continue
			}
			switch d.Action {
			case string(audit.Written):
				written[d.EventID] = true
			case string(audit.DeadLettered):
				dead[d.EventID] = d
			}
		}
		return len(written) == len(want) && len(dead) == 1
	})
	if d := dead["i0042"]; d.Class != "permanent" || d.Topic != topic || d.Offset != dl[0].Envelope.SourceOffset || d.Retryable {
		t.Fatalf("dead_lettered decision %+v", d)
	}
	if written["i0042"] {
		t.Fatal("a written decision about the dead-lettered event")
	}
}

// TestIntegrationDeadLetterRefused: against real Kafka, a dead letter its
// DLQ topic refuses as too large (the topic's max.message.bytes is below
// the consumer's dlq.max_record_bytes) is parked whole, and the partition
// commits past it.
func TestIntegrationDeadLetterRefused(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	small := "8192"
	topic, cl := integrationTopics(ctx, t, brokers, 1, map[string]*string{"max.message.bytes": &small})
	adm := kadm.NewClient(cl)
	big := bigLogLine(t, 64<<10)
	var recs []*kgo.Record
	for i := range 5 {
		v := logLine(t)
		if i == 2 {
			v = big
		}
		recs = append(recs, eventRecord(t, topic, fmt.Sprintf("r%d", i), fmt.Sprintf("k%d", i), v))
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	s := newMemSink()
	s.setFail(func(b []sink.Event) error {
		if b[0].ID == "r2" {
			return sink.PermanentError(errors.New("refused"))
		}
		return nil
	})
	cfg := testConfig(fmt.Sprintf("%s-group", topic))
	cfg.Topics = []string{topic}
	_, done, runErr := runConsumer(t, cfg, brokers, s, nil)
	kopts := []kgo.Opt{kgo.SeedBrokers(brokers...)}
	var parked []*kgo.Record
	waitFor(t, time.Minute, "the refused dead letter parked", func() bool {
		var err error
		parked, err = readToEnd(ctx, kopts, record.ParkedTopic(topic))
		return err == nil && len(parked) == 1
	})
	waitFor(t, time.Minute, "offsets committed", func() bool {
		offs, err := adm.FetchOffsets(ctx, cfg.Group)
		if err != nil {
			return false
		}
		o, ok := offs.Lookup(topic, 0)
		return ok && o.At == int64(len(recs))
	})
	select {
	case <-done:
		t.Fatalf("Run returned: %v", *runErr)
	default:
	}
	env, err := record.ParseEnvelope(parked[0])
	if err != nil || env.ParkedReason != record.ParkedDLQRefused || !strings.Contains(env.Refusal, "MESSAGE_TOO_LARGE") ||
		env.TruncatedFrom != 0 || !bytes.Equal(parked[0].Value, big) {
		t.Fatalf("parked envelope %+v, %v; value %d of %d bytes", env, err, len(parked[0].Value), len(big))
	}
}

// integrationTopics creates a topic of the test's own on the real brokers,
// with its DLQ (configured by dlqConfigs) and parked topics, all deleted
// when the test ends, and returns it with a client closed then too.
func integrationTopics(ctx context.Context, t *testing.T, brokers []string, partitions int32, dlqConfigs map[string]*string) (string, *kgo.Client) {
	t.Helper()
	topic := kafkatest.CreateTopic(t, brokers, partitions, nil)
	// The consumer's decisions about events of a memory sink go there.
	kafkatest.EnsureTopicOn(t, []kgo.Opt{kgo.SeedBrokers(brokers...)}, record.AuditTopic)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	for tp, configs := range map[string]map[string]*string{record.DLQTopic(topic): dlqConfigs, record.ParkedTopic(topic): nil} {
		if _, err := adm.CreateTopic(ctx, partitions, -1, configs, tp); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = adm.DeleteTopic(context.Background(), tp) })
	}
	return topic, cl
}
