package admission

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/publish"
)

// Integration tests run against the Kafka cluster named by
// SLUICE_KAFKA_BROKERS (package kafkatest). Each test creates its own
// topic and deletes it.

// TestIntegrationKafkaReadiness: against a real broker (which creates
// topics on demand: scripts/kafka.sh sets auto.create.topics.enable),
// admission is not ready while a topic it writes does not exist, and the
// check does not create it; and a topic whose max.message.bytes is below
// the spooled records blocks the drain loudly until an operator raises
// it, when the records reach Kafka and readiness recovers.
func TestIntegrationKafkaReadiness(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	small := kafkatest.CreateTopic(t, brokers, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("1024")})
	lack := small + ".missing"

	cfg := publish.NewDefaultConfig()
	cfg.Brokers, cfg.Compression = brokers, "none"
	p, err := publish.NewProducer(cfg, nil, publish.WithLogger(discardLogger()), publish.WithTopics(small, lack))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	s := openSpool(t, t.TempDir(), nil)
	defer s.Close()
	a := newTestAdmission(t, p, s, func(cfg *Config) { cfg.SpoolFirst = true }, nil)
	defer a.Close()

	err = ready(a)
	var missing *publish.MissingTopicsError
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") || !strings.Contains(err.Error(), lack) {
		t.Fatalf("with %s missing: %v, want not ready naming UNKNOWN_TOPIC_OR_PARTITION and the topic", lack, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if topics, err := adm.ListTopics(waitCtx(t)); err != nil || topics.Has(lack) {
		t.Fatalf("after the check, %s exists: %v (%v)", lack, topics.Has(lack), err)
	}
	kafkatest.CreateTopicsOn(t, []kgo.Opt{kgo.SeedBrokers(brokers...)}, 1, nil, lack)
	waitFor(t, "readiness once "+lack+" exists", func() bool { return ready(a) == nil })

	// Records over the topic's max.message.bytes: the drain blocks.
	recs := keyed(small, 0, 3, 1)
	for _, r := range recs {
		r.Value = append(r.Value, make([]byte, 2048)...)
	}
	for i, r := range a.Admit(context.Background(), recs) {
		if r.Err != nil || r.Durability != DurabilityLocalDisk {
			t.Fatalf("r%d: %+v", i, r)
		}
	}
	waitFor(t, "readiness to name MESSAGE_TOO_LARGE", func() bool {
		err := ready(a)
		return err != nil && strings.Contains(err.Error(), "MESSAGE_TOO_LARGE") && strings.Contains(err.Error(), small)
	})
	if got := testutilGauge(a, publish.RefusalTooLarge); got != 1 {
		t.Errorf("sluice_spool_drain_blocked{reason=too_large} = %v, want 1", got)
	}
	if got := s.Stats().Records; got != int64(len(recs)) {
		t.Fatalf("the spool holds %d records, want %d", got, len(recs))
	}
	// The operator raises it; the drainer's next retry gets through.
	resp, err := adm.AlterTopicConfigs(waitCtx(t), []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("1048588")}}, small)
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = resp.On(small, nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "readiness to recover", func() bool { return ready(a) == nil })
	checkKeyOrder(t, consumeAll(t, brokers, small, len(recs)))
	if got := testutilGauge(a, publish.RefusalTooLarge); got != 0 {
		t.Errorf("sluice_spool_drain_blocked{reason=too_large} = %v after the drain, want 0", got)
	}
}
