package kafkatest_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkatest"
)

// The topics made over a connection exist while the test runs; a shared
// one may be ensured twice. (kfake keeps listing deleted topics, so their
// deletion is not checked here.)
func TestCreateTopicsOn(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close) // after the topics' own cleanups, which delete them
	conn := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, err := kgo.NewClient(conn...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	exists := func(topic string) bool {
		t.Helper()
		ts, err := adm.ListTopics(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return ts.Has(topic)
	}

	topic := kafkatest.CreateTopicOn(t, conn, 2, nil)
	kafkatest.CreateTopicsOn(t, conn, 1, nil, topic+".dlq")
	kafkatest.EnsureTopicOn(t, conn, "shared")
	kafkatest.EnsureTopicOn(t, conn, "shared")
	for _, name := range []string{topic, topic + ".dlq", "shared"} {
		if !exists(name) {
			t.Errorf("%s was not created", name)
		}
	}
}
