package publish

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// lockedBuffer is a log destination the test reads while the producer
// writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func checkTopics(p *Producer, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return p.CheckTopics(ctx)
}

// TestCheckTopics: a topic the cluster does not have is named, counted and
// logged once, and never created by the check, even by a cluster that
// creates topics on demand; once it is created, the check says so. While
// no broker answers, the last answer stands.
func TestCheckTopics(t *testing.T) {
	const have, lack = "ingest.have", "ingest.lack"
	c := newCluster(t, []string{have}, kfake.AllowAutoTopicCreation())
	logs := &lockedBuffer{}
	reg := prometheus.NewRegistry()
	p := newTestProducer(t, c.ListenAddrs(), nil, WithTopics(have, lack, have),
		WithLogger(slog.New(slog.NewTextHandler(logs, nil))), WithRegisterer(reg))
	gauge := func(topic string) float64 { return testutil.ToFloat64(p.metrics.topicMissing.WithLabelValues(topic)) }
	if n, err := testutil.GatherAndCount(reg, "sluice_kafka_topic_missing"); err != nil || n != 2 {
		t.Fatalf("sluice_kafka_topic_missing: %d series (%v) before the first check, want one per topic", n, err)
	}

	for range 2 {
		err := checkTopics(p, testWait)
		var missing *MissingTopicsError
		if !errors.As(err, &missing) || len(missing.Topics) != 1 || missing.Topics[0] != lack ||
			!errors.Is(err, kerr.UnknownTopicOrPartition) || !strings.Contains(err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") {
			t.Fatalf("CheckTopics: %v, want UNKNOWN_TOPIC_OR_PARTITION for %s only", err, lack)
		}
	}
	if gauge(lack) != 1 || gauge(have) != 0 {
		t.Errorf("sluice_kafka_topic_missing: %s %v, %s %v; want 1 and 0", lack, gauge(lack), have, gauge(have))
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 ||
		!strings.Contains(logs.String(), "topic="+lack) || !strings.Contains(logs.String(), "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("%d error lines over two checks, want one naming %s and UNKNOWN_TOPIC_OR_PARTITION:\n%s", n, lack, logs.String())
	}
	if topics := listTopics(t, c.ListenAddrs()); topics.Has(lack) {
		t.Fatalf("the check created %s", lack)
	}

	createNamedTopic(t, c.ListenAddrs(), lack)
	waitFor(t, "the check to find "+lack, func() bool { return checkTopics(p, testWait) == nil })
	if gauge(lack) != 0 {
		t.Errorf("sluice_kafka_topic_missing{topic=%q} = %v once it exists", lack, gauge(lack))
	}
	if !strings.Contains(logs.String(), "level=INFO") {
		t.Errorf("no line says %s was found:\n%s", lack, logs.String())
	}

	// Missing again, then the cluster goes: the check does not answer,
	// and the topic is still reported missing.
	deleteTopic(t, c.ListenAddrs(), lack)
	waitFor(t, "the check to miss "+lack, func() bool { return checkTopics(p, testWait) != nil })
	c.Close()
	err := checkTopics(p, 500*time.Millisecond)
	var missing *MissingTopicsError
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), "topic metadata") {
		t.Fatalf("with the cluster gone: %v, want no answer, joined with the last answer's missing topic", err)
	}
}

// TestCheckTopicsClosed: a closed producer checks nothing.
func TestCheckTopicsClosed(t *testing.T) {
	c := newCluster(t, []string{"t"})
	p := newTestProducer(t, c.ListenAddrs(), nil, WithTopics("t"))
	if err := checkTopics(p, testWait); err != nil {
		t.Fatalf("CheckTopics: %v", err)
	}
	_ = p.Close(context.Background())
	if err := checkTopics(p, testWait); !errors.Is(err, ErrClosed) {
		t.Fatalf("CheckTopics after Close: %v, want ErrClosed", err)
	}
}

func adminClient(t *testing.T, brokers []string) (*kadm.Client, context.Context) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	t.Cleanup(cancel)
	return kadm.NewClient(cl), ctx
}

func listTopics(t *testing.T, brokers []string) kadm.TopicDetails {
	t.Helper()
	adm, ctx := adminClient(t, brokers)
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return topics
}

func createNamedTopic(t *testing.T, brokers []string, topic string) {
	t.Helper()
	adm, ctx := adminClient(t, brokers)
	resp, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

func deleteTopic(t *testing.T, brokers []string, topic string) {
	t.Helper()
	adm, ctx := adminClient(t, brokers)
	resp, err := adm.DeleteTopic(ctx, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("delete %s: %v", topic, err)
	}
}
